// A seeded mutation fuzzer for the two C++ parsers of files that come from elsewhere: the
// result reader (read_run, what `mempath export` reads) and the snapshot loader
// (load_snapshot, what `mempath topo --from DIR` reads). docs/testing.md tells how to run it.
//
// Every input runs in a forked child, so a crash, an abort, a sanitizer report or a hang
// (a FIFO read, a link cycle) is seen and saved instead of ending the fuzzer. The contract
// checked: the parser returns, or throws UsageError with a one-line message; anything else
// is a failure. One seed gives one sequence of inputs (the corpus grows only from the
// outcomes, which are deterministic), so `--seed S --runs N` replays a run exactly; the
// time budget only decides how far along the sequence a run gets.
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>
#include <ucontext.h>
#include <vector>

#include "core/error.hpp"
#include "core/result_reader.hpp"
#include "core/topology.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define MEMPATH_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMPATH_FUZZ_ASAN 1
#endif
#endif

// Sanitizer settings built in, so a plain `./mempath_fuzz` behaves as CI's: a huge
// allocation is std::bad_alloc (an uncaught exception, reported), not an abort of the
// sanitizer's own; leaks are not this fuzzer's question; UBSan stops at its first report.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=2048:exitcode=86:"
         "handle_abort=1:print_summary=1";
}
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1:exitcode=87"; }

namespace fs = std::filesystem;
using mempath::UsageError;

