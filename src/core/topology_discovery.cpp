// Discovery: the NUMA nodes, processors and memories of a sysfs tree plus GPU facts
// (docs/topology.md). The same code reads the live node ("/") and snapshots.
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/kinds.hpp"

namespace mempath {
namespace fs = std::filesystem;

namespace topology_detail {

std::vector<int> cpu_node_ids(const Topology& t) {
  std::vector<int> ids;
  for (const auto& n : t.numa_nodes)
    if (!n.cpus.empty()) ids.push_back(n.id);
  return ids;
}
}  // namespace topology_detail

using namespace topology_detail;

namespace {

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

// SLIT distance from `from` to node `to`; rows list the online nodes in order, which need
// not be 0..N-1. 0 when unknown.
int slit_distance(const Topology& t, const NumaNode& from, int to) {
  for (size_t i = 0; i < t.numa_nodes.size() && i < from.distances.size(); ++i)
    if (t.numa_nodes[i].id == to) return from.distances[i];
  return 0;
}

// Nodes `a` and `b` (positions in numa_nodes) are one socket split by numa=fake: the
// kernel lists a CPU in every emulated node of its physical node (so the nodes share CPUs)
// and gives them the physical node's local distance to each other. Nodes that share CPUs and
// have no distance between them above the local one are one socket. Sub-NUMA clusters
// (disjoint CPUs, 11-12 apart) are not. `sorted`: each node's CPUs in ascending order.
bool one_socket(const Topology& t, size_t a, size_t b, const std::vector<std::vector<int>>& sorted) {
  const auto& ra = t.numa_nodes[a].distances;
  const auto& rb = t.numa_nodes[b].distances;
  if (ra.size() <= std::max(a, b) || rb.size() <= std::max(a, b)) return false;  // no SLIT: no evidence
  if (ra[b] > ra[a] || rb[a] > rb[b]) return false;
  const auto& x = sorted[a];
  const auto& y = sorted[b];
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j]) return true;
    x[i] < y[j] ? ++i : ++j;
  }
  return false;
}

// Joins the nodes of a socket split by numa=fake into one socket: the first node keeps the
// CPUs (the union of the nodes' lists, counted once), the others stay host memory without
// CPUs, and `socket` names the first for every node of a socket. So each socket is one
// processor with its cores and LLC once, and its split memory is local to it.
void join_split_sockets(Topology* t, const Tree& tree) {
  auto& nodes = t->numa_nodes;
  std::vector<std::vector<int>> sorted;
  for (const auto& n : nodes) {
    sorted.push_back(n.cpus);
    std::sort(sorted.back().begin(), sorted.back().end());
  }
  std::vector<size_t> first(nodes.size());
  std::iota(first.begin(), first.end(), size_t{0});
  const auto root = [&](size_t i) {
    while (first[i] != i) i = first[i];
    return i;
  };
  for (size_t a = 0; a < nodes.size(); ++a)
    for (size_t b = a + 1; b < nodes.size(); ++b)
      if (!sorted[a].empty() && !sorted[b].empty() && one_socket(*t, a, b, sorted)) {
        const size_t ra = root(a), rb = root(b);
        first[std::max(ra, rb)] = std::min(ra, rb);
      }
  std::vector<bool> joined(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t r = root(i);
    if (r == i) {
      if (!nodes[i].cpus.empty()) nodes[i].socket = nodes[i].id;
      continue;
    }
    sorted[r].insert(sorted[r].end(), sorted[i].begin(), sorted[i].end());
    nodes[i].cpus.clear();
    nodes[i].cores = 0;
    nodes[i].llc_bytes = 0;
    nodes[i].socket = nodes[r].id;
    joined[r] = true;
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    if (joined[i]) {
      auto& cpus = sorted[i];
      std::sort(cpus.begin(), cpus.end());
      cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
      nodes[i].cpus = cpus;
      nodes[i].cores = order_by_core(tree, &nodes[i].cpus);
    }
  // The driver names a GPU's nearest node by its PCI device: any node of a split socket.
  for (auto& g : t->gpus)
    if (const NumaNode* n = t->find_numa(g.host_numa); n && n->socket >= 0) g.host_numa = n->socket;
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
    n.kind = n.mem_total_bytes <= 0 ? MemKind::Empty : MemKind::Host;
    if (!n.cpus.empty()) continue;
    // A GPU's HBM node stays its HBM while offline (no memory), so its paths say why not.
    for (const auto& g : t->gpus)
      if (g.hbm_numa == n.id) {
        n.kind = MemKind::Hbm;
        n.gpu = g.id;
      }
  }
  for (auto& n : t->numa_nodes)
    if (n.kind == MemKind::Host && n.cpus.empty() && looks_like_gpu_memory(*t, n))
      n.kind = MemKind::Hbm;
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
  all.kind = PuKind::Cpu;
  for (const NumaNode* n : cpu_nodes) {
    Processor p;
    p.name = "cpu" + std::to_string(n->id);
    p.kind = PuKind::Cpu;
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
  for (const auto& g : t->gpus)
    t->processors.push_back({"gpu" + std::to_string(g.id), PuKind::Gpu, -1, g.id, {}, 0, g.l2_bytes});
}

void add_memories(Topology* t) {
  for (const auto& n : t->numa_nodes) {
    if (n.kind == MemKind::Empty) continue;
    Memory m;
    m.name = "numa" + std::to_string(n.id);
    m.kind = n.kind;
    m.numa = n.id;
    m.gpu = n.gpu;
    m.bytes = n.mem_total_bytes;
    m.free_bytes = n.mem_free_bytes;
    m.offline = n.mem_total_bytes <= 0;
    t->memories.push_back(std::move(m));
  }
  for (const auto& g : t->gpus)
    t->memories.push_back({"gpu" + std::to_string(g.id), MemKind::Device, g.hbm_numa, g.id, g.memory_bytes});
}
}  // namespace

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
  join_split_sockets(&t, tree);
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
}  // namespace mempath
