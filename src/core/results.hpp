#pragma once
// The one results writer: tidy tables (one dataset per column) and root attributes in
// one HDF5 file per run, rewritten atomically after every case (docs/schema.md).
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace mempath {

using Cell = std::variant<int64_t, double, std::string>;
using Row = std::map<std::string, Cell>;

enum class ColumnType { Int, Float, String };

struct ColumnSpec {
  std::string name;
  ColumnType type;
  std::string units;  // "" for dimensionless
};

class Table {
 public:
  explicit Table(std::vector<ColumnSpec> columns);
  // Every column must be present with its type; anything else is a programming error.
  void append(const Row& row);
  size_t rows() const { return rows_; }
  const std::vector<ColumnSpec>& columns() const { return columns_; }
  const std::vector<int64_t>& ints(size_t column) const { return ints_[column]; }
  const std::vector<double>& floats(size_t column) const { return floats_[column]; }
  const std::vector<std::string>& strings(size_t column) const { return strings_[column]; }

 private:
  std::vector<ColumnSpec> columns_;
  std::vector<std::vector<int64_t>> ints_;
  std::vector<std::vector<double>> floats_;
  std::vector<std::vector<std::string>> strings_;
  size_t rows_ = 0;
};

using Attribute = std::variant<int64_t, std::string>;

class ResultFile {
 public:
  // Throws UsageError when the folder of `path` cannot be written.
  ResultFile(std::string path, std::map<std::string, Attribute> attributes);
  // The table at "group/name" (e.g. "bw/samples"), created on first use.
  Table& table(const std::string& name, const std::vector<ColumnSpec>& columns);
  void set_attribute(const std::string& name, Attribute value);
  // Writes everything to PATH.tmp and renames it over PATH.
  void save() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<std::string, Attribute> attributes_;
  std::map<std::string, Table> tables_;
};

inline constexpr int64_t kSchemaVersion = 1;

}  // namespace mempath