namespace {

enum class Target { Results, Snapshots };

// ---------------------------------------------------------------------------------------
// Inputs. A result input is one file; a snapshot input is a folder. Git keeps neither
// FIFOs nor empty folders, and a symbolic link kept in git (to /dev/zero, to itself) hangs
// whatever reads the checkout's files, so a snapshot input lists those in a file of its own
// root, SPECIAL ("fifo REL", "dir REL" or "link REL TARGET" a line), made real when the
// input is laid out.
const char* const SPECIAL = ".fuzz-special";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// Regular files, symbolic links and folders of a snapshot input; anything else left out.
void copy_entry(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const auto st = fs::symlink_status(from, ec);
  if (ec) return;
  if (fs::is_symlink(st)) {
    fs::create_directories(to.parent_path());
    fs::create_symlink(fs::read_symlink(from), to, ec);
  } else if (fs::is_directory(st)) {
    fs::create_directories(to);
    std::vector<fs::path> names;
    for (const auto& e : fs::directory_iterator(from, ec)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) copy_entry(from / n, to / n);
  } else if (fs::is_regular_file(st)) {
    write_file(to, read_file(from));
  }
}

void apply_special(const fs::path& root) {
  std::istringstream in(read_file(root / SPECIAL));
  std::string kind, rel;
  while (in >> kind >> rel) {
    std::string target;
    if (kind == "link" && !(in >> target)) break;
    const fs::path p = root / rel;
    std::error_code ec;
    fs::remove_all(p, ec);
    fs::create_directories(p.parent_path(), ec);
    if (kind == "fifo") mkfifo(p.c_str(), 0600);
    else if (kind == "dir") fs::create_directories(p, ec);
    else if (kind == "link") fs::create_symlink(target, p, ec);
  }
}

// Files of a snapshot input (relative, sorted), links and specials included.
std::vector<std::string> entries(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto st = it->symlink_status(ec);
    const std::string rel = it->path().lexically_relative(root).string();
    if (rel == SPECIAL) continue;
    if (!fs::is_directory(st)) out.push_back(rel);
    if (fs::is_symlink(st)) it.disable_recursion_pending();
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t fnv1a(const std::string& data, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A content hash of an input: names its saved copy, and a known reproducer by it.
std::string input_hash(Target target, const fs::path& p) {
  uint64_t h = 1469598103934665603ull;
  if (target == Target::Results) {
    h = fnv1a(read_file(p), h);
  } else {
    for (const auto& rel : entries(p)) {
      std::error_code ec;
      const fs::path f = p / rel;
      const auto st = fs::symlink_status(f, ec);
      h = fnv1a(rel + "\n", h);
      if (fs::is_symlink(st)) h = fnv1a("-> " + fs::read_symlink(f, ec).string(), h);
      else if (fs::is_regular_file(st)) h = fnv1a(read_file(f), h);
    }
    h = fnv1a(read_file(p / SPECIAL), h);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

uint64_t input_bytes(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(p, ec))) return fs::is_regular_file(fs::symlink_status(p, ec)) ? fs::file_size(p, ec) : 0;
  uint64_t n = 0;
  for (const auto& rel : entries(p)) {
    const fs::path f = p / rel;
    if (fs::is_regular_file(fs::symlink_status(f, ec))) n += fs::file_size(f, ec);
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// Mutations. Byte-level ones for HDF5 (bit flips, interesting values, truncation, splice,
// chunk moves); for the snapshot's text files also token-level ones (numbers replaced by
// edge values, lines dropped or doubled) and structural ones (a file deleted, replaced by
// a folder, a FIFO, a link to /dev/zero or to itself; gpus.txt blocks and keys added).
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  size_t below(size_t n) { return n ? static_cast<size_t>(gen() % n) : 0; }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
};

void mutate_bytes(std::string& d, const std::string& other, Rng& r) {
  static const std::vector<uint64_t> ints = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
                                             0xffffffff, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                             0xffffffffffffffffull};
  const int op = static_cast<int>(r.below(9));
  if (d.empty()) {
    d = other.substr(0, r.below(other.size() + 1));
    return;
  }
  const size_t at = r.below(d.size());
  switch (op) {
    case 0:  // a few bit flips
      for (size_t i = 0, n = 1 + r.below(8); i < n; ++i) d[r.below(d.size())] ^= static_cast<char>(1u << r.below(8));
      break;
    case 1:  // an interesting byte
      d[at] = static_cast<char>(r.pick(std::vector<uint64_t>{0, 1, 0x7f, 0x80, 0xff, 0x20, '-', '9', '\n'}));
      break;
    case 2: {  // an interesting integer of 1, 2, 4 or 8 bytes, little endian
      const uint64_t v = r.pick(ints);
      const size_t width = size_t{1} << r.below(4);
      for (size_t i = 0; i < width && at + i < d.size(); ++i) d[at + i] = static_cast<char>(v >> (8 * i));
      break;
    }
    case 3:  // truncation
      d.resize(r.below(d.size()));
      break;
    case 4: {  // splice: this input's head, another's tail
      if (other.empty()) break;
      d = d.substr(0, at) + other.substr(r.below(other.size()));
      break;
    }
    case 5:  // a chunk deleted
      d.erase(at, 1 + r.below(std::min<size_t>(d.size() - at, 256)));
      break;
    case 6: {  // a chunk of this input copied over another place
      const size_t from = r.below(d.size()), n = 1 + r.below(std::min<size_t>(d.size() - from, 256));
      const std::string chunk = d.substr(from, n);
      d.replace(at, std::min(n, d.size() - at), chunk);
      break;
    }
    case 7: {  // random bytes inserted
      std::string chunk(1 + r.below(32), '\0');
      for (auto& c : chunk) c = static_cast<char>(r.below(256));
      d.insert(at, chunk);
      break;
    }
    default:  // a stretch of random bytes
      for (size_t i = at, n = std::min(d.size(), at + 1 + r.below(64)); i < n; ++i) d[i] = static_cast<char>(r.below(256));
  }
}

const std::vector<std::string> kEdgeNumbers = {
    "0",  "-1", "-0", "1", "2147483647", "2147483648", "-2147483649", "4294967295", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999999",
    "1e9", "0x10", " 5", "5 ", "+5", "", "abc", "nan", "1.5", "007", "65536", "1048576", "-4096"};
const std::vector<std::string> kEdgeLists = {"",        "0-",   "-1",  "5-3",         "0-4294967295", "0-1048575",
                                             "0,,1",    ",",    "0-3,2", "1-1",       "a-b",          "0-99999999999",
                                             "3,2,1,0", "0-0,0", "0- 3", "9223372036854775807"};
const std::vector<std::string> kGpuKeys = {"name", "cc", "sm_count", "memory_bytes", "l2_bytes", "pci_bus_id",
                                           "numa_config", "hbm_numa", "host_numa", "link", "pcie_gen",
                                           "pcie_width", "pageable_access", "host_page_tables",
                                           "concurrent_managed", "peers", "nvlink_peers"};

void mutate_text(std::string& d, const std::string& other, Rng& r) {
  const int op = static_cast<int>(r.below(6));
  if (op == 0 || op == 1) {  // a number, or a whole value after '=' or ':', replaced
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t i = 0; i < d.size();) {
      if (std::isdigit(static_cast<unsigned char>(d[i])) || (d[i] == '-' && i + 1 < d.size() && std::isdigit(static_cast<unsigned char>(d[i + 1])))) {
        size_t j = i + 1;
        while (j < d.size() && (std::isalnum(static_cast<unsigned char>(d[j])) || d[j] == '-' || d[j] == ',' || d[j] == '.')) ++j;
        spans.emplace_back(i, j - i);
        i = j;
      } else {
        ++i;
      }
    }
    if (!spans.empty()) {
      const auto [at, n] = r.pick(spans);
      d.replace(at, n, r.chance(50) ? r.pick(kEdgeNumbers) : r.pick(kEdgeLists));
      return;
    }
  }
  if (op == 2 || op == 3) {  // a line dropped, doubled or moved
    std::vector<std::string> lines;
    std::istringstream in(d);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    if (!lines.empty()) {
      const size_t i = r.below(lines.size()), j = r.below(lines.size());
      switch (r.below(3)) {
        case 0: lines.erase(lines.begin() + static_cast<long>(i)); break;
        case 1: lines.insert(lines.begin() + static_cast<long>(i), lines[j]); break;
        default: std::swap(lines[i], lines[j]);
      }
      std::string joined;
      for (const auto& l : lines) joined += l + "\n";
      d = joined;
      return;
    }
  }
  if (op == 4 && r.chance(20)) {  // the whole file random bytes
    d.assign(1 + r.below(512), '\0');
    for (auto& c : d) c = static_cast<char>(r.below(256));
    return;
  }
  mutate_bytes(d, other, r);
}

void mutate_gpus_txt(std::string& d, Rng& r) {
  switch (r.below(3)) {
    case 0: d += "gpu " + r.pick(kEdgeNumbers) + "\n"; break;
    case 1: d += r.pick(kGpuKeys) + "=" + (r.chance(50) ? r.pick(kEdgeNumbers) : r.pick(kEdgeLists)) + "\n"; break;
    default: d += "gpu " + std::to_string(r.below(4)) + "\n" + r.pick(kGpuKeys) + "=" + r.pick(kEdgeNumbers) + "\n";
  }
}

void add_special(const fs::path& root, const std::string& kind, const std::string& rel) {
  std::ofstream(root / SPECIAL, std::ios::app) << kind << " " << rel << "\n";
}

// One mutation of the snapshot folder at `root`; `others` are corpus folders to splice from.
void mutate_snapshot(const fs::path& root, const std::vector<fs::path>& others, Rng& r) {
  const auto files = entries(root);
  const int op = static_cast<int>(r.below(100));
  std::error_code ec;
  if (files.empty() || op < 8) {  // a new file among the node folders, or gpus.txt extended
    if (r.chance(50)) {
      std::string d = read_file(root / "gpus.txt");
      mutate_gpus_txt(d, r);
      write_file(root / "gpus.txt", d);
    } else {
      const std::string node = "sys/devices/system/node/node" + r.pick(kEdgeNumbers);
      write_file(root / node / r.pick(std::vector<std::string>{"cpulist", "meminfo", "distance"}),
                 r.chance(50) ? r.pick(kEdgeLists) + "\n" : r.pick(kEdgeNumbers) + "\n");
    }
    return;
  }
  const std::string rel = r.pick(files);
  const fs::path p = root / rel;
  if (op < 14) {  // a file gone
    fs::remove_all(p, ec);
  } else if (op < 17) {  // a folder where a file was
    fs::remove_all(p, ec);
    add_special(root, "dir", rel);
  } else if (op < 20) {  // a FIFO where a file was: a reader that opens it blocks
    fs::remove_all(p, ec);
    add_special(root, "fifo", rel);
  } else if (op < 24) {  // a link: endless (/dev/zero), to itself, to a folder, outside
    fs::remove_all(p, ec);
    fs::create_symlink(r.pick(std::vector<std::string>{"/dev/zero", p.filename().string(), ".", "/proc/self/status",
                                                       "/nonexistent"}),
                       p, ec);
  } else {
    if (!fs::is_regular_file(fs::symlink_status(p, ec))) return;
    std::string d = read_file(p);
    std::string other;
    if (!others.empty()) {
      const fs::path o = r.pick(others);
      other = fs::is_regular_file(o / rel) ? read_file(o / rel) : read_file(o / "gpus.txt");
    }
    if (rel == "gpus.txt" && r.chance(30)) mutate_gpus_txt(d, r);
    else mutate_text(d, other, r);
    write_file(p, d);
  }
}

// ---------------------------------------------------------------------------------------
// Running one input in a child.
enum Kind { kOk, kRefused, kFailed, kLibhdf5 };

struct Outcome {
  Kind kind = kOk;
  std::string what;    // the message, or what went wrong
  std::string detail;  // the child's stderr, for a failure
};

// The parser's work on `path`; what the command that uses it does with the result too.
void parse(Target target, const std::string& path) {
  if (target == Target::Results) {
    const mempath::StoredRun run = mempath::read_run(path);
    size_t touched = 0;
    for (const auto& [name, value] : run.attributes)
      touched += name.size() + (std::holds_alternative<std::string>(value) ? std::get<std::string>(value).size() : 1);
    for (const auto& [name, table] : run.tables)
      for (size_t c = 0; c < table.columns().size(); ++c)
        touched += table.columns()[c].type == mempath::ColumnType::String ? table.strings(c).size() : table.rows();
    if (touched == static_cast<size_t>(-1)) std::puts("");
  } else {
    const mempath::Topology topo = mempath::load_snapshot(path);
    const std::string text = topo.to_json() + topo.to_text();
    if (text.empty()) std::puts("");
  }
}

// ---------------------------------------------------------------------------------------
// Crashes and hangs inside libhdf5. Debian's HDF5 (1.10) crashes or loops on some damaged
// files in its own code (its global heap, H5HG_read), below any check a caller can make: such
// an outcome is counted and kept apart ("libhdf5"), not held against mempath's readers.
// It is libhdf5's when the signal stopped the child in libhdf5 and no frame of ours repeats
// (a recursion of ours, as a link cycle makes, that ends deep in libhdf5 is ours).
int g_result_fd = -1;

const char* object_of(void* pc) {
  Dl_info info{};
  return dladdr(pc, &info) && info.dli_fname ? info.dli_fname : "?";
}

const char* symbol_of(void* pc) {
  Dl_info info{};
  return dladdr(pc, &info) && info.dli_sname ? info.dli_sname : "?";
}

void on_fatal_signal(int sig, siginfo_t*, void* context) {
  void* frames[256];
  const int n = backtrace(frames, 256);
  void* pc = nullptr;
#if defined(__x86_64__)
  pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.pc);
#endif
  bool recursion = false;
  for (int i = 0; i < n && !recursion; ++i) {
    int same = 0;
    for (int j = i + 1; j < n; ++j) same += frames[j] == frames[i];
    recursion = same >= 8;
  }
  // The first frame outside the C and sanitizer runtimes (memcpy, malloc) from the one that
  // faulted on.
  int at = 0;
  while (at < n && frames[at] != pc) ++at;
  if (at == n) at = std::min(n, 2);  // the handler, then the kernel's trampoline
  // The runtime below libhdf5 too: a hang's alarm often lands in the sanitizer's malloc.
  auto runtime = [](const char* object) {
    return std::strstr(object, "libc.so") || std::strstr(object, "libasan") ||
           std::strstr(object, "libubsan") || std::strstr(object, "libstdc++") ||
           std::strstr(object, "libgcc_s");
  };
  while (at < n && runtime(object_of(frames[at]))) ++at;
  if (at < n) pc = frames[at];
  const bool in_hdf5 = pc && std::strstr(object_of(pc), "libhdf5") != nullptr;
  // No allocation here: the heap may be what broke.
  char what[256] = "";
  auto add = [&](const char* text) { std::strncat(what, text, sizeof what - std::strlen(what) - 1); };
  add(sig == SIGALRM ? "hang: no answer in time" : "crash: ");
  if (sig != SIGALRM) add(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : sig == SIGILL ? "SIGILL" : "SIGABRT");
  if (in_hdf5 && !recursion) {
    add(" inside libhdf5 (near ");
    add(symbol_of(pc));
    add(")");
  }
  if (recursion) add(" in a recursion");
  if (g_result_fd >= 0) (void)!write(g_result_fd, what, std::strlen(what));
  backtrace_symbols_fd(frames, n, 2);
  _exit(in_hdf5 && !recursion ? 30 : 31);
}

void install_signal_handlers() {
  static std::vector<char> stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = stack.data();
  ss.ss_size = stack.size();
  sigaltstack(&ss, nullptr);  // a stack overflow must still be reported
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) sigaction(sig, &sa, nullptr);
}

