#pragma once
// Result families and the columns of their tables, as rows of core/families.def (shared with
// analysis/results/families.py): every writer creates its tables from here, so C++, Python
// and docs/schema.md name one list.
#include <string>
#include <string_view>
#include <vector>

#include "core/results.hpp"

namespace mempath {

struct FamilyInfo {
  const char* name;
  const char* what;
  const char* metric;
  const char* unit;
  bool higher_is_better;
  const char* metric_table;
  const char* cases_metric;
  // A case in words: its template of cases columns (core/case_words.hpp).
  const char* words;
};
struct ColumnInfo {
  const char* table;  // a shared family's own name ("tlb/cases"), not its source's
  const char* name;
  ColumnType type;
  const char* unit;
  bool required;
  // What the column is to the analysis (families.def's header; analysis/results/families.py
  // checks the values): the writers need neither, the agreement test reads both.
  const char* role;
  const char* fleet;
};

#define MEMPATH_FAMILY(...) FamilyInfo{__VA_ARGS__},
#define MEMPATH_COLUMN(...)
#define MEMPATH_SHARES(...)
inline constexpr FamilyInfo kFamilyTable[] = {
#include "core/families.def"
};
#undef MEMPATH_FAMILY
#undef MEMPATH_COLUMN
#undef MEMPATH_SHARES

// Every column of every table in table order, a SHARES row read as the copy it stands for
// (the form analysis/results/families.py reads too).
const std::vector<ColumnInfo>& column_rows();

// The columns of `table` ("stream/cases") in order; std::logic_error naming the tables that
// exist for any other (a writer asking for a table the table lacks is a programming error).
const std::vector<ColumnSpec>& columns_of(std::string_view table);
// Every table name, in the order of their first row.
std::vector<std::string> table_names();

}  // namespace mempath
