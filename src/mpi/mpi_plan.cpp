#include "mpi/mpi_plan.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mempath::mpi {

bool planning(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--from" || a.rfind("--from=", 0) == 0; });
}

std::vector<OptionSpec> with_plan_options(std::vector<OptionSpec> specs) {
  specs.push_back({"from", "DIR",
                   "plan against a saved topology snapshot (`mempath topo --save DIR`): print the cases and the "
                   "expected duration of the job, run nothing (no MPI, no launcher, no GPU needed)"});
  specs.push_back({"plan-ranks", "N", "with --from: the job's ranks (default: the command's ranks per node x nodes)"});
  specs.push_back({"plan-nodes", "N", "with --from: the job's nodes, each like the snapshot's (default: the command's)"});
  return specs;
}

void refuse_plan_shape(const Options& opts) {
  for (const char* name : {"plan-ranks", "plan-nodes"})
    if (opts.has(name))
      throw UsageError(std::string("--") + name + " describes the job of a plan; valid: with --from SNAPSHOT");
}

PlannedJob planned_job(const Options& opts, const Topology& topo, int default_nodes,
                       const std::function<int(const Topology&)>& per_node) {
  PlannedJob job;
  job.nodes = static_cast<int>(opts.integer("plan-nodes", default_nodes, 1, 1000000));
  job.ranks = static_cast<int>(opts.integer("plan-ranks", static_cast<long long>(per_node(topo)) * job.nodes, 1,
                                            100000000));
  return job;
}

}  // namespace mempath::mpi
