// Reading sysfs/procfs text below a root folder: the small parsers every part of the
// topology shares, cpulists and the caches of a CPU (docs/topology.md).
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {
namespace fs = std::filesystem;

namespace topology_detail {

// /proc/cpuinfo of a machine of thousands of CPUs stays far below this.
constexpr size_t kMaxTextFile = 64u << 20;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Whole file, or nothing when it cannot be read (a missing file is normal: older kernels,
// hand-written fixtures). Only a regular file is read: a FIFO or a device planted in a
// snapshot would block the read or never end (sysfs and procfs files are regular too).
std::optional<std::string> read_text(const fs::path& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return std::nullopt;
  auto not_regular = [&](mode_t mode) {
    const char* kind = S_ISDIR(mode) ? "a folder" : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket"
                       : S_ISCHR(mode) || S_ISBLK(mode) ? "a device" : "not a regular file";
    return UsageError(p.string() + " is " + kind + "; valid: a regular file, as `mempath topo --save DIR` writes");
  };
  if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  // O_NONBLOCK: should the file be swapped for a FIFO after the stat, open does not wait.
  const int fd = open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw not_regular(st.st_mode);
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxTextFile) {
      close(fd);
      throw UsageError(p.string() + " is larger than " + std::to_string(kMaxTextFile >> 20) +
                       " MiB; valid: a sysfs or procfs text file, as `mempath topo --save DIR` writes");
    }
  }
  close(fd);
  return text;
}

std::optional<long long> read_int(const fs::path& p) {
  const auto text = read_text(p);
  if (!text) return std::nullopt;
  try {
    return std::stoll(trim(*text));
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<long long> to_int(const std::string& s) {
  try {
    size_t used = 0;
    const long long v = std::stoll(trim(s), &used);
    return used == trim(s).size() ? std::optional<long long>(v) : std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

std::string join_ints(const std::vector<int>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

// Bad input is echoed inside a one-line message: control characters would break the line,
// bytes that are not ASCII would make it invalid UTF-8, and a huge file would drown it.
std::string shown(const std::string& text) {
  constexpr size_t kShown = 40;
  std::string out;
  for (char c : text.substr(0, kShown)) out += static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e ? '?' : c;
  return "'" + out + (text.size() > kShown ? "...'" : "'");
}

// A file every NUMA node has in sysfs: missing means a broken snapshot, not an old kernel.
std::string required_text(const fs::path& p) {
  const auto text = read_text(p);
  if (!text)
    throw UsageError(p.string() + " is missing; valid: a snapshot written by `mempath topo --save DIR` "
                     "(each nodeN folder holds cpulist, meminfo and distance)");
  return *text;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Cache sizes as sysfs writes them: "116736K", "32M", "1G" (plain bytes accepted too).
int64_t parse_cache_size(const std::string& text) {
  std::string digits = trim(text);
  int64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': unit = 1LL << 10; digits.pop_back(); break;
      case 'M': case 'm': unit = 1LL << 20; digits.pop_back(); break;
      case 'G': case 'g': unit = 1LL << 30; digits.pop_back(); break;
      default: break;
    }
  }
  // Nine digits already exceed any cache; the bound also keeps the product in range.
  if (!all_digits(digits) || digits.size() > 9)
    throw UsageError("cache size " + shown(trim(text)) + " is not <n>K, <n>M or <n>G; valid: e.g. 116736K");
  return std::stoll(digits) * unit;
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// Online nodes from node/online; without that file (non-NUMA kernels, partial snapshots)
// the nodeN folders that exist.
std::vector<int> online_nodes(const Tree& t) {
  const fs::path online = t.node_dir() / "online";
  if (const auto text = read_text(online)) return parse_file(online, *text, parse_cpulist);
  std::vector<int> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(t.node_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0)
      if (const auto id = to_int(name.substr(4))) ids.push_back(static_cast<int>(*id));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}
}  // namespace topology_detail

using namespace topology_detail;

namespace {

// Every data/unified cache folder of one CPU with its level, smallest level first (within
// a level the smaller cache first): the order cpu_caches gives.
std::vector<std::pair<CacheLevel, fs::path>> read_caches(const std::string& root, int cpu) {
  std::vector<std::pair<CacheLevel, fs::path>> caches;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(Tree{root}.cpu(cpu) / "cache", ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    const auto level = read_int(e.path() / "level");
    const std::string type = trim(read_text(e.path() / "type").value_or(""));
    if (!level || type == "Instruction") continue;
    // Some kernels list a cache without its size or sharing: unknown, not wrong.
    const fs::path size = e.path() / "size", shared = e.path() / "shared_cpu_list";
    const auto size_text = read_text(size), shared_text = read_text(shared);
    caches.push_back({{static_cast<int>(*level), size_text ? parse_file(size, *size_text, parse_cache_size) : 0,
                       shared_text ? parse_file(shared, *shared_text, parse_cpulist) : std::vector<int>{}},
                      e.path()});
  }
  std::sort(caches.begin(), caches.end(), [](const auto& a, const auto& b) {
    return a.first.level != b.first.level ? a.first.level < b.first.level : a.first.bytes < b.first.bytes;
  });
  return caches;
}

}  // namespace

std::optional<int64_t> topology_detail::fake_llc_bytes(const std::string& root) {
  const char* text = std::getenv("MEMPATH_FAKE_LLC_BYTES");
  if (!text || !*text || fs::path(root) != fs::path("/")) return std::nullopt;
  try {
    const uint64_t bytes = parse_size(text);
    if (bytes > 0 && bytes % 1024 == 0 && bytes <= (64ULL << 30)) return static_cast<int64_t>(bytes);
  } catch (const UsageError&) {
  }
  throw UsageError("MEMPATH_FAKE_LLC_BYTES=" + shown(text) + " is not a cache size; valid: a multiple of 1KiB up to "
                   "64GiB, e.g. 480MiB or 503316480 (tests only), or unset");
}

fs::path topology_detail::last_level_cache_dir(const std::string& root, int cpu) {
  const auto caches = read_caches(root, cpu);
  return caches.empty() ? fs::path() : caches.back().second;
}

std::vector<CacheLevel> cpu_caches(const std::string& root, int cpu) {
  std::vector<CacheLevel> levels;
  for (auto& c : read_caches(root, cpu)) levels.push_back(std::move(c.first));
  if (const auto fake = fake_llc_bytes(root); fake && !levels.empty()) levels.back().bytes = *fake;
  return levels;
}

std::vector<int> parse_cpulist(const std::string& text) {
  // Checked before expanding: "0-99999999" must not become 10^8 ints.
  auto fail = [&](const std::string& why) {
    return UsageError(shown(trim(text)) + " is not a Linux cpulist (" + why +
                      "); valid: ids and ascending ranges in 0.." + std::to_string(kMaxCpulistId) +
                      ", comma-separated, e.g. 0-71 or 0-31,64-95, or empty");
  };
  auto id = [&](const std::string& digits) {
    if (!all_digits(digits)) throw fail(shown(digits) + " is not a number");
    if (digits.size() > 5 || std::stoi(digits) > kMaxCpulistId) throw fail(digits + " is above the bound");
    return std::stoi(digits);
  };
  std::set<int> ids;
  std::stringstream in(trim(text));
  for (std::string item; std::getline(in, item, ',');) {
    item = trim(item);
    if (item.empty()) throw fail("empty item");
    const auto dash = item.find('-');
    const int lo = id(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : id(item.substr(dash + 1));
    if (hi < lo) throw fail("range " + item + " is reversed");
    for (int i = lo; i <= hi; ++i) ids.insert(i);
  }
  return {ids.begin(), ids.end()};
}
}  // namespace mempath
