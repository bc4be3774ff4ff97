#pragma once
// The one case loop of every benchmark (docs/benchmarks.md).
#include <string>
#include <vector>

#include "apps/benchmark.hpp"

namespace mempath {

// `args`: after the command name; `argv`: the whole command line (provenance).
// Returns the exit code: 0, or 1 when a case failed; UsageError escapes (exit 2).
int run_benchmark(Benchmark& bench, const std::vector<std::string>& args, const std::vector<std::string>& argv);

// Row `index` of `table` as a Row (the cells as written, after any Table::set).
Row table_row(const Table& table, size_t index);

}  // namespace mempath