// In the child: 0 for a result, 10 with the message on `fd` for UsageError, 20 for any
// other exception; 30 and 31 from on_fatal_signal.
[[noreturn]] void child_main(Target target, const std::string& path, int fd) {
  g_result_fd = fd;
  install_signal_handlers();
  std::string message;
  int code = 0;
  try {
    parse(target, path);
  } catch (const UsageError& e) {
    message = e.what();
    code = 10;
  } catch (const std::exception& e) {
    message = std::string("uncaught ") + typeid(e).name() + ": " + e.what();
    code = 20;
  } catch (...) {
    message = "uncaught exception of an unknown type";
    code = 20;
  }
  for (size_t done = 0; done < message.size();) {
    const ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  _exit(code);
}

std::string tail_of(const std::string& text, size_t n) { return text.size() > n ? "..." + text.substr(text.size() - n) : text; }

Outcome run_child(Target target, const fs::path& input, const fs::path& work, int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const fs::path err = work / "stderr.txt";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (e >= 0) dup2(e, 2);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);
#ifndef MEMPATH_FUZZ_ASAN
    // A file that claims terabytes must not take the machine down with it (ASan, which
    // reserves terabytes of address space, caps allocations itself).
    rlimit limit{size_t{4} << 30, size_t{4} << 30};
    setrlimit(RLIMIT_AS, &limit);
#endif
    rlimit core{0, 0};
    setrlimit(RLIMIT_CORE, &core);
    itimerval timer{};
    timer.it_value.tv_sec = timeout_ms / 1000;
    timer.it_value.tv_usec = (timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, nullptr);  // SIGALRM's default action ends a hung child
    child_main(target, input.string(), fds[1]);
  }
  close(fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Outcome o;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return o;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
    o.kind = kRefused;
    o.what = message;
    if (message.find('\n') != std::string::npos || message.empty()) {
      o.kind = kFailed;
      o.what = "UsageError message is not one line: " + message.substr(0, 300);
    }
    return o;
  }
  o.kind = kFailed;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 30) o.kind = kLibhdf5;
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 20 || WEXITSTATUS(status) == 30 || WEXITSTATUS(status) == 31)) o.what = message;
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 86) o.what = "AddressSanitizer report";
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 87) o.what = "UndefinedBehaviorSanitizer report";
  else if (WIFEXITED(status)) o.what = "exit status " + std::to_string(WEXITSTATUS(status));
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    o.what = "hang: no answer in " + std::to_string(timeout_ms) + " ms";
  else if (WIFSIGNALED(status)) o.what = std::string("crash: signal ") + strsignal(WTERMSIG(status));
  const std::string report = read_file(err);
  o.detail = tail_of(report, 4000);
  // A sanitizer's report whose first frame past its own interceptors and the C library is
  // in libhdf5 (its memcpy of overlapping ranges) is libhdf5's too.
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 86 || WEXITSTATUS(status) == 87)) {
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("    #") != 0) continue;
      if (line.find("sanitizer") != std::string::npos || line.find("interceptor") != std::string::npos ||
          line.find("libasan") != std::string::npos || line.find("libc.so") != std::string::npos)
        continue;
      if (line.find("libhdf5") != std::string::npos) {
        o.kind = kLibhdf5;
        const auto in = line.find(" in ");
        o.what += " inside libhdf5 (near " + (in == std::string::npos ? std::string("?") : line.substr(in + 4, line.find(' ', in + 4) - in - 4)) + ")";
      }
      break;
    }
  }
  return o;
}

