// `mempath topo` output: the JSON of docs/topology.md and the text for people.
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <utility>

#include "core/json_writer.hpp"
#include "core/kinds.hpp"

namespace mempath {
namespace fs = std::filesystem;

using namespace topology_detail;

namespace {

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string opt_id(int id, const char* prefix = "") {
  return id < 0 ? "-" : prefix + std::to_string(id);
}

// A path cell: via and one letter per allocator that runs, '.' for one that is skipped.
std::string path_cell(const Path& p) {
  std::string code;
  for (const AllocInfo& a : kAllocTable)
    code += std::find(p.allocs.begin(), p.allocs.end(), a.kind) != p.allocs.end() ? a.letter : '.';
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

std::string gpu_line(const Topology& t, const GpuInfo& g) {
  std::string s = g.model + ", cc " + g.cc + ", " + std::to_string(g.sm_count) + " SMs, L2 " +
                  format_bytes(g.l2_bytes) + ", " + g.link_type;
  if (g.link_type == "pcie" && g.pcie_gen > 0)
    s += " gen" + std::to_string(g.pcie_gen) + " x" + std::to_string(g.pcie_width);
  s += ", host " + opt_id(g.host_numa, "numa");
  if (g.hbm_numa >= 0) {
    const Memory* hbm = t.find_mem("numa" + std::to_string(g.hbm_numa));
    s += ", HBM numa" + std::to_string(g.hbm_numa) + (hbm && hbm->offline ? " (offline)" : "");
  }
  s += g.pageable_access ? (g.host_page_tables ? ", pageable (ATS)" : ", pageable (HMM)") : ", no pageable access";
  if (!g.peers.empty()) s += ", peers " + join_ints(g.peers);
  if (!g.nvlink_peers.empty()) s += " (nvlink " + join_ints(g.nvlink_peers) + ")";
  return s;
}
// " (one socket: numa0,numa1,...)" when numa=fake split node `numa`'s socket, else "".
std::string split_socket(const Topology& t, int numa) {
  std::string nodes;
  int parts = 0;
  for (const auto& n : t.numa_nodes)
    if (n.socket == numa) nodes += (parts++ ? ",numa" : "numa") + std::to_string(n.id);
  return parts > 1 ? " (one socket: " + nodes + ")" : "";
}
}  // namespace

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
    w.field("kind", mem_kind_name(n.kind)).key("gpu").id_or_null(n.gpu).field("llc_bytes", n.llc_bytes);
    w.key("socket").id_or_null(n.socket);
    w.end_object();
  }
  w.end_array();
  w.key("processors").begin_array();
  for (const auto& p : processors) {
    w.begin_object().field("name", p.name).field("kind", pu_kind_name(p.kind));
    if (p.kind == PuKind::Cpu) {
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
    w.begin_object().field("name", m.name).field("kind", mem_kind_name(m.kind));
    if (m.kind == MemKind::Device) w.field("gpu", m.gpu).field("bytes", m.bytes).key("numa").id_or_null(m.numa);
    else w.field("numa", m.numa).field("bytes", m.bytes).key("gpu").id_or_null(m.gpu).field("offline", m.offline);
    w.end_object();
  }
  w.end_array();
  w.key("paths").begin_array();
  for (const auto& p : paths) {
    w.begin_object().field("pu", p.pu).field("mem", p.mem).field("via", p.via);
    std::vector<std::string> allocs;
    for (Alloc a : p.allocs) allocs.push_back(alloc_name(a));
    w.key("allocs").array(allocs);
    w.key("skipped").begin_array();
    for (const auto& s : p.skipped) w.begin_object().field("alloc", alloc_name(s.alloc)).field("reason", s.reason).end_object();
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
    if (p.kind == PuKind::Cpu) {
      const std::string where = p.numa >= 0 ? "numa" + std::to_string(p.numa) + split_socket(*this, p.numa) : "all CPU nodes";
      out << "cpu  " << where << ", " << p.cores << " cores, " << p.cpus.size() << " threads, LLC "
          << format_bytes(p.cache_bytes) << "\n";
    } else if (const GpuInfo* g = find_gpu(p.gpu)) {
      out << "gpu  " << gpu_line(*this, *g) << "\n";
    }
  }

  out << "\nMemories\n";
  for (const auto& m : memories) {
    out << "  " << pad(m.name, 7) << pad(mem_kind_name(m.kind), 7) << pad(format_bytes(m.bytes), 12);
    if (m.kind == MemKind::Device) out << "GPU " << m.gpu << (m.numa >= 0 ? ", also numa" + std::to_string(m.numa) : "");
    else if (m.kind == MemKind::Hbm) out << hbm_owner(m.gpu) << (m.offline ? ", offline" : "");
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
      it->second.push_back(p.pu + "->" + p.mem + " " + alloc_name(s.alloc));
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
