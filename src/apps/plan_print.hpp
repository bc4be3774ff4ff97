#pragma once
// `--from SNAPSHOT`: every planner prints the cases it would run on that node, one line
// each (`PLAN <command> key=value ... status=planned|skipped [reason="..."]`), and runs none.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/options.hpp"
#include "core/topology.hpp"

namespace mempath {

inline std::vector<OptionSpec> with_from_option(std::vector<OptionSpec> specs) {
  specs.push_back({"from", "DIR", "plan against a saved topology snapshot (`mempath topo --save DIR`): "
                                  "print the cases and exit"});
  return specs;
}

// The snapshot of --from, or the live node.
inline Topology planning_topology(const Options& opts) {
  return opts.has("from") ? load_snapshot(*opts.get("from")) : discover();
}

inline void print_plan(const std::string& command, const std::vector<std::pair<std::string, std::string>>& fields,
                       const std::string& skip_reason) {
  std::printf("PLAN %s", command.c_str());
  for (const auto& [k, v] : fields) std::printf(" %s=%s", k.c_str(), v.empty() ? "-" : v.c_str());
  if (skip_reason.empty()) std::printf(" status=planned\n");
  else std::printf(" status=skipped reason=\"%s\"\n", skip_reason.c_str());
}

}  // namespace mempath
