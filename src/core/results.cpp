#include "core/results.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "core/error.hpp"

namespace mempath {

Table::Table(std::vector<ColumnSpec> columns)
    : columns_(std::move(columns)),
      ints_(columns_.size()),
      floats_(columns_.size()),
      strings_(columns_.size()) {}

void Table::append(const Row& row) {
  if (row.size() != columns_.size())
    throw std::logic_error("row has " + std::to_string(row.size()) + " cells, table has " +
                           std::to_string(columns_.size()) + " columns");
  for (size_t c = 0; c < columns_.size(); ++c) {
    auto it = row.find(columns_[c].name);
    if (it == row.end()) throw std::logic_error("row lacks column " + columns_[c].name);
    const Cell& cell = it->second;
    switch (columns_[c].type) {
      case ColumnType::Int:
        if (!std::holds_alternative<int64_t>(cell)) throw std::logic_error(columns_[c].name + " is int64");
        break;
      case ColumnType::Float:
        if (!std::holds_alternative<double>(cell)) throw std::logic_error(columns_[c].name + " is float64");
        break;
      case ColumnType::String:
        if (!std::holds_alternative<std::string>(cell)) throw std::logic_error(columns_[c].name + " is a string");
        break;
    }
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Cell& cell = row.at(columns_[c].name);
    switch (columns_[c].type) {
      case ColumnType::Int: ints_[c].push_back(std::get<int64_t>(cell)); break;
      case ColumnType::Float: floats_[c].push_back(std::get<double>(cell)); break;
      case ColumnType::String: strings_[c].push_back(std::get<std::string>(cell)); break;
    }
  }
  ++rows_;
}

void Table::set(size_t row, const std::string& column, const Cell& value) {
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].name != column) continue;
    if (row >= rows_) throw std::logic_error("row " + std::to_string(row) + " not written yet");
    switch (columns_[c].type) {
      case ColumnType::Int: ints_[c].at(row) = std::get<int64_t>(value); break;
      case ColumnType::Float: floats_[c].at(row) = std::get<double>(value); break;
      case ColumnType::String: strings_[c].at(row) = std::get<std::string>(value); break;
    }
    return;
  }
  throw std::logic_error("no column " + column);
}

namespace {

// The files a signal handler removes (async-signal-safe: fixed buffers, unlink only).
char g_tmp_path[4096];
char g_lock_path[4096];

void remove_run_files() {
  if (g_tmp_path[0]) unlink(g_tmp_path);
  if (g_lock_path[0]) unlink(g_lock_path);
}

extern "C" void on_fatal_signal(int sig) {
  // A batch system's time limit (SIGTERM), Ctrl-C: PATH holds the last finished case;
  // leave no half-written PATH.tmp or stale lock behind, then die of the same signal.
  remove_run_files();
  signal(sig, SIG_DFL);
  raise(sig);
}

void remember_run_files(const std::string& tmp, const std::string& lock) {
  if (tmp.size() >= sizeof g_tmp_path || lock.size() >= sizeof g_lock_path) return;
  std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
  std::memcpy(g_lock_path, lock.c_str(), lock.size() + 1);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_DFL) signal(sig, on_fatal_signal);
  }
  signal(SIGXFSZ, SIG_IGN);  // a file-size limit is a write error with a message, not a kill
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

bool is_hdf5(const std::string& path) {
  // The HDF5 signature at offset 0 (mempath's files and h5py's have no user block).
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == sizeof head && std::memcmp(head, kSignature, sizeof head) == 0;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The output policy, checked before any work (docs/cli.md, "Output files").
void check_output(const std::string& path, Existing existing) {
  if (path.empty()) throw UsageError("--output is empty; give a file name such as run.h5");
  if (path.back() == '/')
    throw UsageError("--output " + quoted(path) + " names a folder; give a file name such as " + path + "run.h5");
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw UsageError("--output " + quoted(path) + " is a folder; give a file name such as " + path + "/run.h5");
    if (S_ISLNK(st.st_mode))
      throw UsageError("--output " + quoted(path) + " is a symbolic link; give the file itself or another name");
    if (!S_ISREG(st.st_mode))
      throw UsageError("--output " + quoted(path) + " is not a regular file; give a new file name");
    if (existing == Existing::Refuse)
      throw UsageError("--output " + quoted(path) + " exists; give another name, or --overwrite to replace it "
                       "(it is replaced once the first case has finished)");
    if (!is_hdf5(path))
      throw UsageError("--output " + quoted(path) + " exists and is not an HDF5 file; --overwrite replaces only "
                       "result files: give another name");
    // access(2) lets root write anything: the mode bits say what the owner meant (a 0444
    // file is a result kept on purpose), so they are checked first.
    if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0 || access(path.c_str(), W_OK) != 0)
      throw UsageError("--output " + quoted(path) + " is read-only; give another name");
  }
  const std::string folder = folder_of(path);
  if (stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError("the folder of --output " + quoted(path) + " does not exist; create it or give another path");
  if (access(folder.c_str(), W_OK | X_OK) != 0)
    throw UsageError("cannot write in the folder of --output " + quoted(path) + " (" + std::strerror(errno) +
                     "); give a path in a writable folder");
}

