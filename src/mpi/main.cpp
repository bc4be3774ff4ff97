// mempath-mpi: the scale-out benchmarks, launched with srun or mpirun (docs/cli.md).
// Options are parsed alike on every rank, so bad options end every rank with exit 2 and
// rank 0 says why. After that every phase that waits on other ranks runs under the
// watchdog, and a phase's failure on any rank is agreed (mpi_job.hpp: phase), so all
// ranks end together with the line of the rank that knew why; an error in the middle of
// a case, where the others cannot be asked, ends the whole job at once (MPI_Abort).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/driver.hpp"
#include "build_info.hpp"
#include "core/error.hpp"
#include "core/options.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/mpi_plan.hpp"

namespace {

int cmd_version(const std::vector<std::string>&, const std::vector<std::string>&) {
  if (mempath::mpi::world_rank() == 0)
    std::printf("mempath-mpi %s (%s)\n", mempath::build::version, mempath::build::git_revision);
  return mempath::kExitOk;
}

// The registry of mempath-mpi (apps/benchmark.hpp): its usage and dispatch. Its
// benchmarks run under the one driver on every rank of the job (mpi_job.hpp
// job_processes): rank 0 writes the file and the lines.
const mempath::Program& program() {
  static const mempath::Program p{
      "mempath-mpi",
      "usage: srun|mpirun ... mempath-mpi <command> [options]\n"
      "The scale-out benchmarks: every rank runs the command; rank 0 writes the results.",
      {
          mempath::Command(mempath::mpi::make_bw),
          mempath::Command(mempath::mpi::make_nccl),
          {"version", "print the version and git revision", cmd_version},
      }};
  return p;
}

int run(const std::vector<std::string>& all, int rank) {
  const std::string command = all.size() > 1 ? all[1] : "";
  const std::vector<std::string> args(all.begin() + std::min<size_t>(2, all.size()), all.end());
  if (command.empty() || command == "--help" || command == "-h") {
    if (rank == 0) std::fputs(mempath::usage_text(program()).c_str(), stdout);
    return command.empty() ? mempath::kExitUsage : mempath::kExitOk;
  }
  const mempath::Command& c = mempath::find_command(program(), command);
  if (c.own) return c.own(args, all);
  return mempath::run_benchmark(*c.benchmark(), args, all, mempath::mpi::job_processes());
}
}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv, argv + argc);
  // A plan (--from SNAPSHOT, mpi_plan.hpp) starts no MPI: it runs anywhere, one process.
  const bool plan = all.size() > 2 && mempath::mpi::planning({all.begin() + 2, all.end()});
  if (plan) mempath::mpi::start_plan();
  else mempath::mpi::start_mpi(&argc, &argv);
  mempath::Options::set_program("mempath-mpi");
  const int rank = mempath::mpi::world_rank();
  int code = mempath::kExitOk;
  try {
    code = run(all, rank);
  } catch (const mempath::mpi::JobEnd& e) {
    code = e.code;  // agreed on every rank; the rank that knew why has said it
  } catch (const mempath::UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "mempath-mpi: error: %s\n", e.what());
    code = mempath::kExitUsage;
  } catch (const std::exception& e) {
    if (plan) {
      std::fprintf(stderr, "mempath-mpi: failed: %s\n", e.what());
      return mempath::kExitFailed;
    }
    mempath::mpi::abort_job(std::string("failed: ") + e.what());
  }
  if (!plan) mempath::mpi::finish_mpi();
  return code;
}
