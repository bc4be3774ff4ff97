// `mempath export RUN.h5`: a result file as CSV or JSON, for people and tools that do not
// read HDF5 (docs/cli.md). The file is read back by core/result_reader.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "core/error.hpp"
#include "core/options.hpp"
#include "core/result_reader.hpp"

namespace mempath {
namespace {

std::vector<OptionSpec> export_option_specs() {
  return {
      {"format", "csv|json", "csv (default): a file per table in a folder, or --table's one; json: one document"},
      {"table", "NAME", "only this table (bw/cases, memcpy/samples, ...)"},
      {"output", "FILE|-", "also -o; - (stdout) by default for json and one csv table; a folder (default "
                           "RUN_csv) for every table as csv"},
      {"overwrite", "", "replace an existing output"},
  };
}

// A text cell (never a number): OWASP's CSV-injection rule, then RFC 4180. Text that a
// spreadsheet would evaluate (it starts with = + - @ TAB CR) gets a leading ', which the
// spreadsheet shows as text; a cell with a separator (, or the ; of some locales), quote or
// line break is quoted, its quotes doubled, so no formula can start a cell of its own.
std::string csv_cell(const std::string& raw) {
  const std::string text = !raw.empty() && std::strchr("=+-@\t\r", raw.front()) ? "'" + raw : raw;
  if (text.find_first_of(",;\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

// Exact doubles (they round-trip); NaN, "does not exist" in the schema, is an empty cell.
std::string number(double v) {
  if (std::isnan(v)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string csv(const Table& table) {
  std::string text;
  const auto& columns = table.columns();
  for (size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + csv_cell(columns[c].name);
  text += "\n";
  for (size_t r = 0; r < table.rows(); ++r) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) text += ",";
      switch (columns[c].type) {
        case ColumnType::Int: text += std::to_string(table.ints(c)[r]); break;
        case ColumnType::Float: text += number(table.floats(c)[r]); break;
        case ColumnType::String: text += csv_cell(table.strings(c)[r]); break;
      }
    }
    text += "\n";
  }
  return text;
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

void refuse_existing(const std::string& path, bool overwrite) {
  if (exists(path) && !overwrite) throw UsageError("'" + printable(path) + "' exists; --overwrite replaces it");
}

std::string parent_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

std::string base_of(const std::string& path) {
  std::string base = std::filesystem::path(path).filename().string();
  return base.empty() ? "export" : base;
}

// A write that failed (a full disk, a file size limit): the output is left as it was.
[[noreturn]] void write_failed(const std::string& path, int error) {
  throw std::runtime_error("cannot write '" + printable(path) + "': " + std::strerror(error) +
                           "; nothing was replaced");
}

// All of `text` into the new file `fd`, then to the disk: a full disk shows here (or at
// fsync, for file systems that allocate late), never as a short file.
void write_all(int fd, const std::string& text, const std::string& shown) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) write_failed(shown, n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) write_failed(shown, errno);
}

mode_t current_umask() {
  const mode_t mask = umask(0);
  umask(mask);
  return mask;
}

int create_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
}

// A file beside `path` that no one else names: ".NAME.XXXXXX" (hidden; left only by a kill).
int temp_file(const std::string& path, std::string& temp) {
  temp = parent_of(path) + "/." + base_of(path) + ".XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) write_failed(path, errno);
  fchmod(fd, 0666 & ~current_umask());  // mkstemp's 0600 would differ from a plain file's mode
  return fd;
}

// Atomic: a temporary file in the same folder, renamed over `path` once complete, so a
// reader sees the old file or the new one, and a failed write leaves the old one.
void write_file(const std::string& path, const std::string& text) {
  std::string temp;
  const int fd = temp_file(path, temp);
  try {
    write_all(fd, text, path);
  } catch (...) {
    close(fd);
    unlink(temp.c_str());
    throw;
  }
  const int closed = close(fd);
  if (closed != 0 || rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    write_failed(path, error);
  }
}

void make_folder(const std::string& path) {
  if (mkdir(path.c_str(), 0777) != 0) write_failed(path, errno);  // the umask applies
}

// What a table name may become on disk: each part (between '/') 1..200 of letters, digits,
// '_', '-', '.' and '+', not starting with '.' (no "..", no hidden files), so every table
// lands inside the export folder under its own name. Others are refused, not renamed: a
// renamed file could meet another table's name.
void check_file_name(const std::string& table) {
  for (const auto& part : split_list(table, '/')) {
    bool ok = !part.empty() && part.size() <= 200 && part.front() != '.';
    for (char c : part) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-.+", c));
    if (!ok)
      throw UsageError("table '" + printable(table) + "' cannot be a file name ('" + printable(part) +
                       "'); valid in a name: letters, digits, '_', '-', '.', '+', not starting with '.'; "
                       "export it with --format json or --table NAME -o FILE");
  }
}

// A folder that --overwrite may replace: a previous export, nothing but CSV files and
// folders of them. Anything else (a home folder named by mistake) is refused.
bool is_export_folder(const std::string& folder) {
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const auto status = it->symlink_status(error);
    if (error) return false;
    if (std::filesystem::is_directory(status)) continue;
    if (!std::filesystem::is_regular_file(status) || it->path().extension() != ".csv") return false;
  }
  return !error;
}

// Every table as FOLDER/GROUP/NAME.csv: the HDF5 paths, so a name never collides. Written
// whole into a temporary folder beside FOLDER, which then takes FOLDER's place (exchanged
// in one step where the file system can, else renamed aside and removed): a failed export
// leaves no FOLDER or the previous one, never a mix.
void write_csv_folder(const StoredRun& run, const std::vector<std::string>& names, const std::string& folder,
                      bool overwrite) {
  refuse_existing(folder, overwrite);
  for (const auto& name : names) check_file_name(name);
  struct stat st {};
  const bool replacing = lstat(folder.c_str(), &st) == 0;
  if (replacing && (!S_ISDIR(st.st_mode) || !is_export_folder(folder)))
    throw UsageError("'" + printable(folder) + "' is not a folder of CSV files from an earlier export; "
                     "--overwrite replaces only such a folder: name a new folder with -o");
  std::string temp = parent_of(folder) + "/." + base_of(folder) + ".XXXXXX";
  if (!mkdtemp(temp.data())) write_failed(folder, errno);
  chmod(temp.c_str(), 0777 & ~current_umask());
  const auto discard = [](const std::string& path) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  };
  try {
    for (const auto& name : names) {
      const std::vector<std::string> parts = split_list(name, '/');
      std::string path = temp;
      for (size_t p = 0; p + 1 < parts.size(); ++p)
        if (!exists(path += "/" + parts[p])) make_folder(path);
      const std::string file = path + "/" + parts.back() + ".csv";
      const int fd = create_file(file);
      if (fd < 0) write_failed(folder, errno);
      try {
        write_all(fd, csv(run.tables.at(name)), folder);
      } catch (...) {
        close(fd);
        throw;
      }
      if (close(fd) != 0) write_failed(folder, errno);
    }
    if (!replacing) {
      if (rename(temp.c_str(), folder.c_str()) != 0) write_failed(folder, errno);
      return;
    }
    if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, folder.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS) write_failed(folder, errno);
      std::string old = parent_of(folder) + "/." + base_of(folder) + ".old.XXXXXX";
      if (!mkdtemp(old.data()) || rename(folder.c_str(), old.c_str()) != 0) write_failed(folder, errno);
      if (rename(temp.c_str(), folder.c_str()) != 0) {
        const int error = errno;
        rename(old.c_str(), folder.c_str());
        write_failed(folder, error);
      }
      temp = old;
    }
  } catch (...) {
    discard(temp);
    throw;
  }
  discard(temp);  // the previous export, now at the temporary name
}

