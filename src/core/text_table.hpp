#pragma once
// The plain-text tables a benchmark prints after its MEMPATH lines (`bw --all`'s path
// matrix, memcpy's GPU x direction table; docs/cli.md). For people reading a terminal:
// ReFrame and scripts read the MEMPATH lines, so no line printed here starts with MEMPATH.
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mempath {

// A grid of measured values keyed by row and column names, kept in the order they were
// first seen (the plan's order: processors and memories as the topology lists them).
// A cell shows the best (highest) value of its ok cases, "fail" where only failed cases
// were there, "-" where none ran (skipped, or no such case). Where a cell's cases differ
// in `rank` (memcpy's transfer size), only those of the highest rank count.
class Pivot {
 public:
  void add(const std::string& row, const std::string& column, const std::string& status, double value,
           double rank = 0);
  bool empty() const { return rows_.empty(); }
  // The table: `title` on its own line, `corner` above the row names, right-aligned cells.
  std::string format(const std::string& title, const std::string& corner) const;

 private:
  struct Cell {
    bool ok = false, failed = false;
    double best = 0, rank = -HUGE_VAL;
  };
  std::vector<std::string> rows_, columns_;
  std::map<std::pair<std::string, std::string>, Cell> cells_;
};

// One Pivot per key (bw's op, gemm's dtype), the keys in the order they were first seen.
class PivotByKey {
 public:
  Pivot& operator[](const std::string& key) {
    auto [it, added] = pivots_.try_emplace(key);
    if (added) keys_.push_back(key);
    return it->second;
  }
  const std::vector<std::string>& keys() const { return keys_; }
  const Pivot& at(const std::string& key) const { return pivots_.at(key); }

 private:
  std::vector<std::string> keys_;
  std::map<std::string, Pivot> pivots_;
};

// Columns under a header, two spaces apart; `rows` as wide as `header`. `align` has one
// letter per column, `l` (text) or `r` (numbers); empty: the first column left (it names
// the row), the others right.
std::string format_text_table(const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows, const std::string& align = "");

}  // namespace mempath
