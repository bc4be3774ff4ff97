// The driver's rules and summary_line's, with a benchmark whose cases are scripted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "apps/driver.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/summary_line.hpp"

using namespace mempath;

TEST(SummaryLine, EmptyStringsPrintAsDashAndNumbersInTheirFormat) {
  const Row row = {{"pu", std::string("cpu0")}, {"dst_mem", std::string()}, {"threads", int64_t{-1}},
                   {"status", std::string("ok")}, {"reason", std::string()}, {"bw", 12.3456}, {"t", 2.5e-6}};
  EXPECT_EQ(summary_line("x", row, {field("pu"), field("dst", "dst_mem"), field("threads"), field("status"),
                                    metric("bw", 2), metric("t_us", 3, "t", 1e6)}),
            "MEMPATH x pu=cpu0 dst=- threads=-1 status=ok bw=12.35 t_us=2.500");
}

TEST(SummaryLine, MetricsOnlyWhenOkAndReasonQuotedLastWhenGiven) {
  Row row = {{"pu", std::string("gpu0")}, {"status", std::string("failed")},
             {"reason", std::string("3 words differ")}, {"bw", 1.0}};
  const std::vector<SummaryField> fields = {field("pu"), field("status"), metric("bw", 2)};
  EXPECT_EQ(summary_line("x", row, fields), "MEMPATH x pu=gpu0 status=failed reason=\"3 words differ\"");
  row["status"] = std::string("ok");
  row["reason"] = std::string();
  EXPECT_EQ(summary_line("x", row, fields), "MEMPATH x pu=gpu0 status=ok bw=1.00");
}

TEST(SummaryLine, AFieldThatIsNoColumnIsAProgrammingError) {
  EXPECT_THROW(summary_line("x", {{"status", std::string("ok")}}, {field("nope")}), std::logic_error);
}

namespace {

// Each case's script: "ok", "skip" (by the plan), "unsupported", "usage", "throw", "fail".
class Scripted : public Benchmark {
 public:
  explicit Scripted(std::vector<std::string> script, bool grouped = false)
      : Benchmark({"fake", "scripted cases", "Scripted cases."}), script_(std::move(script)), grouped_(grouped) {}
  std::vector<OptionSpec> options() const override { return {}; }
  void plan(const Options&, const Topology&, bool) override {}
  size_t cases() const override { return script_.size(); }
  PlanFields plan_fields(size_t i) const override { return {{"what", script_[i]}}; }
  std::string skip_reason(size_t i) const override { return script_[i] == "skip" ? "not on this node" : ""; }
  double expected_seconds(size_t i) const override { return 2.0 * static_cast<double>(i + 1); }
  Outcome run(size_t i) override {
    ++runs;
    const std::string& s = script_[i];
    if (s == "unsupported") throw Unsupported("no such path");
    if (s == "usage") throw UsageError("bad size");
    if (s == "throw") throw std::runtime_error("driver error");
    if (s == "fail") return {"failed", "data check", 0.0};
    if (s == "hang") std::this_thread::sleep_for(std::chrono::seconds(5));
    return {"ok", "", 1.5 * static_cast<double>(i + 1)};
  }
  TableSpec cases_table() const override {
    return {"fake/cases", {{"case_id", ColumnType::Int, ""}, {"what", ColumnType::String, ""},
                           {"status", ColumnType::String, ""}, {"reason", ColumnType::String, ""},
                           {"value", ColumnType::Float, ""}, {"best", ColumnType::Int, ""},
                           {model::kCaseSecondsColumn, ColumnType::Float, "s"}}};
  }
  TableSpec samples_table() const override { return {"fake/samples", {{"case_id", ColumnType::Int, ""}}}; }
  CaseRows rows(size_t i, const Outcome& o, int64_t id) override {
    const auto* v = std::any_cast<double>(&o.data);
    Row row = {{"case_id", id}, {"what", script_[i]}, {"status", o.status}, {"reason", o.reason},
               {"value", v ? *v : -1.0}, {"best", int64_t{-1}}};
    written[id] = row;  // asked again once the case ran: the last answer is the row written
    return {{row}, {{{"case_id", id}}}};
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("what"), field("status"), metric("value", 1), field("best")};
  }
  std::string group(size_t i) const override { return grouped_ ? "all" : std::to_string(i); }
  bool end_group(Table& table, const std::vector<size_t>& rows) override {
    if (!grouped_) return false;
    for (size_t r : rows) table.set(r, "best", static_cast<int64_t>(rows.size()));
    return true;
  }
  std::map<int64_t, Row> written;
  int runs = 0;