std::string read_small_file(int fd) {
  char buf[64] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// One run at a time per output file: an flock on PATH.lock, held for the run. A lock file
// left by a killed run is not locked, so the next run takes it over. Returns -1 where the
// file system has no locks (some network file systems): then nothing is enforced.
int take_lock(const std::string& path) {
  const std::string lock = path + ".lock";
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw UsageError("cannot create the lock file " + quoted(lock) + " (" + std::strerror(errno) +
                       "); give --output a path in a writable folder");
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        const std::string pid = read_small_file(fd);
        close(fd);
        throw UsageError("another mempath run" + (pid.empty() ? std::string() : " (pid " + pid + ")") +
                         " is writing " + quoted(path) + "; wait for it or give another --output");
      }
      close(fd);
      std::fprintf(stderr, "mempath: warning: no file locks here (%s); two runs on %s would clash\n",
                   std::strerror(err), quoted(path).c_str());
      return -1;
    }
    // The lock must be on the file that is at PATH.lock now, not one a finishing run unlinked.
    struct stat held {}, named {};
    if (fstat(fd, &held) == 0 && stat(lock.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      const std::string pid = std::to_string(getpid()) + "\n";
      if (ftruncate(fd, 0) == 0 && pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        // the pid is only a courtesy for the message of a second run
      }
      return fd;
    }
    close(fd);
  }
  throw UsageError("cannot take the lock " + quoted(lock) + ": it keeps changing; is another run starting?");
}

void write_all(int fd, const std::vector<char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(n < 0 ? errno : EIO, std::generic_category());
    done += static_cast<size_t>(n);
  }
}

}  // namespace

ResultFile::ResultFile(std::string path, std::map<std::string, Attribute> attributes, Existing existing)
    : path_(std::move(path)), attributes_(std::move(attributes)) {
  attributes_["schema_version"] = kSchemaVersion;
  check_output(path_, existing);
  lock_fd_ = take_lock(path_);
  // A PATH.tmp is a save a killed run did not finish; PATH is that run's last whole file.
  unlink((path_ + ".tmp").c_str());
  remember_run_files(path_ + ".tmp", lock_fd_ >= 0 ? path_ + ".lock" : "");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become one exception, not a stack dump
}

ResultFile::~ResultFile() {
  unlink((path_ + ".tmp").c_str());
  if (lock_fd_ >= 0) {
    unlink((path_ + ".lock").c_str());
    close(lock_fd_);
  }
  g_tmp_path[0] = g_lock_path[0] = '\0';
}

Table& ResultFile::table(const std::string& name, const std::vector<ColumnSpec>& columns) {
  auto it = tables_.find(name);
  if (it == tables_.end()) it = tables_.emplace(name, Table(columns)).first;
  return it->second;
}

void ResultFile::set_attribute(const std::string& name, Attribute value) {
  attributes_[name] = std::move(value);
}

namespace {

// RAII for HDF5 identifiers: every id is closed on every path out of save().
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t), const std::string& what) : id(i), close(c) {
    if (id < 0) throw std::runtime_error("HDF5: cannot " + what);
  }
  ~Id() { close(id); }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id; }
};

Id utf8_string_type() {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "copy string type");
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return Id(H5Tcopy(type), H5Tclose, "copy string type");
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw std::runtime_error("HDF5: cannot " + what);
}

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Id type = utf8_string_type();
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "create scalar space");
  Id attr(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
          "create attribute " + name);
  const char* data = value.c_str();
  check(H5Awrite(attr, type, &data), "write attribute " + name);
}

void write_int_attribute(hid_t object, const std::string& name, int64_t value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "create scalar space");
  Id attr(H5Acreate2(object, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
          H5Aclose, "create attribute " + name);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), "write attribute " + name);
}

hid_t create_group_path(hid_t file, const std::string& path) {
  // Intermediate groups ("bw" of "bw/samples") are created as needed.
  Id props(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "create link properties");
  H5Pset_create_intermediate_group(props, 1);
  return H5Gcreate2(file, path.c_str(), props, H5P_DEFAULT, H5P_DEFAULT);
}

