// mempath-mpi built without NCCL (or without CUDA): `nccl` says so.
#include "core/error.hpp"
#include "mpi/mpi_commands.hpp"

namespace mempath::mpi {
int cmd_nccl(const std::vector<std::string>&, const std::vector<std::string>&) {
  throw UsageError("this mempath-mpi build has no NCCL: 'nccl' needs CUDA and NCCL at build time");
}
}  // namespace mempath::mpi
