// Path rules: which link a processor crosses to a memory and which allocators can place
// memory there (the two tables at the end of docs/topology.md).
#include "core/topology.hpp"
#include "core/topology_detail.hpp"

#include <algorithm>
#include <sstream>

#include "core/kinds.hpp"

namespace mempath {

namespace topology_detail {

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

}  // namespace topology_detail

using namespace topology_detail;

namespace {

// One sentence for every planner (memcpy d2d's d2d_peer_reason says the same).
std::string no_peer_access(int g, int h) { return "no peer access from " + gpu_str(g) + " to " + gpu_str(h); }

class PathRules {
 public:
  explicit PathRules(const Topology& t) : t_(t), cpu_nodes_(cpu_node_ids(t)) {}

  Path make(const Processor& pu, const Memory& mem) const {
    Path p;
    p.pu = pu.name;
    p.mem = mem.name;
    const bool cpu = pu.kind == PuKind::Cpu;
    const MemKind kind = mem.kind;
    p.via = cpu ? cpu_via(pu, mem) : gpu_via(gpu(pu.gpu), mem);
    for (const AllocInfo& a : kAllocTable) {
      const std::string reason = mem.offline ? offline_problem(mem)
                                 : cpu ? cpu_problem(a, mem, kind) : gpu_problem(a, gpu(pu.gpu), mem, kind);
      if (reason.empty()) p.allocs.push_back(a.kind);
      else p.skipped.push_back({a.kind, reason});
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

  // The node holding the CPUs of host node `numa`'s socket: itself, or the first node of a
  // socket numa=fake split (NumaNode::socket).
  int socket_of(int numa) const {
    const NumaNode* n = t_.find_numa(numa);
    return n && n->socket >= 0 ? n->socket : numa;
  }

  // From the CPUs of node `node`.
  std::string node_via(int node, const Memory& mem) const {
    if (mem.kind == MemKind::Host) return socket_of(mem.numa) == node ? "local" : "interconnect";
    if (mem.gpu < 0) return "unknown";  // HBM recognised by distance: its link is not known
    const int host = host_of(mem.gpu);
    const bool near = host < 0 || host == node;
    const std::string link = mem.kind == MemKind::Hbm ? "c2c" : gpu(mem.gpu).link_type;
    // Links in the order the data crosses them: a GPU behind another socket (Grace -> peer
    // HBM on a quad GH200) is reached over the socket interconnect, then that GPU's link.
    return near ? link : "interconnect+" + link;
  }

  // From GPU g to host node `node`. On GH200 nodes whose superchips are joined by NVLink
  // (CSCS Alps), "Hopper traffic is routed through NVLink" (Fusco et al., arXiv:2408.11556,
  // sec. II-A5): to the Grace of the peer superchip, then over that superchip's C2C. Without
  // such a peer (dual GH200 workstation: no GPU peer access), g's own link, then the Graces'.
  std::string host_route(const GpuInfo& g, int node) const {
    node = socket_of(node);
    const bool near = g.host_numa < 0 || node < 0 || g.host_numa == node;
    if (near) return g.link_type;
    if (c2c_peer_of(g, node) >= 0) return "nvlink+c2c";
    return g.link_type + "+interconnect";
  }

  // The NVLink peer of GPU g whose own C2C link reaches host node `node`, else -1.
  int c2c_peer_of(const GpuInfo& g, int node) const {
    if (g.link_type != "c2c") return -1;
    for (const auto& h : t_.gpus)
      if (h.host_numa == node && h.link_type == "c2c" && contains(g.nvlink_peers, h.id)) return h.id;
    return -1;
  }

  std::string gpu_via(const GpuInfo& g, const Memory& mem) const {
    if (mem.kind == MemKind::Host) return host_route(g, mem.numa);
    if (mem.gpu < 0) return "unknown";  // HBM of a GPU without facts: which link is unknown
    if (mem.gpu == g.id) return "local";
    if (contains(g.nvlink_peers, mem.gpu)) return "nvlink";
    if (contains(g.peers, mem.gpu)) return "peer";
    return host_route(g, host_of(mem.gpu));  // no peer access: only through the hosts
  }

  // Why a CPU cannot use allocator `a` on `mem`, "" when it can.
  std::string cpu_problem(const AllocInfo& a, const Memory& mem, MemKind kind) const {
    if (kind == MemKind::Device) {
      if (!a.gpu_memory) return not_on_gpu_memory();
      if (a.gpu_owned) return "cudaMalloc memory is not mapped for CPU access";
      return "";  // managed: prefetched to the GPU first
    }
    if (a.gpu_owned) return device_not_numa();
    if (a.pageable) return "";
    if (kind == MemKind::Hbm && a.host_touched) return hbm_problem(a, mem);
    return a.needs_cuda && t_.gpus.empty() ? "no CUDA GPU on this node" : "";
  }

  // Why GPU g cannot use allocator `a` on `mem`, "" when it can.
  std::string gpu_problem(const AllocInfo& a, const GpuInfo& g, const Memory& mem, MemKind kind) const {
    if (kind == MemKind::Device) {
      // The peer's memory without peer access: no allocator helps, so that is the reason
      // for each of them (before "not cudaMalloc memory", which is true but not the cause).
      if (mem.gpu != g.id && !contains(g.peers, mem.gpu)) return no_peer_access(g.id, mem.gpu);
      return a.gpu_memory ? "" : not_on_gpu_memory();
    }
    if (a.gpu_owned) return device_not_numa();
    if (a.pageable)
      return g.pageable_access ? ""
                               : gpu_str(g.id) + " cannot access pageable memory (no ATS/HMM)";
    return kind == MemKind::Hbm && a.host_touched ? hbm_problem(a, mem) : "";
  }

  // pinned/registered/managed buffers on a NUMA node are host pages first touched (or
  // pinned) by the node's CPUs; an HBM node has none.
  std::string hbm_problem(const AllocInfo& a, const Memory& mem) const {
    const std::string whose = mem.name + " is " + hbm_owner(mem.gpu);
    if (mem.gpu < 0) return "pinned, registered and managed buffers are host memory; " + whose;
    if (a.kind == Alloc::Managed)
      return "managed buffers are first touched by a host node's CPUs; " + whose +
             " (use gpu" + std::to_string(mem.gpu) + " for managed memory prefetched to the GPU)";
    return "pinned and registered buffers are host memory; " + whose;
  }

  // A GH200 whose driver has not onlined the HBM shows its NUMA node with no memory: nothing
  // can be placed there, but the GPU still has its cudaMalloc memory (gpuN).
  static std::string offline_problem(const Memory& mem) {
    return mem.name + " is " + hbm_owner(mem.gpu) + ", offline (the NUMA node has no memory: the driver has not onlined it)";
  }

  // The allocator places memory on the other kind of memory: the same sentence for every
  // path, so listings group them.
  static std::string device_not_numa() {
    return "cudaMalloc memory is GPU memory, not a NUMA node";
  }
  static std::string not_on_gpu_memory() {
    return "system, numa, pinned and registered buffers are NUMA-node memory, not cudaMalloc memory";
  }

  const Topology& t_;
  std::vector<int> cpu_nodes_;
};
}  // namespace

void topology_detail::add_paths(Topology* t) {
  const PathRules rules(*t);
  for (const auto& pu : t->processors)
    for (const auto& mem : t->memories) t->paths.push_back(rules.make(pu, mem));
}

namespace {

// The links of `paths`, each once and in order; "local" when none leaves its processor.
std::string joined_links(std::initializer_list<const Path*> paths) {
  std::vector<std::string> links;
  for (const Path* p : paths)
    for (const auto& link : via_links(p->via))
      if (link != "local" && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
  return links.empty() ? "local" : join_via(links);
}

}  // namespace

std::string route_via(const Topology& topo, const std::string& pu, const std::string& src, const std::string& dst) {
  const Path* from = topo.find_path(pu, src);
  const Path* to = topo.find_path(pu, dst);
  return from && to ? joined_links({from, to}) : "";
}

std::string pair_via(const Topology& topo, const std::string& a, const std::string& b, const std::string& mem) {
  const Path* from_a = topo.find_path(a, mem);
  const Path* from_b = topo.find_path(b, mem);
  return from_a && from_b ? joined_links({from_a, from_b}) : "";
}

std::string peer_problem(const Topology& topo, const std::string& pu, const std::string& mem) {
  const Processor* p = topo.find_pu(pu);
  const Memory* m = topo.find_mem(mem);
  if (!p || !m || p->kind != PuKind::Gpu || m->kind != MemKind::Device) return "";
  const GpuInfo* g = topo.find_gpu(p->gpu);
  if (!g || m->gpu == g->id || contains(g->peers, m->gpu)) return "";
  return no_peer_access(g->id, m->gpu);
}

std::string alloc_problem(const Topology& topo, const std::string& pu, const std::string& mem,
                          std::optional<Alloc> alloc) {
  const Path* path = topo.find_path(pu, mem);
  if (!path) return "no path from " + pu + " to " + mem;
  if (alloc && contains(path->allocs, *alloc)) return "";
  for (const auto& s : path->skipped)
    if (alloc && s.alloc == *alloc) return s.reason;
  // No allocator at all (an offline HBM node, a GPU without peer access): the path's own reason says why.
  if (path->allocs.empty() && !path->skipped.empty()) return path->skipped.front().reason;
  return "allocator " + std::string(alloc ? alloc_name(*alloc) : "none") + " cannot place memory on " + mem;
}

bool alloc_fits_memory(const Memory& m, Alloc alloc) {
  const AllocInfo& a = alloc_info(alloc);
  return m.kind == MemKind::Device ? a.gpu_memory : !a.gpu_owned;
}
}  // namespace mempath
