#include "core/bw_plan.hpp"

#include "core/memory_role.hpp"
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

template <class T>
bool contains(const std::vector<T>& items, const typename std::vector<T>::value_type& x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

template <class T>
bool passes(const std::vector<T>& filter, const typename std::vector<T>::value_type& x) {
  return filter.empty() || contains(filter, x);
}

const Processor& require_pu(const Topology& topo, const std::string& pu) {
  const Processor* p = topo.find_pu(pu);
  if (!p) throw UsageError("unknown processor '" + pu + "'; valid: " + join(topo.pu_names()));
  return *p;
}

void require_mem(const Topology& topo, const std::string& mem) {
  if (!topo.find_mem(mem))
    throw UsageError("unknown memory '" + mem + "'; valid: " + join(topo.mem_names()) + ", or with --all a role: " + join(memory_role_words()));
}

std::string local_memory(const Topology& topo, const Processor& p) {
  if (p.kind == PuKind::Gpu) return "gpu" + std::to_string(p.gpu);
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

std::optional<Alloc> default_alloc(const Topology& topo, const std::string& pu, const std::string& mem) {
  const Path* path = topo.find_path(pu, mem);
  if (!path) return std::nullopt;
  for (Alloc a : {Alloc::Device, Alloc::Numa, Alloc::Registered, Alloc::Pinned, Alloc::System, Alloc::Managed})
    if (contains(path->allocs, a)) return a;
  return std::nullopt;
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

std::vector<BwCase> gpu_grid_sweep(const Topology& topo, const BwCase& grid) {
  const Processor& p = require_pu(topo, grid.pu);
  if (p.kind != PuKind::Gpu) throw UsageError("a grid sweep is of a GPU, not of " + grid.pu);
  if (grid.kernel != "grid")
    throw UsageError("--threads sweep varies the grid kernel's blocks; --kernel " + grid.kernel +
                     " is one fixed block; valid: --kernel grid (or no --kernel) with --threads sweep");
  if (!grid.skip_reason.empty()) return {grid};  // a skip at every grid size is one skip
  const GpuInfo* g = topo.find_gpu(p.gpu);
  if (!g || g->sm_count <= 0)
    throw UsageError("the SM count of " + grid.pu + " is unknown (a snapshot without sm_count?): "
                     "--threads sweep cannot size its grid; valid: --threads all, or a snapshot with GPU facts");
  std::vector<BwCase> cases;
  for (int b = 1; b <= kSweepBlocksPerSm * g->sm_count; b *= 2) {
    BwCase c = grid;
    c.blocks = b;
    c.threads = b * kSweepBlockThreads;
    cases.push_back(c);
  }
  cases.push_back(grid);
  return cases;
}

std::vector<int> pick_cpus(const Topology& topo, const std::string& pu, int threads) {
  const Processor& p = require_pu(topo, pu);
  if (p.kind != PuKind::Cpu) throw UsageError("--threads applies to CPU processors; " + pu + " is a GPU");
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

namespace {

// A case of processor `p` whose names are the node's: `alloc` none for each path's default.
BwCase case_of(const Topology& topo, Op op, const Processor& p, const std::string& mem, const std::string& dst_mem,
               std::optional<Alloc> alloc, int threads, std::string kernel, const BwSettings& settings) {
  const std::string& pu = p.name;
  BwCase c;
  c.op = op;
  c.pu = pu;
  c.pu_kind = p.kind;
  c.mem = mem;
  c.dst_mem = dst_mem;
  c.via = route_via(topo, pu, mem, op == Op::Copy ? dst_mem : mem);
  c.in_cache = settings.in_cache;

  c.alloc = alloc ? alloc : default_alloc(topo, pu, mem);
  if (op == Op::Copy) c.dst_alloc = alloc ? alloc : default_alloc(topo, pu, dst_mem);
  // Either end on a GPU this one has no peer access to: that, not an allocator, is the cause.
  c.skip_reason = peer_problem(topo, pu, mem);
  if (c.skip_reason.empty() && op == Op::Copy) c.skip_reason = peer_problem(topo, pu, dst_mem);
  if (c.skip_reason.empty()) c.skip_reason = alloc_problem(topo, pu, mem, c.alloc);
  if (c.skip_reason.empty() && op == Op::Copy) c.skip_reason = alloc_problem(topo, pu, dst_mem, c.dst_alloc);

  if (p.kind == PuKind::Cpu) {
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

}  // namespace

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
  const std::optional<Alloc> asked = alloc.empty() ? std::nullopt : std::optional<Alloc>(parse_allocs({alloc}).front());
  return case_of(topo, op, p, mem, dst_mem, asked, threads, std::move(kernel), settings);
}

std::vector<BwCase> all_cases(const Topology& topo, const BwFilters& filters, const BwSettings& settings) {
  for (const auto& o : filters.ops) parse_op(o);
  for (const auto& pu : filters.pus) require_pu(topo, pu);
  for (const auto& m : filters.mems)
    if (!is_memory_role(m)) require_mem(topo, m);
  // A role word (`local`, `peer-host`...) is relative to each processor; in a copy it
  // selects both ends (copies among the local memories), a name the source only.
  std::vector<std::string> role_words;
  for (const auto& m : filters.mems)
    if (is_memory_role(m)) role_words.push_back(m);
  std::vector<PuKind> pu_kinds;
  for (const auto& k : filters.pu_kinds) {
    if (!contains(kind_names(kPuKindTable), k))
      throw UsageError("invalid --pu-kind '" + k + "'; valid: " + kind_list(kPuKindTable));
    pu_kinds.push_back(pu_kind(k));
  }
  for (const auto& k : filters.kernels)
    if (k != "grid" && k != "block") throw UsageError("invalid --kernel '" + k + "'; valid: grid, block");
  const std::vector<Alloc> allocs = parse_allocs(filters.allocs);

  std::vector<BwCase> cases;
  for (const Op op : {Op::Read, Op::Write, Op::Copy}) {
    if (!passes(filters.ops, std::string(op_name(op)))) continue;
    for (const auto& p : topo.processors) {
      if (!passes(filters.pus, p.name) || !passes(pu_kinds, p.kind)) continue;
      auto add = [&](const std::string& mem, const std::string& dst, std::optional<Alloc> alloc, int threads,
                     const std::string& kernel) {
        cases.push_back(case_of(topo, op, p, mem, dst, alloc, threads, kernel, settings));
      };
      std::vector<std::string> kernels = {""};
      if (p.kind == PuKind::Gpu) kernels = filters.kernels.empty() ? std::vector<std::string>{"grid", "block"} : filters.kernels;
      const int all_cores = static_cast<int>(std::min<size_t>(p.cores > 0 ? p.cores : p.cpus.size(), p.cpus.size()));
      if (op == Op::Copy) {
        // Every source x destination pair with the paths' default allocators.
        for (const auto& src : topo.memories) {
          for (const auto& dst : topo.memories) {
            if (!mem_selected(topo, p, src, filters.mems)) continue;
            if (!role_words.empty() && !mem_selected(topo, p, dst, role_words)) continue;
            if (default_alloc(topo, p.name, src.name) == Alloc::Managed ||
                default_alloc(topo, p.name, dst.name) == Alloc::Managed)
              continue;  // managed-only paths migrate pages: measured by read/write, not copy
            // `--threads sweep` given (gpu_sweep): copies sweep too (the paper's Fig. 10), CPU
            // threads and GPU grids alike; the default plan keeps one case per pair.
            if (filters.gpu_sweep && p.kind == PuKind::Cpu) {
              for (int t : thread_sweep(all_cores)) add(src.name, dst.name, std::nullopt, t, "");
            } else if (filters.gpu_sweep && kernels.front() == "grid") {
              const auto points = gpu_grid_sweep(topo, case_of(topo, op, p, src.name, dst.name, std::nullopt, -1, "grid", settings));
              cases.insert(cases.end(), points.begin(), points.end());
            } else {
              add(src.name, dst.name, std::nullopt, p.kind == PuKind::Cpu ? all_cores : -1,
                  kernels.front().empty() ? "" : kernels.front());
            }
          }
        }
        continue;
      }
      for (const auto& m : topo.memories) {
        if (!mem_selected(topo, p, m, filters.mems)) continue;
        const Path* path = topo.find_path(p.name, m.name);
        if (!path) continue;
        std::vector<Alloc> path_allocs = path->allocs;
        for (const auto& s : path->skipped) path_allocs.push_back(s.alloc);
        for (const Alloc a : path_allocs) {
          if (!passes(allocs, a) || !alloc_fits_memory(m, a)) continue;
          const bool runs = contains(path->allocs, a);
          if (p.kind == PuKind::Cpu) {
            const bool sweep = filters.thread_sweep && runs && a == default_alloc(topo, p.name, m.name);
            for (int t : sweep ? thread_sweep(all_cores) : std::vector<int>{all_cores})
              add(m.name, "", a, t, "");
          } else {
            // Explicitly asked only: the nightly plan of GPU paths stays one case per kernel.
            const bool sweep = filters.gpu_sweep && runs && a == default_alloc(topo, p.name, m.name) &&
                               contains(kernels, "grid");
            for (const auto& k : runs ? kernels : std::vector<std::string>{kernels.front()}) {
              if (sweep && k == "grid") {
                const auto points = gpu_grid_sweep(topo, case_of(topo, op, p, m.name, "", a, -1, k, settings));
                cases.insert(cases.end(), points.begin(), points.end());
              } else {
                add(m.name, "", a, -1, k);
              }
            }
          }
        }
      }
    }
  }
  return cases;
}

namespace {

constexpr uint64_t kNoiseMaxBytes = 8ULL << 30;  // the paper's 8 GB noise buffer
constexpr uint64_t kNoiseAlign = 2ULL << 20;

// A CPU reader's threads: one per physical core of its processor that the measured case
// does not use; a GPU's case is driven by a host thread, which keeps one core for itself.
std::vector<int> noise_cpus(const Processor& p, const BwCase& measured) {
  const size_t cores = p.cores > 0 ? std::min<size_t>(p.cores, p.cpus.size()) : p.cpus.size();
  const std::set<int> busy(measured.cpus.begin(), measured.cpus.end());
  std::vector<int> out;
  for (size_t i = 0; i < cores; ++i)
    if (!busy.count(p.cpus[i])) out.push_back(p.cpus[i]);
  if (measured.pu_kind == PuKind::Gpu && !out.empty()) out.erase(out.begin());
  return out;
}

std::string no_core_left(const std::string& noise_pu, const BwCase& measured) {
  return noise_pu + " shares cores with the measured " + measured.pu + " and has none left for itself" +
         (measured.pu_kind == PuKind::Gpu ? " (one stays with the thread driving the GPU)" : "");
}

// The only CPU node of the node, -1 when there are several (or none).
int only_cpu_node(const Topology& topo) {
  int found = -1, count = 0;
  for (const auto& n : topo.numa_nodes)
    if (!n.cpus.empty()) found = n.id, ++count;
  return count == 1 ? found : -1;
}

}  // namespace

std::string partner_noise(const Topology& topo, const BwCase& measured, NoiseSpec* out) {
  const Processor& p = require_pu(topo, measured.pu);
  NoiseSpec n;
  if (p.kind == PuKind::Gpu) {
    // Grace noise reads its superchip's HBM (the paper's Fig. 7): the C2C link carries both.
    const GpuInfo* g = topo.find_gpu(p.gpu);
    int host = g && g->host_numa >= 0 ? g->host_numa : only_cpu_node(topo);
    if (host < 0) return measured.pu + " reports no nearest NUMA node: no CPU socket to pair it with";
    n.pu = "cpu" + std::to_string(host);
    if (!topo.find_pu(n.pu)) return "the nearest NUMA node of " + measured.pu + " has no CPUs";
    const Memory* hbm = g && g->hbm_numa >= 0 ? topo.find_mem("numa" + std::to_string(g->hbm_numa)) : nullptr;
    if (!hbm)
      return n.pu + " cannot read " + measured.pu + "'s memory: it is device memory, not a NUMA node a CPU " +
             "loads from (partner noise reads the GPU's HBM NUMA node, as on GH200)";
    if (hbm->offline) return hbm->name + " (" + measured.pu + "'s HBM) is offline: no memory for the noise to read";
    n.mem = hbm->name;
  } else {
    // Hopper noise reads its superchip's LPDDR; on x86 the GPU nearest the socket reads it.
    if (p.numa < 0) return measured.pu + " spans every socket; partner noise pairs one socket with its GPU: name cpuN";
    const bool single = only_cpu_node(topo) == p.numa;
    for (const auto& g : topo.gpus)
      if (g.host_numa == p.numa || (g.host_numa < 0 && single)) {
        n.pu = "gpu" + std::to_string(g.id);
        break;
      }
    if (n.pu.empty()) return "no GPU is attached to " + measured.pu + ": nothing to read its memory";
    n.mem = "numa" + std::to_string(p.numa);
  }
  const std::optional<Alloc> alloc = default_alloc(topo, n.pu, n.mem);
  if (!alloc) return n.pu + " cannot read " + n.mem + " on this node";
  n.alloc = *alloc;
  if (topo.find_pu(n.pu)->kind == PuKind::Cpu) {
    n.cpus = noise_cpus(*topo.find_pu(n.pu), measured);
    if (n.cpus.empty()) return no_core_left(n.pu, measured);
  }
  *out = n;
  return "";
}

NoiseSpec parse_noise(const Topology& topo, const std::string& text, const BwCase& measured) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw UsageError("invalid --noise '" + text + "'; valid: partner, or PU:MEM, e.g. gpu0:numa0 or cpu0:numa4");
  NoiseSpec n;
  n.pu = text.substr(0, colon);
  n.mem = text.substr(colon + 1);
  const Processor& p = require_pu(topo, n.pu);
  require_mem(topo, n.mem);
  if (p.kind == PuKind::Gpu) {
    if (n.pu == measured.pu)
      throw UsageError("--noise processor " + n.pu + " shares SMs with the measured " + measured.pu +
                       "; valid: a processor that does not overlap it");
  } else {
    n.cpus = noise_cpus(p, measured);
    if (n.cpus.empty())
      throw UsageError("--noise processor " + no_core_left(n.pu, measured) +
                       "; valid: fewer --threads, or a processor that does not overlap it");
  }
  const std::optional<Alloc> alloc = default_alloc(topo, n.pu, n.mem);
  if (!alloc) throw UsageError("--noise: " + n.pu + " cannot read " + n.mem + " on this node");
  n.alloc = *alloc;
  return n;
}

uint64_t noise_size(const Topology& topo, const NoiseSpec& spec, uint64_t requested) {
  const uint64_t guard = kCacheFactor * path_cache_bytes(topo, spec.pu);
  if (requested) {
    if (requested % 4096 != 0)
      throw UsageError("--noise-size " + format_size(requested) + " is not a multiple of 4KiB; valid: e.g. 1GiB, 8GiB");
    if (requested < guard)
      throw UsageError("--noise-size " + format_size(requested) + " is below 4 x the caches of " + spec.pu +
                       ": the noise would read its caches, not " + spec.mem + "; valid: at least " + format_size(guard));
    return requested;
  }
  const Memory* m = topo.find_mem(spec.mem);
  const uint64_t half = m && m->free_bytes > 0 ? static_cast<uint64_t>(m->free_bytes) / 2 : kNoiseMaxBytes;
  return std::min(kNoiseMaxBytes, half) / kNoiseAlign * kNoiseAlign;
}

void plan_noise(const Topology& topo, const std::string& text, uint64_t requested_size,
                std::vector<BwCase>& cases) {
  if (text.empty()) {
    if (requested_size) throw UsageError("--noise-size applies with --noise");
    return;
  }
  for (auto& c : cases) {
    NoiseSpec n;
    if (text == "partner") {
      const std::string why = partner_noise(topo, c, &n);
      if (!why.empty()) {
        if (c.skip_reason.empty()) c.skip_reason = "--noise partner: " + why;
        continue;
      }
    } else {
      n = parse_noise(topo, text, c);
    }
    n.size = noise_size(topo, n, requested_size);
    const uint64_t guard = kCacheFactor * path_cache_bytes(topo, n.pu);
    if (n.size < guard && c.skip_reason.empty())
      c.skip_reason = "too little free memory on " + n.mem + " for a noise buffer of 4 x the caches of " + n.pu +
                      " (" + format_size(guard) + ")";
    c.noise = n;
  }
}

}  // namespace mempath
