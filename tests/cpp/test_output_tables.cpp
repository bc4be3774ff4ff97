// The text tables printed after the MEMPATH lines, the progress line, and the reader that
// `mempath export` uses (core/text_table, apps/driver, core/result_reader).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "apps/driver.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/result_reader.hpp"
#include "core/results.hpp"
#include "core/text_table.hpp"

using namespace mempath;

namespace {
std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(getpid()) + name)).string();
}
}  // namespace

TEST(Pivot, BestOkValueElseFailElseDashInFirstSeenOrder) {
  Pivot p;
  p.add("gpu0", "gpu0", "ok", 3000.04);
  p.add("cpu0", "numa0", "ok", 100.0);
  p.add("cpu0", "numa0", "ok", 120.26);  // a better allocator of the same path
  p.add("cpu0", "numa0", "failed", NAN);
  p.add("cpu0", "gpu0", "failed", NAN);
  p.add("gpu0", "numa0", "skipped", NAN);
  EXPECT_EQ(p.format("bw read", "pu\\mem"),
            "bw read\n"
            "pu\\mem    gpu0  numa0\n"
            "gpu0    3000.0      -\n"
            "cpu0      fail  120.3\n");
}

TEST(Pivot, OnlyTheHighestRankOfACellCounts) {
  Pivot p;  // memcpy: the sizes of a sweep, the cell the largest one
  p.add("gpu0", "h2d", "ok", 20.0, 4096);
  p.add("gpu0", "h2d", "ok", 55.25, 1 << 30);
  p.add("gpu0", "h2d", "ok", 60.0, 1 << 20);  // faster at a smaller size: not the cell
  p.add("gpu0", "d2h", "ok", 50.0, 4096);
  p.add("gpu0", "d2h", "failed", NAN, 1 << 30);
  p.add("gpu0", "bidir", "failed", NAN, 4096);
  p.add("gpu0", "bidir", "skipped", NAN, 1 << 30);
  EXPECT_EQ(p.format("memcpy", "gpu\\dir"),
            "memcpy\n"
            "gpu\\dir   h2d   d2h  bidir\n"
            "gpu0     55.2  fail      -\n");
}

TEST(TextTable, AlignsTextLeftAndNumbersRightWithoutTrailingBlanks) {
  // `mempath list`: text columns left, counts right, a last column empty on some rows.
  EXPECT_EQ(format_text_table({"op", "threads", "reason"}, {{"read", "16", ""}, {"write", "1", "no GPU"}}, "lrl"),
            "op     threads  reason\n"
            "read        16\n"
            "write        1  no GPU\n");
}

TEST(Pivot, EmptyUntilACellIsAdded) {
  Pivot p;
  EXPECT_TRUE(p.empty());
  p.add("cpu0", "numa0", "skipped", NAN);
  EXPECT_FALSE(p.empty());
}

TEST(TextTable, RightAlignsCellsUnderTheirHeader) {
  EXPECT_EQ(format_text_table({"gpu\\dir", "h2d", "bidir"}, {{"gpu0", "55.1", "-"}, {"all", "220.4", "fail"}}),
            "gpu\\dir    h2d  bidir\n"
            "gpu0      55.1      -\n"
            "all      220.4   fail\n");
}

TEST(Progress, LineCountsCasesAndEstimatesTheRest) {
  EXPECT_EQ(progress_line(37, 412, "bw read gpu0 numa1 system", 180), "[37/412] bw read gpu0 numa1 system  ETA 3 min");
  EXPECT_EQ(progress_line(1, 5, "bw read cpu0 numa0 system", -1), "[1/5] bw read cpu0 numa0 system  ETA ?");
  EXPECT_EQ(progress_line(5, 5, "bw read cpu0 numa0 system", 0), "[5/5] bw read cpu0 numa0 system");
  EXPECT_EQ(format_eta(0.4), "0 s");
  EXPECT_EQ(format_eta(59), "59 s");
  EXPECT_EQ(format_eta(89), "1 min");
  EXPECT_EQ(format_eta(91), "2 min");
  EXPECT_EQ(format_eta(2 * 3600 + 5 * 60), "2 h 05 min");
}