 private:
  std::vector<std::string> script_;
  bool grouped_;
};

// Rows with a `verified` column, as every self-checking benchmark has.
class Verifying : public Scripted {
 public:
  using Scripted::Scripted;
  TableSpec cases_table() const override {
    TableSpec spec = Scripted::cases_table();
    spec.columns.push_back({"verified", ColumnType::Int, ""});
    return spec;
  }
  CaseRows rows(size_t i, const Outcome& o, int64_t id) override {
    CaseRows r = Scripted::rows(i, o, id);
    for (Row& row : r.cases) row["verified"] = static_cast<int64_t>(o.status == "ok");
    return r;
  }
};

struct Result {
  int code;
  std::string out;
};

std::string temp_output() {
  const auto p = std::filesystem::temp_directory_path() / ("mempath-driver-" + std::to_string(getpid()) + ".h5");
  std::filesystem::remove(p);
  return p.string();
}

Result run(Benchmark& b) {
  const std::string path = temp_output();
  testing::internal::CaptureStdout();
  int code = -1;
  try {
    code = run_benchmark(b, {"--output", path, "--timeout", "0"}, {"mempath", "fake"});
  } catch (...) {
    testing::internal::GetCapturedStdout();
    std::filesystem::remove(path);
    throw;
  }
  Result r{code, testing::internal::GetCapturedStdout()};
  std::filesystem::remove(path);
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The summary lines only (EXPECT and ELAPSED frame them).
std::vector<std::string> summary_lines(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : lines(text))
    if (l.rfind("MEMPATH ", 0) == 0) out.push_back(l);
  return out;
}

}  // namespace

TEST(Driver, SkipsUnsupportedAndPlannedSkipsAndFailsOnErrors) {
  Scripted b({"ok", "skip", "unsupported", "usage", "throw"});
  const Result r = run(b);
  EXPECT_EQ(r.code, kExitFailed);  // "throw" failed
  EXPECT_EQ(b.runs, 4);            // the planned skip never ran
  ASSERT_EQ(b.written.size(), 5u);
  const std::vector<std::string> status = {"ok", "skipped", "skipped", "skipped", "failed"};
  const std::vector<std::string> reason = {"", "not on this node", "no such path", "bad size", "driver error"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(std::get<std::string>(b.written[i].at("status")), status[i]) << i;
    EXPECT_EQ(std::get<std::string>(b.written[i].at("reason")), reason[i]) << i;
    EXPECT_EQ(std::get<int64_t>(b.written[i].at("case_id")), static_cast<int64_t>(i));
  }
}

TEST(Driver, PrintsTheLineOfEachWrittenRow) {
  Scripted b({"ok", "fail", "skip"});
  const Result r = run(b);
  EXPECT_EQ(r.code, kExitFailed);
  const auto printed = summary_lines(r.out);
  ASSERT_EQ(printed.size(), b.written.size());
  for (size_t i = 0; i < printed.size(); ++i)
    EXPECT_EQ(printed[i], summary_line("fake", b.written[i], b.summary_fields(b.written[i])));
  EXPECT_EQ(printed[0], "MEMPATH fake what=ok status=ok value=1.5 best=-1");
  EXPECT_EQ(printed[2], "MEMPATH fake what=skip status=skipped best=-1 reason=\"not on this node\"");
}

// The ReFrame checks take the verdict from stdout, with no HDF5 reader (issue 19).
TEST(Driver, ALineCarriesVerifiedWhereTheRowHasIt) {
  Verifying b({"ok", "fail"});
  const auto printed = summary_lines(run(b).out);
  ASSERT_EQ(printed.size(), 2u);
  EXPECT_EQ(printed[0], "MEMPATH fake what=ok status=ok value=1.5 best=-1 verified=1");
  EXPECT_EQ(printed[1], "MEMPATH fake what=fail status=failed best=-1 verified=0 reason=\"data check\"");
}

