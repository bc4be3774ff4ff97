#pragma once
// What every command that writes results shares (docs/cli.md, "Output files" and "Time
// limits"): --output, --overwrite and --timeout, the result file and the per-case watchdog.
#include <functional>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/results.hpp"
#include "core/topology.hpp"
#include "core/watchdog.hpp"

namespace mempath {

// `specs` plus --output (default mempath-BENCH-HOST-TIME-PID.h5), --overwrite, --timeout.
std::vector<OptionSpec> with_run_options(std::vector<OptionSpec> specs, const std::string& bench);

// --timeout in seconds (0: none), checked; the default is generous: a case that takes
// longer is stuck (a hung kernel, a peer that never answers).
double timeout_option(const Options& opts, double fallback = 900);

class ResultRun {
 public:
  // Checks the output (policy of ResultFile) before any case runs.
  ResultRun(const Options& opts, const std::string& bench, const Topology& topo,
            const std::vector<std::string>& argv);
  ResultFile& file() { return file_; }
  // Arm for the scope of one case: Watchdog::Scope guard(run.watchdog(), "bw read cpu0 numa0");
  // a case that outlives --timeout ends the run (exit 1) with the finished cases saved.
  Watchdog& watchdog() { return watchdog_; }
  // Runs on the watchdog's thread when a case outlives --timeout, before the run ends: the
  // driver prints the lines of the sweep that will not end (stream's sweep_complete=0).
  void on_timeout(std::function<void()> f) { on_timeout_ = std::move(f); }

 private:
  ResultFile file_;  // before the watchdog: the watchdog's handler uses it
  std::function<void()> on_timeout_;
  Watchdog watchdog_;
};

}  // namespace mempath
