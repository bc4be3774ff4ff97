#pragma once
// Subcommands of mempath-mpi; each runs on every rank of the job.
#include <string>
#include <vector>

#include "mpi/mpi_job.hpp"

namespace mempath::mpi {

int cmd_bw(const std::vector<std::string>& args, const std::vector<std::string>& argv, const Job& job);
int cmd_nccl(const std::vector<std::string>& args, const std::vector<std::string>& argv, const Job& job);

}  // namespace mempath::mpi
