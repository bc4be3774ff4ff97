// mempath: one CLI, subcommands (docs/cli.md). The registry: adding a benchmark is one
// line here and its apps/NAME_command.cpp (docs/benchmarks.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/benchmark.hpp"
#include "build_info.hpp"
#include "core/error.hpp"

namespace mempath {
int cmd_topo(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
std::unique_ptr<Benchmark> make_bw();
std::unique_ptr<Benchmark> make_memcpy();
std::unique_ptr<Benchmark> make_allocmatrix();
std::unique_ptr<Benchmark> make_um();
std::unique_ptr<Benchmark> make_chase();
std::unique_ptr<Benchmark> make_pingpong();
std::unique_ptr<Benchmark> make_stream();
std::unique_ptr<Benchmark> make_gemm();
}  // namespace mempath

namespace {

int cmd_version(const std::vector<std::string>&, const std::vector<std::string>&) {
  std::cout << "mempath " << mempath::build::version << " (" << mempath::build::git_revision << ")\n";
  return mempath::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mempath;
  const Program program{
      "mempath",
      "usage: mempath <command> [options]\nMeasures what every memory path of this node delivers.",
      {
          {"topo", "processors, memories and paths of this node (or of a saved snapshot)", nullptr,
           [](const std::vector<std::string>& args, const std::vector<std::string>&) { return cmd_topo(args); }},
          {"list", "every bandwidth case this node supports, and the skipped ones with why", nullptr,
           [](const std::vector<std::string>& args, const std::vector<std::string>&) { return cmd_list(args); }},
          {"bw", "read/write/copy bandwidth of processor x memory x allocator", make_bw},
          {"memcpy", "host<->device transfers: copy engine and SM copies, size sweep, latency", make_memcpy},
          {"allocmatrix", "cudaMemcpy between every source and destination allocator", make_allocmatrix},
          {"um", "unified memory: interleaved CPU/GPU writes, in-place updates, evictions", make_um},
          {"chase", "pointer-chase latency of one CPU or GPU thread over each memory, by size", make_chase},
          {"pingpong", "compare-and-swap round trips between processors, flag in each memory", make_pingpong},
          {"stream", "STREAM (CPU, by thread count) and BabelStream (GPU) kernels under placement", make_stream},
          {"gemm", "cuBLAS GEMM with A and B in each memory, fp16/tf32/fp32/fp64, by size", make_gemm},
          {"version", "print the version and git revision", nullptr, cmd_version},
      }};
  std::vector<std::string> all(argv, argv + argc);
  if (argc > 1 && all[1] == "--version") all[1] = "version";
  return dispatch(program, all);
}
