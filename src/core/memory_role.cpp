#include "core/memory_role.hpp"

#include <algorithm>

namespace mempath {
namespace {

// The GPU index of processor p's superchip, -1 when it has none.
int superchip_of(const Topology& topo, const Processor& p) {
  if (p.kind == PuKind::Gpu) return p.gpu;
  if (p.numa < 0) return -1;
  for (const auto& g : topo.gpus)
    if (g.host_numa == p.numa) return g.id;
  return -1;
}

const GpuInfo* gpu_at(const Topology& topo, int index) { return topo.find_gpu(index); }

// The GPU after `gpu` in the node's order (the peer superchip), -1 with fewer than two.
int next_gpu(const Topology& topo, int gpu) {
  if (topo.gpus.size() < 2) return -1;
  for (size_t i = 0; i < topo.gpus.size(); ++i)
    if (topo.gpus[i].id == gpu) return topo.gpus[(i + 1) % topo.gpus.size()].id;
  return -1;
}

bool host_of(const Topology& topo, int gpu, const Memory& m) {
  const GpuInfo* g = gpu_at(topo, gpu);
  return g && m.kind == MemKind::Host && m.numa == g->host_numa;
}

bool memory_of(int gpu, const Memory& m) {
  return gpu >= 0 && (m.kind == MemKind::Hbm || m.kind == MemKind::Device) && m.gpu == gpu;
}

}  // namespace

const std::vector<std::string>& memory_role_words() {
  static const std::vector<std::string> words = {"local", "local-host", "local-hbm", "peer-host", "peer-hbm"};
  return words;
}

bool is_memory_role(const std::string& word) {
  const auto& w = memory_role_words();
  return std::find(w.begin(), w.end(), word) != w.end();
}

bool has_memory_role(const Topology& topo, const Processor& p, const Memory& m, const std::string& role) {
  const int own = superchip_of(topo, p);
  if (role == "local-host") {
    // A CPU socket without a GPU (x86 CPU-only) still has its own memory.
    if (p.kind == PuKind::Cpu && p.numa >= 0) return m.kind == MemKind::Host && m.numa == p.numa;
    return own >= 0 && host_of(topo, own, m);
  }
  if (role == "local-hbm") return memory_of(own, m);
  if (role == "local") return has_memory_role(topo, p, m, "local-host") || has_memory_role(topo, p, m, "local-hbm");
  const int peer = own >= 0 ? next_gpu(topo, own) : -1;
  if (role == "peer-host") return peer >= 0 && peer != own && host_of(topo, peer, m) && !host_of(topo, own, m);
  if (role == "peer-hbm") return peer >= 0 && peer != own && memory_of(peer, m);
  return false;
}

bool mem_selected(const Topology& topo, const Processor& p, const Memory& m,
                  const std::vector<std::string>& filter) {
  if (filter.empty()) return true;
  for (const auto& f : filter)
    if (f == m.name || (is_memory_role(f) && has_memory_role(topo, p, m, f))) return true;
  return false;
}

}  // namespace mempath