TEST(ResultReader, ReadsBackWhatResultFileWrote) {
  const std::string path = temp_path("-reader.h5");
  {
    ResultFile f(path, {{"tool", std::string("mempath")}, {"page_size", int64_t{4096}}});
    Table& t = f.table("bw/cases", {{"n", ColumnType::Int, ""}, {"median_GBps", ColumnType::Float, "GB/s"},
                                    {"reason", ColumnType::String, ""}});
    t.append({{"n", int64_t{7}}, {"median_GBps", 12.5}, {"reason", std::string("")}});
    t.append({{"n", int64_t{-1}}, {"median_GBps", std::nan("")}, {"reason", std::string("no CUDA GPU, \"x\"")}});
    f.table("memcpy/samples", {{"rep", ColumnType::Int, ""}});
    f.save();
  }
  const StoredRun run = read_run(path);
  EXPECT_EQ(std::get<std::string>(run.attributes.at("tool")), "mempath");
  EXPECT_EQ(std::get<int64_t>(run.attributes.at("page_size")), 4096);
  EXPECT_EQ(std::get<int64_t>(run.attributes.at("schema_version")), kSchemaVersion);
  ASSERT_EQ(run.tables.size(), 2u);
  const Table& t = run.tables.at("bw/cases");
  ASSERT_EQ(t.rows(), 2u);
  // Columns in name order, as HDF5 lists them.
  ASSERT_EQ(t.columns().size(), 3u);
  EXPECT_EQ(t.columns()[0].name, "median_GBps");
  EXPECT_EQ(t.columns()[0].units, "GB/s");
  EXPECT_EQ(t.floats(0)[0], 12.5);
  EXPECT_TRUE(std::isnan(t.floats(0)[1]));
  EXPECT_EQ(t.ints(1)[1], -1);
  EXPECT_EQ(t.strings(2)[1], "no CUDA GPU, \"x\"");
  EXPECT_EQ(run.tables.at("memcpy/samples").rows(), 0u);
  std::filesystem::remove(path);
}

TEST(ResultReader, BadFilesAreUsageErrors) {
  EXPECT_THROW(read_run(temp_path("-missing.h5")), UsageError);
  const std::string text = temp_path("-text.h5");
  std::ofstream(text) << "not hdf5\n";
  EXPECT_THROW(read_run(text), UsageError);
  std::filesystem::remove(text);
  EXPECT_THROW(read_run(std::filesystem::temp_directory_path().string()), UsageError);
}

namespace {

// Two cases and a table after them: the driver's hook gets the written rows, after every
// summary line.
class Tabled : public Benchmark {
 public:
  Tabled()
      : Benchmark({"tabled",
                   "two cases and a table",
                   "Two cases."}) {}
  std::vector<OptionSpec> options() const override { return {}; }
  void plan(const Options&, const Topology&, bool) override {}
  size_t cases() const override { return 2; }
  PlanFields plan_fields(size_t i) const override { return {{"what", std::to_string(i)}}; }
  std::string skip_reason(size_t i) const override { return i == 1 ? "not here" : ""; }
  double expected_seconds(size_t) const override { return 1.0; }
  Outcome run(size_t) override { return {"ok", "", 42.0}; }
  TableSpec cases_table() const override {
    return {"tabled/cases", {{"case_id", ColumnType::Int, ""}, {"status", ColumnType::String, ""},
                             {"median_GBps", ColumnType::Float, "GB/s"},
                             {model::kCaseSecondsColumn, ColumnType::Float, "s"}}};
  }
  TableSpec samples_table() const override { return {"tabled/samples", {{"case_id", ColumnType::Int, ""}}}; }
  CaseRows rows(size_t, const Outcome& o, int64_t id) override {
    const auto* v = std::any_cast<double>(&o.data);
    return {{{{"case_id", id}, {"status", o.status}, {"median_GBps", v ? *v : std::nan("")}}}, {}};
  }
  std::vector<SummaryField> summary_fields(const Row&) const override { return {field("status")}; }
  void print_tables(const Table& cases) const override {
    Pivot p;
    for (size_t r = 0; r < cases.rows(); ++r)
      p.add("case" + std::to_string(cases.ints(0)[r]), "value", cases.strings(1)[r], cases.floats(2)[r]);
    std::printf("%s", p.format("tabled", "case").c_str());
  }
};

}  // namespace

TEST(Driver, PrintsTheTablesAfterTheLastSummaryLine) {
  const auto path = std::filesystem::temp_directory_path() / ("mempath-tables-" + std::to_string(getpid()) + ".h5");
  std::filesystem::remove(path);
  Tabled b;
  testing::internal::CaptureStdout();
  const int code = run_benchmark(b, {"--output", path.string(), "--timeout", "0", "--no-progress"}, {"mempath", "tabled"});
  const std::string out = testing::internal::GetCapturedStdout();
  std::filesystem::remove(path);
  EXPECT_EQ(code, kExitOk);
  // The ELAPSED line ends the output, after the tables; its wall time varies, and the
  // model's figure holds this node's fixed cost (its GPUs): both lines say the same one.
  const size_t elapsed = out.rfind("ELAPSED tabled cases=2 elapsed_s=");
  ASSERT_NE(elapsed, std::string::npos) << out;
  const std::string expect = "EXPECT tabled cases=2 planned=1 skipped=1 expected_s=";
  ASSERT_EQ(out.rfind(expect, 0), 0u) << out;
  const std::string figure = out.substr(expect.size(), out.find('\n') - expect.size());
  EXPECT_EQ(out.substr(out.size() - figure.size() - 1), figure + "\n") << out;
  EXPECT_EQ(out.substr(0, elapsed),
            expect + figure + "\n"
            "MEMPATH tabled status=ok\n"
            "MEMPATH tabled status=skipped\n"
            "tabled\n"
            "case   value\n"
            "case0   42.0\n"
            "case1      -\n");
}
