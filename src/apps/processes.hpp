#pragma once
// Who runs a benchmark's cases (docs/benchmarks.md): this process alone (mempath), or every
// rank of an MPI job (mempath-mpi, mpi/mpi_job.hpp), where every rank runs every case and
// rank 0 alone writes the file and the lines. The driver asks this seam for all that
// differs between the two, so that the driver itself includes no MPI.
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/benchmark.hpp"
#include "core/options.hpp"
#include "core/results.hpp"
#include "core/topology.hpp"
#include "core/watchdog.hpp"

namespace mempath {

// The result file of a run and the watchdog of its cases.
class RunOutput {
 public:
  virtual ~RunOutput() = default;
  // The file; nullptr on a process that does not write (an MPI rank other than 0).
  virtual ResultFile* file() = 0;
  virtual Watchdog& watchdog() = 0;
  // Runs on the watchdog's thread when a case outlives --timeout, before the run ends.
  virtual void on_timeout(std::function<void()> f) = 0;
  // After each finished case, on every process: end_time set and the file saved.
  virtual void save() = 0;
};

// The outcomes of a run, as the exit code needs them.
struct Tally {
  size_t ran = 0, failed = 0;  // cases not skipped; cases failed
  std::string first_skip, first_failure;
};

class Processes {
 public:
  virtual ~Processes() = default;
  // The program named in the run's last line ("mempath").
  virtual std::string program() const = 0;
  // The options the driver adds to a benchmark's own (--output, --timeout, --from, ...).
  virtual std::vector<OptionSpec> options(std::vector<OptionSpec> own, const std::string& name) const = 0;
  // Whether the progress counter is shown (after the options are parsed).
  virtual bool shows_progress(const Options& opts) const = 0;
  // Where this process's readings of its node's conditions (core/conditions.hpp) go: the
  // run's file (`file`, the writer's), a job's other machine's scratch file, or nowhere.
  virtual ResultFile* conditions_record(ResultFile* file, const Topology& topo) = 0;
  // After the last reading, on every process: a job's other machines' readings handed to
  // its writer (`machine_conditions`, docs/schema.md). Collective for a job.
  virtual void conditions_done(ResultFile* file) = 0;
  // Starts the run's processes and returns the node to plan for: --from's snapshot, or
  // this process's node.
  virtual Topology start(const Options& opts) = 0;
  // The run's output: `name`'s default file, `attributes` beside the provenance.
  virtual std::unique_ptr<RunOutput> open(const Options& opts, const std::string& name, const Topology& topo,
                                          const std::vector<std::string>& argv,
                                          const std::map<std::string, Attribute>& attributes) = 0;
  // The outcome every process records for a case: its own where it is alone; across ranks
  // that of the lowest rank that did not succeed, its reason prefixed "rank N: ".
  virtual Outcome agree(Outcome mine) = 0;
  // An exception left a case's run(): where other processes may be waiting inside the case
  // and cannot be asked, this ends them all and does not return.
  virtual void escaped(const std::exception& e) = 0;
  // The exit code of a finished run (said in one line where it is not the driver's 0 or 1).
  virtual int exit_code(const Tally& tally) = 0;
};

// mempath's: this process alone (apps/one_process.cpp).
Processes& one_process();

}  // namespace mempath
