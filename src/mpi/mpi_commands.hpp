#pragma once
// The benchmarks of mempath-mpi (mpi/main.cpp): the driver runs each on every rank of the
// job (apps/driver.hpp, mpi_job.hpp job_processes), or plans it (--from, mpi_plan.hpp).
#include <memory>

#include "apps/benchmark.hpp"

namespace mempath::mpi {

std::unique_ptr<Benchmark> make_bw();
std::unique_ptr<Benchmark> make_nccl();

}  // namespace mempath::mpi
