#include "core/families.hpp"

#include <map>
#include <stdexcept>

namespace mempath {
namespace {

const std::map<std::string, std::vector<ColumnSpec>, std::less<>>& tables() {
  static const auto by_name = [] {
    std::map<std::string, std::vector<ColumnSpec>, std::less<>> t;
    for (const ColumnInfo& c : kColumnTable) t[c.table].push_back({c.name, c.type, c.unit});
    return t;
  }();
  return by_name;
}

}  // namespace

const std::vector<ColumnSpec>& columns_of(std::string_view table) {
  const auto& all = tables();
  if (const auto it = all.find(table); it != all.end()) return it->second;
  std::string valid;
  for (const std::string& name : table_names()) valid += (valid.empty() ? "" : ", ") + name;
  throw std::logic_error("no table '" + std::string(table) + "' in core/families.def; valid: " + valid);
}

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const ColumnInfo& c : kColumnTable)
    if (names.empty() || names.back() != c.table) names.push_back(c.table);
  return names;
}

}  // namespace mempath
