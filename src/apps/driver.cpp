#include "apps/driver.hpp"

#include <cstdio>
#include <iostream>

#include "apps/plan_print.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/result_run.hpp"

namespace mempath {

void Benchmark::print_plan(size_t i) const { mempath::print_plan(name(), plan_fields(i), skip_reason(i)); }

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

namespace {

// "case 3 (bw read cpu0 numa0 system)": what the watchdog names when a case hangs.
std::string describe(const Benchmark& bench, size_t i, int64_t id) {
  std::string what = "case " + std::to_string(id) + " (" + bench.name();
  for (const auto& [key, value] : bench.plan_fields(i)) what += " " + value;
  return what + ")";
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

}  // namespace

int run_benchmark(Benchmark& bench, const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts(bench.name(), bench.summary(), with_from_option(with_run_options(bench.options(), bench.name())));
  if (!opts.parse(args)) return kExitOk;
  const bool plan_only = opts.has("from");
  const Topology topo = planning_topology(opts);
  bench.plan(opts, topo, plan_only);
  if (plan_only) {
    for (size_t i = 0; i < bench.cases(); ++i) bench.print_plan(i);
    return kExitOk;
  }
  bench.prepare();

  ResultRun run(opts, bench.name(), topo, argv);
  ResultFile& file = run.file();
  const TableSpec case_spec = bench.cases_table(), sample_spec = bench.samples_table();
  Table& samples = file.table(sample_spec.name, sample_spec.columns);
  Table& case_rows = file.table(case_spec.name, case_spec.columns);
  bench.begin(file);

  int exit_code = kExitOk;
  int64_t next_id = 0;
  std::vector<size_t> group;  // rows of the running group, printed when it ends
  auto end_group = [&] {
    if (group.empty()) return;
    if (bench.end_group(case_rows, group)) file.save();
    for (size_t r : group) {
      const Row row = table_row(case_rows, r);
      std::printf("%s\n", summary_line(bench.name(), row, bench.summary_fields(row)).c_str());
    }
    std::fflush(stdout);
    group.clear();
  };
  for (size_t i = 0; i < bench.cases(); ++i) {
    if (i > 0 && bench.group(i) != bench.group(i - 1)) end_group();
    const Outcome o = run_one(bench, run, i, next_id);
    const CaseRows rows = bench.rows(i, o, next_id);
    for (const Row& r : rows.samples) samples.append(r);
    for (const Row& r : rows.cases) {
      group.push_back(case_rows.rows());
      case_rows.append(r);
      ++next_id;
    }
    file.set_attribute("end_time", utc_now_iso8601());
    file.save();
    if (o.status == "failed") exit_code = kExitFailed;
  }
  end_group();
  std::cerr << "mempath: " << next_id << " cases written to " << file.path() << "\n";
  return exit_code;
}

Command::Command(std::unique_ptr<Benchmark> (*make)()) : benchmark(make) {
  const auto b = make();
  name = b->name();
  description = b->description();
}

std::string usage_text(const Program& program) {
  std::string text = program.usage + "\n\ncommands:\n";
  for (const auto& c : program.commands) {
    std::string name = "  " + c.name + " ";
    if (name.size() < 12) name.resize(12, ' ');
    text += name + c.description + "\n";
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
