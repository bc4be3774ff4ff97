#include "core/families.hpp"

#include <deque>
#include <map>
#include <stdexcept>

namespace mempath {
namespace {

// A row of families.def's tables as written: a column, or (`shares` set) a family whose
// tables are those of the family `shares`, with `column.table` the family and
// `column.required` whether the source's required flags stay.
struct DefRow {
  ColumnInfo column;
  const char* shares;
};

#define MEMPATH_FAMILY(...)
#define MEMPATH_COLUMN(table, name, type, unit, required, role, fleet) \
  DefRow{{table, name, ColumnType::type, unit, required, role, fleet}, nullptr},
#define MEMPATH_SHARES(family, source, required) DefRow{{family, "", ColumnType::Int, "", required, "", ""}, source},
constexpr DefRow kDefRows[] = {
#include "core/families.def"
};
#undef MEMPATH_FAMILY
#undef MEMPATH_COLUMN
#undef MEMPATH_SHARES

std::string_view family_of(std::string_view table) { return table.substr(0, table.find('/')); }

// The columns a SHARES row gives its family: every table of its source read so far, their
// names kept in `names` (a deque: the rows point into it).
void add_shared(const DefRow& row, std::vector<ColumnInfo>& out, std::deque<std::string>& names) {
  const size_t end = out.size();
  for (size_t i = 0; i < end; ++i) {
    const std::string_view table = out[i].table;
    if (family_of(table) != row.shares) continue;
    names.push_back(row.column.table + std::string(table.substr(table.find('/'))));
    ColumnInfo c = out[i];
    c.table = names.back().c_str();
    c.required = c.required && row.column.required;
    out.push_back(c);
  }
  if (out.size() == end)
    throw std::logic_error(std::string("core/families.def: ") + row.column.table + " shares the tables of '" +
                           row.shares + "', which has none above the row; valid: a family whose columns come first");
}

const std::map<std::string, std::vector<ColumnSpec>, std::less<>>& tables() {
  static const auto by_name = [] {
    std::map<std::string, std::vector<ColumnSpec>, std::less<>> t;
    for (const ColumnInfo& c : column_rows()) t[c.table].push_back({c.name, c.type, c.unit});
    return t;
  }();
  return by_name;
}

}  // namespace

const std::vector<ColumnInfo>& column_rows() {
  static std::deque<std::string> shared_names;
  static const auto rows = [] {
    std::vector<ColumnInfo> out;
    for (const DefRow& r : kDefRows) {
      if (r.shares)
        add_shared(r, out, shared_names);
      else
        out.push_back(r.column);
    }
    return out;
  }();
  return rows;
}

const std::vector<ColumnSpec>& columns_of(std::string_view table) {
  const auto& all = tables();
  if (const auto it = all.find(table); it != all.end()) return it->second;
  std::string valid;
  for (const std::string& name : table_names()) valid += (valid.empty() ? "" : ", ") + name;
  throw std::logic_error("no table '" + std::string(table) + "' in core/families.def; valid: " + valid);
}

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const ColumnInfo& c : column_rows())
    if (names.empty() || names.back() != c.table) names.push_back(c.table);
  return names;
}

}  // namespace mempath