std::string without_h5(const std::string& path) {
  const std::string ext = ".h5";
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0
             ? path.substr(0, path.size() - ext.size())
             : path;
}

}  // namespace

// libhdf5 (Debian's 1.10) crashes or loops inside its own code on some damaged files
// (tests/fuzz finds them), below any check read_run can make. While the file is read, such a
// crash, or a read that never ends, is one line and exit status 2, as a file read_run refuses
// is; nothing has been written yet. The handler may only write and exit: the heap may be
// what broke, and a stack overflow needs a stack of its own.
constexpr unsigned kReadSeconds = 300;  // a 100 MB result file reads in seconds
char g_reader_line[2][1024];
size_t g_reader_length[2] = {0, 0};

extern "C" void on_reader_fault(int sig) {
  const int which = sig == SIGALRM ? 1 : 0;
  (void)!write(STDERR_FILENO, g_reader_line[which], g_reader_length[which]);
  _exit(kExitUsage);
}

class ReaderFaultGuard {
 public:
  explicit ReaderFaultGuard(const std::string& input) {
    // As main() words a UsageError of read_run.
    const std::string file = "mempath: error: cannot read '" + printable(input) + "' as a mempath result: ";
    const std::string valid = " (the file is damaged); give an intact mempath result file\n";
    const std::string lines[2] = {
        file + "the HDF5 library crashed reading it" + valid,
        file + "the HDF5 library did not finish reading it in " + std::to_string(kReadSeconds) + " s" + valid};
    for (int i = 0; i < 2; ++i) {
      g_reader_length[i] = std::min(lines[i].size(), sizeof g_reader_line[i]);
      std::memcpy(g_reader_line[i], lines[i].data(), g_reader_length[i]);
    }
    static char alternate[1 << 16];
    stack_t stack{};
    stack.ss_sp = alternate;
    stack.ss_size = sizeof alternate;
    sigaltstack(&stack, &old_stack_);
    struct sigaction action {};
    action.sa_handler = on_reader_fault;
    action.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &old_[i]);
    alarm(kReadSeconds);
  }
  ~ReaderFaultGuard() {
    alarm(0);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaltstack(&old_stack_, nullptr);
  }
  ReaderFaultGuard(const ReaderFaultGuard&) = delete;
  ReaderFaultGuard& operator=(const ReaderFaultGuard&) = delete;

 private:
  static constexpr std::array<int, 6> kSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
  std::array<struct sigaction, 6> old_{};
  stack_t old_stack_{};
};

