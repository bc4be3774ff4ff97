#pragma once
// One benchmark of `mempath` or `mempath-mpi`: what it measures and how
// (docs/benchmarks.md). The driver (apps/driver.hpp) owns everything the benchmarks share:
// common options, topology, --from, the result file, the per-case watchdog, the
// skip/fail/exit rules, saving and the MEMPATH lines; apps/processes.hpp says who runs the
// cases (this process, or every rank of an MPI job). Cases are the benchmark's own,
// addressed by their plan position.
#include <any>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/options.hpp"
#include "core/results.hpp"
#include "core/summary_line.hpp"
#include "core/topology.hpp"

namespace mempath {

// What one run produced: status and reason for the driver, the measurements (any type)
// for the benchmark's rows(). `data` is empty when the case did not run (skipped by the
// plan, or an exception the driver turned into skipped/failed).
struct Outcome {
  std::string status = "ok";  // ok, skipped, failed
  std::string reason;
  std::any data;
};

struct TableSpec {
  std::string name;  // "bench/cases"
  std::vector<ColumnSpec> columns;
};

// The rows of one case: each cases-table row gets a MEMPATH line.
struct CaseRows {
  std::vector<Row> cases;
  std::vector<Row> samples;
};

using PlanFields = std::vector<std::pair<std::string, std::string>>;

// The model's view of a run: the cases it runs (the others are known skips) and their
// summed modelled seconds.
struct Expectation {
  size_t planned = 0;
  double seconds = 0;
};

// A benchmark's name and the words of its help: fixed text, given once to its constructor.
struct About {
  std::string name;
  std::string description;  // the one line of `mempath --help`
  std::string summary;      // the head of `mempath NAME --help`
};

class Benchmark {
 public:
  // `family`: the result family of its tables and lines (core/families.def), where that is
  // not its name (mempath-mpi's `bw` writes mpi_bw).
  explicit Benchmark(About about, std::string family = "")
      : about_(std::move(about)), family_(family.empty() ? about_.name : std::move(family)) {}
  virtual ~Benchmark() = default;
  const std::string& name() const { return about_.name; }
  const std::string& family() const { return family_; }
  const std::string& description() const { return about_.description; }
  const std::string& summary() const { return about_.summary; }
  // Its own options; the driver adds --output, --overwrite, --timeout and --from.
  virtual std::vector<OptionSpec> options() const = 0;

  // Plans the cases from the options and `topo` (alive until the run ends); UsageError for
  // bad input and for filters that select nothing. `plan_only`: --from, touch no device.
  virtual void plan(const Options& opts, const Topology& topo, bool plan_only) = 0;
  virtual size_t cases() const = 0;
  // The case's fields for --from's PLAN line: the keys of its MEMPATH line that the plan
  // knows, enough to tell it from every other case.
  virtual PlanFields plan_fields(size_t i) const = 0;
  virtual std::string skip_reason(size_t i) const = 0;
  // --from's PLAN line of case i (a benchmark whose runner records the plan's skips itself
  // gives the plan's reason here).
  virtual void print_plan(size_t i) const;
  // Modelled seconds case i takes (core/duration_model.hpp, constants there only): what
  // the case does, at the model's rates. Asked only for cases the plan runs.
  virtual double expected_seconds(size_t i) const = 0;
  // The plan skips case i (it takes no time): skip_reason's, for benchmarks whose
  // runners record the plan's skips themselves.
  virtual bool plan_skips(size_t i) const { return !skip_reason(i).empty(); }
  // The run as the model sees it, said first (EXPECT): by default expected_seconds of the
  // cases the plan runs and the run's fixed cost; a benchmark whose model is of the whole
  // run (mempath-mpi's: buffers per group, NCCL's start-up) gives its own.
  virtual Expectation expectation(const Topology& topo) const;

