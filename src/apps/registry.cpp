// mempath's commands (docs/cli.md): adding a benchmark is one line here and its
// apps/NAME_command.cpp (docs/benchmarks.md). Apart from main() so the unit tests see every
// registered benchmark.
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
int cmd_export(const std::vector<std::string>& args);
std::unique_ptr<Benchmark> make_bw();
std::unique_ptr<Benchmark> make_memcpy();
std::unique_ptr<Benchmark> make_allocmatrix();
std::unique_ptr<Benchmark> make_um();
std::unique_ptr<Benchmark> make_chase();
std::unique_ptr<Benchmark> make_tlb();
std::unique_ptr<Benchmark> make_pingpong();
std::unique_ptr<Benchmark> make_stream();
std::unique_ptr<Benchmark> make_gemm();
std::unique_ptr<Benchmark> make_atomics();
std::unique_ptr<Benchmark> make_llm();

namespace {

int cmd_version(const std::vector<std::string>&, const std::vector<std::string>&) {
  std::cout << "mempath " << build::version << " (" << build::git_revision << ")\n";
  return kExitOk;
}

}  // namespace

const Program& mempath_program() {
  static const Program program{
      "mempath",
      "usage: mempath <command> [options]\nMeasures what every memory path of this node delivers.",
      {
          {"topo", "processors, memories and paths of this node (or of a saved snapshot)",
           [](const std::vector<std::string>& args, const std::vector<std::string>&) { return cmd_topo(args); }},
          {"list", "every bandwidth case this node supports, and the skipped ones with why",
           [](const std::vector<std::string>& args, const std::vector<std::string>&) { return cmd_list(args); }},
          Command(make_bw),
          Command(make_memcpy),
          Command(make_allocmatrix),
          Command(make_um),
          Command(make_chase),
          Command(make_tlb),
          Command(make_pingpong),
          Command(make_stream),
          Command(make_gemm),
          Command(make_atomics),
          Command(make_llm),
          {"export", "a result file's tables as CSV or JSON, for tools that do not read HDF5",
           [](const std::vector<std::string>& args, const std::vector<std::string>&) { return cmd_export(args); }},
          {"version", "print the version and git revision", cmd_version},
      }};
  return program;
}

}  // namespace mempath
