// Snapshots: the sysfs files a topology is read from, copied to a folder, and gpus.txt
// (docs/topology.md).
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "core/error.hpp"

namespace mempath {
namespace fs = std::filesystem;

using namespace topology_detail;

namespace {

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
  }
  std::ofstream out(fs::path(dir) / "gpus.txt");
  out << format_gpus_txt(gpus);
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
}  // namespace mempath
