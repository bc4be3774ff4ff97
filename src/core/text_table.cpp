#include "core/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mempath {

namespace {

void remember(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

std::string fixed1(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

}  // namespace

void Pivot::add(const std::string& row, const std::string& column, const std::string& status, double value,
                double rank) {
  remember(rows_, row);
  remember(columns_, column);
  Cell& cell = cells_[{row, column}];
  if (rank < cell.rank) return;
  if (rank > cell.rank) cell = Cell{false, false, 0, rank};
  if (status == "ok" && std::isfinite(value)) {
    cell.best = cell.ok ? std::max(cell.best, value) : value;
    cell.ok = true;
  }
  if (status == "failed") cell.failed = true;
}

std::string Pivot::format(const std::string& title, const std::string& corner) const {
  std::vector<std::string> header = {corner};
  header.insert(header.end(), columns_.begin(), columns_.end());
  std::vector<std::vector<std::string>> grid;
  for (const auto& r : rows_) {
    std::vector<std::string> line = {r};
    for (const auto& c : columns_) {
      const auto it = cells_.find({r, c});
      if (it == cells_.end()) line.push_back("-");
      else if (it->second.ok) line.push_back(fixed1(it->second.best));
      else line.push_back(it->second.failed ? "fail" : "-");
    }
    grid.push_back(line);
  }
  return title + "\n" + format_text_table(header, grid);
}

std::string format_text_table(const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows, const std::string& align) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      const bool left = align.empty() ? c == 0 : align.at(c) == 'l';
      text += (c == 0 ? "" : "  ") + (left ? cells[c] + pad : pad + cells[c]);
    }
    // A left-aligned last column would end in padding.
    return text.erase(text.find_last_not_of(' ') + 1) + "\n";
  };
  std::string text = line(header);
  for (const auto& row : rows) text += line(row);
  return text;
}

}  // namespace mempath
