// mempath: one CLI, subcommands (docs/cli.md); the commands are apps/registry.cpp's.
#include <string>
#include <vector>

#include "apps/benchmark.hpp"

int main(int argc, char** argv) {
  using namespace mempath;
  std::vector<std::string> all(argv, argv + argc);
  if (argc > 1 && all[1] == "--version") all[1] = "version";
  return dispatch(mempath_program(), all);
}
