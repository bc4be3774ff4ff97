// The lookups of a Topology. The rest of docs/topology.md lives by job in topology_sysfs
// (text and cpulists), topology_discovery, topology_paths, topology_snapshot and
// topology_print; topology_detail.hpp is what they share.
#include "core/topology.hpp"

#include <algorithm>
#include <cctype>

namespace mempath {

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

std::string no_gpu_text(const std::string& command) {
  return "this node has no CUDA GPU; valid: 'mempath " + command + "' on a node with one";
}

int gpu_named(const Topology& topo, const std::string& text) {
  const std::string digits = text.rfind("gpu", 0) == 0 ? text.substr(3) : text;
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  const GpuInfo* g = topo.find_gpu(std::stoi(digits));
  return g ? g->id : -1;
}

std::string unknown_gpu_text(const Topology& topo, const std::string& text, const std::string& command,
                             const std::string& also) {
  if (topo.gpus.empty()) return "--gpu " + text + ": " + no_gpu_text(command);
  std::string valid;
  for (const auto& g : topo.gpus) valid += (valid.empty() ? "" : ", ") + ("gpu" + std::to_string(g.id));
  return "unknown GPU '" + text + "'; valid --gpu: " + valid + also;
}

}  // namespace mempath
