#include "mpi/mpi_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "apps/plan_print.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/result_run.hpp"
#include "core/units.hpp"

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

std::optional<PlannedJob> planned_job(const Options& opts, int default_nodes,
                                      const std::function<int(const Topology&)>& per_node) {
  if (!opts.has("from")) {
    for (const char* name : {"plan-ranks", "plan-nodes"})
      if (opts.has(name))
        throw UsageError(std::string("--") + name + " describes the job of a plan; valid: with --from SNAPSHOT");
    return std::nullopt;
  }
  PlannedJob job;
  job.topo = load_snapshot(*opts.get("from"));
  job.nodes = static_cast<int>(opts.integer("plan-nodes", default_nodes, 1, 1000000));
  job.ranks = static_cast<int>(opts.integer("plan-ranks", static_cast<long long>(per_node(job.topo)) * job.nodes, 1,
                                            100000000));
  return job;
}

void print_plan_line(const std::string& bench, const std::vector<std::pair<std::string, std::string>>& fields,
                     const std::string& skip_reason) {
  print_plan(bench, fields, skip_reason);
}

void print_expectation(const std::string& bench, const ScaleoutExpectation& e) {
  std::printf("%s\n", model::expect_line(bench, e.cases, e.planned, e.seconds).c_str());
  std::fflush(stdout);
}

std::vector<OptionSpec> nccl_option_specs() {
  return with_plan_options(with_run_options(
      {{"coll", "LIST", "allreduce, allgather (default both)"},
       {"placement", "LIST", "device (default), hbm-system, host, peer, peer-host: where each rank's buffers are"},
       {"min-size", "SIZE", "smallest buffer (default 1KiB)"},
       {"max-size", "SIZE", "largest buffer (default 1GiB)"},
       {"size-per-rank", "SIZE", "one size instead of the sweep: each rank's input (all-gather gathers SIZE x ranks)"},
       {"paper-sizes", "",
        "one size instead of the sweep, the paper's Fig. 19: all-reduce 4 GiB, all-gather 16 MiB x ranks"},
       {"iters", "N", "timed collectives per size (default 20)"},
       {"warmup", "N", "untimed collectives per size first (default 5)"}},
      "mpi-nccl"));
}

namespace {
NcclSizes parse_sizes(const Options& opts) {
  NcclSizes sizes;
  const bool sweep = opts.has("min-size") || opts.has("max-size");
  const int ways = int(sweep) + int(opts.has("size-per-rank")) + int(opts.flag("paper-sizes"));
  if (ways > 1)
    throw UsageError("--min-size/--max-size, --size-per-rank and --paper-sizes each choose the sizes; valid: one of them");
  if (opts.has("min-size")) sizes.min_size = parse_size(*opts.get("min-size"));
  if (opts.has("max-size")) sizes.max_size = parse_size(*opts.get("max-size"));
  if (sizes.max_size < sizes.min_size) throw UsageError("--max-size is below --min-size");
  if (opts.has("size-per-rank")) {
    const uint64_t s = parse_size(*opts.get("size-per-rank"));
    if (s == 0 || s % sizeof(float) != 0)
      throw UsageError("--size-per-rank " + *opts.get("size-per-rank") +
                       " is no whole number of floats; valid: a positive multiple of 4 B, such as 16MiB");
    sizes.per_rank = s;
  }
  sizes.paper = opts.flag("paper-sizes");
  return sizes;
}
}  // namespace

NcclSettings nccl_settings(const Options& opts) {
  NcclSettings s;
  s.colls = opts.has("coll") ? opts.list("coll") : split_list("allreduce,allgather");
  for (const auto& c : s.colls) busbw_factor(c, 2);  // validates the name
  s.placements = opts.has("placement") ? opts.list("placement") : split_list("device");
  for (const auto& p : s.placements) check_nccl_placement_name(p);
  s.sizes = parse_sizes(opts);
  s.iters = static_cast<int>(opts.integer("iters", 20, 1, kMaxReps));
  s.warmup = static_cast<int>(opts.integer("warmup", 5, 0, kMaxReps));
  return s;
}

int plan_nccl(const Options& opts, const NcclSettings& s) {
  const PlannedJob job = *planned_job(opts, 1, [](const Topology& t) { return std::max<int>(1, t.gpus.size()); });
  const Topology& topo = job.topo;
  const MpiLayout layout = planned_layout(job.ranks, job.nodes, false);
  const int gpus = static_cast<int>(topo.gpus.size());
  if (gpus == 0) throw UsageError("nccl needs GPUs; the snapshot's node has none");
  const auto per_node = ranks_per_node(layout.node_of);
  const int most = *std::max_element(per_node.begin(), per_node.end());
  if (most > gpus)
    throw UsageError(std::to_string(most) + " ranks on a node with " + std::to_string(gpus) +
                     " GPUs; valid: at most one rank per GPU (--plan-ranks " + std::to_string(gpus * job.nodes) +
                     " for " + std::to_string(job.nodes) + (job.nodes == 1 ? " node)" : " nodes)"));
  const std::vector<NcclCase> cases = nccl_cases(s.colls, s.sizes, job.ranks);
  if (cases.empty())
    throw UsageError("--max-size " + format_size(s.sizes.max_size) + " leaves no buffer with 4 B for each of the " +
                     std::to_string(job.ranks) + " ranks; valid: at least " + std::to_string(4 * job.ranks) + " B");
  const int gpu = topo.gpus.front().id;  // rank 0 drives its node's first GPU
  for (const auto& name : s.placements) {
    const NcclPlacement p = nccl_placement(topo, name, gpu);
    for (const auto& c : cases)
      print_plan_line("nccl",
                      {{"coll", c.collective}, {"placement", name}, {"alloc", p.alloc}, {"mem", p.mem}, {"via", p.via},
                       {"ranks", std::to_string(job.ranks)}, {"nodes", std::to_string(job.nodes)},
                       {"size", std::to_string(c.size)}, {"rank_size", std::to_string(c.rank_bytes)}},
                      p.reason);
  }
  print_expectation("nccl", nccl_expectation(topo, gpu, s.placements, cases, job.ranks, job.nodes, s.warmup, s.iters));
  return kExitOk;
}

}  // namespace mempath::mpi