StoredRun read_guarded(const std::string& input) {
  ReaderFaultGuard guard(input);
  return read_run(input);
}

int cmd_export(const std::vector<std::string>& args) {
  Options opts("export", "Writes the tables of a result file, its first argument, as CSV or JSON\n"
                         "(docs/cli.md):\n"
                         "  mempath export RUN.h5 [--format csv|json] [--table NAME] [-o FILE|-]",
               export_option_specs());
  std::vector<std::string> rest;
  std::string input;
  for (const auto& a : args) {
    if (input.empty() && rest.empty() && !a.empty() && a[0] != '-') input = a;
    else rest.push_back(a == "-o" ? "--output" : a);
  }
  if (!opts.parse(rest)) return kExitOk;
  if (input.empty()) throw UsageError("name the result file first: mempath export RUN.h5 [options]");
  const std::string format = opts.choice("format", {"csv", "json"}, "csv");
  const StoredRun run = read_guarded(input);
  std::vector<std::string> names;
  if (auto table = opts.get("table")) {
    if (!run.tables.count(*table)) {
      std::vector<std::string> known;
      for (const auto& [name, t] : run.tables) known.push_back(printable(name));
      throw UsageError("no table '" + printable(*table) + "' in '" + printable(input) + "'; it has: " +
                       (known.empty() ? std::string("none") : join(known)));
    }
    names.push_back(*table);
  } else {
    for (const auto& [name, t] : run.tables) names.push_back(name);
  }
  const bool overwrite = opts.flag("overwrite");
  if (format == "csv" && !opts.has("table")) {
    const std::string folder = opts.get_or("output", without_h5(input) + "_csv");
    if (folder == "-") throw UsageError("csv of every table goes to a folder; name one table with --table for stdout");
    write_csv_folder(run, names, folder, overwrite);
    std::cerr << "mempath: " << names.size() << " tables written to " << folder << "/\n";
    return kExitOk;
  }
  const std::string text = format == "csv" ? csv(run.tables.at(names.front())) : run_json(run, names);
  const std::string output = opts.get_or("output", "-");
  if (output == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw std::runtime_error(std::string("cannot write to standard output: ") + std::strerror(errno));
    return kExitOk;
  }
  refuse_existing(output, overwrite);
  write_file(output, text);
  return kExitOk;
}

}  // namespace mempath
