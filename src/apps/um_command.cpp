// `mempath um`: unified-memory behaviour (docs/cli.md):
//   interleave  GPU writes (cudaMemset bursts of 1..N back-to-back iterations) interleaved
//               with CPU writes (memset, and one store per page) on managed and on
//               system-allocated memory: what page migration costs each side, and the
//               application's time per step (the paper's Fig. 4), for each first placement
//               of the buffer (`--mem`: host DDR, GH200 HBM, managed CPU- or GPU-first);
//   inplace     an in-place update kernel on system, managed and cudaMalloc memory: the
//               first run against later ones, and where the pages end up;
//   evict       GPU reads of a block of host memory: cold, warm, and after the block was
//               evicted back to the host (managed: prefetched to the CPU; system, pinned:
//               rewritten by the CPU).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/plan_print.hpp"
#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/um_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kFill = 0x01;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Sample {
  int iterations = -1, rep = -1, run = -1;
  std::string phase, preceded_by, state, placement;
  uint64_t bytes = 0;
  double seconds = 0;
  std::string first_placement;  // where the buffer's pages were right after its first touch
  double app_seconds = kNaN;    // interleave, GPU rows: the CPU phase before and this burst, host clock
};

struct Context {
  const Topology& topo;
  int gpu;
  uint64_t size;
  int reps, max_iterations;
};

// Who touches a buffer on `mem` first: the GPU for its own memory (managed memory
// prefetched to it and filled by it, cudaMalloc), else CPU threads of the node's socket
// with their memory bound to the node (an HBM node's pages so come from the HBM).
std::string first_toucher(const std::string& mem) { return mem.rfind("gpu", 0) == 0 ? "gpu" : "cpu"; }

double timed_cpu(const std::function<void()>& fn) {
  const double t0 = now_seconds();
  fn();
  return now_seconds() - t0;
}

// The CPU cores of the application thread: those of the buffer's node, or, for GPU
// memory and HBM (no CPUs), of the GPU's nearest host node.
std::vector<int> app_cpus(const Context& c, const Buffer& buf) {
  if (buf.numa() >= 0) return setup_cpus(c.topo, buf.numa());
  const GpuInfo* g = c.topo.find_gpu(c.gpu);
  return setup_cpus(c.topo, g && g->host_numa >= 0 ? g->host_numa : 0);
}

// interleave: per burst length n and repetition, a GPU burst after a CPU memset and a
// GPU burst after CPU stores of one byte per page, each CPU phase timed too, and the step
// (CPU phase + burst) as the application sees it: host clock from the CPU phase's start
// to the burst's end. Where the pages are is read after each burst, outside the clocks.
bool interleave(const Context& c, Alloc alloc, const std::string& mem, std::vector<Sample>& out) {
  auto buf = allocate(c.topo, alloc, mem, c.size, kFill);
  const std::string first = placement(*buf);
  auto* p = static_cast<char*>(buf->data());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // CPU phases run on one core of the buffer's node, as a pinned application thread would.
  run_on_threads(1, app_cpus(c, *buf), -1, [&](int, int) {
    for (int n = 1; n <= c.max_iterations; n *= 2) {
      for (int r = 0; r < c.reps; ++r) {
        for (const char* cpu_phase : {"cpu_memset", "cpu_page_stride"}) {
          const double t0 = now_seconds();
          const double cpu_s = timed_cpu([&] {
            if (std::strcmp(cpu_phase, "cpu_memset") == 0) std::memset(p, r & 0x7f, c.size);
            else for (size_t off = 0; off < c.size; off += page) p[off] = static_cast<char>(r);
          });
          const double gpu_s = gpu::memset_burst(c.gpu, p, c.size, n, 0x5a);
          const double app_s = now_seconds() - t0;
          out.push_back({n, r, -1, cpu_phase, "gpu_memset", "", "", c.size, cpu_s, first});
          out.push_back({n, r, -1, "gpu_memset", cpu_phase, "", placement(*buf), c.size * n, gpu_s, first, app_s});
        }
      }
    }
  });
  // The last GPU burst wrote 0x5a everywhere: the data check of the whole exercise.
  return gpu::count_mismatches(c.gpu, p, c.size, cpu::word_of(0x5a)) == 0;
}

bool inplace(const Context& c, Alloc alloc, const std::string& mem, std::vector<Sample>& out) {
  auto buf = allocate(c.topo, alloc, mem, c.size, kFill);
  const std::string first = placement(*buf);
  const int runs = std::max(c.reps, 2);
  const auto seconds = gpu::inplace_update_runs(c.gpu, buf->data(), c.size, runs);
  const std::string where = placement(*buf);
  for (int r = 0; r < runs; ++r)
    out.push_back({-1, 0, r, "inplace", "", r == 0 ? "first" : "later", r + 1 == runs ? where : "",
                   2 * c.size, seconds[r], first});
  return gpu::count_mismatches(c.gpu, buf->data(), c.size, cpu::word_of(kFill) + runs) == 0;
}

