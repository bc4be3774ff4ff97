#pragma once
// The MPI job as mempath-mpi sees it: which node each rank is on, its index there, a
// communicator per node, and the guards that keep one failing rank from leaving the
// others waiting forever: every phase that waits on other ranks runs under the
// watchdog, and a phase's outcome is agreed so that all ranks end together. The driver
// runs a command's cases on every rank through job_processes() (apps/processes.hpp).
#include <mpi.h>

#include "apps/processes.hpp"
#include "core/options.hpp"
#include "core/results.hpp"
#include "core/watchdog.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mempath::mpi {

struct Job {
  int rank = 0, size = 1;
  int node = 0, nodes = 1;       // node index (by first rank on it), node count
  int local = 0, local_size = 1;  // index and count of ranks on this rank's node
  bool split_host = false;        // one host only: its ranks were split into two halves
  int machines = 0;               // rank 0: kernels (boot ids) the ranks ran on; 0: unknown
  bool reads_machine = false;     // the lowest rank of its machine, where boot ids are known
  std::vector<int> node_of, local_of;
  std::vector<std::string> hosts;  // per rank
  MPI_Comm node_comm = MPI_COMM_NULL;
};

// MPI_Init_thread. The watchdog ends a stuck job from its own thread with MPI_Abort, which
// needs MPI_THREAD_MULTIPLE; with less, the watchdog only ends its own rank (_exit) and
// relies on every rank's own watchdog and the launcher for the others (said once on stderr).
void start_mpi(int* argc, char*** argv);
// A plan instead (mpi_plan.hpp): no MPI; this process is rank 0 of nothing.
void start_plan();
// MPI_Finalize under the watchdog.
void finish_mpi();
int world_rank();

// The time limit of every later phase (--timeout; 0: none; before a command parsed its
// options, the default of timeout_option).
void set_phase_limit(double seconds);
// Arm it for one scope: Watchdog::Scope armed(phase_watchdog(), "bw uni numa 1 MiB").
Watchdog& phase_watchdog();

// Thrown on every rank when a phase failed on some rank: main exits with `code`; the rank
// that knew why has printed its one line.
struct JobEnd {
  int code;
};

// Runs `body` on this rank under the watchdog, then every rank learns whether any rank's
// body threw. If one did, the lowest such rank prints its line and every rank throws
// JobEnd: exit 2 for a UsageError (bad input), 1 for any other error. `body` must not
// wait on other ranks before it may throw (its collectives belong after it).
void phase(const std::string& what, const std::function<void()>& body);

// Groups ranks by host name. With every rank on one host (a workstation, a test), the
// first half of the ranks plays node 0 and the second half node 1, and split_host says so.
Job discover_job();

// Every rank's string at rank 0 (others get an empty vector).
std::vector<std::string> gather_strings(const std::string& mine, const Job& job);

// A case's outcome, the same on every rank: that of the lowest rank whose case did not
// succeed, its reason prefixed "rank N: ", else this rank's own. How a case that one rank
// cannot run (allocation, CUDA-aware MPI) is skipped everywhere together, and how a data
// check that failed on one rank fails the case for all.
Outcome agree_on_outcome(Outcome mine);

// The exit code of a run (the same on every rank): 2 with one line from rank 0 when no
// case could run (each was skipped: device buffers without a CUDA-aware MPI, a placement
// the node lacks), as asked-for work that cannot be done is bad input; else `code`.
int exit_code(const Job& job, bool any_ran, const std::string& first_skip, int code);

// mempath-mpi's Processes: every rank of the job runs every case, rank 0 writes.
Processes& job_processes();
// The job it started (discover_job); outside a plan, once the driver started the run.
const Job& running_job();

// Ends every rank of the job (MPI_Abort) after printing why; from the watchdog's thread
// without MPI_THREAD_MULTIPLE, this rank only (_exit). Rank 0 first records `why` in a
// result file that has cases (JobFile).
[[noreturn]] void abort_job(const std::string& why, int code = 1);

// Rank 0's result file of a run (docs/cli.md, "Output files": --output, --overwrite) and
// the phase watchdog. Created and saved in phases, so a bad --output ends every rank with
// exit 2 and a failed write every rank with exit 1, and nothing is written before the
// first case.
class JobFile final : public RunOutput {
 public:
  // `attributes` runs on rank 0 only (provenance); `bench` names the default file.
  JobFile(const Job& job, const Options& opts, const std::string& bench, const std::string& host,
          const std::function<std::map<std::string, Attribute>()>& attributes);
  ~JobFile() override;
  JobFile(const JobFile&) = delete;
  JobFile& operator=(const JobFile&) = delete;

  // Rank 0's tables; nullptr on every other rank.
  ResultFile* file() override { return file_.get(); }
  Watchdog& watchdog() override { return phase_watchdog(); }
  void on_timeout(std::function<void()> f) override;
  // After each finished case, on every rank: rank 0 saves.
  void save() override;

 private:
  std::unique_ptr<ResultFile> file_;
};

}  // namespace mempath::mpi
