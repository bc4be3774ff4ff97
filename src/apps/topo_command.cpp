#include <iostream>

#include "core/error.hpp"
#include "core/options.hpp"
#include "core/topology.hpp"

namespace mempath {

int cmd_topo(const std::vector<std::string>& args) {
  Options opts("topo", "Prints the node as processors, memories and paths (docs/topology.md).",
               {{"json", "", "print the JSON document instead of the table"},
                {"from", "DIR", "read a saved snapshot instead of the live node"},
                {"save", "DIR", "write the live node's snapshot to DIR"}});
  if (!opts.parse(args)) return 0;
  // --save copies the live node's files: with --from it would save another node than the
  // one printed.
  if (opts.has("from") && opts.has("save"))
    throw UsageError("--save writes this node's snapshot, not the one --from reads; valid: one of them "
                     "(to copy a snapshot: cp -r " + *opts.get("from") + " " + *opts.get("save") + ")");
  if (auto dir = opts.get("save")) {
    save_snapshot(*dir);
    std::cerr << "mempath: snapshot written to " << *dir << "\n";
  }
  const Topology topo = opts.has("from") ? load_snapshot(*opts.get("from")) : discover();
  std::cout << (opts.flag("json") ? topo.to_json() + "\n" : topo.to_text());
  return 0;
}

}  // namespace mempath
