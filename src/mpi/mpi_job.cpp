#include "mpi/mpi_job.hpp"

#include "core/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace mempath::mpi {

namespace {
std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}
}  // namespace

std::vector<std::string> gather_strings(const std::string& mine, const Job& job) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(job.size);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(job.size, 0);
  for (int r = 1; r < job.size; ++r) offsets[r] = offsets[r - 1] + lens[r - 1];
  std::string all(offsets.back() + lens.back(), '\0');
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (job.rank != 0) return out;
  for (int r = 0; r < job.size; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

Job discover_job() {
  Job job;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.size);
  // Every rank needs every host name: gather at 0, then broadcast the joined list.
  const std::string me = host_name();
  std::vector<std::string> hosts = gather_strings(me, job);
  std::string joined;
  for (const auto& h : hosts) joined += h + "\n";
  int len = static_cast<int>(joined.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  joined.resize(len);
  MPI_Bcast(joined.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  job.hosts.clear();
  for (size_t at = 0; at < joined.size();) {
    const size_t nl = joined.find('\n', at);
    job.hosts.push_back(joined.substr(at, nl - at));
    at = nl + 1;
  }
  std::vector<std::string> order;  // hosts by their first rank
  for (const auto& h : job.hosts)
    if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
  job.split_host = order.size() == 1 && job.size > 1;
  job.node_of.resize(job.size);
  job.local_of.resize(job.size);
  std::vector<int> count(std::max<size_t>(order.size(), 2), 0);
  for (int r = 0; r < job.size; ++r) {
    const int node = job.split_host ? (r < (job.size + 1) / 2 ? 0 : 1)
                                    : static_cast<int>(std::find(order.begin(), order.end(), job.hosts[r]) - order.begin());
    job.node_of[r] = node;
    job.local_of[r] = count[node]++;
  }
  job.nodes = job.split_host ? 2 : static_cast<int>(order.size());
  job.node = job.node_of[job.rank];
  job.local = job.local_of[job.rank];
  job.local_size = count[job.node];
  MPI_Comm_split(MPI_COMM_WORLD, job.node, job.local, &job.node_comm);
  return job;
}

std::string agree_on_reason(const std::string& mine) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int first = mine.empty() ? 1 << 30 : rank, chosen = 0;
  MPI_Allreduce(&first, &chosen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (chosen == 1 << 30) return "";
  std::string reason = rank == chosen ? mine : "";
  int len = static_cast<int>(reason.size());
  MPI_Bcast(&len, 1, MPI_INT, chosen, MPI_COMM_WORLD);
  reason.resize(len);
  MPI_Bcast(reason.data(), len, MPI_CHAR, chosen, MPI_COMM_WORLD);
  return "rank " + std::to_string(chosen) + ": " + reason;
}

int exit_code(const Job& job, bool any_ran, const std::string& first_skip, int code) {
  if (any_ran) return code;
  if (job.rank == 0)
    std::fprintf(stderr, "mempath-mpi: error: no case could run (%s); the skipped cases are in the result file\n",
                 first_skip.c_str());
  return kExitUsage;
}

void abort_job(const std::string& why, int code) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "mempath-mpi: rank %d: %s; ending every rank\n", rank, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort should not return; make sure nothing waits on us
}

Watchdog job_watchdog(double seconds) {
  return Watchdog(seconds, [seconds](const std::string& what) {
    abort_job(what + " ran longer than " + timeout_text(seconds));
  });
}

}  // namespace mempath::mpi
