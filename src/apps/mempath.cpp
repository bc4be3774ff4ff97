// mempath: one CLI, subcommands (docs/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.hpp"
#include "build_info.hpp"
#include "core/error.hpp"

namespace {

const char* kUsage =
    "usage: mempath <command> [options]\n"
    "Measures what every memory path of this node delivers.\n\n"
    "commands:\n"
    "  topo      processors, memories and paths of this node (or of a saved snapshot)\n"
    "  list      every bandwidth case this node supports, and the skipped ones with why\n"
    "  bw        read/write/copy bandwidth of processor x memory x allocator\n"
    "  memcpy    host<->device transfers: copy engine and SM copies, size sweep, latency\n"
    "  allocmatrix cudaMemcpy between every source and destination allocator\n"
    "  um        unified memory: interleaved CPU/GPU writes, in-place updates, evictions\n"
    "  chase     pointer-chase latency of one CPU or GPU thread over each memory, by size\n"
    "  pingpong  compare-and-swap round trips between processors, flag in each memory\n"
    "  stream    STREAM (CPU, by thread count) and BabelStream (GPU) kernels under placement\n"
    "  gemm      cuBLAS GEMM with A and B in each memory, fp16/tf32/fp32/fp64, by size\n"
    "  version   print the version and git revision\n\n"
    "'mempath <command> --help' describes each command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> all(argv, argv + argc);
  if (argc < 2 || all[1] == "--help" || all[1] == "-h" || all[1] == "help") {
    std::cout << kUsage;
    return argc < 2 ? mempath::kExitUsage : mempath::kExitOk;
  }
  const std::string command = all[1];
  const std::vector<std::string> args(all.begin() + 2, all.end());
  try {
    if (command == "topo") return mempath::cmd_topo(args);
    if (command == "list") return mempath::cmd_list(args);
    if (command == "bw") return mempath::cmd_bw(args, all);
    if (command == "memcpy") return mempath::cmd_memcpy(args, all);
    if (command == "um") return mempath::cmd_um(args, all);
    if (command == "chase") return mempath::cmd_chase(args, all);
    if (command == "pingpong") return mempath::cmd_pingpong(args, all);
    if (command == "stream") return mempath::cmd_stream(args, all);
    if (command == "gemm") return mempath::cmd_gemm(args, all);
    if (command == "allocmatrix") return mempath::cmd_allocmatrix(args, all);
    if (command == "version" || command == "--version") {
      std::cout << "mempath " << mempath::build::version << " (" << mempath::build::git_revision << ")\n";
      return mempath::kExitOk;
    }
    throw mempath::UsageError("unknown command '" + command + "'; valid: topo, list, bw, memcpy, allocmatrix, um, chase, pingpong, stream, gemm, version");
  } catch (const mempath::UsageError& e) {
    std::cerr << "mempath: error: " << e.what() << "\n";
    return mempath::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "mempath: failed: " << e.what() << "\n";
    return mempath::kExitFailed;
  }
}