// What an outcome is like, for "a new behaviour": the kind and the message with the
// input's place, numbers and quoted values taken out.
std::string signature(const Outcome& o, const fs::path& input) {
  std::string s = o.what;
  for (size_t at; !input.empty() && (at = s.find(input.string())) != std::string::npos;) s.erase(at, input.string().size());
  std::string out;
  bool quoted = false;
  for (char c : s) {
    if (c == '\'' || c == '"') {
      quoted = !quoted;
      out += c;
    } else if (quoted) {
      continue;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += c;
    }
  }
  // A failure's place matters more than its words: the sanitizer's or signal's first
  // frame in the child's report.
  return std::to_string(o.kind) + ":" + out.substr(0, 200);
}

// ---------------------------------------------------------------------------------------
struct Args {
  Target target = Target::Results;
  std::vector<fs::path> corpus;  // read-only seeds; the first folder also gets --grow's inputs
  fs::path grow;                 // where new behaviours are kept ("" = nowhere)
  fs::path crashes;              // where failing inputs are saved ("" = nowhere)
  fs::path replay;               // reproducers that must pass now (known ones skipped)
  fs::path known;                // the list of known reproducers (docs/testing.md)
  fs::path one;                  // one input in this process, no child
  fs::path work;
  uint64_t seed = 1;
  double seconds = 10;
  uint64_t runs = 0;  // 0: until the time is up
  int timeout_ms = 5000;
  uint64_t max_corpus_bytes = 2u << 20;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "mempath_fuzz: " << why
            << "\nusage: mempath_fuzz results|snapshots --corpus DIR [--corpus DIR ...] [--seconds S] [--runs N]"
               " [--seed N] [--timeout-ms MS] [--crashes DIR] [--replay DIR --known FILE] [--grow DIR]"
               " [--max-corpus-bytes N] [--work DIR]\n"
               "       mempath_fuzz results|snapshots --one INPUT\n";
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) usage("no target");
  const std::string t = argv[1];
  if (t == "results") a.target = Target::Results;
  else if (t == "snapshots") a.target = Target::Snapshots;
  else usage("unknown target '" + t + "'; valid: results, snapshots");
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(k + " needs a value");
    const std::string v = argv[++i];
    try {
      if (k == "--corpus") a.corpus.push_back(v);
      else if (k == "--grow") a.grow = v;
      else if (k == "--crashes") a.crashes = v;
      else if (k == "--replay") a.replay = v;
      else if (k == "--known") a.known = v;
      else if (k == "--one") a.one = v;
      else if (k == "--work") a.work = v;
      else if (k == "--seed") a.seed = std::stoull(v);
      else if (k == "--seconds") a.seconds = std::stod(v);
      else if (k == "--runs") a.runs = std::stoull(v);
      else if (k == "--timeout-ms") a.timeout_ms = std::stoi(v);
      else if (k == "--max-corpus-bytes") a.max_corpus_bytes = std::stoull(v);
      else usage("unknown option " + k);
    } catch (const std::logic_error&) {
      usage("bad value '" + v + "' for " + k);
    }
  }
  return a;
}

