#pragma once
// What the topology_*.cpp files share and nothing else should call: sysfs text helpers,
// the tree of files below a root, and the steps build_topology chains. Not public API.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/topology.hpp"

namespace mempath::topology_detail {

// Small text helpers (topology_sysfs.cpp).
std::string trim(const std::string& s);
// Whole file, or nothing when it cannot be read.
std::optional<std::string> read_text(const std::filesystem::path& p);
std::optional<long long> read_int(const std::filesystem::path& p);
std::optional<long long> to_int(const std::string& s);
std::string join_ints(const std::vector<int>& v, const char* sep = ",");
template <class T>
inline bool contains(const std::vector<T>& v, const typename std::vector<T>::value_type& x) { return std::find(v.begin(), v.end(), x) != v.end(); }
// Bad input quoted for a one-line message: at most 40 characters, control characters and
// bytes outside printable ASCII as '?'.
std::string shown(const std::string& text);
// A file every NUMA node has in sysfs: UsageError when missing.
std::string required_text(const std::filesystem::path& p);
bool all_digits(const std::string& s);
int64_t parse_cache_size(const std::string& text);
// For tests only (docs/testing.md): MEMPATH_FAKE_LLC_BYTES=SIZE ("480MiB", or bytes) under
// the live root "/" (never a snapshot): the size cpu_caches gives the last level, as a VM
// reporting a huge cache does. The one place the variable is read; UsageError if invalid.
std::optional<int64_t> fake_llc_bytes(const std::string& root);
// The cache folder (cpuN/cache/indexM) that cpu_caches lists last, or an empty path.
std::filesystem::path last_level_cache_dir(const std::string& root, int cpu);
std::string format_bytes(int64_t bytes);

// Runs parse(text); a UsageError it throws is prefixed with the file, so the one line
// says where the bad value is.
template <class Parse>
auto parse_file(const std::filesystem::path& p, const std::string& text, Parse parse) -> decltype(parse(text)) {
  try {
    return parse(text);
  } catch (const UsageError& e) {
    throw UsageError(p.string() + ": " + e.what());
  }
}

// sysfs / procfs below `root`.
struct Tree {
  std::filesystem::path root;
  std::filesystem::path node_dir() const { return root / "sys/devices/system/node"; }
  std::filesystem::path node(int id) const { return node_dir() / ("node" + std::to_string(id)); }
  std::filesystem::path cpu(int id) const { return root / "sys/devices/system/cpu" / ("cpu" + std::to_string(id)); }
  std::filesystem::path cpuinfo() const { return root / "proc/cpuinfo"; }
};
std::vector<int> online_nodes(const Tree& t);

// Discovery (topology_discovery.cpp): ids of the nodes that have CPUs.
std::vector<int> cpu_node_ids(const Topology& t);

// Path rules (topology_paths.cpp).
std::string gpu_str(int g);
std::string hbm_owner(int g);
std::vector<std::string> via_links(const std::string& via);
std::string join_via(const std::vector<std::string>& links);
void add_paths(Topology* t);

}  // namespace mempath::topology_detail