void write_column(hid_t group, const Table& table, size_t c) {
  const ColumnSpec& spec = table.columns()[c];
  hsize_t dims[1] = {table.rows()};
  Id space(H5Screate_simple(1, dims, nullptr), H5Sclose, "create dataspace");
  hid_t file_type = H5T_IEEE_F64LE, mem_type = H5T_NATIVE_DOUBLE;
  Id strings = utf8_string_type();
  if (spec.type == ColumnType::Int) file_type = H5T_STD_I64LE, mem_type = H5T_NATIVE_INT64;
  if (spec.type == ColumnType::String) file_type = strings, mem_type = strings;
  Id dataset(H5Dcreate2(group, spec.name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT,
                        H5P_DEFAULT),
             H5Dclose, "create dataset " + spec.name);
  if (table.rows() > 0) {
    const void* data = nullptr;
    std::vector<const char*> pointers;
    if (spec.type == ColumnType::Int) data = table.ints(c).data();
    if (spec.type == ColumnType::Float) data = table.floats(c).data();
    if (spec.type == ColumnType::String) {
      for (const auto& s : table.strings(c)) pointers.push_back(s.c_str());
      data = pointers.data();
    }
    check(H5Dwrite(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + spec.name);
  }
  write_string_attribute(dataset, "units", spec.units);
}

}  // namespace

namespace {

// The whole file as bytes, built by HDF5's in-memory driver: nothing touches the disk until
// it is complete, so a full disk is one failed write() of ours, not a half-closed HDF5 file.
std::vector<char> file_image(const std::map<std::string, Attribute>& attributes,
                             const std::map<std::string, Table>& tables) {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "create file access properties");
  check(H5Pset_fapl_core(fapl, 1 << 20, 0), "select the in-memory driver");
  Id file(H5Fcreate("mempath-results", H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose, "create the file image");
  for (const auto& [name, value] : attributes) {
    if (std::holds_alternative<int64_t>(value))
      write_int_attribute(file, name, std::get<int64_t>(value));
    else
      write_string_attribute(file, name, std::get<std::string>(value));
  }
  for (const auto& [name, table] : tables) {
    Id group(create_group_path(file, name), H5Gclose, "create group " + name);
    for (size_t c = 0; c < table.columns().size(); ++c) write_column(group, table, c);
  }
  check(H5Fflush(file, H5F_SCOPE_GLOBAL), "flush the file image");
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size <= 0) throw std::runtime_error("HDF5: cannot size the file image");
  std::vector<char> bytes(static_cast<size_t>(size));
  if (H5Fget_file_image(file, bytes.data(), bytes.size()) != size)
    throw std::runtime_error("HDF5: cannot copy the file image");
  return bytes;
}

}  // namespace

void ResultFile::checkpoint() {
  pending_ = true;
  const auto now = std::chrono::steady_clock::now();
  if (saved_ && now - last_save_end_ < kSaveEvery * last_save_cost_) return;
  save();
}

void ResultFile::finish() {
  if (pending_) save();
}

void ResultFile::save() {
  const auto started = std::chrono::steady_clock::now();
  const std::vector<char> bytes = file_image(attributes_, tables_);
  const std::string tmp = path_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  try {
    if (fd < 0) throw std::system_error(errno, std::generic_category());
    write_all(fd, bytes);
    if (fsync(fd) != 0) throw std::system_error(errno, std::generic_category());
    const int closed = close(fd);
    fd = -1;
    if (closed != 0) throw std::system_error(errno, std::generic_category());
  } catch (const std::system_error& e) {
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + quoted(tmp) + " (" + e.code().message() + "); " +
                             (saved_ ? quoted(path_) + " keeps the cases finished before"
                                     : std::string("nothing was written")));
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + quoted(tmp) + " to " + quoted(path_) + " (" + why + ")");
  }
  // The rename itself reaches the disk with its folder: after a crash PATH is then the new
  // file, not the old name or none. Best effort: a folder that cannot be synced (some
  // network file systems) changes nothing about the file.
  const std::string::size_type slash = path_.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  const int dir_fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  saved_ = true;
  pending_ = false;
  last_save_end_ = std::chrono::steady_clock::now();
  last_save_cost_ = last_save_end_ - started;
}

void ResultFile::abandon(const std::string& why) {
  std::string where = "nothing was written";
  if (saved_) {
    where = "the cases finished before are in " + quoted(path_);
    try {
      set_attribute("aborted", why);
      save();
    } catch (const std::exception& e) {
      where += " (recording the abort failed: " + std::string(e.what()) + ")";
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "mempath: failed: %s; %s\n", why.c_str(), where.c_str());
  std::fflush(stderr);
  remove_run_files();
  std::_Exit(kExitFailed);
}

}  // namespace mempath