// Corpus entries of a target in a folder: *.h5 files, or snapshot folders (those with a
// sys/ or gpus.txt at their top).
std::vector<fs::path> corpus_entries(Target target, const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path p = e.path();
    if (target == Target::Results ? (fs::is_regular_file(p) && p.extension() == ".h5")
                                  : (fs::is_directory(p) && (fs::exists(p / "sys") || fs::exists(p / "gpus.txt") ||
                                                             fs::exists(p / SPECIAL))))
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The known reproducers (tests/fuzz/known.txt): lines "results|snapshots NAME [WHAT]  # why",
// NAME a file or folder of the replay folder, skipped there. WHAT, where given, is a word of
// the failure NAME shows ("hang", "SIGSEGV"): a mutation that fails with it is the same
// known bug found again, reported as known and not counted, until the entry is removed.
std::map<std::string, std::string> read_known(const fs::path& file, Target target) {
  std::map<std::string, std::string> out;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string t, name, what;
    if (words >> t >> name && t == (target == Target::Results ? "results" : "snapshots")) {
      words >> what;
      out[name] = what;
    }
  }
  return out;
}

// Lays out `entry` at `to` (a fresh copy: the child may do anything to its input).
void lay_out(Target target, const fs::path& entry, const fs::path& to) {
  std::error_code ec;
  fs::remove_all(to, ec);
  if (target == Target::Results) {
    write_file(to, read_file(entry));
  } else {
    copy_entry(fs::canonical(entry), to);  // a linked seed is copied, never written through
    apply_special(to);
  }
}

