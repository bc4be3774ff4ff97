#pragma once
// The one option parser of mempath: every subcommand declares its options here, so the
// same names, help and error messages apply everywhere (docs/cli.md).
#include <functional>
#include <map>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mempath {

struct OptionSpec {
  std::string name;       // without the leading "--"
  std::string value_name; // empty for a flag
  std::string help;       // plain sentences: help_text wraps and indents them
};

class Options {
 public:
  Options(std::string command, std::string summary, std::vector<OptionSpec> specs);
  // The program named in usage and error lines ("mempath", "mempath-mpi").
  static void set_program(const std::string& name);
  // The subcommand ("gemm").
  const std::string& command() const { return command_; }

  // Parses argv after the subcommand; throws UsageError for unknown options, missing or
  // empty values and stray arguments. Returns false when --help or -h was given (help
  // printed).
  bool parse(const std::vector<std::string>& args);

  bool flag(const std::string& name) const;
  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  // A value that must be one of `valid`; throws UsageError listing them.
  std::string choice(const std::string& name, const std::vector<std::string>& valid,
                     const std::string& fallback) const;
  // A whole number in [min_value, max_value]: never truncated, never wrapped.
  long long integer(const std::string& name, long long fallback, long long min_value,
                    long long max_value = kIntMax) const;
  // A comma list; an option given with no item in it ("", ",,,") is an error, not "all".
  // A value given twice counts once (the first place it stands), with one note on stderr.
  std::vector<std::string> list(const std::string& name) const;
  // A comma list of sizes (parse_size); sizes equal in bytes count once, with the note.
  std::vector<uint64_t> sizes(const std::string& name) const;
  static constexpr long long kIntMax = 2147483647;
  // Help columns: the option's name and value, then its help from kHelpColumn, wrapped to
  // `width` with every continuation line starting at kHelpColumn.
  static constexpr size_t kHelpColumn = 28;
  std::string help_text(size_t width = help_width()) const;
  // The terminal's width where stdout is one (COLUMNS first, as shells export it), else 80.
  static size_t help_width();

 private:
  const OptionSpec* find(const std::string& name) const;
  // `key` says when two items are the same value (default: the same text).
  void note_duplicates(const std::string& name, const std::vector<std::string>& items,
                       const std::vector<std::string>& kept,
                       const std::function<std::string(const std::string&)>& key = nullptr) const;
  mutable std::set<std::string> noted_;  // options whose duplicates were already noted
  std::string command_, summary_;
  std::vector<OptionSpec> specs_;
  std::map<std::string, std::string> values_;
};

// Repetitions beyond this are a typo, not a plan: every one keeps a sample in memory.
inline constexpr long long kMaxReps = 1000000;

// --threads N: a whole number of at least 1 (0 and negatives do not mean "all cores").
int thread_count(const std::string& text);

// `text` as lines of at most `width` columns, broken at spaces (a longer word stands on a
// line of its own), every line after the first prefixed by `indent` spaces; a newline
// in `text` starts a new line.
std::string wrap(const std::string& text, size_t width, size_t indent, size_t first_column = 0);

// "a,b,c" -> {"a","b","c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& text, char sep = ',');
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

}  // namespace mempath
