#pragma once
// The MPI job as mempath-mpi sees it: which node each rank is on, its index there, a
// communicator per node, and the guards that keep one failing rank from leaving the
// others waiting forever.
#include <mpi.h>

#include "core/watchdog.hpp"

#include <string>
#include <vector>

namespace mempath::mpi {

struct Job {
  int rank = 0, size = 1;
  int node = 0, nodes = 1;       // node index (by first rank on it), node count
  int local = 0, local_size = 1;  // index and count of ranks on this rank's node
  bool split_host = false;        // one host only: its ranks were split into two halves
  std::vector<int> node_of, local_of;
  std::vector<std::string> hosts;  // per rank
  MPI_Comm node_comm = MPI_COMM_NULL;
};

// Groups ranks by host name. With every rank on one host (a workstation, a test), the
// first half of the ranks plays node 0 and the second half node 1, and split_host says so.
Job discover_job();

// Every rank's string at rank 0 (others get an empty vector).
std::vector<std::string> gather_strings(const std::string& mine, const Job& job);

// The first non-empty reason of any rank, the same on every rank: how a case that one
// rank cannot run (allocation, CUDA-aware MPI) is skipped everywhere together.
std::string agree_on_reason(const std::string& mine);

// The exit code of a run (the same on every rank): 2 with one line from rank 0 when no
// case could run (each was skipped: device buffers without a CUDA-aware MPI, a placement
// the node lacks), as asked-for work that cannot be done is bad input; else `code`.
int exit_code(const Job& job, bool any_ran, const std::string& first_skip, int code);

// Ends every rank of the job (MPI_Abort) after printing why, from any thread.
[[noreturn]] void abort_job(const std::string& why, int code = 1);

// The per-case watchdog of every rank: when a case runs longer than `seconds`, abort_job.
Watchdog job_watchdog(double seconds);

}  // namespace mempath::mpi
