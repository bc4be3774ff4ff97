// A case in words: C++ says every case of the one table as the analysis does
// (tests/fixtures/case_words_cases.txt; tests/python/test_case_words.py reads the same file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/case_words.hpp"
#include "core/topology.hpp"

namespace mempath {
namespace {

bool integer(const std::string& text) {
  const size_t digits = text.rfind('-', 0) == 0 ? 1 : 0;
  return text.size() > digits && std::all_of(text.begin() + digits, text.end(), ::isdigit);
}

TEST(CaseWords, EveryCaseOfTheTableIsSaidAsTheAnalysisSaysIt) {
  const std::string fixtures = MEMPATH_FIXTURES_DIR;
  std::ifstream in(fixtures + "/case_words_cases.txt");
  ASSERT_TRUE(in) << fixtures << "/case_words_cases.txt";
  std::map<std::string, Topology> topologies;
  size_t cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find(" | ");
    ASSERT_NE(bar, std::string::npos) << line;
    std::istringstream fields(line.substr(0, bar));
    std::string name, family;
    fields >> name >> family;
    Row row;
    for (std::string cell; fields >> cell;) {
      const size_t eq = cell.find('=');
      ASSERT_NE(eq, std::string::npos) << line;
      const std::string value = cell.substr(eq + 1);
      if (integer(value)) row[cell.substr(0, eq)] = static_cast<int64_t>(std::stoll(value));
      else row[cell.substr(0, eq)] = value == "''" ? std::string() : value;
    }
    if (!topologies.count(name)) topologies[name] = load_snapshot(fixtures + "/" + name);
    EXPECT_EQ(case_words(family, row, topologies[name]), line.substr(bar + 3)) << line;
    ++cases;
  }
  EXPECT_GT(cases, 20u);
}

// Grace by its CPU model; where the topology names none, by a GH200's HBM node or C2C link.
TEST(CaseWords, AGraceNodeIsKnownByItsCpuModelFirst) {
  Topology topo = load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/gh200_quad");
  EXPECT_TRUE(is_grace(topo));
  EXPECT_EQ(memory_word(topo, "numa0"), "LPDDR");
  topo.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  EXPECT_FALSE(is_grace(topo));
  EXPECT_EQ(memory_word(topo, "numa0"), "DDR");
  topo.cpu_model = "unknown";
  EXPECT_TRUE(is_grace(topo));
  EXPECT_EQ(memory_word(topo, "numa4"), "HBM");
  EXPECT_EQ(memory_word(topo, "numa99"), "");
}

}  // namespace
}  // namespace mempath
