#include "core/stream_plan.hpp"
#include "core/kinds.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/units.hpp"

namespace mempath {
namespace {

bool passes(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

int cores_of(const Processor& p) {
  return static_cast<int>(std::min<size_t>(p.cores > 0 ? p.cores : p.cpus.size(), p.cpus.size()));
}

// Physical cores of a PU; `cpus` on a node with one CPU node (no such PU) is that node.
int cores_of(const Topology& topo, const std::string& pu) {
  if (const Processor* p = topo.find_pu(pu)) return cores_of(*p);
  int n = 0;
  if (pu == "cpus")
    for (const auto& p : topo.processors) n += p.kind == PuKind::Cpu ? cores_of(p) : 0;
  return n;
}

std::string first_cpu(const Topology& topo) {
  for (const auto& p : topo.processors)
    if (p.kind == PuKind::Cpu && p.name != "cpus" && !p.cpus.empty()) return p.name;
  return "cpus";
}

std::vector<int> threads_of(const Topology& topo, const std::string& pu, const std::string& threads) {
  const int cores = std::max(1, cores_of(topo, pu));
  if (threads.empty() || threads == "sweep") return thread_sweep(cores);
  if (threads == "all") return {cores};
  const int t = thread_count(threads);
  return {static_cast<int>(t)};
}

// All cores of every CPU node reading arrays whose pages alternate over the host nodes.
std::vector<StreamCase> interleave_cases(const Topology& topo, const std::vector<int>& threads,
                                         const BwSettings& settings, int sweep) {
  int host_nodes = 0;
  for (const auto& n : topo.numa_nodes) host_nodes += n.kind == MemKind::Host && !n.cpus.empty();
  const bool skipped = host_nodes < 2;
  // A skipped case runs at no thread count: one case, not a sweep of identical skipped rows.
  const std::vector<int> counts = skipped ? std::vector<int>{threads.back()} : threads;
  std::vector<StreamCase> out;
  for (int t : counts) {
    StreamCase c;
    c.bw.pu = "cpus", c.bw.pu_kind = PuKind::Cpu, c.bw.mem = kInterleave, c.bw.alloc = Alloc::Numa;
    c.bw.via = "interleave", c.bw.threads = t;
    c.bw.size = settings.size ? settings.size : default_size(topo, "cpus");
    c.bw.in_cache = settings.in_cache;
    if (!settings.in_cache) {
      const std::string problem = cache_problem(c.bw.size, path_cache_bytes(topo, "cpus"), kCacheFactor);
      if (!problem.empty()) throw UsageError(problem);
    }
    if (skipped)
      c.bw.skip_reason = "one host NUMA node with CPUs: there is nothing to interleave over";
    else
      c.bw.cpus = pick_cpus(topo, "cpus", t);
    c.sweep = counts.size() > 1 ? sweep : -1;
    out.push_back(c);
  }
  return out;
}

}  // namespace

const std::vector<StreamKernelInfo>& stream_kernels(PuKind kind) {
  static const std::vector<StreamKernelInfo> cpu = {{StreamKernel::Copy, "copy", 2},
                                                    {StreamKernel::Scale, "scale", 2},
                                                    {StreamKernel::Add, "add", 3},
                                                    {StreamKernel::Triad, "triad", 3}};
  static const std::vector<StreamKernelInfo> gpu = {{StreamKernel::Copy, "copy", 2},
                                                    {StreamKernel::Scale, "mul", 2},
                                                    {StreamKernel::Add, "add", 3},
                                                    {StreamKernel::Triad, "triad", 3},
                                                    {StreamKernel::Dot, "dot", 2}};
  return kind == PuKind::Gpu ? gpu : cpu;
}

StreamValues stream_values_after(int repetitions) {
  StreamValues v;
  for (int r = 0; r < repetitions; ++r) {
    v.c = v.a;
    v.b = kStreamScalar * v.c;
    v.c = v.a + v.b;
    v.a = v.b + kStreamScalar * v.c;
  }
  return v;
}

bool stream_close(double got, double want) {
  return std::fabs(got - want) <= 1e-12 * std::max(std::fabs(want), 1e-300);
}

std::vector<StreamCase> stream_cases(const Topology& topo, const StreamRequest& r) {
  std::vector<StreamCase> out;
  int sweep = 0;
  // Consecutive CPU cases of one pu x mem x alloc with several thread counts form a sweep.
  auto append = [&](std::vector<BwCase> cases) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const BwCase& c = cases[i];
      const auto same = [&](size_t j) {
        return j < cases.size() && cases[j].pu == c.pu && cases[j].mem == c.mem && cases[j].alloc == c.alloc &&
               cases[j].pu_kind == PuKind::Cpu;
      };
      const bool in_sweep = c.pu_kind == PuKind::Cpu && (same(i + 1) || (i > 0 && same(i - 1)));
      if (in_sweep && !(i > 0 && same(i - 1))) ++sweep;
      out.push_back({c, in_sweep ? sweep : -1});
    }
  };
  if (r.all) {
    if (!r.pu.empty() || !r.mem.empty() || !r.alloc.empty())
      throw UsageError("with --all, --pu/--mem/--alloc are comma-list filters");
    BwFilters f = r.filters;
    f.ops = {"read"};
    f.kernels = {"grid"};
    std::vector<std::string> mems;
    for (const auto& m : f.mems)
      if (m != kInterleave) mems.push_back(m);
    const bool only_interleave = !f.mems.empty() && mems.empty();
    f.mems = mems;
    if (!only_interleave) append(all_cases(topo, f, r.settings));
    if (passes(r.filters.mems, kInterleave) && passes(r.filters.pu_kinds, pu_kind_name(PuKind::Cpu)) &&
        passes(r.filters.pus, "cpus") && passes(r.filters.allocs, alloc_name(Alloc::Numa))) {
      auto more = interleave_cases(topo, r.filters.thread_sweep ? threads_of(topo, "cpus", "sweep")
                                                                 : threads_of(topo, "cpus", "all"),
                                   r.settings, ++sweep);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  if (r.mem == kInterleave) {
    if (!r.pu.empty() && r.pu != "cpus")
      throw UsageError("--mem interleave is read by the cores of every CPU node; valid: --pu cpus or no --pu");
    if (!r.alloc.empty() && r.alloc != alloc_name(Alloc::Numa))
      throw UsageError("--mem interleave is allocated with numa_alloc_interleaved; valid: --alloc numa or no --alloc");
    return interleave_cases(topo, threads_of(topo, "cpus", r.threads), r.settings, 0);
  }
  const bool gpu = r.pu.rfind("gpu", 0) == 0;
  if (gpu && !r.threads.empty()) throw UsageError("--threads applies to CPU processors (a GPU launches its own); valid: no --threads with --pu gpuN");
  std::vector<BwCase> cases;
  for (int t : gpu ? std::vector<int>{-1} : threads_of(topo, r.pu.empty() ? first_cpu(topo) : r.pu, r.threads))
    cases.push_back(make_case(topo, Op::Read, r.pu, r.mem, "", r.alloc, t, gpu ? "grid" : "", r.settings));
  append(cases);
  return out;
}

}  // namespace mempath