// Keeps a copy of the input at `input` in `dir` under its hash; returns where.
fs::path keep(Target target, const fs::path& input, const fs::path& dir, const std::string& prefix) {
  const fs::path to = dir / (prefix + input_hash(target, input) + (target == Target::Results ? ".h5" : ""));
  std::error_code ec;
  if (fs::exists(fs::symlink_status(to, ec))) return to;
  fs::create_directories(dir);
  if (target == Target::Results) {
    write_file(to, read_file(input));
    return to;
  }
  copy_entry(input, to);  // FIFOs and empty folders stay listed in SPECIAL
  for (const auto& rel : entries(to)) {  // links too: a kept input is committed
    const fs::path p = to / rel;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) continue;
    const fs::path link = fs::read_symlink(p, ec);
    fs::remove(p, ec);
    add_special(to, "link", rel + " " + link.string());
  }
  return to;
}

int run_one(const Args& a) {
  try {
    std::cerr << "mempath_fuzz: " << a.one.string() << "\n";
    fs::path input = a.one;
    if (a.target == Target::Snapshots && fs::exists(a.one / SPECIAL)) {
      input = fs::temp_directory_path() / ("mempath_fuzz_one_" + std::to_string(getpid()));
      lay_out(a.target, a.one, input);
    }
    parse(a.target, input.string());
    std::cout << "ok: parsed\n";
  } catch (const UsageError& e) {
    std::cout << "refused: " << e.what() << "\n";
  }
  return 0;  // anything else ends this process: the failure itself, for a debugger
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const char* name = a.target == Target::Results ? "results" : "snapshots";
  if (!a.one.empty()) return run_one(a);
  signal(SIGPIPE, SIG_IGN);
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now: a signal handler must not
  const fs::path work = a.work.empty() ? fs::temp_directory_path() / ("mempath_fuzz_" + std::to_string(getpid())) : a.work;
  fs::create_directories(work);
  const fs::path input = work / (a.target == Target::Results ? "input.h5" : "input");
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };

  std::cout << "mempath_fuzz " << name << ": seed " << a.seed << ", " << a.seconds << " s"
            << (a.runs ? ", at most " + std::to_string(a.runs) + " runs" : std::string()) << " (reproduce: --seed "
            << a.seed << " --runs N)" << std::endl;
  std::map<std::string, std::string> failures;  // signature -> the line that reported it
  size_t known_skipped = 0, known_found = 0;
  const auto known = a.known.empty() ? std::map<std::string, std::string>{} : read_known(a.known, a.target);
  auto is_known = [&](const Outcome& o) {
    for (const auto& [entry, what] : known)
      if (!what.empty() && o.what.find(what) != std::string::npos) return entry;
    return std::string();
  };
  std::set<std::string> libhdf5_seen;
  // libhdf5's own crashes and hangs: shown once each, kept with --crashes, not failures.
  auto report_libhdf5 = [&](const Outcome& o, const fs::path& in, const std::string& where) {
    if (!libhdf5_seen.insert(signature(o, in)).second) return;
    std::cout << "libhdf5 " << name << " " << where << ": " << o.what << " (libhdf5's bug, not counted)";
    if (!a.crashes.empty()) std::cout << "; saved: " << keep(a.target, in, a.crashes / name, "libhdf5-").string();
    std::cout << std::endl;
  };
  std::set<std::string> known_seen;
  // One report per kind of failure; each reproducer (`whose`) is its own.
  auto report_failure = [&](const Outcome& o, const fs::path& in, const std::string& where,
                            const std::string& whose = "") {
    const std::string sig = signature(o, in) + whose;
    if (const std::string entry = is_known(o); !entry.empty()) {
      ++known_found;
      if (known_seen.insert(sig).second)
        std::cout << "known " << name << " " << where << ": " << o.what.substr(0, 200) << " (as known reproducer "
                  << entry << ", not counted)" << std::endl;
      return;
    }
    if (failures.count(sig)) return;
    std::string saved;
    if (!a.crashes.empty()) saved = keep(a.target, in, a.crashes / name, "").string();
    std::ostringstream line;
    line << "FAIL " << name << " " << where << ": " << o.what.substr(0, 400);
    if (!saved.empty()) line << "\n  saved: " << saved << "\n  reproduce: mempath_fuzz " << name << " --one " << saved;
    failures[sig] = line.str();
    std::cout << line.str() << "\n";
    if (!o.detail.empty()) std::cout << "  child's stderr:\n" << o.detail << "\n";
    std::cout << std::flush;
  };

  // 1. The reproducers of earlier failures: each must pass now, unless listed as known.
  if (!a.replay.empty()) {
    for (const auto& entry : corpus_entries(a.target, a.replay / name)) {
      if (known.count(entry.filename().string())) {
        ++known_skipped;
        std::cout << "known, skipped: " << entry.string() << "\n";
        continue;
      }
      lay_out(a.target, entry, input);
      const Outcome o = run_child(a.target, input, work, a.timeout_ms);
      if (o.kind == kFailed) report_failure(o, input, "reproducer " + entry.string(), entry.string());
      if (o.kind == kLibhdf5) report_libhdf5(o, input, "reproducer " + entry.string());
    }
  }

  // 2. The corpus as it is, then mutations of it; inputs with a behaviour not seen yet
  // join the corpus of this run (and --grow's folder).
  std::vector<fs::path> corpus;
  for (const auto& dir : a.corpus)
    for (const auto& e : corpus_entries(a.target, dir)) corpus.push_back(e);
  if (corpus.empty()) usage("no corpus entries for " + std::string(name) + " in the --corpus folders");
  const fs::path grown = work / "grown";
  uint64_t corpus_bytes = 0;
  for (const auto& e : corpus) corpus_bytes += input_bytes(e);
  std::set<std::string> seen;
  std::map<Kind, uint64_t> counts;
  uint64_t runs = 0, added = 0;
  const size_t seeds = corpus.size();
  Rng rng(a.seed);
  auto budget_left = [&] { return elapsed() < a.seconds && (!a.runs || runs < a.runs); };
  for (size_t i = 0; i < seeds && budget_left(); ++i, ++runs) {
    lay_out(a.target, corpus[i], input);
    const Outcome o = run_child(a.target, input, work, a.timeout_ms);
    ++counts[o.kind];
    seen.insert(signature(o, input));
    if (o.kind == kFailed) report_failure(o, input, "corpus entry " + corpus[i].string());
    if (o.kind == kLibhdf5) report_libhdf5(o, input, "corpus entry " + corpus[i].string());
  }
  while (budget_left()) {
    const fs::path& entry = corpus[rng.below(corpus.size())];
    lay_out(a.target, entry, input);
    const int stack = 1 + static_cast<int>(rng.below(4));
    if (a.target == Target::Results) {
      std::string data = read_file(input);
      const std::string other = read_file(corpus[rng.below(corpus.size())]);
      for (int s = 0; s < stack; ++s) mutate_bytes(data, other, rng);
      write_file(input, data);
    } else {
      std::vector<fs::path> others;
      for (size_t k = 0; k < 3; ++k) others.push_back(corpus[rng.below(corpus.size())]);
      for (int s = 0; s < stack; ++s) mutate_snapshot(input, others, rng);
      apply_special(input);
    }
    const Outcome o = run_child(a.target, input, work, a.timeout_ms);
    ++counts[o.kind];
    ++runs;
    if (o.kind == kFailed) {
      report_failure(o, input, "run " + std::to_string(runs) + " (seed " + std::to_string(a.seed) + ")");
      if (!is_known(o).empty()) --counts[kFailed];
      continue;
    }
    if (o.kind == kLibhdf5) {
      report_libhdf5(o, input, "run " + std::to_string(runs) + " (seed " + std::to_string(a.seed) + ")");
      continue;
    }
    const std::string sig = signature(o, input);
    if (!seen.insert(sig).second) continue;
    const uint64_t bytes = input_bytes(input);
    if (corpus_bytes + bytes > a.max_corpus_bytes) continue;
    corpus_bytes += bytes;
    corpus.push_back(keep(a.target, input, a.grow.empty() ? grown : a.grow, "grown-"));
    ++added;
  }
  std::cout << "mempath_fuzz " << name << ": seed " << a.seed << ", " << runs << " runs in " << static_cast<int>(elapsed())
            << " s: " << counts[kOk] << " parsed, " << counts[kRefused] << " refused in one line, " << counts[kFailed]
            << " failed (" << failures.size() << " distinct), " << counts[kLibhdf5]
            << " crashed or hung inside libhdf5 (" << libhdf5_seen.size() << " distinct); " << seen.size() << " behaviours, " << added
            << " inputs added to the corpus" << (a.grow.empty() ? " of this run" : " in " + a.grow.string())
            << (known_skipped ? "; " + std::to_string(known_skipped) + " known reproducers skipped" : std::string())
            << (known_found ? "; " + std::to_string(known_found) + " inputs failed as a known reproducer does" : std::string())
            << std::endl;
  std::error_code ec;
  if (a.work.empty()) fs::remove_all(work, ec);
  return failures.empty() ? 0 : 1;
}
