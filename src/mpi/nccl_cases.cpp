#include "mpi/nccl_cases.hpp"

#include <algorithm>
#include <cmath>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/units.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/mpi_plan.hpp"

namespace mempath::mpi {

namespace {

// A placement's allocator as its rows and lines name it: none where the node lacks it.
std::string alloc_text(const NcclPlacement& p) { return p.alloc ? alloc_name(*p.alloc) : ""; }

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

// Bad input in this rank's node (no GPU, more ranks than GPUs): found per node, so agreed.
int check_gpus(const Job& job, const Topology& topo) {
  const int gpus = static_cast<int>(topo.gpus.size());
  if (gpus == 0) throw UsageError("nccl needs GPUs; this node has none");
  if (job.local_size > gpus)
    throw UsageError(std::to_string(job.local_size) + " ranks on a node with " + std::to_string(gpus) +
                     " GPUs; valid: at most one rank per GPU");
  return job.split_host ? job.rank : job.local;
}

std::vector<NcclCase> sized(const std::vector<std::string>& colls, const NcclSizes& sizes, int ranks) {
  std::vector<NcclCase> cases = nccl_cases(colls, sizes, ranks);
  if (cases.empty())
    throw UsageError("--max-size " + format_size(sizes.max_size) + " leaves no buffer with 4 B for each of the " +
                     std::to_string(ranks) + " ranks; valid: at least " + std::to_string(4 * ranks) + " B");
  return cases;
}

}  // namespace

NcclCases::NcclCases()
    : Benchmark({"nccl", "NCCL all-reduce and all-gather with the buffers in each memory",
                 "NCCL all-reduce and all-gather with the buffers in each memory (docs/cli.md)."}) {}

std::vector<OptionSpec> NcclCases::options() const {
  return {{"coll", "LIST", "allreduce, allgather (default both)"},
          {"placement", "LIST", "device (default), hbm-system, host, peer, peer-host: where each rank's buffers are"},
          {"min-size", "SIZE", "smallest buffer (default 1KiB)"},
          {"max-size", "SIZE", "largest buffer (default 1GiB)"},
          {"size-per-rank", "SIZE", "one size instead of the sweep: each rank's input (all-gather gathers SIZE x ranks)"},
          {"paper-sizes", "",
           "one size instead of the sweep, the paper's Fig. 19: all-reduce 4 GiB, all-gather 16 MiB x ranks"},
          {"iters", "N", "timed collectives per size (default 20)"},
          {"warmup", "N", "untimed collectives per size first (default 5)"}};
}

void NcclCases::read_settings(const Options& opts) {
  colls_ = opts.has("coll") ? opts.list("coll") : split_list("allreduce,allgather");
  for (const auto& c : colls_) busbw_factor(c, 2);  // validates the name
  placement_names_ = opts.has("placement") ? opts.list("placement") : split_list("device");
  for (const auto& p : placement_names_) check_nccl_placement_name(p);
  size_options_ = parse_sizes(opts);
  iters_ = static_cast<int>(opts.integer("iters", 20, 1, kMaxReps));
  warmup_ = static_cast<int>(opts.integer("warmup", 5, 0, kMaxReps));
}

void NcclCases::plan(const Options& opts, const Topology& topo, bool plan_only) {
  read_settings(opts);
  topo_ = &topo;
  if (plan_only) {
    // One rank per GPU of each node unless --plan-ranks says otherwise; rank 0 drives its
    // node's first GPU.
    const PlannedJob job = planned_job(opts, topo, 1, [](const Topology& t) { return std::max<int>(1, t.gpus.size()); });
    const MpiLayout layout = planned_layout(job.ranks, job.nodes, false);
    const int gpus = static_cast<int>(topo.gpus.size());
    if (gpus == 0) throw UsageError("nccl needs GPUs; the snapshot's node has none");
    const auto per_node = ranks_per_node(layout.node_of);
    const int most = *std::max_element(per_node.begin(), per_node.end());
    if (most > gpus)
      throw UsageError(std::to_string(most) + " ranks on a node with " + std::to_string(gpus) +
                       " GPUs; valid: at most one rank per GPU (--plan-ranks " + std::to_string(gpus * job.nodes) +
                       " for " + std::to_string(job.nodes) + (job.nodes == 1 ? " node)" : " nodes)"));
    ranks_ = job.ranks, hosts_ = job.nodes;
    sizes_ = sized(colls_, size_options_, ranks_);
    gpu_ = topo.gpus.front().id;
  } else {
    refuse_plan_shape(opts);
    const Job& job = running_job();
    phase("checking the GPUs", [&] { gpu_ = check_gpus(job, topo); });
    ranks_ = job.size;
    hosts_ = job.split_host ? 1 : job.nodes;  // collectives span hosts, not halves
    phase("planning the sizes", [&] { sizes_ = sized(colls_, size_options_, ranks_); });
  }
  placements_.clear();
  for (const auto& name : placement_names_) placements_.push_back(nccl_placement(topo, name, gpu_));
  for (const auto& c : sizes_) in_bytes_ = std::max(in_bytes_, c.rank_bytes), out_bytes_ = std::max(out_bytes_, c.size);
}

PlanFields NcclCases::plan_fields(size_t i) const {
  const NcclPlacement& p = placement(i);
  const NcclCase& c = size(i);
  return {{"coll", c.collective}, {"placement", p.name}, {"alloc", alloc_text(p)}, {"mem", p.mem}, {"via", p.via},
          {"ranks", std::to_string(ranks_)}, {"nodes", std::to_string(hosts_)},
          {"size", std::to_string(c.size)}, {"rank_size", std::to_string(c.rank_bytes)}};
}

double NcclCases::expected_seconds(size_t i) const {
  const GpuInfo* own = topo_->find_gpu(gpu_);
  const std::string gpu_link = own && !own->nvlink_peers.empty() ? "nvlink" : "pcie";
  const NcclPlacement& p = placement(i);
  return nccl_case_s(size(i), ranks_, hosts_, p.via, gpu_link, warmup_, iters_, !alloc_info(*p.alloc).gpu_memory);
}

// From rank 0's view of its GPU (docs/cli.md, "Expected duration"): NCCL started, then per
// placement its buffers and every case.
Expectation NcclCases::expectation(const Topology& topo) const {
  const ScaleoutExpectation e =
      nccl_expectation(topo, gpu_, placement_names_, sizes_, ranks_, hosts_, warmup_, iters_);
  return {e.planned, e.seconds};
}

CaseRows NcclCases::rows(size_t i, const Outcome& o, int64_t first_id) {
  const NcclPlacement& p = placement(i);
  const NcclCase& c = size(i);
  const double* timed = std::any_cast<double>(&o.data);
  const double us = timed ? *timed : -1;  // the slowest rank's time per collective
  const double algbw = us > 0 ? c.size / (us * 1e-6) / 1e9 : std::nan("");
  const double busbw = algbw * busbw_factor(c.collective, ranks_);
  return {{{{"case_id", first_id}, {"collective", c.collective}, {"placement", p.name}, {"alloc", alloc_text(p)},
            {"ranks", static_cast<int64_t>(ranks_)}, {"nodes", static_cast<int64_t>(hosts_)},
            {"size_bytes", static_cast<int64_t>(c.size)}, {"iters", static_cast<int64_t>(iters_)},
            {"status", o.status}, {"reason", o.reason}, {"time_us", us > 0 ? us : std::nan("")},
            {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"verified", static_cast<int64_t>(o.status == "ok")},
            {"mem", p.mem}, {"via", p.via}, {"rank_bytes", static_cast<int64_t>(c.rank_bytes)}}},
          {}};
}

std::vector<SummaryField> NcclCases::summary_fields(const Row&) const {
  return {field("coll", "collective"), field("placement"), field("alloc"), field("mem"),
          field("ranks"), field("nodes"), field("size", "size_bytes"),
          field("rank_size", "rank_bytes"), field("status"), metric("time_us", 2),
          metric("algbw_GBps", 2), metric("busbw_GBps", 2)};
}

}  // namespace mempath::mpi
