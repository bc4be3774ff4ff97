#include "apps/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/plan_print.hpp"
#include "core/case_words.hpp"
#include "core/conditions.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/provenance.hpp"

namespace mempath {

void Benchmark::print_plan(size_t i) const { mempath::print_plan(family(), plan_fields(i), skip_reason(i)); }
TableSpec Benchmark::cases_table() const { return {family() + "/cases", columns_of(family() + "/cases")}; }
TableSpec Benchmark::samples_table() const {
  const std::string table = family() + "/samples";
  const auto names = table_names();
  if (std::find(names.begin(), names.end(), table) == names.end()) return {};
  return {table, columns_of(table)};
}

Expectation Benchmark::expectation(const Topology& topo) const {
  Expectation e;
  for (size_t i = 0; i < cases(); ++i)
    if (!plan_skips(i)) ++e.planned, e.seconds += expected_seconds(i);
  // A plan that runs nothing costs nothing worth saying; one that runs a case, the run's fixed cost.
  if (e.planned > 0) e.seconds += model::run_overhead_s(topo.gpus.size());
  return e;
}

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

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Case i in words, as the report and the fleet say it (core/case_words.hpp): the words of
// the rows it writes, known before it runs ("gpu0 HBM read"). Rows whose words differ in
// one word alone are said once ("cpu0 STREAM copy/scale/add/triad on numa0 (numa)"),
// others by the first and their count.
std::string case_text(Benchmark& bench, size_t i, int64_t id, const Topology& topo) {
  const CaseRows rows = bench.rows(i, Outcome{"skipped", "", {}}, id);
  if (rows.cases.empty()) return bench.family() + " case " + std::to_string(id);
  const std::string first = case_words(bench.family(), rows.cases.front(), topo);
  const std::string many = first + " and " + std::to_string(rows.cases.size() - 1) + " more";
  const std::vector<std::string> head = split_words(first);
  std::vector<std::string> merged = head;
  size_t at = head.size();  // the one word in which the rows differ, once one does
  for (const Row& r : rows.cases) {
    const std::vector<std::string> words = split_words(case_words(bench.family(), r, topo));
    if (words.size() != head.size()) return many;
    for (size_t w = 0; w < words.size(); ++w) {
      if (words[w] == head[w]) continue;
      if (at != head.size() && at != w) return many;
      at = w;
      if (("/" + merged[w] + "/").find("/" + words[w] + "/") == std::string::npos) merged[w] += "/" + words[w];
    }
  }
  std::string text;
  for (const auto& w : merged) text += (text.empty() ? "" : " ") + w;
  return text;
}

// "case 3 (gpu0 HBM read)": what the watchdog names when a case hangs.
std::string watchdog_text(const std::string& words, int64_t id) {
  return "case " + std::to_string(id) + " (" + words + ")";
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

// What an exception out of a case means (docs/cli.md): Unsupported, skipped; UsageError,
// bad input when it is the only case, else skipped; anything else, failed.
template <class Body>
Outcome guarded(const Benchmark& bench, Body body) {
  try {
    return body();
  } catch (const Unsupported& e) {
    return {"skipped", e.what(), {}};
  } catch (const UsageError& e) {
    if (bench.cases() == 1) throw;  // the one case asked for: bad input, exit 2
    return {"skipped", e.what(), {}};
  } catch (const std::exception& e) {
    return {"failed", e.what(), {}};
  }
}

// Case i's outcome as every process records it: the plan's skip or setup's, agreed before
// any process runs the case; then the run's, agreed.
Outcome run_one(Benchmark& bench, Processes& processes, RunOutput& out, size_t i, const std::string& watched) {
  const std::string skip = bench.skip_reason(i);
  // Outside the case's time limit: setup waits on no other process, and making a group's
  // buffers (mempath-mpi: two of the largest message, first touched) is no case's time.
  Outcome o = skip.empty() ? guarded(bench, [&] { return bench.setup(i), Outcome{}; }) : Outcome{"skipped", skip, {}};
  Watchdog::Scope guard(out.watchdog(), watched);
  o = processes.agree(std::move(o));
  if (o.status != "ok") return o;
  o = guarded(bench, [&] {
    try {
      return bench.run(i);
    } catch (const std::exception& e) {
      processes.escaped(e);
      throw;
    }
  });
  return processes.agree(std::move(o));
}

void count(Tally& tally, const Outcome& o) {
  if (o.status == "skipped") {
    if (tally.first_skip.empty()) tally.first_skip = o.reason;
    return;
  }
  ++tally.ran;
  if (o.status != "failed") return;
  if (tally.failed++ == 0) tally.first_failure = o.reason;
}

bool has_column(const TableSpec& spec, const std::string& name) {
  return std::any_of(spec.columns.begin(), spec.columns.end(), [&](const ColumnSpec& c) { return c.name == name; });
}

// Flushed at once: a log read while the run goes on (ReFrame, a job's output) shows it then.
void print_now(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// The model's figures for the EXPECT and ELAPSED lines come from the plan just made.
Expectation plan_cases(Benchmark& bench, const Options& opts, const Topology& topo, bool plan_only) {
  bench.plan(opts, topo, plan_only);
  return bench.expectation(topo);
}

// --from's whole output: what a run on that node would do, and how long it would take.
void print_plan_lines(const Benchmark& bench, const std::string& expect_line) {
  for (size_t i = 0; i < bench.cases(); ++i) bench.print_plan(i);
  std::printf("%s\n", expect_line.c_str());
}

// The state the steps of a run share. Not copyable: the watchdog's thread prints the open
// group's lines through it when a case hangs.
class Run {
 public:
  Run(Benchmark& bench, Processes& processes, const Topology& topo, bool show_progress)
      : bench_(bench), processes_(processes), topo_(topo), progress_(show_progress, bench.cases()) {}
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void open(const Options& opts, const std::vector<std::string>& argv);
  void read_conditions_at_start();
  void run_cases();
  void finish();
  void print_results(std::chrono::steady_clock::time_point run_start, double expected_seconds) const;
  // Only the process that writes has a file, and it alone prints the run's lines.
  bool writes() const { return file_ != nullptr; }
  const Tally& tally() const { return tally_; }

 private:
  void run_case(size_t i);
  void read_conditions_before(const std::string& next_case);
  void write(CaseRows& rows, double seconds);
  void end_group();
  void print_group();

  Benchmark& bench_;
  Processes& processes_;
  const Topology& topo_;
  // Destroyed after the members below: the conditions and tables write into its file.
  std::unique_ptr<RunOutput> out_;
  ResultFile* file_ = nullptr;
  Table* samples_ = nullptr;
  Table* case_rows_ = nullptr;
  bool timed_ = false;
  std::unique_ptr<Conditions> conditions_;
  Tally tally_;
  int64_t next_id_ = 0;
  std::vector<size_t> group_;  // rows of the running group, printed when it ends
  Progress progress_;
};

void Run::open(const Options& opts, const std::vector<std::string>& argv) {
  out_ = processes_.open(opts, bench_.name(), topo_, argv, bench_.attributes());
  file_ = out_->file();
  const TableSpec case_spec = bench_.cases_table();
  const TableSpec sample_spec = bench_.samples_table();
  timed_ = has_column(case_spec, model::kCaseSecondsColumn);
  if (!file_) return;
  if (!sample_spec.name.empty()) samples_ = &file_->table(sample_spec.name, sample_spec.columns);
  case_rows_ = &file_->table(case_spec.name, case_spec.columns);
  bench_.begin(*file_);
}

// The node's state at the start and between cases (never inside one): docs/methodology.md.
void Run::read_conditions_at_start() {
  ResultFile* record = processes_.conditions_record(file_, topo_);
  if (!record) return;
  std::vector<std::string> uuids;
  if (!topo_.gpus.empty())
    for (const auto& uuid : gpu::device_uuids()) uuids.push_back(gpu_uuid_text(uuid));
  Watchdog::Scope guard(out_->watchdog(), "the conditions reading at the run's start");
  conditions_ = std::make_unique<Conditions>(*record, topo_, uuids);
}

void Run::run_cases() {
  // The case that hangs is inside a group whose earlier cases are written but not yet
  // printed: their lines say what the rows say (a sweep not complete), then the run ends.
  out_->on_timeout([this] { print_group(); });
  for (size_t i = 0; i < bench_.cases(); ++i) run_case(i);
}

// Saved after each case, so that a run cut short keeps every case it finished.
void Run::run_case(size_t i) {
  if (file_ && i > 0 && bench_.group(i) != bench_.group(i - 1)) end_group();
  const bool runs = !bench_.plan_skips(i);
  const std::string words = case_text(bench_, i, next_id_, topo_);
  if (conditions_ && i > 0 && runs) read_conditions_before(watchdog_text(words, next_id_));
  const int64_t window_start = conditions_ ? conditions_->last() : 0;
  const auto started = std::chrono::steady_clock::now();
  const Outcome o = run_one(bench_, processes_, *out_, i, watchdog_text(words, next_id_));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  // Every process counts the rows (the watchdog names cases by id); one writes them.
  CaseRows rows = bench_.rows(i, o, next_id_);
  if (conditions_ && runs) {
    const CaseParts parts = case_parts(bench_.plan_fields(i), topo_);
    for (size_t k = 0; k < rows.cases.size(); ++k)
      conditions_->window(next_id_ + static_cast<int64_t>(k), window_start, parts);
  }
  if (file_) write(rows, took.count());
  next_id_ += static_cast<int64_t>(rows.cases.size());
  out_->save();
  count(tally_, o);
  progress_.step(i + 1, words, o.status == "skipped" ? -1 : took.count());
}

void Run::read_conditions_before(const std::string& next_case) {
  Watchdog::Scope guard(out_->watchdog(), "the conditions reading before " + next_case);
  if (conditions_->between_cases() && file_) file_->checkpoint();  // its rows saved as a case's are
}

void Run::write(CaseRows& rows, double seconds) {
  if (samples_)
    for (const Row& r : rows.samples) samples_->append(r);
  for (Row& r : rows.cases) {
    if (timed_) r[std::string(model::kCaseSecondsColumn)] = seconds;
    group_.push_back(case_rows_->rows());
    case_rows_->append(r);
  }
}

void Run::end_group() {
  if (group_.empty()) return;
  if (bench_.end_group(*case_rows_, group_)) file_->checkpoint();
  print_group();
  group_.clear();
}

void Run::print_group() {
  progress_.clear();
  for (size_t r : group_) {
    const Row row = table_row(*case_rows_, r);
    std::printf("%s\n", summary_line(bench_.family(), row, line_fields(bench_, row)).c_str());
  }
  std::fflush(stdout);
}

void Run::finish() {
  if (conditions_) {
    Watchdog::Scope guard(out_->watchdog(), "the conditions reading after the last case");
    conditions_->read();
    // the last case's window ends here: saved even where the last case's save was not deferred
    if (file_) file_->checkpoint();
  }
  conditions_.reset();
  processes_.conditions_done(file_);
  if (file_) {
    end_group();
    file_->finish();
  }
  progress_.finish();
}

void Run::print_results(std::chrono::steady_clock::time_point run_start, double expected_seconds) const {
  bench_.print_tables(*case_rows_);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - run_start;
  print_now(model::elapsed_line(bench_.family(), bench_.cases(), elapsed.count(), expected_seconds));
  std::cerr << processes_.program() << ": " << next_id_ << " cases written to " << file_->path() << "\n";
}

}  // namespace

int run_benchmark(Benchmark& bench, const std::vector<std::string>& args, const std::vector<std::string>& argv,
                  Processes& processes) {
  Options opts(bench.name(), bench.summary(), processes.options(bench.options(), bench.name()));
  if (!opts.parse(args)) return kExitOk;  // --help: printed, nothing to run
  const auto run_start = std::chrono::steady_clock::now();
  const bool plan_only = opts.has("from");
  const bool show_progress = processes.shows_progress(opts);
  const Topology topo = processes.start(opts);  // the benchmark keeps it until the run ends
  const Expectation expected = plan_cases(bench, opts, topo, plan_only);
  const std::string expect_line = model::expect_line(bench.family(), bench.cases(), expected.planned, expected.seconds);
  if (plan_only) {
    print_plan_lines(bench, expect_line);
    return kExitOk;
  }
  bench.prepare();

  Run run(bench, processes, topo, show_progress);
  run.open(opts, argv);
  run.read_conditions_at_start();
  // Said before the first case, so a log shows how long the run should take while it runs.
  if (run.writes()) print_now(expect_line);
  run.run_cases();
  run.finish();
  if (run.writes()) run.print_results(run_start, expected.seconds);
  return processes.exit_code(run.tally());
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
