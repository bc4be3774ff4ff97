// mempath-mpi built without NCCL (or without CUDA): `nccl` still plans (--from, no NCCL
// needed: mpi_plan.hpp) and says that it cannot run.
#include "core/error.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/mpi_plan.hpp"

namespace mempath::mpi {
int cmd_nccl(const std::vector<std::string>& args, const std::vector<std::string>&) {
  Options opts("nccl", "NCCL all-reduce and all-gather with the buffers in each memory (docs/cli.md).",
               nccl_option_specs());
  if (!opts.parse(args)) return kExitOk;
  const NcclSettings settings = nccl_settings(opts);
  if (opts.has("from")) return plan_nccl(opts, settings);
  throw UsageError("this mempath-mpi build has no NCCL: 'nccl' needs CUDA and NCCL at build time (it plans with "
                   "--from SNAPSHOT)");
}
}  // namespace mempath::mpi
