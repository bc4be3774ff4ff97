#pragma once
// `mempath-mpi CMD ... --from SNAPSHOT [--plan-ranks N] [--plan-nodes M]`: a run planned
// for a job of that shape on the node of a saved topology snapshot (`mempath topo --save`),
// without MPI, a launcher or a GPU: the driver prints the cases (`PLAN` lines) and the
// model's `EXPECT` line the run itself would print first (docs/cli.md, "Expected
// duration"), from the command's own plan of that shape.
#include <functional>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/topology.hpp"

namespace mempath::mpi {

// Whether a command's arguments ask for a plan (--from): main starts no MPI for one.
bool planning(const std::vector<std::string>& args);

// --from, --plan-ranks, --plan-nodes appended to a command's options.
std::vector<OptionSpec> with_plan_options(std::vector<OptionSpec> specs);

// The shape of the job a plan stands for, on nodes each like the snapshot's `topo`:
// --plan-nodes (default `default_nodes`) and --plan-ranks (default `per_node(topo)` on each).
struct PlannedJob {
  int ranks = 1, nodes = 1;
};
PlannedJob planned_job(const Options& opts, const Topology& topo, int default_nodes,
                       const std::function<int(const Topology&)>& per_node);
// A run's check: --plan-ranks or --plan-nodes without --from is bad input.
void refuse_plan_shape(const Options& opts);

}  // namespace mempath::mpi