// The model's sum over the cases the plan runs (the skipped second one costs nothing) and
// the run's own fixed cost, said first, and the run's wall time beside it last: neither is
// a summary line.
TEST(Driver, SaysTheExpectedDurationFirstAndTheElapsedOneLast) {
  Scripted b({"ok", "skip", "fail"});
  const auto printed = lines(run(b).out);
  ASSERT_EQ(printed.size(), 5u);
  const std::string expect = "EXPECT fake cases=3 planned=2 skipped=1 expected_s=";
  ASSERT_EQ(printed.front().rfind(expect, 0), 0u) << printed.front();
  const double expected = std::stod(printed.front().substr(expect.size()));
  // This node's fixed cost: the process and each of its GPUs' contexts (printed to 0.1 s).
  const double gpus = (expected - 8.0 - model::kRunOverheadS) / model::kGpuContextS;
  EXPECT_GE(std::round(gpus), 0) << printed.front();
  EXPECT_NEAR(gpus, std::round(gpus), 0.34) << printed.front();
  EXPECT_EQ(printed.back().rfind("ELAPSED fake cases=3 elapsed_s=", 0), 0u) << printed.back();
  EXPECT_NE(printed.back().find(" expected_s=" + printed.front().substr(expect.size())), std::string::npos)
      << printed.back();
  EXPECT_EQ(summary_lines(run(b).out).size(), 3u);
}

TEST(Driver, AllOkOrSkippedExitsZero) {
  Scripted b({"ok", "skip", "unsupported", "ok"});
  EXPECT_EQ(run(b).code, kExitOk);
}

TEST(Driver, AUsageErrorOfTheOnlyCaseIsBadInput) {
  Scripted b({"usage"});
  EXPECT_THROW(run(b), UsageError);
}

TEST(Driver, AGroupPrintsWhenItEndsWithTheCellsItSet) {
  Scripted b({"ok", "ok", "ok"}, true);
  const Result r = run(b);
  EXPECT_EQ(r.code, kExitOk);
  const auto printed = summary_lines(r.out);
  ASSERT_EQ(printed.size(), 3u);
  for (const auto& l : printed) EXPECT_NE(l.find(" best=3"), std::string::npos) << l;
}

// Issue #22: a case that outlives --timeout inside a group (a sweep) ends the run; the
// lines of the group's finished cases are printed first, as their rows stand (the cells
// end_group would set not set: stream's sweep_complete=0), where before nothing was.
TEST(Driver, ATimeoutInsideAGroupPrintsItsFinishedLinesAsTheyStand) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string path = temp_output();
  EXPECT_EXIT(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // the death test matches stderr
        Scripted b({"ok", "hang", "ok"}, true);
        run_benchmark(b, {"--output", path, "--timeout", "1"}, {"mempath", "fake"});
      },
      testing::ExitedWithCode(kExitFailed),
      "MEMPATH fake what=ok status=ok value=1.5 best=-1\n.*ran longer than --timeout 1 s");
  std::filesystem::remove(path);
}

TEST(Driver, BadOptionsAreUsageErrors) {
  Scripted b({"ok"});
  EXPECT_THROW(run_benchmark(b, {"--no-such-option"}, {"mempath", "fake"}), UsageError);
  EXPECT_EQ(b.runs, 0);
}

TEST(Registry, UsageListsEveryCommandAndDispatchRefusesUnknownOnes) {
  static int called = 0;
  const Program p{"prog", "usage: prog <command> [options]\nDoes things.",
                  {{"one", "the first", [](const std::vector<std::string>&, const std::vector<std::string>&) { return ++called, 0; }},
                   {"longername", "the second", [](const std::vector<std::string>&, const std::vector<std::string>&) { return 3; }}}};
  const std::string usage = usage_text(p);
  EXPECT_NE(usage.find("  one         the first\n"), std::string::npos) << usage;
  EXPECT_NE(usage.find("  longername  the second\n"), std::string::npos) << usage;
  EXPECT_EQ(dispatch(p, {"prog", "one"}), 0);
  EXPECT_EQ(called, 1);
  EXPECT_EQ(dispatch(p, {"prog", "longername"}), 3);
  testing::internal::CaptureStderr();
  EXPECT_EQ(dispatch(p, {"prog", "three"}), kExitUsage);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "prog: error: unknown command 'three'; valid: one, longername\n");
}

TEST(Registry, ABenchmarkIsListedByItsOwnNameAndLine) {
  const Program p{"prog", "usage: prog <command> [options]\nDoes things.",
                  {Command([]() -> std::unique_ptr<Benchmark> { return std::make_unique<Scripted>(std::vector<std::string>{}); })}};
  EXPECT_EQ(p.commands.front().name, "fake");
  EXPECT_NE(usage_text(p).find("  fake  scripted cases\n"), std::string::npos) << usage_text(p);
}
