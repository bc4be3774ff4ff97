#pragma once
// The one case loop of every benchmark (docs/benchmarks.md).
#include <cstddef>
#include <string>
#include <vector>

#include "apps/benchmark.hpp"
#include "apps/processes.hpp"

namespace mempath {

// `args`: after the command name; `argv`: the whole command line (provenance); `processes`:
// who runs the cases (mempath-mpi: every rank of its job). Returns the exit code
// (processes.exit_code: 0, or 1 when a case failed); UsageError escapes (exit 2).
int run_benchmark(Benchmark& bench, const std::vector<std::string>& args, const std::vector<std::string>& argv,
                  Processes& processes = one_process());

// The progress line after `done` of `total` cases (without the leading \r):
// "[37/412] bw read gpu0 numa1 system  ETA 3 min"; `eta_s` < 0: not known yet.
std::string progress_line(size_t done, size_t total, const std::string& what, double eta_s);
// "45 s", "3 min", "2 h 05 min": the time left, as coarse as an estimate deserves.
std::string format_eta(double seconds);

// Row `index` of `table` as a Row (the cells as written, after any Table::set).
Row table_row(const Table& table, size_t index);

// A written row's status in a printed table: an ok case whose pages were not where they
// were asked to be shows as misplaced, not as the path's figure.
std::string status_shown(const Row& row);

}  // namespace mempath
