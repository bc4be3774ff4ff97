#pragma once
// The `MEMPATH <bench> key=value ...` line of every case, printed from the row written to
// the cases table: stdout and the HDF5 file cannot disagree, and ReFrame parses one format.
#include <string>
#include <vector>

#include "core/results.hpp"

namespace mempath {

// One key=value, read from a column of the row.
struct SummaryField {
  std::string key;
  std::string column;     // the row's column; empty: the key
  int precision = -1;     // a float column: digits after the point
  bool metric = false;    // printed only when the row's status is ok
  double scale = 1;       // a float column printed in other units (seconds as us: 1e6)
};

// A field that is always printed (strings: "-" when empty).
SummaryField field(const std::string& key, const std::string& column = "");
// A measured value, printed only when the case is ok.
SummaryField metric(const std::string& key, int precision = -1, const std::string& column = "", double scale = 1);

// "MEMPATH bench k=v ...", no newline. Rules: empty strings print as "-"; metric fields
// only when status is "ok"; reason="..." last, and only when the row has a non-empty one.
// A field whose column the row lacks is a programming error (std::logic_error).
std::string summary_line(const std::string& bench, const Row& row, const std::vector<SummaryField>& fields);

}  // namespace mempath
