#include "core/summary_line.hpp"

#include <cstdio>
#include <stdexcept>

namespace mempath {

SummaryField field(const std::string& key, const std::string& column) { return {key, column, -1, false, 1}; }

SummaryField metric(const std::string& key, int precision, const std::string& column, double scale) {
  return {key, column, precision, true, scale};
}

namespace {

const Cell& cell(const Row& row, const std::string& column) {
  auto it = row.find(column);
  if (it == row.end()) throw std::logic_error("summary field '" + column + "' is not a column of the row");
  return it->second;
}

std::string text(const Cell& c, const SummaryField& f) {
  char buf[64];
  if (auto* s = std::get_if<std::string>(&c)) return s->empty() ? "-" : *s;
  if (auto* i = std::get_if<int64_t>(&c)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(*i));
    return buf;
  }
  const double v = std::get<double>(c) * f.scale;
  if (f.precision < 0) std::snprintf(buf, sizeof buf, "%g", v);
  else std::snprintf(buf, sizeof buf, "%.*f", f.precision, v);
  return buf;
}

}  // namespace

std::string summary_line(const std::string& bench, const Row& row, const std::vector<SummaryField>& fields) {
  const auto status = row.find("status");
  const bool ok = status != row.end() && std::get<std::string>(status->second) == "ok";
  std::string line = "MEMPATH " + bench;
  for (const auto& f : fields) {
    if (f.metric && !ok) continue;
    line += " " + f.key + "=" + text(cell(row, f.column.empty() ? f.key : f.column), f);
  }
  const auto reason = row.find("reason");
  if (reason != row.end() && !std::get<std::string>(reason->second).empty())
    line += " reason=\"" + std::get<std::string>(reason->second) + "\"";
  return line;
}

}  // namespace mempath
