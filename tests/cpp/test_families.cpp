// The families table (core/families.def): every registered benchmark's tables are rows of
// it, unknown tables are programming errors that name the valid ones, and
// analysis/results/families.py reads exactly the table C++ compiles.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "apps/benchmark.hpp"
#include "core/duration_model.hpp"
#include "core/families.hpp"
#include "core/json_writer.hpp"

namespace mempath {
namespace {

namespace fs = std::filesystem;

bool has_column(const std::string& table, const std::string& column) {
  const auto& columns = columns_of(table);
  return std::any_of(columns.begin(), columns.end(), [&](const ColumnSpec& c) { return c.name == column; });
}

bool same(const std::vector<ColumnSpec>& a, const std::vector<ColumnSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ColumnSpec& x, const ColumnSpec& y) {
    return x.name == y.name && x.type == y.type && x.units == y.units;
  });
}

TEST(FamiliesTable, EveryRegisteredBenchmarkWritesTablesOfTheTable) {
  int benchmarks = 0;
  for (const Command& command : mempath_program().commands) {
    if (!command.benchmark) continue;
    const auto bench = command.benchmark();
    ++benchmarks;
    for (const TableSpec& spec : {bench->cases_table(), bench->samples_table()}) {
      ASSERT_NO_THROW(columns_of(spec.name)) << bench->name();
      EXPECT_TRUE(same(spec.columns, columns_of(spec.name))) << spec.name;
    }
    // The driver fills it for every case: the duration model is calibrated against it.
    const TableSpec cases = bench->cases_table();
    EXPECT_EQ(cases.name, bench->name() + "/cases");
    EXPECT_EQ(cases.columns.back().name, model::kCaseSecondsColumn) << cases.name;
  }
  EXPECT_EQ(benchmarks, 11);  // llm since issue 48
}

TEST(FamiliesTable, HeadlineMetricsAreColumnsOfTheirTables) {
  for (const FamilyInfo& f : kFamilyTable) {
    const std::string group(f.name);
    EXPECT_TRUE(has_column(group + "/" + f.metric_table, f.metric)) << f.name;
    if (*f.cases_metric) EXPECT_TRUE(has_column(group + "/cases", f.cases_metric)) << f.name;
  }
}

TEST(FamiliesTable, EachTableIsOneBlockOfRowsWithUniqueColumns) {
  const std::vector<std::string> names = table_names();
  for (const std::string& table : names) {
    EXPECT_EQ(std::count(names.begin(), names.end(), table), 1) << table << " is split";
    std::vector<std::string> columns;
    for (const ColumnSpec& c : columns_of(table)) columns.push_back(c.name);
    std::sort(columns.begin(), columns.end());
    EXPECT_EQ(std::adjacent_find(columns.begin(), columns.end()), columns.end()) << table;
  }
  EXPECT_EQ(names.front(), "bw/cases");
}

// A preset's tables are one SHARES row: tlb's are chase's, in their order, none required.
TEST(FamiliesTable, ASharedFamilyIsItsSourcesTablesInOneRow) {
  for (const char* table : {"cases", "samples", "caches"}) {
    EXPECT_TRUE(same(columns_of(std::string("tlb/") + table), columns_of(std::string("chase/") + table))) << table;
  }
  for (const ColumnInfo& c : column_rows())
    if (std::string_view(c.table).substr(0, 4) == "tlb/") EXPECT_FALSE(c.required) << c.table << " " << c.name;
  const std::vector<std::string> names = table_names();
  const auto chase = std::find(names.begin(), names.end(), "chase/caches");
  ASSERT_NE(chase, names.end());
  EXPECT_EQ(*(chase + 1), "tlb/cases");
  std::ifstream in(fs::path(MEMPATH_SOURCE_ROOT) / "src/core/families.def");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("MEMPATH_COLUMN(\"tlb/"), std::string::npos);
  EXPECT_NE(text.find("MEMPATH_SHARES(\"tlb\", \"chase\", 0)"), std::string::npos);
}

TEST(FamiliesTable, UnknownTablesNameTheValidOnes) {
  try {
    columns_of("bw/case");
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no table 'bw/case' in core/families.def; valid: bw/cases, bw/samples,"),
              std::string::npos)
        << e.what();
  }
}

const char* type_name(ColumnType t) {
  switch (t) {
    case ColumnType::Int: return "Int";
    case ColumnType::Float: return "Float";
    case ColumnType::String: return "String";
  }
  return "";
}

// The C++ table as JSON in the form `analysis.results.families.rows()` returns.
std::string cpp_table_json() {
  JsonWriter w;
  w.begin_object().key("families").begin_array();
  for (const FamilyInfo& f : kFamilyTable)
    w.begin_object().field("name", f.name).field("what", f.what).field("metric", f.metric).field("unit", f.unit)
        .field("higher_is_better", f.higher_is_better).field("metric_table", f.metric_table)
        .field("cases_metric", f.cases_metric).field("words", f.words).end_object();
  w.end_array().key("columns").begin_array();
  for (const ColumnInfo& c : column_rows())
    w.begin_object().field("table", c.table).field("name", c.name).field("type", type_name(c.type))
        .field("unit", c.unit).field("required", c.required).field("role", c.role).field("fleet", c.fleet)
        .end_object();
  w.end_array().end_object();
  return w.str();
}

// Exit status of Python comparing its reading of `families_def` with the C++ table.
int python_agrees(const fs::path& families_def) {
  const fs::path json = fs::temp_directory_path() / ("mempath_families_" + std::to_string(::getpid()) + ".json");
  std::ofstream(json) << cpp_table_json();
  const std::string cmd = "cd '" + std::string(MEMPATH_SOURCE_ROOT) + "' && '" + MEMPATH_PYTHON +
                          "' -c 'import json, sys; from pathlib import Path; from analysis.results import families; "
                          "sys.exit(0 if json.load(open(sys.argv[1])) == families.rows(families.load(Path(sys.argv[2]))) else 3)' '" +
                          json.string() + "' '" + families_def.string() + "'";
  const int status = std::system(cmd.c_str());
  fs::remove(json);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FamiliesTable, PythonReadsTheSameTable) {
  if (std::string(MEMPATH_PYTHON).empty()) GTEST_SKIP() << "no Python interpreter found at configure time";
  const fs::path def = fs::path(MEMPATH_SOURCE_ROOT) / "src/core/families.def";
  EXPECT_EQ(python_agrees(def), 0);
  // The comparison can fail: a table whose median_GBps is an integer is not the C++ one.
  std::ifstream in(def);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string row = "\"bw/cases\", \"median_GBps\", Float";
  ASSERT_NE(text.find(row), std::string::npos);
  text.replace(text.find(row), row.size(), "\"bw/cases\", \"median_GBps\", Int");
  const fs::path changed = fs::temp_directory_path() / ("mempath_families_" + std::to_string(::getpid()) + ".def");
  std::ofstream(changed) << text;
  EXPECT_EQ(python_agrees(changed), 3);
  // ... and so is one whose placement names a case (a role of its own, not the type).
  std::ifstream again(def);
  std::string roles((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  const std::string placement = "\"bw/cases\", \"placement\", String, \"\", 1, \"outcome\"";
  ASSERT_NE(roles.find(placement), std::string::npos);
  roles.replace(roles.find(placement), placement.size(),
                "\"bw/cases\", \"placement\", String, \"\", 1, \"identity\"");
  std::ofstream(changed) << roles;
  EXPECT_EQ(python_agrees(changed), 3);
  fs::remove(changed);
}

}  // namespace
}  // namespace mempath
