#pragma once
// Subcommands of mempath-mpi; each runs on every rank of the job: it parses its options
// (alike on every rank), then starts the job (mpi_job.hpp) under its --timeout.
#include <string>
#include <vector>

#include "mpi/mpi_job.hpp"

namespace mempath::mpi {

int cmd_bw(const std::vector<std::string>& args, const std::vector<std::string>& argv);
int cmd_nccl(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace mempath::mpi