bool evict(const Context& c, Alloc alloc, const std::string& mem, std::vector<Sample>& out) {
  bool ok = true;
  const uint64_t expected = (c.size / 8) * cpu::word_of(kFill);
  for (int r = 0; r < c.reps; ++r) {
    auto buf = allocate(c.topo, alloc, mem, c.size, kFill);  // fresh pages: a real cold read
    const std::string first = placement(*buf);
    auto read = [&](const char* state) {
      auto run = gpu::run_bw(c.gpu, Op::Read, buf->data(), nullptr, c.size, 1, gpu::kDefaultGrid, 0, 1, 0);
      ok = ok && run.read_sum == expected;
      out.push_back({-1, r, -1, "gpu_read", "", state, placement(*buf), c.size, run.seconds.front(), first});
    };
    read("cold");
    read("warm");
    if (alloc == Alloc::Managed) {
      gpu::prefetch_managed(buf->data(), c.size, -1);
    } else {
      run_on_threads(1, app_cpus(c, *buf), buf->numa(),
                     [&](int, int) { std::memset(buf->data(), kFill, c.size); });
    }
    read("evicted");
  }
  return ok;
}

using Experiment = bool (*)(const Context&, Alloc alloc, const std::string& mem, std::vector<Sample>&);

struct ExperimentSpec {
  const char* name;
  Experiment run;
  std::vector<Alloc> allocs;
};

// The allocators any experiment uses, as --alloc lists them.
const std::vector<Alloc> kUmAllocs = {Alloc::System, Alloc::Managed, Alloc::Device, Alloc::Pinned};

const std::vector<ExperimentSpec>& experiments() {
  static const std::vector<ExperimentSpec> list = {
      {"interleave", interleave, {Alloc::Managed, Alloc::System}},
      {"inplace", inplace, {Alloc::System, Alloc::Managed, Alloc::Device}},
      {"evict", evict, {Alloc::System, Alloc::Managed, Alloc::Pinned}},
  };
  return list;
}

// The medians the MEMPATH line reports, from the samples of one case.
Row figures(const std::string& exp, int max_iterations, const std::vector<Sample>& s) {
  auto gbps = [&](const std::string& state) {
    std::vector<double> v;
    for (const auto& x : s)
      if (x.state == state) v.push_back(x.bytes / x.seconds / 1e9);
    return v.empty() ? kNaN : summarize(v).median;
  };
  auto iter_us = [&](int n) {
    std::vector<double> v;
    for (const auto& x : s)
      if (x.phase == "gpu_memset" && x.iterations == n) v.push_back(x.seconds / n * 1e6);
    return v.empty() || exp != "interleave" ? kNaN : summarize(v).median;
  };
  return {{"first_GBps", gbps("first")},       {"later_GBps", gbps("later")},
          {"cold_GBps", gbps("cold")},         {"warm_GBps", gbps("warm")},
          {"evicted_GBps", gbps("evicted")},   {"gpu_iter_us_n1", iter_us(1)},
          {"gpu_iter_us_nmax", iter_us(max_iterations)}, {"max_iterations", static_cast<int64_t>(max_iterations)},
          {"placement", s.empty() ? std::string() : s.back().placement},
          {"first_placement", s.empty() ? std::string() : s.front().first_placement}};
}

struct UmCase {
  const ExperimentSpec* spec;
  Alloc alloc;
  std::string mem, skip_reason;
};

// `--mem sweep`: every first placement the GPU's superchip offers an allocator: its
// nearest host node; system memory also on the GPU's HBM node (GH200); managed memory
// also GPU-first (gpuN); cudaMalloc memory only on the GPU.
std::vector<std::string> sweep_mems(const Topology& topo, int gpu, Alloc alloc) {
  const GpuInfo* g = topo.find_gpu(gpu);
  const std::string host = "numa" + std::to_string(std::max(0, g->host_numa)), own = "gpu" + std::to_string(gpu);
  switch (alloc) {
    case Alloc::Device: return {own};
    case Alloc::Managed: return {host, own};
    case Alloc::Pinned: case Alloc::Registered: return {host};
    default: {
      const std::string hbm = "numa" + std::to_string(g->hbm_numa);
      if (g->hbm_numa >= 0 && topo.find_mem(hbm)) return {host, hbm};
      return {host};
    }
  }
}

struct Measured {
  std::vector<Sample> samples;
  bool verified = false;
};