  // Before the result file is opened (start what all cases share: a noise reader, NCCL).
  virtual void prepare() {}
  // Root attributes of its own beside the provenance (mempath-mpi's job: mpi_ranks, ...).
  virtual std::map<std::string, Attribute> attributes() const { return {}; }
  // Tables written once per run, before the cases (chase's cache sizes).
  virtual void begin(ResultFile&) {}
  // Readies case i before it runs (mempath-mpi: its buffers); the exceptions of run() say
  // what comes of it. Under MPI each rank's outcome is agreed before any rank runs the
  // case, so a rank that cannot allocate does not leave its partner waiting: nothing here
  // may wait on another rank.
  virtual void setup(size_t i) { (void)i; }
  // Runs case i. Unsupported -> skipped; UsageError -> exit 2 if it is the only case, else
  // skipped; any other exception -> failed (the driver's rules). Under MPI every rank runs
  // it; an exception ends the job (the others may wait inside the case), and a failure is
  // returned as the Outcome, which the driver agrees across the ranks.
  virtual Outcome run(size_t i) = 0;

  // Its tables: FAMILY/cases and FAMILY/samples with the columns of core/families.def; the
  // driver fills the case's seconds (model::kCaseSecondsColumn) where the cases table has
  // that column, and a family without a samples table (nccl) has none (an empty name).
  // Only the driver's own tests override them.
  virtual TableSpec cases_table() const;
  virtual TableSpec samples_table() const;
  // The rows of case i; `first_id` is the case_id of its first cases row. Asked before the
  // case runs too, with an outcome "skipped" and no data, by every process: the words of
  // its rows are the progress counter's and the watchdog's (core/case_words.hpp), so it
  // changes no state. begin, summary_fields, end_group and print_tables are asked of the
  // process that writes only.
  virtual CaseRows rows(size_t i, const Outcome& o, int64_t first_id) = 0;
  // The MEMPATH line's fields of one written row (summary_line's rules apply).
  virtual std::vector<SummaryField> summary_fields(const Row& row) const = 0;

  // Consecutive cases with the same group (a sweep) end together: end_group may then set
  // cells of their rows (stream's best_threads, memcpy's saturation size) and the driver
  // prints their lines. Returns whether a cell changed (the file is saved again).
  virtual std::string group(size_t i) const { return std::to_string(i); }
  virtual bool end_group(Table& cases, const std::vector<size_t>& rows) {
    (void)cases, (void)rows;
    return false;
  }

  // After the last case and its MEMPATH lines: tables for a person at a terminal, built
  // from the written rows (bw --all's path matrix, memcpy's GPU x direction table; the
  // printer is core/text_table.hpp). What is printed must not start with MEMPATH.
  virtual void print_tables(const Table& cases) const { (void)cases; }

 private:
  About about_;
  std::string family_;
};

// A command of `mempath` or `mempath-mpi`: a Benchmark run by the driver, or a command of
// its own (topo, list, version).
struct Command {
  Command(std::string name, std::string description,
          int (*own)(const std::vector<std::string>& args, const std::vector<std::string>& argv))
      : name(std::move(name)), description(std::move(description)), own(own) {}
  // Name and usage line from the benchmark itself.
  explicit Command(std::unique_ptr<Benchmark> (*make)());
  std::string name;
  std::string description;
  std::unique_ptr<Benchmark> (*benchmark)() = nullptr;
  int (*own)(const std::vector<std::string>& args, const std::vector<std::string>& argv) = nullptr;
};

// A program's registry: its commands in the order its usage lists them.
struct Program {
  std::string name;   // "mempath"
  std::string usage;  // "usage: mempath <command> [options]\nMeasures ..."
  std::vector<Command> commands;
};

// mempath's registry (apps/registry.cpp).
const Program& mempath_program();

std::string usage_text(const Program& program);
// The command named `name`; UsageError listing the valid names for any other.
const Command& find_command(const Program& program, const std::string& name);
// The command of argv[1]: its exit code; help, unknown commands and the exit codes of
// errors as docs/cli.md says (UsageError: one line, exit 2; other exceptions: exit 1).
int dispatch(const Program& program, const std::vector<std::string>& argv);

}  // namespace mempath
