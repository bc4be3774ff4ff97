// mempath-mpi built without NCCL (or without CUDA): `nccl` still plans (--from, no NCCL
// needed: nccl_cases.hpp) and says that it cannot run.
#include "core/error.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/nccl_cases.hpp"

namespace mempath::mpi {
namespace {

const char* const kNoNccl =
    "this mempath-mpi build has no NCCL: 'nccl' needs CUDA and NCCL at build time (it plans with --from SNAPSHOT)";

class NcclPlanOnly final : public NcclCases {
 public:
  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (plan_only) return NcclCases::plan(opts, topo, true);
    read_settings(opts);  // bad options are said first, as where NCCL is
    throw UsageError(kNoNccl);
  }
  Outcome run(size_t) override { throw UsageError(kNoNccl); }
};

}  // namespace

std::unique_ptr<Benchmark> make_nccl() { return std::make_unique<NcclPlanOnly>(); }

}  // namespace mempath::mpi
