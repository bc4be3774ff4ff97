#pragma once
// `mempath-mpi CMD ... --from SNAPSHOT [--plan-ranks N] [--plan-nodes M]`: a run planned
// for a job of that shape on the node of a saved topology snapshot (`mempath topo --save`),
// without MPI, a launcher or a GPU: the cases (`PLAN` lines) and the model's `EXPECT` line
// the run itself would print first (docs/cli.md, "Expected duration"). The arithmetic is
// core/scaleout_plan's, the same the run states its expectation with.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/scaleout_plan.hpp"
#include "core/topology.hpp"

namespace mempath::mpi {

// Whether a command's arguments ask for a plan (--from): main starts no MPI for one.
bool planning(const std::vector<std::string>& args);

// --from, --plan-ranks, --plan-nodes appended to a command's options.
std::vector<OptionSpec> with_plan_options(std::vector<OptionSpec> specs);

// The job a plan stands for: the snapshot's node (every node of the job is taken to be
// like it) and the job's shape. Ranks default to `per_node(topo)` on each node.
struct PlannedJob {
  Topology topo;
  int ranks = 1, nodes = 1;
};
// nullopt without --from; UsageError for --plan-ranks/--plan-nodes without it.
std::optional<PlannedJob> planned_job(const Options& opts, int default_nodes,
                                      const std::function<int(const Topology&)>& per_node);

// `PLAN <bench> key=value ... status=planned|skipped [reason=...]`, as mempath's plans.
void print_plan_line(const std::string& bench, const std::vector<std::pair<std::string, std::string>>& fields,
                     const std::string& skip_reason);
// The EXPECT line, last.
void print_expectation(const std::string& bench, const ScaleoutExpectation& e);

// --- nccl: its options and settings, one list for the run (nccl_bench.cpp), the plan, and
// the build without NCCL (nccl_none.cpp), which still plans. -------------------------
std::vector<OptionSpec> nccl_option_specs();
struct NcclSettings {
  std::vector<std::string> colls, placements;
  NcclSizes sizes;
  int iters = 20, warmup = 5;
};
NcclSettings nccl_settings(const Options& opts);
// The plan of `nccl`: one rank per GPU of each node unless --plan-ranks says otherwise.
int plan_nccl(const Options& opts, const NcclSettings& s);

}  // namespace mempath::mpi
