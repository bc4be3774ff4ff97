#include "apps/driver.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "apps/plan_print.hpp"
#include "core/conditions.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/provenance.hpp"
#include "core/result_run.hpp"

namespace mempath {

void Benchmark::print_plan(size_t i) const { mempath::print_plan(name(), plan_fields(i), skip_reason(i)); }
TableSpec Benchmark::cases_table() const { return {name() + "/cases", columns_of(name() + "/cases")}; }
TableSpec Benchmark::samples_table() const { return {name() + "/samples", columns_of(name() + "/samples")}; }

Row table_row(const Table& table, size_t index) {
  Row row;
  const auto& columns = table.columns();
  for (size_t c = 0; c < columns.size(); ++c) {
    switch (columns[c].type) {
      case ColumnType::Int: row[columns[c].name] = table.ints(c)[index]; break;
      case ColumnType::Float: row[columns[c].name] = table.floats(c)[index]; break;
      case ColumnType::String: row[columns[c].name] = table.strings(c)[index]; break;
    }
  }
  return row;
}

std::string status_shown(const Row& row) {
  const std::string& status = std::get<std::string>(row.at("status"));
  return status == "ok" && std::get<int64_t>(row.at("placed")) != 1 ? "misplaced" : status;
}

std::string format_eta(double seconds) {
  const long s = std::lround(std::max(seconds, 0.0));
  if (s < 60) return std::to_string(s) + " s";
  const long minutes = (s + 30) / 60;
  if (minutes < 60) return std::to_string(minutes) + " min";
  char text[32];
  std::snprintf(text, sizeof text, "%ld h %02ld min", minutes / 60, minutes % 60);
  return text;
}

std::string progress_line(size_t done, size_t total, const std::string& what, double eta_s) {
  std::string line = "[" + std::to_string(done) + "/" + std::to_string(total) + "] " + what;
  if (done < total) line += "  ETA " + (eta_s < 0 ? std::string("?") : format_eta(eta_s));
  return line;
}

namespace {

// The benchmark's fields plus `verified` wherever its rows have that column: the checks
// take the verdict from stdout, so they need no HDF5 reader beside ReFrame.
std::vector<SummaryField> line_fields(const Benchmark& bench, const Row& row) {
  auto fields = bench.summary_fields(row);
  const bool listed = std::any_of(fields.begin(), fields.end(), [](const SummaryField& f) {
    return f.key == "verified";
  });
  if (!listed && row.count("verified")) fields.push_back(field("verified"));
  return fields;
}

// "bw read cpu0 numa0 system 72 1073741824 local": the case as the plan names it (values
// that do not apply, such as a read's destination, left out).
std::string case_words(const Benchmark& bench, size_t i) {
  std::string what = bench.name();
  for (const auto& [key, value] : bench.plan_fields(i))
    if (!value.empty()) what += " " + value;
  return what;
}

// "case 3 (bw read cpu0 numa0 system)": what the watchdog names when a case hangs.
std::string describe(const Benchmark& bench, size_t i, int64_t id) {
  return "case " + std::to_string(id) + " (" + case_words(bench, i) + ")";
}

// The counter on stderr for a person waiting at a terminal; off where stderr is a log
// (ReFrame, CI), where carriage returns would pile up into one unreadable line.
class Progress {
 public:
  Progress(bool on, size_t total) : on_(on), total_(total) {}
  // After case `done - 1`; `seconds` < 0 for a case that did not run (skipped).
  void step(size_t done, const std::string& what, double seconds) {
    if (seconds >= 0) ran_seconds_ += seconds, ++ran_;
    if (!on_) return;
    const double eta = ran_ ? ran_seconds_ / static_cast<double>(ran_) * static_cast<double>(total_ - done) : -1;
    show(progress_line(done, total_, what, eta));
  }
  // Before other output on the terminal: the line is wiped, not overwritten half-way.
  void clear() {
    if (shown_ > 0) std::fprintf(stderr, "\r%s\r", std::string(shown_, ' ').c_str());
    shown_ = 0;
  }
  void finish() {
    if (on_ && shown_ > 0) std::fputc('\n', stderr);
    shown_ = 0;
  }

