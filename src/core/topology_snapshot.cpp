// Snapshots: the sysfs files a topology is read from, copied to a folder, and gpus.txt
// (docs/topology.md).
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {
namespace fs = std::filesystem;

using namespace topology_detail;

namespace {

// Bounds of a plausible GPU, wide enough for GPUs to come: a value outside them is a
// damaged or hand-edited file, and it would size buffers and peaks downstream.
constexpr long long kMaxGpuId = 1023;
constexpr long long kMaxSmCount = 4096;
constexpr long long kMaxGpuMemory = 1LL << 50;  // 1 PiB
constexpr long long kMaxL2 = 1LL << 36;         // 64 GiB
constexpr long long kMaxNumaId = kMaxCpulistId;
constexpr int kMaxCcMajor = 30;
constexpr size_t kMaxText = 128;

// One line of a gpus.txt being parsed: where a bad value is, for the message.
struct Where {
  size_t line;
  int gpu;
};

UsageError bad_fact(const Where& w, const std::string& key, const std::string& value, const std::string& valid) {
  return UsageError("line " + std::to_string(w.line) + ": gpu " + std::to_string(w.gpu) + " " + key + "=" +
                    shown(value) + " is not valid; valid: " + valid);
}

long long whole(const Where& w, const std::string& key, const std::string& value, long long lo, long long hi) {
  const auto v = whole_number(value);
  if (!v || *v < lo || *v > hi)
    throw bad_fact(w, key, value, "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return *v;
}

// Printable ASCII only: the name is printed in topo's table and in reports.
std::string text_fact(const Where& w, const std::string& key, const std::string& value, const std::string& allowed) {
  const bool ok = value.size() <= kMaxText && std::all_of(value.begin(), value.end(), [&](unsigned char c) {
                    return allowed.empty() ? c >= 0x20 && c < 0x7f : allowed.find(static_cast<char>(c)) != std::string::npos;
                  });
  if (!ok)
    throw bad_fact(w, key, value, allowed.empty() ? "printable ASCII, at most " + std::to_string(kMaxText) + " characters"
                                                  : "at most " + std::to_string(kMaxText) + " of " + shown(allowed));
  return value;
}

std::string one_of(const Where& w, const std::string& key, const std::string& value, const std::vector<std::string>& valid) {
  if (std::find(valid.begin(), valid.end(), value) != valid.end()) return value;
  std::string names;
  for (const auto& v : valid) names += (names.empty() ? "" : " or ") + v;
  throw bad_fact(w, key, value, names);
}

// "9.0", "10.3", "12.1": major.minor, as cudaDeviceProp gives them.
std::string compute_capability(const Where& w, const std::string& value) {
  const auto dot = value.find('.');
  const auto major = dot == std::string::npos ? std::nullopt : whole_number(value.substr(0, dot));
  const auto minor = dot == std::string::npos ? std::nullopt : whole_number(value.substr(dot + 1));
  if (!major || !minor || *major < 1 || *major > kMaxCcMajor || *minor < 0 || *minor > 9 || value[0] == '0' ||
      value.size() != dot + 2)
    throw bad_fact(w, "cc", value, "major.minor with major 1.." + std::to_string(kMaxCcMajor) + " and minor 0..9, e.g. 9.0");
  return value;
}

void set_gpu_field(GpuInfo* g, const Where& w, const std::string& key, const std::string& value) {
  auto int_of = [&](long long lo, long long hi) { return whole(w, key, value, lo, hi); };
  auto flag = [&] { return one_of(w, key, value, {"0", "1"}) == "1"; };
  if (key == "name") g->model = text_fact(w, key, value, "");
  else if (key == "cc") g->cc = compute_capability(w, value);
  else if (key == "sm_count") g->sm_count = static_cast<int>(int_of(1, kMaxSmCount));
  else if (key == "memory_bytes") g->memory_bytes = int_of(1, kMaxGpuMemory);
  else if (key == "l2_bytes") g->l2_bytes = int_of(1, kMaxL2);
  else if (key == "pci_bus_id") g->pci_bus_id = text_fact(w, key, value, "0123456789abcdefABCDEF:.");
  else if (key == "numa_config") g->numa_config = one_of(w, key, value, {"none", "numa_node"});
  else if (key == "hbm_numa") g->hbm_numa = static_cast<int>(int_of(-1, kMaxNumaId));
  else if (key == "host_numa") g->host_numa = static_cast<int>(int_of(-1, kMaxNumaId));
  else if (key == "link") g->link_type = one_of(w, key, value, {"pcie", "c2c"});
  else if (key == "pcie_gen") g->pcie_gen = static_cast<int>(int_of(0, 16));
  else if (key == "pcie_width") g->pcie_width = static_cast<int>(int_of(0, 64));
  else if (key == "pageable_access") g->pageable_access = flag();
  else if (key == "host_page_tables") g->host_page_tables = flag();
  else if (key == "concurrent_managed") g->concurrent_managed = flag();
  else if (key == "peers") g->peers = parse_cpulist(value);
  else if (key == "nvlink_peers") g->nvlink_peers = parse_cpulist(value);
  // Unknown keys are ignored so that newer snapshots still load.
}

bool is_key(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Copies one file of the tree under `root` to the same place below `dir` (procfs files
// report size 0, so read, do not stat).
void copy_tree_file(const fs::path& root, const fs::path& from, const fs::path& dir) {
  const auto text = read_text(from);
  if (!text) return;  // optional on this kernel: the loader treats it as missing too
  const fs::path to = dir / from.lexically_relative(root);
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  std::ofstream out(to, std::ios::binary);
  out << *text;
  if (!out) throw UsageError("cannot write " + to.string() + ": check that the folder is writable");
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
    if (g.host_numa >= 0 && !t.find_numa(g.host_numa))
      throw UsageError((fs::path(dir) / "gpus.txt").string() + ": GPU " + std::to_string(g.id) + " has host_numa=" +
                       std::to_string(g.host_numa) + ", but node" + std::to_string(g.host_numa) +
                       " is not online; valid: an online node, or -1");
    if (g.hbm_numa < 0) continue;
    const NumaNode* n = t.find_numa(g.hbm_numa);
    // An online node without memory is the HBM the driver has not onlined: kept, offline.
    if (!n)
      throw UsageError((fs::path(dir) / "gpus.txt").string() + ": GPU " + std::to_string(g.id) + " has hbm_numa=" +
                       std::to_string(g.hbm_numa) + ", but node" + std::to_string(g.hbm_numa) +
                       " is not online; valid: an online node, or -1");
  }
}
}  // namespace

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

void save_snapshot(const std::string& dir) { save_snapshot(dir, "/", query_gpus()); }

void save_snapshot(const std::string& dir, const std::string& root, const std::vector<GpuInfo>& gpus) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw UsageError("cannot create snapshot folder '" + dir + "': " + ec.message());
  const Tree live{root};
  copy_tree_file(root, live.node_dir() / "online", dir);
  copy_tree_file(root, live.cpuinfo(), dir);
  for (int id : online_nodes(live)) {
    for (const char* f : {"cpulist", "meminfo", "distance"}) copy_tree_file(root, live.node(id) / f, dir);
    const auto cpus = parse_cpulist(read_text(live.node(id) / "cpulist").value_or(""));
    for (int c : cpus)
      for (const char* f : {"topology/core_id", "topology/physical_package_id"})
        copy_tree_file(root, live.cpu(c) / f, dir);
    if (cpus.empty()) continue;
    // Caches of the node's first CPU: the only ones the loader reads.
    for (const auto& e : fs::directory_iterator(live.cpu(cpus.front()) / "cache", ec))
      if (e.path().filename().string().rfind("index", 0) == 0)
        for (const char* f : {"level", "type", "size", "shared_cpu_list"}) copy_tree_file(root, e.path() / f, dir);
    // Under MEMPATH_FAKE_LLC_BYTES (tests only) the snapshot is the node as mempath sees it.
    if (const auto fake = fake_llc_bytes(root)) {
      const fs::path llc = last_level_cache_dir(root, cpus.front());
      if (!llc.empty()) {
        std::ofstream size(fs::path(dir) / (llc / "size").lexically_relative(root));
        size << *fake / 1024 << "K\n";  // as sysfs writes it
      }
    }
  }
  std::ofstream out(fs::path(dir) / "gpus.txt");
  out << format_gpus_txt(gpus);
  if (!out) throw UsageError("cannot write " + (fs::path(dir) / "gpus.txt").string());
}

std::vector<GpuInfo> parse_gpus_txt(const std::string& text) {
  const std::string valid = "valid: `gpu N` lines each followed by key=value lines, as `mempath topo --save DIR` writes";
  std::vector<GpuInfo> gpus;
  std::vector<std::set<std::string>> keys;  // per block: each fact once
  std::vector<size_t> peer_lines;            // per block: where its peers were given
  std::istringstream in(text);
  std::string raw;
  for (size_t n = 1; std::getline(in, raw); ++n) {
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(n) + ": ";
    if (line.rfind("gpu ", 0) == 0) {
      const auto id = whole_number(trim(line.substr(4)));
      if (!id || *id < 0 || *id > kMaxGpuId)
        throw UsageError(where + shown(line) + " is not `gpu N` with N from 0 to " + std::to_string(kMaxGpuId) + "; " + valid);
      for (const auto& g : gpus)
        if (g.id == *id) throw UsageError(where + "gpu " + std::to_string(*id) + " is given twice; valid: one block per GPU");
      GpuInfo g;
      g.id = static_cast<int>(*id);
      gpus.push_back(g);
      keys.emplace_back();
      peer_lines.push_back(0);
      continue;
    }
    const auto eq = line.find('=');
    const std::string key = eq == std::string::npos ? "" : trim(line.substr(0, eq));
    if (!is_key(key)) throw UsageError(where + shown(line) + " is neither `gpu N` nor key=value; " + valid);
    if (gpus.empty()) throw UsageError(where + shown(line) + " stands before any `gpu N` line; " + valid);
    const Where w{n, gpus.back().id};
    if (!keys.back().insert(key).second)
      throw UsageError(where + "gpu " + std::to_string(w.gpu) + " " + key + " is given twice; valid: each key once per GPU");
    if (key == "peers" || key == "nvlink_peers") peer_lines.back() = n;
    try {
      set_gpu_field(&gpus.back(), w, key, trim(line.substr(eq + 1)));
    } catch (const UsageError& e) {
      if (std::string(e.what()).rfind("line ", 0) == 0) throw;
      throw UsageError(where + "gpu " + std::to_string(w.gpu) + " " + key + ": " + e.what());  // a cpulist's message
    }
  }
  // Peers name other GPUs of the file: a dangling id would become a path to nowhere.
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuInfo& g = gpus[i];
    for (const auto* list : {&g.peers, &g.nvlink_peers})
      for (int p : *list) {
        const bool known = std::any_of(gpus.begin(), gpus.end(), [&](const GpuInfo& h) { return h.id == p; });
        if (p == g.id || !known)
          throw UsageError("line " + std::to_string(peer_lines[i]) + ": gpu " + std::to_string(g.id) + " names gpu " +
                           std::to_string(p) + " as a peer; valid: ids of the other GPUs of the file");
      }
    for (int p : g.nvlink_peers)
      if (!contains(g.peers, p))
        throw UsageError("line " + std::to_string(peer_lines[i]) + ": gpu " + std::to_string(g.id) + " has nvlink_peers " +
                         std::to_string(p) + " outside its peers; valid: nvlink_peers a subset of peers");
  }
  return gpus;
}

std::string format_gpus_txt(const std::vector<GpuInfo>& gpus) {
  std::ostringstream out;
  out << "# mempath GPU facts (docs/topology.md)\n";
  for (const auto& g : gpus) {
    // A fact not known (a hand-made GpuInfo) is left out: 0 is no SM count, and what is
    // written must load back.
    out << "gpu " << g.id << "\n";
    if (!g.model.empty()) out << "name=" << g.model << "\n";
    if (!g.cc.empty()) out << "cc=" << g.cc << "\n";
    if (g.sm_count > 0) out << "sm_count=" << g.sm_count << "\n";
    if (g.memory_bytes > 0) out << "memory_bytes=" << g.memory_bytes << "\n";
    if (g.l2_bytes > 0) out << "l2_bytes=" << g.l2_bytes << "\n";
    out << "pci_bus_id=" << g.pci_bus_id << "\n"
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
}  // namespace mempath