class UmBenchmark : public Benchmark {
 public:
  UmBenchmark()
      : Benchmark({"um",
                   "unified memory: interleaved CPU/GPU writes, in-place updates, evictions",
                   "Unified-memory behaviour: interleaved CPU/GPU writes, in-place updates, cold/warm/evicted reads."}) {}
  std::vector<OptionSpec> options() const override {
    return {{"exp", "LIST", "interleave, inplace, evict (default: all)"},
            {"gpu", "N", "CUDA device (default 0)"},
            {"mem", "LIST|sweep", "first placement of the buffers: numaN (a host node, or on GH200 the "
                                  "GPU's HBM node), gpuN (managed: GPU first touch); sweep: each one the "
                                  "GPU's superchip offers an allocator (default: the GPU's nearest host node)"},
            {"alloc", "LIST", "allocators to try (default: each experiment's set)"},
            {"size", "SIZE", "bytes per buffer (default 256MiB)"},
            {"reps", "N", "repetitions (default 3)"},
            {"iters", "N", "longest GPU burst of interleave, a power of two (default 256)"}};
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only) require_cuda_build("'mempath um' needs a CUDA build");
    const GpuInfo& info = gpu_option(opts, topo);
    const int g = info.id;
    const std::string own = "gpu" + std::to_string(g);
    const std::vector<std::string> mem_option =
        opts.has("mem") ? opts.list("mem") : std::vector<std::string>{"numa" + std::to_string(std::max(0, info.host_numa))};
    const bool sweep = mem_option == std::vector<std::string>{"sweep"};
    std::vector<std::string> valid;
    for (const auto& x : topo.memories)
      if (x.name.rfind("numa", 0) == 0) valid.push_back(x.name);
    valid.push_back(own);
    for (const auto& mem : sweep ? std::vector<std::string>{} : mem_option) {
      if (std::find(valid.begin(), valid.end(), mem) == valid.end())
        throw UsageError("--mem takes NUMA memories and the measured GPU's own (" + own + "), or sweep; not '" + mem +
                         "'; valid: " + join(valid) + ", sweep");
    }
    const long long iters = opts.integer("iters", 256, 1, 1 << 20);
    if (iters & (iters - 1)) throw UsageError("--iters must be a power of two, got " + std::to_string(iters));
    c_ = std::make_unique<Context>(Context{topo, g, page_multiple_size(opts, 256ULL << 20),
                                           static_cast<int>(opts.integer("reps", 3, 1, kMaxReps)), static_cast<int>(iters)});
    std::vector<std::string> exps = opts.has("exp") ? opts.list("exp") : split_list("interleave,inplace,evict");
    std::vector<Alloc> alloc_filter;
    for (const auto& e : exps) {
      bool known = false;
      for (const auto& spec : experiments()) known = known || e == spec.name;
      if (!known) throw UsageError("invalid --exp '" + e + "'; valid: interleave, inplace, evict");
    }
    for (const auto& a : opts.list("alloc")) {
      const auto known = std::find_if(kUmAllocs.begin(), kUmAllocs.end(), [&](Alloc k) { return a == alloc_name(k); });
      if (known == kUmAllocs.end())
        throw UsageError("invalid --alloc '" + a + "' for um; valid: " + alloc_list(kUmAllocs));
      alloc_filter.push_back(*known);
    }
    for (const auto& spec : experiments()) {
      if (std::find(exps.begin(), exps.end(), spec.name) == exps.end()) continue;
      for (const Alloc alloc : spec.allocs) {
        if (!alloc_filter.empty() && std::find(alloc_filter.begin(), alloc_filter.end(), alloc) == alloc_filter.end())
          continue;
        // cudaMalloc memory is the GPU's whatever --mem says: one case. Otherwise each memory
        // the allocator can give at all (pinned memory on a GPU is no case, as in bw --all).
        std::vector<std::string> mems = sweep ? sweep_mems(topo, g, alloc)
                                              : alloc == Alloc::Device ? std::vector<std::string>{own}
                                                                                   : mem_option;
        for (const auto& mem : mems) {
          const Memory* m = topo.find_mem(mem);
          if (!m || !alloc_fits_memory(*m, alloc)) continue;
          cases_.push_back({&spec, alloc, mem, alloc_problem(topo, own, mem, alloc)});
        }
      }
    }
    if (cases_.empty())
      throw UsageError("--mem " + join(mem_option, ",") + " and --alloc leave no case: cudaMalloc memory is " + own +
                       ", the other allocators need a NUMA memory (or " + own + " for managed)");
    for (const auto& uc : cases_) {
      const Memory* m = topo.find_mem(uc.mem);
      if (uc.skip_reason.empty() && c_->size > static_cast<uint64_t>(m->free_bytes) && m->free_bytes > 0)
        throw UsageError("--size " + format_size(c_->size) + " exceeds the " + format_size(m->free_bytes) +
                         " free on " + uc.mem + "; valid: a smaller --size");
    }
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    return {{"exp", cases_[i].spec->name}, {"alloc", alloc_name(cases_[i].alloc)}, {"gpu", gpu_name()}, {"mem", cases_[i].mem},
            {"size", std::to_string(c_->size)}, {"first_touch", first_toucher(cases_[i].mem)}};
  }
  std::string skip_reason(size_t i) const override { return cases_[i].skip_reason; }
  // Modelled: every pass over the buffer that moves pages at the migration rate (what
  // device memory does faster counts alike), GPU bursts at HBM's rate.
  double expected_seconds(size_t i) const override {
    const std::string exp = cases_[i].spec->name;
    const Alloc alloc = cases_[i].alloc;
    const double size = static_cast<double>(c_->size), move = model::seconds(size, model::kMigrateGBps);
    double s = model::kCaseOverheadS + model::setup_s(size, alloc) + model::verify_s(size, Alloc::System);
    if (exp == "interleave")  // bursts n = 1, 2, 4 .. iters; two CPU phases, each followed by a burst
      for (int n = 1; n <= c_->max_iterations; n *= 2)
        s += c_->reps * 2 * (2 * move + model::seconds(n * size, model::kGpuLocalGBps));
    else if (exp == "inplace")
      s += std::max(c_->reps, 2) * 2 * move;
    else  // evict: fresh buffer, cold, warm and evicted reads, pages moved back between
      s += c_->reps * (model::setup_s(size, alloc) + 4 * move);
    return s;
  }
  Outcome run(size_t i) override {
    Measured m;
    m.verified = cases_[i].spec->run(*c_, cases_[i].alloc, cases_[i].mem, m.samples);
    Outcome o;
    if (!m.verified) o.status = "failed", o.reason = "data check failed after the experiment";
    o.data = std::move(m);
    return o;
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const UmCase& uc = cases_[i];
    const auto* m = std::any_cast<Measured>(&out.data);
    const std::vector<Sample> samples = m ? m->samples : std::vector<Sample>{};
    const std::string& mem_used = uc.mem;
    const std::string toucher = first_toucher(uc.mem);
    const auto size = static_cast<int64_t>(c_->size);
    CaseRows rows;
    for (const auto& s : samples)
      rows.samples.push_back({{"case_id", id}, {"experiment", std::string(uc.spec->name)},
                              {"alloc", std::string(alloc_name(uc.alloc))}, {"gpu", gpu_name()}, {"mem", mem_used}, {"size_bytes", size},
                              {"iterations", static_cast<int64_t>(s.iterations)}, {"rep", static_cast<int64_t>(s.rep)},
                              {"run", static_cast<int64_t>(s.run)}, {"phase", s.phase}, {"preceded_by", s.preceded_by},
                              {"state", s.state}, {"bytes", static_cast<int64_t>(s.bytes)}, {"time_s", s.seconds},
                              {"bandwidth_GBps", s.bytes / s.seconds / 1e9}, {"placement", s.placement},
                              {"first_touch", toucher}, {"first_placement", s.first_placement},
                              {"app_time_s", s.app_seconds}});
    Row row = figures(uc.spec->name, c_->max_iterations, samples);
    row.insert({{"case_id", id}, {"experiment", std::string(uc.spec->name)}, {"alloc", std::string(alloc_name(uc.alloc))},
                {"gpu", gpu_name()},
                {"mem", mem_used}, {"size_bytes", size}, {"status", out.status}, {"reason", out.reason},
                {"verified", static_cast<int64_t>(m && m->verified)}, {"first_touch", toucher}});
    rows.cases.push_back(row);
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row& row) const override {
    std::vector<SummaryField> f = {field("exp", "experiment"), field("alloc"), field("gpu"), field("mem"),
                                   field("size", "size_bytes"), field("first_touch"), field("first_placement"),
                                   field("status")};
    const std::string exp = std::get<std::string>(row.at("experiment"));
    if (exp == "inplace") f.insert(f.end(), {metric("first_GBps", 2), metric("later_GBps", 2), metric("placement")});
    if (exp == "evict") f.insert(f.end(), {metric("cold_GBps", 3), metric("warm_GBps", 3), metric("evicted_GBps", 3)});
    if (exp == "interleave")
      f.insert(f.end(), {metric("gpu_iter_us_n1", 1),
                         metric("gpu_iter_us_n" + std::to_string(std::get<int64_t>(row.at("max_iterations"))), 1,
                                "gpu_iter_us_nmax")});
    return f;
  }

 private:
  std::string gpu_name() const { return "gpu" + std::to_string(c_->gpu); }
  std::unique_ptr<Context> c_;  // refers to the topology, so made in plan()
  std::vector<UmCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_um() { return std::make_unique<UmBenchmark>(); }

}  // namespace mempath
