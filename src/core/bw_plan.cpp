#include "core/bw_plan.hpp"
#include "core/kinds.hpp"

#include <algorithm>
#include <set>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/units.hpp"

namespace mempath {
namespace {

bool contains(const std::vector<std::string>& items, const std::string& x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

bool passes(const std::vector<std::string>& filter, const std::string& x) {
  return filter.empty() || contains(filter, x);
}

const Processor& require_pu(const Topology& topo, const std::string& pu) {
  const Processor* p = topo.find_pu(pu);
  if (!p) throw UsageError("unknown processor '" + pu + "'; valid: " + join(topo.pu_names()));
  return *p;
}

void require_mem(const Topology& topo, const std::string& mem) {
  if (!topo.find_mem(mem))
    throw UsageError("unknown memory '" + mem + "'; valid: " + join(topo.mem_names()));
}

std::string local_memory(const Topology& topo, const Processor& p) {
  if (pu_kind(p.kind) == PuKind::Gpu) return "gpu" + std::to_string(p.gpu);
  if (p.numa >= 0) return "numa" + std::to_string(p.numa);
  for (const auto& n : topo.numa_nodes)  // `cpus`: the first CPU node's memory
    if (!n.cpus.empty() && n.mem_total_bytes > 0) return "numa" + std::to_string(n.id);
  return topo.mem_names().empty() ? "" : topo.mem_names().front();
}

}  // namespace

Op parse_op(const std::string& name) {
  if (name == "read") return Op::Read;
  if (name == "write") return Op::Write;
  if (name == "copy") return Op::Copy;
  throw UsageError("invalid --op '" + name + "'; valid: read, write, copy");
}

std::string default_alloc(const Topology& topo, const std::string& pu, const std::string& mem) {
  const Path* path = topo.find_path(pu, mem);
  if (!path) return "";
  for (Alloc a : {Alloc::Device, Alloc::Numa, Alloc::Registered, Alloc::Pinned, Alloc::System, Alloc::Managed})
    if (contains(path->allocs, alloc_name(a))) return alloc_name(a);
  return "";
}

uint64_t path_cache_bytes(const Topology& topo, const std::string& pu) {
  const Processor* p = topo.find_pu(pu);
  return p && p->cache_bytes > 0 ? static_cast<uint64_t>(p->cache_bytes) : 0;
}

uint64_t default_size(const Topology& topo, const std::string& pu) {
  const uint64_t guard = kCacheFactor * path_cache_bytes(topo, pu);
  const uint64_t page_rounded = (guard + (1ULL << 21) - 1) & ~((1ULL << 21) - 1);
  return std::max(kDefaultSize, page_rounded);
}

std::vector<int> thread_sweep(int cores) {
  std::vector<int> counts;
  for (int t = 1; t < cores; t *= 2) counts.push_back(t);
  if (cores > 0) counts.push_back(cores);
  return counts;
}

std::vector<int> pick_cpus(const Topology& topo, const std::string& pu, int threads) {
  const Processor& p = require_pu(topo, pu);
  if (pu_kind(p.kind) != PuKind::Cpu) throw UsageError("--threads applies to CPU processors; " + pu + " is a GPU");
  if (threads < 1 || threads > static_cast<int>(p.cpus.size()))
    throw UsageError(pu + " has " + std::to_string(p.cores) + " cores (" +
                     std::to_string(p.cpus.size()) + " hardware threads); valid --threads: 1.." +
                     std::to_string(p.cpus.size()) + " or sweep");
  if (pu != "cpus") return {p.cpus.begin(), p.cpus.begin() + threads};
  std::vector<std::vector<int>> per_node;
  for (const auto& n : topo.numa_nodes)
    if (!n.cpus.empty()) per_node.push_back(n.cpus);
  std::vector<int> out;
  for (size_t k = 0; static_cast<int>(out.size()) < threads; ++k)
    for (const auto& cpus : per_node)
      if (k < cpus.size() && static_cast<int>(out.size()) < threads) out.push_back(cpus[k]);
  return out;
}

BwCase make_case(const Topology& topo, Op op, std::string pu, std::string mem, std::string dst_mem,
                 std::string alloc, int threads, std::string kernel, const BwSettings& settings) {
  if (pu.empty()) {
    const auto names = topo.pu_names();
    if (names.empty()) throw UsageError("this node shows no processors");
    pu = names.front();
  }
  const Processor& p = require_pu(topo, pu);
  if (mem.empty()) mem = local_memory(topo, p);
  require_mem(topo, mem);
  if (op == Op::Copy) {
    if (dst_mem.empty()) dst_mem = mem;
    require_mem(topo, dst_mem);
  } else if (!dst_mem.empty()) {
    throw UsageError("--dst-mem applies to --op copy only");
  }

  BwCase c;
  c.op = op;
  c.pu = pu;
  c.pu_kind = p.kind;
  c.mem = mem;
  c.dst_mem = dst_mem;
  c.via = route_via(topo, pu, mem, op == Op::Copy ? dst_mem : mem);
  c.in_cache = settings.in_cache;

  const bool explicit_alloc = !alloc.empty();
  if (explicit_alloc && !contains(allocator_names(), alloc))
    throw UsageError("invalid --alloc '" + alloc + "'; valid: " + join(allocator_names()));
  c.alloc = explicit_alloc ? alloc : default_alloc(topo, pu, mem);
  if (op == Op::Copy) c.dst_alloc = explicit_alloc ? alloc : default_alloc(topo, pu, dst_mem);
  if (c.alloc.empty()) c.alloc = alloc.empty() ? "none" : alloc;
  c.skip_reason = alloc_problem(topo, pu, mem, c.alloc);
  if (c.skip_reason.empty() && op == Op::Copy) {
    if (c.dst_alloc.empty()) c.dst_alloc = "none";
    c.skip_reason = alloc_problem(topo, pu, dst_mem, c.dst_alloc);
  }

  if (pu_kind(p.kind) == PuKind::Cpu) {
    if (!kernel.empty()) throw UsageError("--kernel applies to GPU processors; " + pu + " is a CPU");
    c.threads = threads > 0 ? threads : static_cast<int>(p.cores > 0 ? std::min<size_t>(p.cores, p.cpus.size()) : p.cpus.size());
    c.cpus = pick_cpus(topo, pu, c.threads);
    c.kernel = "";  // the ISA is chosen when the case runs
  } else {
    if (threads > 0) throw UsageError("--threads applies to CPU processors; for " + pu + " use --kernel grid|block");
    if (kernel.empty()) kernel = "grid";
    if (kernel != "grid" && kernel != "block")
      throw UsageError("invalid --kernel '" + kernel + "'; valid: grid, block");
    c.kernel = kernel;
  }

  c.size = settings.size ? settings.size : default_size(topo, pu);
  if (c.size % 4096 != 0)
    throw UsageError("--size " + format_size(c.size) + " is not a multiple of 4KiB; valid: e.g. 64MiB, 1GiB");
  if (settings.size && !settings.in_cache) {
    const std::string problem = cache_problem(c.size, path_cache_bytes(topo, pu), kCacheFactor);
    if (!problem.empty()) throw UsageError(problem);
  }
  return c;
}

std::vector<BwCase> all_cases(const Topology& topo, const BwFilters& filters, const BwSettings& settings) {
  for (const auto& o : filters.ops) parse_op(o);
  for (const auto& pu : filters.pus) require_pu(topo, pu);
  for (const auto& m : filters.mems) require_mem(topo, m);
  for (const auto& k : filters.pu_kinds)
    if (!contains(kind_names(kPuKindTable), k))
      throw UsageError("invalid --pu-kind '" + k + "'; valid: " + kind_list(kPuKindTable));
  for (const auto& k : filters.kernels)
    if (k != "grid" && k != "block") throw UsageError("invalid --kernel '" + k + "'; valid: grid, block");
  for (const auto& a : filters.allocs)
    if (!contains(allocator_names(), a))
      throw UsageError("invalid --alloc '" + a + "'; valid: " + join(allocator_names()));

  std::vector<BwCase> cases;
  auto add = [&](Op op, const std::string& pu, const std::string& mem, const std::string& dst,
                 const std::string& alloc, int threads, const std::string& kernel) {
    cases.push_back(make_case(topo, op, pu, mem, dst, alloc, threads, kernel, settings));
  };
  for (const Op op : {Op::Read, Op::Write, Op::Copy}) {
    if (!passes(filters.ops, op_name(op))) continue;
    for (const auto& p : topo.processors) {
      if (!passes(filters.pus, p.name) || !passes(filters.pu_kinds, p.kind)) continue;
      std::vector<std::string> kernels = {""};
      if (pu_kind(p.kind) == PuKind::Gpu) kernels = filters.kernels.empty() ? std::vector<std::string>{"grid", "block"} : filters.kernels;
      const int all_cores = static_cast<int>(std::min<size_t>(p.cores > 0 ? p.cores : p.cpus.size(), p.cpus.size()));
      if (op == Op::Copy) {
        // Every source x destination pair with the paths' default allocators.
        for (const auto& src : topo.memories) {
          for (const auto& dst : topo.memories) {
            if (!passes(filters.mems, src.name)) continue;
            if (default_alloc(topo, p.name, src.name) == alloc_name(Alloc::Managed) ||
                default_alloc(topo, p.name, dst.name) == alloc_name(Alloc::Managed))
              continue;  // managed-only paths migrate pages: measured by read/write, not copy
            add(op, p.name, src.name, dst.name, "", pu_kind(p.kind) == PuKind::Cpu ? all_cores : -1,
                kernels.front().empty() ? "" : kernels.front());
          }
        }
        continue;
      }
      for (const auto& m : topo.memories) {
        if (!passes(filters.mems, m.name)) continue;
        const Path* path = topo.find_path(p.name, m.name);
        if (!path) continue;
        std::vector<std::string> allocs = path->allocs;
        for (const auto& s : path->skipped) allocs.push_back(s.alloc);
        for (const auto& a : allocs) {
          if (!passes(filters.allocs, a) || !alloc_fits_memory(m, a)) continue;
          const bool runs = contains(path->allocs, a);
          if (pu_kind(p.kind) == PuKind::Cpu) {
            const bool sweep = filters.thread_sweep && runs && a == default_alloc(topo, p.name, m.name);
            for (int t : sweep ? thread_sweep(all_cores) : std::vector<int>{all_cores})
              add(op, p.name, m.name, "", a, t, "");
          } else {
            for (const auto& k : runs ? kernels : std::vector<std::string>{kernels.front()})
              add(op, p.name, m.name, "", a, -1, k);
          }
        }
      }
    }
  }
  return cases;
}

NoiseSpec parse_noise(const Topology& topo, const std::string& text, const std::string& measured_pu) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw UsageError("invalid --noise '" + text + "'; valid: PU:MEM, e.g. gpu0:numa0 or cpu0:numa4");
  NoiseSpec n{text.substr(0, colon), text.substr(colon + 1), ""};
  const Processor& p = require_pu(topo, n.pu);
  require_mem(topo, n.mem);
  const Processor* measured = topo.find_pu(measured_pu);
  bool overlap = n.pu == measured_pu;
  if (measured && pu_kind(p.kind) == PuKind::Cpu && pu_kind(measured->kind) == PuKind::Cpu) {
    std::set<int> a(p.cpus.begin(), p.cpus.end());
    for (int c : measured->cpus) overlap = overlap || a.count(c);
  }
  if (overlap)
    throw UsageError("--noise processor " + n.pu + " shares cores or SMs with the measured " +
                     measured_pu + "; valid: a processor that does not overlap it");
  n.alloc = default_alloc(topo, n.pu, n.mem);
  if (n.alloc.empty())
    throw UsageError("--noise: " + n.pu + " cannot read " + n.mem + " on this node");
  return n;
}

}  // namespace mempath