 private:
  void show(const std::string& line) {
    // Padded over a longer previous line so that none of its tail stays on screen.
    std::fprintf(stderr, "\r%s%s", line.c_str(), std::string(shown_ > line.size() ? shown_ - line.size() : 0, ' ').c_str());
    std::fflush(stderr);
    shown_ = line.size();
  }
  bool on_;
  size_t total_, ran_ = 0, shown_ = 0;
  double ran_seconds_ = 0;
};

std::vector<OptionSpec> with_progress_options(std::vector<OptionSpec> specs) {
  specs.push_back({"progress", "", "[case/total] and time left on stderr (default: if a terminal)"});
  specs.push_back({"no-progress", "", "never show the progress counter"});
  return specs;
}

bool progress_wanted(const Options& opts) {
  if (opts.flag("progress") && opts.flag("no-progress"))
    throw UsageError("--progress and --no-progress exclude each other");
  if (opts.flag("progress")) return true;
  return !opts.flag("no-progress") && isatty(STDERR_FILENO);
}

Outcome run_one(Benchmark& bench, ResultRun& run, size_t i, int64_t id) {
  const std::string skip = bench.skip_reason(i);
  if (!skip.empty()) return {"skipped", skip, {}};
  try {
    Watchdog::Scope guard(run.watchdog(), describe(bench, i, id));
    return bench.run(i);
  } catch (const Unsupported& e) {
    return {"skipped", e.what(), {}};
  } catch (const UsageError& e) {
    if (bench.cases() == 1) throw;  // the one case asked for: bad input, exit 2
    return {"skipped", e.what(), {}};
  } catch (const std::exception& e) {
    return {"failed", e.what(), {}};
  }
}

// The model's view of the plan: cases it runs and their summed modelled seconds.
struct Expectation {
  size_t planned = 0;
  double seconds = 0;
};

Expectation expectation(const Benchmark& bench, const Topology& topo) {
  Expectation e;
  for (size_t i = 0; i < bench.cases(); ++i)
    if (!bench.plan_skips(i)) ++e.planned, e.seconds += bench.expected_seconds(i);
  // A plan that runs nothing costs nothing worth saying; one that runs a case, the run's fixed cost.
  if (e.planned > 0) e.seconds += model::run_overhead_s(topo.gpus.size());
  return e;
}

}  // namespace

int run_benchmark(Benchmark& bench, const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts(bench.name(), bench.summary(),
               with_progress_options(with_from_option(with_run_options(bench.options(), bench.name()))));
  if (!opts.parse(args)) return kExitOk;
  const auto run_start = std::chrono::steady_clock::now();
  const bool plan_only = opts.has("from");
  const bool show_progress = progress_wanted(opts);
  const Topology topo = planning_topology(opts);
  bench.plan(opts, topo, plan_only);
  if (plan_only) {
    for (size_t i = 0; i < bench.cases(); ++i) bench.print_plan(i);
    const Expectation e = expectation(bench, topo);
    std::printf("%s\n", model::expect_line(bench.name(), bench.cases(), e.planned, e.seconds).c_str());
    return kExitOk;
  }
  bench.prepare();

  ResultRun run(opts, bench.name(), topo, argv);
  ResultFile& file = run.file();
  const TableSpec case_spec = bench.cases_table();
  const TableSpec sample_spec = bench.samples_table();
  Table& samples = file.table(sample_spec.name, sample_spec.columns);
  Table& case_rows = file.table(case_spec.name, case_spec.columns);
  bench.begin(file);
  // The node's state at the start and between cases (never inside one): docs/methodology.md.
  std::vector<std::string> uuids;
  if (!topo.gpus.empty())
    for (const auto& uuid : gpu::device_uuids()) uuids.push_back(gpu_uuid_text(uuid));
  std::unique_ptr<Conditions> conditions;
  {
    Watchdog::Scope guard(run.watchdog(), "the conditions reading at the run's start");
    conditions = std::make_unique<Conditions>(file, topo, uuids);
  }
  // Said before the first case, so a log shows how long the run should take while it runs.
  const Expectation expected = expectation(bench, topo);
  std::printf("%s\n", model::expect_line(bench.name(), bench.cases(), expected.planned, expected.seconds).c_str());
  std::fflush(stdout);

  int exit_code = kExitOk;
  int64_t next_id = 0;
  std::vector<size_t> group;  // rows of the running group, printed when it ends
  Progress progress(show_progress, bench.cases());
  // The case that hangs is inside a group whose earlier cases are written but not yet
  // printed: their lines say what the rows say (a sweep not complete), then the run ends.
  run.on_timeout([&] {
    progress.clear();
    for (size_t r : group) {
      const Row row = table_row(case_rows, r);
      std::printf("%s\n", summary_line(bench.name(), row, line_fields(bench, row)).c_str());
    }
    std::fflush(stdout);
  });
  auto end_group = [&] {
    if (group.empty()) return;
    if (bench.end_group(case_rows, group)) file.checkpoint();
    progress.clear();
    for (size_t r : group) {
      const Row row = table_row(case_rows, r);
      std::printf("%s\n", summary_line(bench.name(), row, line_fields(bench, row)).c_str());
    }
    std::fflush(stdout);
    group.clear();
  };
  for (size_t i = 0; i < bench.cases(); ++i) {
    if (i > 0 && bench.group(i) != bench.group(i - 1)) end_group();
    const bool runs = !bench.plan_skips(i);
    if (i > 0 && runs) {
      Watchdog::Scope guard(run.watchdog(), "the conditions reading before " + describe(bench, i, next_id));
      if (conditions->between_cases()) file.checkpoint();  // its rows saved as a case's are
    }
    const int64_t window_start = conditions->last();
    const auto started = std::chrono::steady_clock::now();
    const Outcome o = run_one(bench, run, i, next_id);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    CaseRows rows = bench.rows(i, o, next_id);
    for (const Row& r : rows.samples) samples.append(r);
    const CaseParts parts = runs ? case_parts(bench.plan_fields(i), topo) : CaseParts{};
    for (Row& r : rows.cases) {
      r[std::string(model::kCaseSecondsColumn)] = took.count();
      group.push_back(case_rows.rows());
      case_rows.append(r);
      if (runs) conditions->window(next_id, window_start, parts);
      ++next_id;
    }
    file.set_attribute("end_time", utc_now_iso8601());
    file.checkpoint();
    if (o.status == "failed") exit_code = kExitFailed;
    progress.step(i + 1, case_words(bench, i), o.status == "skipped" ? -1 : took.count());
  }
  {
    Watchdog::Scope guard(run.watchdog(), "the conditions reading after the last case");
    conditions->read();
    file.checkpoint();  // the last case's window ends here: saved even where the last case's save was not deferred
  }
  end_group();
  file.finish();
  progress.finish();
  bench.print_tables(case_rows);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - run_start;
  std::printf("%s\n", model::elapsed_line(bench.name(), bench.cases(), elapsed.count(), expected.seconds).c_str());
  std::fflush(stdout);
  std::cerr << "mempath: " << next_id << " cases written to " << file.path() << "\n";
  return exit_code;
}

Command::Command(std::unique_ptr<Benchmark> (*make)()) : benchmark(make) {
  const auto b = make();
  name = b->name();
  description = b->description();
}

std::string usage_text(const Program& program) {
  std::string text = wrap(program.usage, Options::help_width(), 0) + "\n\ncommands:\n";
  size_t column = 0;  // descriptions start two columns after the longest name
  for (const auto& c : program.commands) column = std::max(column, c.name.size() + 4);
  for (const auto& c : program.commands) {
    std::string name = "  " + c.name;
    name.resize(column, ' ');
    text += name + wrap(c.description, Options::help_width(), column, column) + "\n";
  }
  return text + "\n'" + program.name + " <command> --help' describes each command's options.\n";
}

const Command& find_command(const Program& program, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& c : program.commands) {
    if (c.name == name) return c;
    names.push_back(c.name);
  }
  throw UsageError("unknown command '" + name + "'; valid: " + join(names));
}

int dispatch(const Program& program, const std::vector<std::string>& argv) {
  if (argv.size() < 2 || argv[1] == "--help" || argv[1] == "-h" || argv[1] == "help") {
    std::cout << usage_text(program);
    return argv.size() < 2 ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> args(argv.begin() + 2, argv.end());
  try {
    const Command& c = find_command(program, argv[1]);
    return c.own ? c.own(args, argv) : run_benchmark(*c.benchmark(), args, argv);
  } catch (const UsageError& e) {
    std::cerr << program.name << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << program.name << ": failed: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace mempath
