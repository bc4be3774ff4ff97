#include "core/chase_plan.hpp"

#include "core/memory_role.hpp"
#include "core/kinds.hpp"

#include <algorithm>

#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/error.hpp"
#include "core/options.hpp"

namespace mempath {
namespace {

bool listed(const std::vector<std::string>& filter, const std::string& x) {
  return filter.empty() || std::find(filter.begin(), filter.end(), x) != filter.end();
}

// CUDA reports no L1 size; the combined L1/shared-memory capacity per SM by architecture.
uint64_t gpu_l1_bytes(const std::string& cc) {
  if (cc == "9.0" || cc.rfind("10.", 0) == 0) return 256u << 10;
  if (cc == "8.0") return 192u << 10;
  if (cc == "8.6" || cc == "8.7" || cc == "8.9") return 128u << 10;
  if (cc == "7.0") return 128u << 10;
  return 0;
}

std::string own_memory(const Processor& p) {
  return p.kind == PuKind::Gpu ? "gpu" + std::to_string(p.gpu) : "numa" + std::to_string(p.numa);
}

ChaseCase with_path(const Topology& topo, ChaseCase c) {
  const Path* path = topo.find_path(c.pu, c.mem);
  c.via = path ? path->via : "";
  // No allocator at all: the path's reason (e.g. no peer access) is the skip reason.
  if (!c.alloc) c.alloc = default_alloc(topo, c.pu, c.mem);
  c.skip_reason = alloc_problem(topo, c.pu, c.mem, c.alloc);
  return c;
}

}  // namespace

ChaseCase make_chase_case(const Topology& topo, std::string pu, int cpu, std::string mem, std::string alloc) {
  if (cpu >= 0) {
    const NumaNode* home = nullptr;
    for (const auto& n : topo.numa_nodes)
      if (std::find(n.cpus.begin(), n.cpus.end(), cpu) != n.cpus.end()) home = &n;
    if (!home) {
      std::vector<int> all;
      for (const auto& n : topo.numa_nodes) all.insert(all.end(), n.cpus.begin(), n.cpus.end());
      std::sort(all.begin(), all.end());
      throw UsageError("--cpu " + std::to_string(cpu) + " is not a CPU of this node; valid: " +
                       (all.empty() ? std::string("none") : std::to_string(all.front()) + ".." + std::to_string(all.back())));
    }
    const std::string node_pu = "cpu" + std::to_string(home->id);
    if (pu.empty()) pu = node_pu;
    if (pu != node_pu)
      throw UsageError("--cpu " + std::to_string(cpu) + " belongs to " + node_pu + ", not --pu " + pu);
  }
  if (pu.empty()) {
    for (const auto& p : topo.processors)
      if (p.kind == PuKind::Cpu && p.name != "cpus") { pu = p.name; break; }
    if (pu.empty()) throw UsageError("this node shows no CPU node to chase from; use --pu gpuN");
  }
  if (pu == "cpus") throw UsageError("a chase is one thread: use --pu cpuN (a NUMA node's core) or gpuN");
  const Processor* p = topo.find_pu(pu);
  if (!p) throw UsageError("unknown processor '" + pu + "'; valid: " + join(topo.pu_names()));
  if (p->kind == PuKind::Gpu && cpu >= 0) throw UsageError("--cpu applies to CPU processors; " + pu + " is a GPU");
  if (mem.empty()) mem = own_memory(*p);
  if (!topo.find_mem(mem)) throw UsageError("unknown memory '" + mem + "'; valid: " + join(topo.mem_names()));
  const std::optional<Alloc> asked = alloc.empty() ? std::nullopt : std::optional<Alloc>(parse_allocs({alloc}).front());
  if (p->kind == PuKind::Cpu && p->cpus.empty()) throw UsageError(pu + " has no CPUs");
  ChaseCase c;
  c.pu = pu;
  c.pu_kind = p->kind;
  c.cpu = p->kind == PuKind::Cpu ? (cpu >= 0 ? cpu : p->cpus.front()) : -1;
  c.mem = mem;
  c.alloc = asked;
  return with_path(topo, c);
}

std::vector<ChaseCase> all_chase_cases(const Topology& topo, const std::vector<std::string>& pus,
                                       const std::vector<std::string>& mems,
                                       const std::vector<std::string>& allocs) {
  for (const auto& x : pus)
    if (!topo.find_pu(x) || x == "cpus") throw UsageError("unknown processor '" + x + "' for chase; valid: cpuN, gpuN of " + join(topo.pu_names()));
  for (const auto& x : mems)
    if (!topo.find_mem(x) && !is_memory_role(x))
      throw UsageError("unknown memory '" + x + "'; valid: " + join(topo.mem_names()) + ", or a role: " +
                       join(memory_role_words()));
  const bool every_alloc = allocs.size() == 1 && allocs.front() == "all";
  std::vector<Alloc> asked;
  for (const auto& a : allocs) {
    if (every_alloc) continue;
    if (std::find(allocator_names().begin(), allocator_names().end(), a) == allocator_names().end())
      throw UsageError("invalid --alloc '" + a + "'; valid: all or " + join(allocator_names()));
    asked.push_back(alloc_kind(a));
  }
  std::vector<ChaseCase> out;
  for (const auto& p : topo.processors) {
    if (p.name == "cpus" || !listed(pus, p.name) || (p.kind == PuKind::Cpu && p.cpus.empty())) continue;
    for (const auto& m : topo.memories) {
      if (!mem_selected(topo, p, m, mems)) continue;
      ChaseCase base;
      base.pu = p.name;
      base.pu_kind = p.kind;
      base.cpu = p.kind == PuKind::Cpu ? p.cpus.front() : -1;
      base.mem = m.name;
      if (allocs.empty()) {
        out.push_back(with_path(topo, base));
        continue;
      }
      for (const Alloc a : all_allocs()) {
        if (!alloc_fits_memory(m, a) || !(every_alloc || std::find(asked.begin(), asked.end(), a) != asked.end())) continue;
        base.alloc = a;
        out.push_back(with_path(topo, base));
      }
    }
  }
  return out;
}

std::vector<CacheInfo> chase_caches(const Topology& topo, const ChaseCase& c, const std::string& sysfs_root) {
  std::vector<CacheInfo> out;
  if (c.pu_kind == PuKind::Cpu) {
    for (const auto& l : cpu_caches(sysfs_root, c.cpu))
      out.push_back({c.pu, "L" + std::to_string(l.level) + (l.level == 1 ? "d" : ""),
                     static_cast<uint64_t>(l.bytes), "sysfs"});
    return out;
  }
  const Processor* p = topo.find_pu(c.pu);
  const GpuInfo* g = p ? topo.find_gpu(p->gpu) : nullptr;
  if (!g) return out;
  if (const uint64_t l1 = gpu_l1_bytes(g->cc)) out.push_back({c.pu, "L1", l1, "table"});
  if (g->l2_bytes > 0) out.push_back({c.pu, "L2", static_cast<uint64_t>(g->l2_bytes), "cuda"});
  return out;
}

uint64_t default_max_size(const std::vector<CacheInfo>& caches) {
  uint64_t largest = 0;
  for (const auto& c : caches) largest = std::max(largest, c.bytes);
  uint64_t s = 1ULL << 30;
  while (s < 4 * largest) s <<= 1;
  return s;
}

}  // namespace mempath
