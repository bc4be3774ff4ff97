#pragma once
// `mempath-mpi nccl`'s cases (docs/cli.md), one Benchmark for the run (nccl_bench.cpp) and
// the build without NCCL (nccl_none.cpp), which still plans (--from): its options and
// settings, the plan of the job or of a snapshot, the model, the rows and lines. Running
// the cases is nccl_bench.cpp's. Placements, sizes and bandwidths (nccl-tests') are
// core/scaleout_plan.hpp's.
#include <map>
#include <string>
#include <vector>

#include "apps/benchmark.hpp"
#include "core/scaleout_plan.hpp"

namespace mempath::mpi {

class NcclCases : public Benchmark {
 public:
  NcclCases();
  std::vector<OptionSpec> options() const override;
  // Of the job (every rank; its checks agreed) or, with --from, of the planned one.
  void plan(const Options& opts, const Topology& topo, bool plan_only) override;
  size_t cases() const override { return placements_.size() * sizes_.size(); }
  PlanFields plan_fields(size_t i) const override;
  std::string skip_reason(size_t i) const override { return placement(i).reason; }
  double expected_seconds(size_t i) const override;
  Expectation expectation(const Topology& topo) const override;
  CaseRows rows(size_t i, const Outcome& o, int64_t first_id) override;
  std::vector<SummaryField> summary_fields(const Row& row) const override;

 protected:
  // --coll, --placement, the sizes, --iters and --warmup: UsageError for bad ones.
  void read_settings(const Options& opts);
  // Where case i's buffers are (placements outer, sizes inner) and what it moves.
  size_t placement_index(size_t i) const { return i / sizes_.size(); }
  const NcclPlacement& placement(size_t i) const { return placements_[placement_index(i)]; }
  const NcclCase& size(size_t i) const { return sizes_[i % sizes_.size()]; }

  std::vector<std::string> colls_, placement_names_;
  NcclSizes size_options_;
  int iters_ = 20, warmup_ = 5;
  std::vector<NcclPlacement> placements_;  // as this rank's GPU sees them
  std::vector<NcclCase> sizes_;
  const Topology* topo_ = nullptr;
  int gpu_ = 0, ranks_ = 1, hosts_ = 1;  // this rank's GPU; the job's ranks and the hosts they span
  uint64_t in_bytes_ = 0, out_bytes_ = 0;  // one input and one output per placement, of the largest case
};

}  // namespace mempath::mpi
