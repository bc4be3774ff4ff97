#pragma once
// The one results writer: tidy tables (one dataset per column) and root attributes in
// one HDF5 file per run, rewritten atomically after every finished case (docs/schema.md).
// Output policy (docs/cli.md): an existing file is never replaced unless asked for, and
// then only once a case has finished; one run at a time writes a file (PATH.lock).
#include <chrono>
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
  // Changes one cell of a written row (a sweep's best thread count, known at its end).
  void set(size_t row, const std::string& column, const Cell& value);
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

enum class Existing { Refuse, Overwrite };

class ResultFile {
 public:
  // Checks the output before any work: UsageError (one line) for an empty name, a folder,
  // a symbolic link or other non-regular file, a folder that cannot be written, an
  // existing file without Existing::Overwrite (or, with it, one that is not HDF5 or is
  // read-only), and a file another run is writing. Nothing is written yet.
  ResultFile(std::string path, std::map<std::string, Attribute> attributes,
             Existing existing = Existing::Refuse);
  ~ResultFile();  // removes PATH.lock and any PATH.tmp
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  // The table at "group/name" (e.g. "bw/samples"), created on first use.
  Table& table(const std::string& name, const std::vector<ColumnSpec>& columns);
  void set_attribute(const std::string& name, Attribute value);
  // Builds the file in memory, writes it to PATH.tmp and renames that over PATH: PATH is
  // always the last complete file. A write error (disk full) throws std::runtime_error with
  // one line and leaves PATH as it was.
  void save();
  // After a finished case: save() now, unless saving has become costly (a sweep of many
  // short cases whose file grows with every one): then only once the cases since the last
  // save ran kSaveEvery times as long as that save took, so that rewriting the file never
  // takes more than a few per cent of a run instead of most of it. finish() saves what is
  // left; abandon() does too.
  void checkpoint();
  void finish();
  const std::string& path() const { return path_; }

  // Ends the process from any thread (the watchdog's): records `why` in the attribute
  // `aborted` (if a case was saved before), prints one line, cleans up, exits 1.
  [[noreturn]] void abandon(const std::string& why);

 private:
  std::string path_;
  std::map<std::string, Attribute> attributes_;
  std::map<std::string, Table> tables_;
  int lock_fd_ = -1;
  bool saved_ = false;
  bool pending_ = false;  // rows appended since the last save
  std::chrono::steady_clock::time_point last_save_end_{};
  std::chrono::steady_clock::duration last_save_cost_{};
};

// A checkpoint saves once the time since the last save is this many times what it cost.
inline constexpr int kSaveEvery = 20;

inline constexpr int64_t kSchemaVersion = 1;

}  // namespace mempath
