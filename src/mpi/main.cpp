// mempath-mpi: the scale-out benchmarks, launched with srun or mpirun (docs/cli.md).
// Bad input is found by every rank alike, so every rank exits 2 and rank 0 says why;
// anything else that goes wrong on one rank ends the whole job at once (MPI_Abort).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "core/error.hpp"
#include "core/options.hpp"
#include "mpi/mpi_commands.hpp"

namespace {
const char* kUsage =
    "usage: srun|mpirun ... mempath-mpi <command> [options]\n"
    "commands:\n"
    "  bw        node-to-node bandwidth: windows of MPI_Isend/MPI_Irecv, uni- and bidirectional\n"
    "  nccl      NCCL all-reduce and all-gather with the buffers in each memory\n"
    "  version   print the version and git revision\n"
    "'mempath-mpi <command> --help' describes each command's options.\n";
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the watchdog may abort
  mempath::Options::set_program("mempath-mpi");
  std::vector<std::string> all(argv, argv + argc);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = mempath::kExitOk;
  try {
    const std::string command = argc > 1 ? all[1] : "";
    const std::vector<std::string> args(all.begin() + std::min<size_t>(2, all.size()), all.end());
    if (command.empty() || command == "--help" || command == "-h") {
      if (rank == 0) std::fputs(kUsage, stdout);
      code = command.empty() ? mempath::kExitUsage : mempath::kExitOk;
    } else if (command == "version") {
      if (rank == 0) std::printf("mempath-mpi %s (%s)\n", mempath::build::version, mempath::build::git_revision);
    } else if (command == "bw" || command == "nccl") {
      const auto job = mempath::mpi::discover_job();
      code = command == "bw" ? mempath::mpi::cmd_bw(args, all, job) : mempath::mpi::cmd_nccl(args, all, job);
    } else {
      throw mempath::UsageError("unknown command '" + command + "'; valid: bw, nccl, version");
    }
  } catch (const mempath::UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "mempath-mpi: error: %s\n", e.what());
    code = mempath::kExitUsage;
  } catch (const std::exception& e) {
    mempath::mpi::abort_job(std::string("failed: ") + e.what());
  }
  MPI_Finalize();
  return code;
}
