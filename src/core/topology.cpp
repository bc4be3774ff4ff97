// The node as processors, memories and paths (docs/topology.md).
//
// Everything is read from a sysfs/procfs tree below a root folder, so the live node ("/")
// and snapshots of nodes we do not have (tests/fixtures/) go through the same code.
#include "core/topology.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "core/json_writer.hpp"

namespace mempath {
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------
// Small text helpers

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Whole file, or nothing when it cannot be read (a missing file is normal: older kernels,
// hand-written fixtures).
std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

std::string join_ints(const std::vector<int>& v, const char* sep = ",") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Bad input is echoed inside a one-line message: control characters would break the line
// and a huge file would drown it.
std::string shown(const std::string& text) {
  constexpr size_t kShown = 40;
  std::string out;
  for (char c : text.substr(0, kShown)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return "'" + out + (text.size() > kShown ? "...'" : "'");
}

// Runs parse(text); a UsageError it throws is prefixed with the file, so the one line
// says where the bad value is.
template <class Parse>
auto parse_file(const fs::path& p, const std::string& text, Parse parse) -> decltype(parse(text)) {
  try {
    return parse(text);
  } catch (const UsageError& e) {
    throw UsageError(p.string() + ": " + e.what());
  }
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

// ---------------------------------------------------------------------------------------
// sysfs / procfs below `root`

struct Tree {
  fs::path root;
  fs::path node_dir() const { return root / "sys/devices/system/node"; }
  fs::path node(int id) const { return node_dir() / ("node" + std::to_string(id)); }
  fs::path cpu(int id) const { return root / "sys/devices/system/cpu" / ("cpu" + std::to_string(id)); }
  fs::path cpuinfo() const { return root / "proc/cpuinfo"; }
};

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

// Orders a node's CPUs one per physical core first, then the SMT siblings, so that
// "the first k CPUs" of a processor are k distinct cores. Returns the number of cores.
int order_by_core(const Tree& t, std::vector<int>* cpus) {
  std::set<std::pair<long long, long long>> seen;
  std::vector<int> first, siblings;
  for (int c : *cpus) {
    const auto core = read_int(t.cpu(c) / "topology/core_id");
    const auto pkg = read_int(t.cpu(c) / "topology/physical_package_id");
    // Without topology files every logical CPU counts as its own core.
    const auto key = core && pkg ? std::make_pair(*pkg, *core) : std::make_pair(-1LL, -1LL - c);
    (seen.insert(key).second ? first : siblings).push_back(c);
  }
  *cpus = first;
  cpus->insert(cpus->end(), siblings.begin(), siblings.end());
  return static_cast<int>(first.size());
}

}  // namespace

std::vector<CacheLevel> cpu_caches(const std::string& root, int cpu) {
  std::vector<CacheLevel> levels;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(Tree{root}.cpu(cpu) / "cache", ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    const auto level = read_int(e.path() / "level");
    const std::string type = trim(read_text(e.path() / "type").value_or(""));
    if (!level || type == "Instruction") continue;
    // Some kernels list a cache without its size or sharing: unknown, not wrong.
    const fs::path size = e.path() / "size", shared = e.path() / "shared_cpu_list";
    const auto size_text = read_text(size), shared_text = read_text(shared);
    levels.push_back({static_cast<int>(*level), size_text ? parse_file(size, *size_text, parse_cache_size) : 0,
                      shared_text ? parse_file(shared, *shared_text, parse_cpulist) : std::vector<int>{}});
  }
  std::sort(levels.begin(), levels.end(), [](const CacheLevel& a, const CacheLevel& b) {
    return a.level != b.level ? a.level < b.level : a.bytes < b.bytes;
  });
  return levels;
}

namespace {

// The largest data/unified cache of one CPU: its size and the CPUs sharing it.
struct LastLevelCache {
  int64_t bytes = 0;
  std::vector<int> shared;
};

LastLevelCache last_level_cache(const Tree& t, int cpu) {
  LastLevelCache best;
  const auto levels = cpu_caches(t.root.string(), cpu);
  if (!levels.empty()) best = {levels.back().bytes, levels.back().shared};
  return best;
}

// "Node 0 MemTotal:  123 kB": the named field in bytes; the line must be there.
int64_t meminfo_bytes(const std::string& meminfo, int id, const std::string& field) {
  const std::string prefix = "Node " + std::to_string(id) + " " + field + ":";
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (trim(line).rfind(prefix, 0) != 0) continue;
    std::istringstream rest(trim(line).substr(prefix.size()));
    std::string value, unit;
    rest >> value >> unit;
    if (all_digits(value) && value.size() <= 15 && (unit == "kB" || unit.empty()))
      return std::stoll(value) * (unit == "kB" ? 1024 : 1);
    break;
  }
  throw UsageError("no '" + prefix + " <n> kB' line; valid: the node's meminfo as sysfs writes it");
}

// A SLIT row: one distance per online node, 10 to itself, up to 255 (unreachable).
std::vector<int> parse_distances(const std::string& text, size_t nodes) {
  std::vector<int> row;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    if (!all_digits(word) || word.size() > 3 || std::stoi(word) > 255)
      throw UsageError("distance " + shown(word) + " is not a SLIT value; valid: integers 10..255, one per online node");
    row.push_back(std::stoi(word));
  }
  if (row.size() != nodes)
    throw UsageError(std::to_string(row.size()) + " distances for " + std::to_string(nodes) +
                     " online nodes; valid: one integer 10..255 per online node, e.g. '10 80'");
  return row;
}

NumaNode read_node(const Tree& t, int id, size_t online) {
  NumaNode n;
  n.id = id;
  const fs::path cpulist = t.node(id) / "cpulist", meminfo = t.node(id) / "meminfo", distance = t.node(id) / "distance";
  // An empty cpulist is valid: GH200 HBM and MIG placeholder nodes have no CPUs.
  n.cpus = parse_file(cpulist, required_text(cpulist), parse_cpulist);
  n.cores = order_by_core(t, &n.cpus);
  const std::string mem = required_text(meminfo);
  n.mem_total_bytes = parse_file(meminfo, mem, [&](const std::string& s) { return meminfo_bytes(s, id, "MemTotal"); });
  n.mem_free_bytes = parse_file(meminfo, mem, [&](const std::string& s) { return meminfo_bytes(s, id, "MemFree"); });
  n.distances = parse_file(distance, required_text(distance), [&](const std::string& s) { return parse_distances(s, online); });
  if (!n.cpus.empty()) n.llc_bytes = last_level_cache(t, n.cpus.front()).bytes;
  return n;
}

// Number of last-level cache instances among a node's CPUs (several on AMD CCDs or
// sub-NUMA clusters), from the first CPU's shared_cpu_list: a buffer has to exceed all
// of them together.
int llc_instances(const Tree& t, const NumaNode& n) {
  if (n.cpus.empty()) return 0;
  const auto shared = last_level_cache(t, n.cpus.front()).shared;
  size_t in_node = 0;
  for (int c : shared) in_node += contains(n.cpus, c);
  if (in_node == 0) return 1;
  return static_cast<int>((n.cpus.size() + in_node - 1) / in_node);
}

std::string cpuinfo_value(const std::string& cpuinfo, const std::string& key) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

// aarch64 kernels print no model name, only the implementer's part number.
std::string arm_part_name(const std::string& part) {
  static const std::map<std::string, std::string> names = {
      {"0xd4f", "NVIDIA Grace (Neoverse V2)"},
      {"0xd40", "Arm Neoverse V1"},
      {"0xd0c", "Arm Neoverse N1"},
      {"0xd49", "Arm Neoverse N2"},
  };
  const auto it = names.find(part);
  return it == names.end() ? "unknown" : it->second;
}

std::string cpu_model(const std::string& cpuinfo) {
  const std::string model = cpuinfo_value(cpuinfo, "model name");
  if (!model.empty()) return model;
  const std::string part = cpuinfo_value(cpuinfo, "CPU part");
  return part.empty() ? "unknown" : arm_part_name(part);
}

std::string live_arch() {
  utsname u{};
  return uname(&u) == 0 ? u.machine : "unknown";
}

// ---------------------------------------------------------------------------------------
// Processors and memories

std::vector<int> cpu_node_ids(const Topology& t) {
  std::vector<int> ids;
  for (const auto& n : t.numa_nodes)
    if (!n.cpus.empty()) ids.push_back(n.id);
  return ids;
}

// SLIT distance from `from` to node `to`; rows list the online nodes in order, which need
// not be 0..N-1. 0 when unknown.
int slit_distance(const Topology& t, const NumaNode& from, int to) {
  for (size_t i = 0; i < t.numa_nodes.size() && i < from.distances.size(); ++i)
    if (t.numa_nodes[i].id == to) return from.distances[i];
  return 0;
}

// GH200 SLIT (NVIDIA, kernel): Grace local 10, other Grace 40, its own GPU's HBM 80, another
// GPU's HBM 120; GPU memory nodes are 255 from the other nodes of the same GPU (MIG
// placeholders) and 120 from other GPUs'. Host memory, CPU-less (CXL, memory-only) or not,
// sits at most 40 from some CPU node on the machines we know.
inline constexpr int kGpuMemoryCpuDistance = 80;    // nearest CPU node at least this far
inline constexpr int kGpuMemoryOtherDistance = 120;  // other CPU-less nodes at least this far

// A CPU-less node with memory that no GPU fact names, whose distances are those of GPU
// memory: HBM of a GPU we cannot see (CPU-only build, driver not loaded).
bool looks_like_gpu_memory(const Topology& t, const NumaNode& n) {
  int nearest_cpu = 0;
  for (const auto& other : t.numa_nodes) {
    if (other.id == n.id) continue;
    const int d = slit_distance(t, n, other.id);
    if (d <= 0) return false;  // no SLIT: no evidence
    if (!other.cpus.empty()) nearest_cpu = nearest_cpu == 0 ? d : std::min(nearest_cpu, d);
    else if (d < kGpuMemoryOtherDistance) return false;
  }
  return nearest_cpu >= kGpuMemoryCpuDistance;
}

// Classifies each node once the GPUs are known: a CPU-less node holding a GPU's HBM, by
// the GPU facts, else by its distances (then gpu -1: whose HBM it is stays unknown).
void classify_nodes(Topology* t) {
  for (auto& n : t->numa_nodes) {
    n.kind = n.mem_total_bytes <= 0 ? "empty" : "host";
    if (n.kind == "empty" || !n.cpus.empty()) continue;
    for (const auto& g : t->gpus)
      if (g.hbm_numa == n.id) {
        n.kind = "hbm";
        n.gpu = g.id;
      }
  }
  for (auto& n : t->numa_nodes)
    if (n.kind == "host" && n.cpus.empty() && looks_like_gpu_memory(*t, n)) n.kind = "hbm";
}

// The host node of a GPU as the paths need it. Drivers report -1 where the platform has
// one node (sysfs numa_node = -1), so fill the gap: the only CPU node, else the CPU node
// nearest to the GPU's HBM node by SLIT distance.
void resolve_host_nodes(Topology* t) {
  const auto cpu_nodes = cpu_node_ids(*t);
  for (auto& g : t->gpus) {
    if (g.host_numa >= 0 || cpu_nodes.empty()) continue;
    if (cpu_nodes.size() == 1) {
      g.host_numa = cpu_nodes.front();
      continue;
    }
    const NumaNode* hbm = t->find_numa(g.hbm_numa);
    if (!hbm) continue;
    int best = -1, best_dist = 0;
    for (int c : cpu_nodes) {
      const int d = slit_distance(*t, *hbm, c);
      if (d > 0 && (best < 0 || d < best_dist)) {
        best = c;
        best_dist = d;
      }
    }
    g.host_numa = best;
  }
}

void add_processors(Topology* t, const Tree& tree) {
  std::vector<const NumaNode*> cpu_nodes;
  for (const auto& n : t->numa_nodes)
    if (!n.cpus.empty()) cpu_nodes.push_back(&n);
  Processor all;
  all.name = "cpus";
  all.kind = "cpu";
  for (const NumaNode* n : cpu_nodes) {
    Processor p;
    p.name = "cpu" + std::to_string(n->id);
    p.kind = "cpu";
    p.numa = n->id;
    p.cpus = n->cpus;
    p.cores = n->cores;
    p.cache_bytes = n->llc_bytes * llc_instances(tree, *n);
    all.cpus.insert(all.cpus.end(), p.cpus.begin(), p.cpus.end());
    all.cores += p.cores;
    all.cache_bytes += p.cache_bytes;
    t->processors.push_back(std::move(p));
  }
  if (cpu_nodes.size() > 1) t->processors.push_back(std::move(all));
  for (const auto& g : t->gpus) {
    Processor p;
    p.name = "gpu" + std::to_string(g.id);
    p.kind = "gpu";
    p.gpu = g.id;
    p.cache_bytes = g.l2_bytes;
    t->processors.push_back(std::move(p));
  }
}

void add_memories(Topology* t) {
  for (const auto& n : t->numa_nodes) {
    if (n.kind == "empty") continue;
    Memory m;
    m.name = "numa" + std::to_string(n.id);
    m.kind = n.kind;
    m.numa = n.id;
    m.gpu = n.gpu;
    m.bytes = n.mem_total_bytes;
    m.free_bytes = n.mem_free_bytes;
    t->memories.push_back(std::move(m));
  }
  for (const auto& g : t->gpus) {
    Memory m;
    m.name = "gpu" + std::to_string(g.id);
    m.kind = "device";
    m.gpu = g.id;
    m.numa = g.hbm_numa;
    m.bytes = g.memory_bytes;
    t->memories.push_back(std::move(m));
  }
}

// ---------------------------------------------------------------------------------------
// Paths (the two tables at the end of docs/topology.md)

const char* const kAllocators[] = {"system", "numa", "device", "managed", "pinned", "registered"};

std::string gpu_str(int g) { return "GPU " + std::to_string(g); }
std::string hbm_owner(int g) { return g < 0 ? "the HBM of a GPU this node's facts do not show" : gpu_str(g) + "'s HBM"; }

std::vector<std::string> via_links(const std::string& via) {
  std::vector<std::string> links;
  std::stringstream in(via);
  for (std::string link; std::getline(in, link, '+');)
    if (!link.empty()) links.push_back(link);
  return links;
}

std::string join_via(const std::vector<std::string>& links) {
  std::string via;
  for (const auto& l : links) via += (via.empty() ? "" : "+") + l;
  return via;
}

class PathRules {
 public:
  explicit PathRules(const Topology& t) : t_(t), cpu_nodes_(cpu_node_ids(t)) {}

  Path make(const Processor& pu, const Memory& mem) const {
    Path p;
    p.pu = pu.name;
    p.mem = mem.name;
    const bool cpu = pu.kind == "cpu";
    p.via = cpu ? cpu_via(pu, mem) : gpu_via(gpu(pu.gpu), mem);
    for (const char* a : kAllocators) {
      const std::string reason = cpu ? cpu_problem(a, mem) : gpu_problem(a, gpu(pu.gpu), mem);
      if (reason.empty()) p.allocs.push_back(a);
      else p.skipped.push_back({a, reason});
    }
    return p;
  }

 private:
  const GpuInfo& gpu(int id) const { return *t_.find_gpu(id); }
  int host_of(int gpu_id) const {
    const GpuInfo* g = t_.find_gpu(gpu_id);
    return g ? g->host_numa : -1;
  }
  // `cpus` has threads on every CPU node, so a memory is near some of them and behind the
  // socket interconnect for the others: the links all of them cross, then "spread".
  std::string cpu_via(const Processor& pu, const Memory& mem) const {
    if (pu.numa >= 0) return node_via(pu.numa, mem);
    std::vector<std::vector<std::string>> routes;
    for (int n : cpu_nodes_) routes.push_back(via_links(node_via(n, mem)));
    if (std::all_of(routes.begin(), routes.end(), [&](const auto& r) { return r == routes.front(); }))
      return join_via(routes.front());
    std::vector<std::string> common;
    for (const auto& link : routes.front()) {
      const bool everywhere = std::all_of(routes.begin(), routes.end(), [&](const auto& r) {
        return std::find(r.begin(), r.end(), link) != r.end();
      });
      if (everywhere && link != "local") common.push_back(link);
    }
    common.push_back("spread");
    return join_via(common);
  }

  // From the CPUs of node `node`.
  std::string node_via(int node, const Memory& mem) const {
    if (mem.kind == "host") return mem.numa == node ? "local" : "interconnect";
    if (mem.gpu < 0) return "unknown";  // HBM recognised by distance: its link is not known
    const int host = host_of(mem.gpu);
    const bool near = host < 0 || host == node;
    const std::string link = mem.kind == "hbm" ? "c2c" : gpu(mem.gpu).link_type;
    // A PCIe GPU behind the other socket is reached over the socket link first.
    return near ? link : link + "+interconnect";
  }

  // From GPU g to host node `node` through g's own link (and the socket link if needed).
  std::string host_route(const GpuInfo& g, int node) const {
    const bool near = g.host_numa < 0 || node < 0 || g.host_numa == node;
    return near ? g.link_type : g.link_type + "+interconnect";
  }

  std::string gpu_via(const GpuInfo& g, const Memory& mem) const {
    if (mem.kind == "host") return host_route(g, mem.numa);
    if (mem.gpu < 0) return "unknown";  // HBM of a GPU without facts: which link is unknown
    if (mem.gpu == g.id) return "local";
    if (contains(g.nvlink_peers, mem.gpu)) return "nvlink";
    if (contains(g.peers, mem.gpu)) return "peer";
    return host_route(g, host_of(mem.gpu));  // no peer access: only through the hosts
  }

  // Why a CPU cannot use `alloc` on `mem`, "" when it can.
  std::string cpu_problem(const std::string& alloc, const Memory& mem) const {
    const bool has_gpu = !t_.gpus.empty();
    if (mem.kind == "device") {
      if (alloc == "managed") return "";  // prefetched to the GPU first
      if (alloc == "device") return "cudaMalloc memory is not mapped for CPU access";
      return not_on_gpu_memory(alloc, mem);
    }
    if (alloc == "system" || alloc == "numa") return "";
    if (alloc == "device") return device_not_numa(mem);
    if (mem.kind == "hbm") return hbm_problem(alloc, mem);
    return has_gpu ? "" : "no CUDA GPU on this node";
  }

  // Why GPU g cannot use `alloc` on `mem`, "" when it can.
  std::string gpu_problem(const std::string& alloc, const GpuInfo& g, const Memory& mem) const {
    if (mem.kind == "device") {
      if (alloc != "device" && alloc != "managed") return not_on_gpu_memory(alloc, mem);
      const bool reachable = mem.gpu == g.id || contains(g.peers, mem.gpu);
      return reachable ? "" : "no peer access from " + gpu_str(g.id) + " to " + gpu_str(mem.gpu);
    }
    if (alloc == "device") return device_not_numa(mem);
    if (alloc == "system" || alloc == "numa")
      return g.pageable_access ? ""
                               : gpu_str(g.id) + " cannot access pageable memory (no ATS/HMM)";
    return mem.kind == "hbm" ? hbm_problem(alloc, mem) : "";
  }

  // pinned/registered/managed buffers on a NUMA node are host pages first touched (or
  // pinned) by the node's CPUs; an HBM node has none.
  std::string hbm_problem(const std::string& alloc, const Memory& mem) const {
    const std::string whose = mem.name + " is " + hbm_owner(mem.gpu);
    if (mem.gpu < 0) return "pinned, registered and managed buffers are host memory; " + whose;
    if (alloc == "managed")
      return "managed buffers are first touched by a host node's CPUs; " + whose +
             " (use gpu" + std::to_string(mem.gpu) + " for managed memory prefetched to the GPU)";
    return "pinned and registered buffers are host memory; " + whose;
  }

  // The allocator places memory on the other kind of memory: the same sentence for every
  // path, so listings group them.
  static std::string device_not_numa(const Memory&) {
    return "cudaMalloc memory is GPU memory, not a NUMA node";
  }
  static std::string not_on_gpu_memory(const std::string&, const Memory&) {
    return "system, numa, pinned and registered buffers are NUMA-node memory, not cudaMalloc memory";
  }

  const Topology& t_;
  std::vector<int> cpu_nodes_;
};

void add_paths(Topology* t) {
  const PathRules rules(*t);
  for (const auto& pu : t->processors)
    for (const auto& mem : t->memories) t->paths.push_back(rules.make(pu, mem));
}

// ---------------------------------------------------------------------------------------
// gpus.txt

void set_gpu_field(GpuInfo* g, const std::string& key, const std::string& value) {
  auto as_int = [&](auto* out) {
    if (const auto v = to_int(value)) *out = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
  };
  auto as_list = [&](std::vector<int>* out) { *out = parse_cpulist(value); };
  if (key == "name") g->model = value;
  else if (key == "cc") g->cc = value;
  else if (key == "sm_count") as_int(&g->sm_count);
  else if (key == "memory_bytes") as_int(&g->memory_bytes);
  else if (key == "l2_bytes") as_int(&g->l2_bytes);
  else if (key == "pci_bus_id") g->pci_bus_id = value;
  else if (key == "numa_config") g->numa_config = value;
  else if (key == "hbm_numa") as_int(&g->hbm_numa);
  else if (key == "host_numa") as_int(&g->host_numa);
  else if (key == "link") g->link_type = value;
  else if (key == "pcie_gen") as_int(&g->pcie_gen);
  else if (key == "pcie_width") as_int(&g->pcie_width);
  else if (key == "pageable_access") g->pageable_access = value == "1";
  else if (key == "host_page_tables") g->host_page_tables = value == "1";
  else if (key == "concurrent_managed") g->concurrent_managed = value == "1";
  else if (key == "peers") as_list(&g->peers);
  else if (key == "nvlink_peers") as_list(&g->nvlink_peers);
  // Unknown keys are ignored so that newer snapshots still load.
}

// ---------------------------------------------------------------------------------------
// Snapshots

// Copies one file of the live tree (procfs files report size 0, so read, do not stat).
void copy_live_file(const fs::path& from, const fs::path& dir) {
  const auto text = read_text(from);
  if (!text) return;  // optional on this kernel: the loader treats it as missing too
  const fs::path to = dir / from.relative_path();
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  std::ofstream out(to, std::ios::binary);
  out << *text;
  if (!out) throw UsageError("cannot write " + to.string() + ": check that the folder is writable");
}

// ---------------------------------------------------------------------------------------
// Text output

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string opt_id(int id, const char* prefix = "") {
  return id < 0 ? "-" : prefix + std::to_string(id);
}

// A path cell: via and one letter per allocator that runs, '.' for one that is skipped.
std::string path_cell(const Path& p) {
  static const std::pair<const char*, char> letters[] = {{"system", 'S'}, {"numa", 'N'}, {"device", 'D'},
                                                         {"managed", 'M'}, {"pinned", 'P'}, {"registered", 'R'}};
  std::string code;
  for (const auto& [name, letter] : letters)
    code += std::find(p.allocs.begin(), p.allocs.end(), name) != p.allocs.end() ? letter : '.';
  return p.via + " " + code;
}

// PU x memory matrix of path cells, in blocks of columns that fit a terminal.
void print_path_matrix(const Topology& t, std::ostream& out) {
  constexpr size_t kLineWidth = 120, kNameWidth = 8;
  size_t width = 4;
  for (const auto& p : t.paths) width = std::max(width, path_cell(p).size() + 2);
  const size_t per_block = std::max<size_t>(1, (kLineWidth - kNameWidth) / width);
  for (size_t first = 0; first < t.memories.size(); first += per_block) {
    const size_t last = std::min(t.memories.size(), first + per_block);
    if (first > 0) out << "\n";
    out << pad("", kNameWidth);
    for (size_t m = first; m < last; ++m) out << pad(t.memories[m].name, width);
    out << "\n";
    for (const auto& pu : t.processors) {
      out << "  " << pad(pu.name, kNameWidth - 2);
      for (size_t m = first; m < last; ++m) {
        const Path* p = t.find_path(pu.name, t.memories[m].name);
        out << pad(p ? path_cell(*p) : "-", width);
      }
      out << "\n";
    }
  }
}

std::string gpu_line(const GpuInfo& g) {
  std::string s = g.model + ", cc " + g.cc + ", " + std::to_string(g.sm_count) + " SMs, L2 " +
                  format_bytes(g.l2_bytes) + ", " + g.link_type;
  if (g.link_type == "pcie" && g.pcie_gen > 0)
    s += " gen" + std::to_string(g.pcie_gen) + " x" + std::to_string(g.pcie_width);
  s += ", host " + opt_id(g.host_numa, "numa");
  if (g.hbm_numa >= 0) s += ", HBM numa" + std::to_string(g.hbm_numa);
  s += g.pageable_access ? (g.host_page_tables ? ", pageable (ATS)" : ", pageable (HMM)") : ", no pageable access";
  if (!g.peers.empty()) s += ", peers " + join_ints(g.peers);
  if (!g.nvlink_peers.empty()) s += " (nvlink " + join_ints(g.nvlink_peers) + ")";
  return s;
}

// What a live node always has but a hand-made or truncated snapshot may lack. Not applied
// to the live node: there a GPU's HBM node can be legitimately offline while the driver
// loads, and a kernel without NUMA support has no node folders at all.
void check_snapshot(const Topology& t, const std::string& dir) {
  const std::string nodes = (fs::path(dir) / "sys/devices/system/node").string();
  if (t.numa_nodes.empty())
    throw UsageError("snapshot folder '" + dir + "' has no NUMA nodes (" + nodes +
                     "/online or nodeN folders); valid: a folder written by `mempath topo --save DIR`");
  if (cpu_node_ids(t).empty())
    throw UsageError(nodes + ": no node lists a CPU in its cpulist; valid: at least one node with CPUs");
  for (const auto& g : t.gpus) {
    if (g.hbm_numa < 0) continue;
    const NumaNode* n = t.find_numa(g.hbm_numa);
    if (!n || n->mem_total_bytes <= 0)
      throw UsageError((fs::path(dir) / "gpus.txt").string() + ": GPU " + std::to_string(g.id) + " has hbm_numa=" +
                       std::to_string(g.hbm_numa) + ", but node" + std::to_string(g.hbm_numa) +
                       (n ? " has no memory" : " is not online") + "; valid: an online node with memory, or -1");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Public API

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

std::string route_via(const Topology& topo, const std::string& pu, const std::string& src, const std::string& dst) {
  const Path* from = topo.find_path(pu, src);
  const Path* to = topo.find_path(pu, dst);
  if (!from || !to) return "";
  std::vector<std::string> links;
  for (const Path* p : {from, to})
    for (const auto& link : via_links(p->via))
      if (link != "local" && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
  return links.empty() ? "local" : join_via(links);
}

Topology build_topology(const std::string& root, const std::vector<GpuInfo>& gpus,
                        const std::string& source) {
  const Tree tree{root};
  Topology t;
  t.source = source;
  const std::string cpuinfo = read_text(tree.cpuinfo()).value_or("");
  t.cpu_model = cpu_model(cpuinfo);
  // A snapshot may come from another architecture: Arm kernels print "CPU part".
  t.arch = source == "live" ? live_arch()
                            : (cpuinfo_value(cpuinfo, "CPU part").empty() ? "x86_64" : "aarch64");
  const std::vector<int> online = online_nodes(tree);
  for (int id : online) t.numa_nodes.push_back(read_node(tree, id, online.size()));
  t.gpus = gpus;
  classify_nodes(&t);
  resolve_host_nodes(&t);
  add_processors(&t, tree);
  add_memories(&t);
  add_paths(&t);
  return t;
}

Topology discover() {
  Topology t = build_topology("/", query_gpus(), "live");
  char name[256] = {};
  t.host = gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
  return t;
}

Topology load_snapshot(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw UsageError("snapshot folder '" + dir + "' does not exist; write one with `mempath topo --save DIR`");
  const fs::path gpus_file = fs::path(dir) / "gpus.txt";
  const auto gpus_txt = read_text(gpus_file);
  const auto gpus = gpus_txt ? parse_file(gpus_file, *gpus_txt, parse_gpus_txt) : std::vector<GpuInfo>{};
  Topology t = build_topology(dir, gpus, "snapshot");
  check_snapshot(t, dir);
  // Snapshots keep no hostname file; the folder name says which node it was.
  fs::path name = fs::absolute(dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();  // "dir/" ends in an empty name
  t.host = name.filename().string();
  return t;
}

void save_snapshot(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw UsageError("cannot create snapshot folder '" + dir + "': " + ec.message());
  const Tree live{"/"};
  copy_live_file(live.node_dir() / "online", dir);
  copy_live_file(live.cpuinfo(), dir);
  for (int id : online_nodes(live)) {
    for (const char* f : {"cpulist", "meminfo", "distance"}) copy_live_file(live.node(id) / f, dir);
    const auto cpus = parse_cpulist(read_text(live.node(id) / "cpulist").value_or(""));
    for (int c : cpus)
      for (const char* f : {"topology/core_id", "topology/physical_package_id"})
        copy_live_file(live.cpu(c) / f, dir);
    if (cpus.empty()) continue;
    // Caches of the node's first CPU: the only ones the loader reads.
    for (const auto& e : fs::directory_iterator(live.cpu(cpus.front()) / "cache", ec))
      if (e.path().filename().string().rfind("index", 0) == 0)
        for (const char* f : {"level", "type", "size", "shared_cpu_list"}) copy_live_file(e.path() / f, dir);
  }
  std::ofstream out(fs::path(dir) / "gpus.txt");
  out << format_gpus_txt(query_gpus());
  if (!out) throw UsageError("cannot write " + (fs::path(dir) / "gpus.txt").string());
}

std::vector<GpuInfo> parse_gpus_txt(const std::string& text) {
  std::vector<GpuInfo> gpus;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.rfind("gpu ", 0) == 0) {
      GpuInfo g;
      g.id = static_cast<int>(to_int(line.substr(4)).value_or(static_cast<long long>(gpus.size())));
      gpus.push_back(g);
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos || gpus.empty()) continue;  // stray line outside a block
    set_gpu_field(&gpus.back(), trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return gpus;
}

std::string format_gpus_txt(const std::vector<GpuInfo>& gpus) {
  std::ostringstream out;
  out << "# mempath GPU facts (docs/topology.md)\n";
  for (const auto& g : gpus) {
    out << "gpu " << g.id << "\n"
        << "name=" << g.model << "\n"
        << "cc=" << g.cc << "\n"
        << "sm_count=" << g.sm_count << "\n"
        << "memory_bytes=" << g.memory_bytes << "\n"
        << "l2_bytes=" << g.l2_bytes << "\n"
        << "pci_bus_id=" << g.pci_bus_id << "\n"
        << "numa_config=" << g.numa_config << "\n"
        << "hbm_numa=" << g.hbm_numa << "\n"
        << "host_numa=" << g.host_numa << "\n"
        << "link=" << g.link_type << "\n"
        << "pcie_gen=" << g.pcie_gen << "\n"
        << "pcie_width=" << g.pcie_width << "\n"
        << "pageable_access=" << g.pageable_access << "\n"
        << "host_page_tables=" << g.host_page_tables << "\n"
        << "concurrent_managed=" << g.concurrent_managed << "\n"
        << "peers=" << join_ints(g.peers) << "\n"
        << "nvlink_peers=" << join_ints(g.nvlink_peers) << "\n";
  }
  return out.str();
}

const Processor* Topology::find_pu(const std::string& name) const {
  for (const auto& p : processors)
    if (p.name == name) return &p;
  return nullptr;
}

const Memory* Topology::find_mem(const std::string& name) const {
  for (const auto& m : memories)
    if (m.name == name) return &m;
  return nullptr;
}

std::string alloc_problem(const Topology& topo, const std::string& pu, const std::string& mem,
                          const std::string& alloc) {
  const Path* path = topo.find_path(pu, mem);
  if (!path) return "no path from " + pu + " to " + mem;
  for (const auto& a : path->allocs)
    if (a == alloc) return "";
  for (const auto& s : path->skipped)
    if (s.alloc == alloc) return s.reason;
  return "allocator " + alloc + " cannot place memory on " + mem;
}

bool alloc_fits_memory(const Memory& m, const std::string& alloc) {
  if (m.kind == "device") return alloc == "device" || alloc == "managed";
  return alloc != "device";
}

const Path* Topology::find_path(const std::string& pu, const std::string& mem) const {
  for (const auto& p : paths)
    if (p.pu == pu && p.mem == mem) return &p;
  return nullptr;
}

const NumaNode* Topology::find_numa(int id) const {
  for (const auto& n : numa_nodes)
    if (n.id == id) return &n;
  return nullptr;
}

const GpuInfo* Topology::find_gpu(int id) const {
  for (const auto& g : gpus)
    if (g.id == id) return &g;
  return nullptr;
}

std::vector<std::string> Topology::pu_names() const {
  std::vector<std::string> names;
  for (const auto& p : processors) names.push_back(p.name);
  return names;
}

std::vector<std::string> Topology::mem_names() const {
  std::vector<std::string> names;
  for (const auto& m : memories) names.push_back(m.name);
  return names;
}

std::string Topology::to_json() const {
  JsonWriter w;
  w.begin_object();
  w.field("host", host).field("source", source).field("arch", arch).field("cpu_model", cpu_model);
  w.key("numa_nodes").begin_array();
  for (const auto& n : numa_nodes) {
    w.begin_object().field("id", n.id);
    w.key("cpus").array(n.cpus);
    w.field("cores", n.cores).field("mem_total_bytes", n.mem_total_bytes).field("mem_free_bytes", n.mem_free_bytes);
    w.key("distances").array(n.distances);
    w.field("kind", n.kind).key("gpu").id_or_null(n.gpu).field("llc_bytes", n.llc_bytes);
    w.end_object();
  }
  w.end_array();
  w.key("processors").begin_array();
  for (const auto& p : processors) {
    w.begin_object().field("name", p.name).field("kind", p.kind);
    if (p.kind == "cpu") {
      w.key("numa").id_or_null(p.numa);
      w.key("cpus").array(p.cpus);
      w.field("cores", p.cores).field("cache_bytes", p.cache_bytes);
    } else if (const GpuInfo* g = find_gpu(p.gpu)) {
      w.field("gpu", g->id).field("model", g->model).field("cc", g->cc).field("sm_count", g->sm_count);
      w.field("memory_bytes", g->memory_bytes).field("l2_bytes", g->l2_bytes);
      w.field("pci_bus_id", g->pci_bus_id);
      w.key("hbm_numa").id_or_null(g->hbm_numa).key("host_numa").id_or_null(g->host_numa);
      w.key("link").begin_object().field("type", g->link_type).field("gen", g->pcie_gen)
          .field("width", g->pcie_width).end_object();
      w.field("pageable_access", g->pageable_access).field("host_page_tables", g->host_page_tables);
      w.field("concurrent_managed", g->concurrent_managed);
      w.key("peers").array(g->peers).key("nvlink_peers").array(g->nvlink_peers);
    }
    w.end_object();
  }
  w.end_array();
  w.key("memories").begin_array();
  for (const auto& m : memories) {
    w.begin_object().field("name", m.name).field("kind", m.kind);
    if (m.kind == "device") w.field("gpu", m.gpu).field("bytes", m.bytes).key("numa").id_or_null(m.numa);
    else w.field("numa", m.numa).field("bytes", m.bytes).key("gpu").id_or_null(m.gpu);
    w.end_object();
  }
  w.end_array();
  w.key("paths").begin_array();
  for (const auto& p : paths) {
    w.begin_object().field("pu", p.pu).field("mem", p.mem).field("via", p.via);
    w.key("allocs").array(p.allocs);
    w.key("skipped").begin_array();
    for (const auto& s : p.skipped) w.begin_object().field("alloc", s.alloc).field("reason", s.reason).end_object();
    w.end_array().end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

std::string Topology::to_text() const {
  std::ostringstream out;
  out << "host " << host << " (" << source << "), " << arch << ", " << cpu_model << "\n\n";

  out << "Processors\n";
  for (const auto& p : processors) {
    out << "  " << pad(p.name, 6);
    if (p.kind == "cpu") {
      out << "cpu  " << (p.numa >= 0 ? "numa" + std::to_string(p.numa) : "all CPU nodes") << ", " << p.cores
          << " cores, " << p.cpus.size() << " threads, LLC " << format_bytes(p.cache_bytes) << "\n";
    } else if (const GpuInfo* g = find_gpu(p.gpu)) {
      out << "gpu  " << gpu_line(*g) << "\n";
    }
  }

  out << "\nMemories\n";
  for (const auto& m : memories) {
    out << "  " << pad(m.name, 7) << pad(m.kind, 7) << pad(format_bytes(m.bytes), 12);
    if (m.kind == "device") out << "GPU " << m.gpu << (m.numa >= 0 ? ", also numa" + std::to_string(m.numa) : "");
    else if (m.kind == "hbm") out << hbm_owner(m.gpu);
    else out << format_bytes(m.free_bytes) << " free";
    out << "\n";
  }

  out << "\nPaths (via, then allocators: S system, N numa, D device, M managed, P pinned, "
         "R registered; '.' skipped)\n";
  print_path_matrix(*this, out);

  // Skipped allocators grouped by reason, so a reason shared by many paths prints once;
  // the matrix already marks each skip, --json lists every one.
  std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
  for (const auto& p : paths)
    for (const auto& s : p.skipped) {
      auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& r) { return r.first == s.reason; });
      if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {s.reason, {}});
      it->second.push_back(p.pu + "->" + p.mem + " " + s.alloc);
    }
  if (!by_reason.empty()) out << "\nSkipped\n";
  constexpr size_t kShown = 6;
  for (const auto& [reason, cases] : by_reason) {
    out << "  " << reason << ":\n    ";
    for (size_t i = 0; i < cases.size() && i < kShown; ++i) out << (i ? ", " : "") << cases[i];
    if (cases.size() > kShown) out << " and " << cases.size() - kShown << " more";
    out << "\n";
  }
  return out.str();
}

}  // namespace mempath
