// `mempath stream`: STREAM's Copy/Scale/Add/Triad on CPU cores by thread count, and
// BabelStream's Copy/Mul/Add/Triad/Dot on GPUs, over arrays from any allocator and
// memory (docs/cli.md).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/driver.hpp"
#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/kinds.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/stream_plan.hpp"
#include "core/units.hpp"
#include "cpu/stream.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"
#include "gpu/stream_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Repetitions kRepetitions = {10, 1};
constexpr double kDotTolerance = 1e-8;  // a sum of n products rounds; the elements do not

struct Measured {
  std::string status = "ok", reason, placement;
  std::vector<std::vector<double>> seconds;  // [kernel][rep]
  int threads = -1;
  bool verified = false;
};

Measured run(const Topology& topo, const StreamCase& sc, int warmup, int reps) {
  const BwCase& c = sc.bw;
  Measured o;
  o.threads = c.threads;
  const uint64_t n = c.size / sizeof(double);
  const uint64_t free = c.mem == kInterleave ? ~0ULL : free_bytes(c.mem);
  if (3 * c.size > free) {
    o.status = "skipped";
    o.reason = "three arrays of " + format_size(c.size) + " do not fit in the " + format_size(free) + " free on " + c.mem;
    return o;
  }
  // A case that runs has its allocator (a path without one is skipped).
  auto a = allocate(topo, *c.alloc, c.mem, c.size, 0);
  auto b = allocate(topo, *c.alloc, c.mem, c.size, 0);
  auto cc = allocate(topo, *c.alloc, c.mem, c.size, 0);
  auto* pa = static_cast<double*>(a->data());
  auto* pb = static_cast<double*>(b->data());
  auto* pc = static_cast<double*>(cc->data());
  const StreamValues want = stream_values_after(warmup + reps);
  std::string guard;
  if (c.pu_kind == PuKind::Cpu) {
    auto r = cpu::run_stream(c.cpus, pa, pb, pc, n, warmup, reps);
    o.seconds = r.seconds;
    o.verified = r.verified;
    if (!r.verified) o.reason = r.detail;
    for (const auto& k : o.seconds)
      if (guard.empty()) guard = cpu_timing_problem(summarize(k).median);
  } else {
    const int g = topo.find_pu(c.pu)->gpu;
    if (a->gpu() >= 0 && a->gpu() != g) gpu::enable_peer_access(g, a->gpu());
    const StreamValues start;
    const double s3[3] = {start.a, start.b, start.c}, w3[3] = {want.a, want.b, want.c};
    auto r = gpu::run_stream(g, pa, pb, pc, n, warmup, reps, kStreamScalar, s3, w3);
    o.seconds = r.seconds;
    o.threads = r.threads;
    const double dot_want = want.a * want.b * static_cast<double>(n);
    const bool dot_ok = std::fabs(r.dot - dot_want) <= kDotTolerance * std::fabs(dot_want);
    o.verified = r.mismatches == 0 && dot_ok;
    if (r.mismatches) o.reason = std::to_string(r.mismatches) + " array elements differ from BabelStream's recurrence";
    else if (!dot_ok) o.reason = "dot product " + std::to_string(r.dot) + " differs from " + std::to_string(dot_want);
    for (const auto& k : o.seconds)
      if (guard.empty()) guard = gpu_timing_problem(summarize(k).median, r.empty_launch_s);
  }
  if (!o.verified) o.status = "failed";
  else if (!guard.empty()) o.status = "failed", o.reason = guard;
  o.placement = placement(*a);
  return o;
}

class StreamBenchmark : public Benchmark {
 public:
  StreamBenchmark()
      : Benchmark({"stream",
                   "STREAM (CPU, by thread count) and BabelStream (GPU) kernels under placement",
                   "STREAM (CPU) and BabelStream (GPU) kernels under placement (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override {
    std::vector<OptionSpec> specs = {
        {"pu", "PU", "cpuN, cpus or gpuN (default: the first CPU node); with --all a filter"},
        pu_kind_filter_option(),
        {"mem", "MEM", "memory of the three arrays: numaN, gpuN or interleave (pages over "
                       "every host NUMA node; read by cpus); with --all a filter"},
        {"alloc", "ALLOC", kind_list(kAllocTable) + " (default: the path's)"},
        {"threads", "N|sweep|all", "CPU threads (default sweep: 1, 2, 4 .. all cores, best reported)"}};
    append(specs, cache_sized_options("array"));
    specs.insert(specs.end(),
                 {{"reps", "N", "timed repetitions of the kernel set (default " + std::to_string(kRepetitions.reps) + ")"},
                  {"warmup", "N", "untimed repetitions first (default " + std::to_string(kRepetitions.warmup) + ")"},
                  {"all", "", "every processor x memory x allocator of the node; the options above filter"}});
    return specs;
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    StreamRequest req;
    req.all = opts.flag("all");
    if (auto v = opts.get("size")) {
      req.settings.size = parse_size(*v);
      if (req.settings.size < 4096 || req.settings.size % 64)
        throw UsageError("--size " + *v + " is not a multiple of 64 bytes of at least 4KiB; valid: e.g. 1GiB");
    }
    req.settings.in_cache = opts.flag("in-cache");
    const Repetitions r = read_repetitions(opts, kRepetitions);
    reps_ = r.reps, warmup_ = r.warmup;
    const std::string threads = opts.get_or("threads", "");
    if (req.all) {
      req.filters.pus = opts.list("pu");
      req.filters.pu_kinds = opts.list("pu-kind");
      req.filters.mems = opts.list("mem");
      req.filters.allocs = opts.list("alloc");
      if (!threads.empty() && threads != "sweep" && threads != "all")
        throw UsageError("invalid --threads '" + threads + "' with --all; valid: sweep (default) or all");
      req.filters.thread_sweep = threads != "all";
    } else {
      if (opts.has("pu-kind")) throw UsageError("--pu-kind filters --all; for one case use --pu");
      req.pu = opts.get_or("pu", ""), req.mem = opts.get_or("mem", ""), req.alloc = opts.get_or("alloc", "");
      req.threads = threads;
      if (!plan_only && req.pu.rfind("gpu", 0) == 0) require_cuda_build("--pu " + req.pu + " needs a CUDA build");
    }
    cases_ = stream_cases(topo, req);
    if (cases_.empty()) throw UsageError("the filters select no processor x memory on this node");
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const BwCase& c = cases_[i].bw;
    return {{"pu", c.pu}, {"mem", c.mem}, {"alloc", alloc_name(c.alloc)}, {"via", c.via},
            {"threads", std::to_string(c.threads)}, {"size", std::to_string(c.size)}};
  }
  std::string skip_reason(size_t i) const override { return cases_[i].bw.skip_reason; }
  // Modelled: three arrays made by their allocator (managed host pages a GPU reads move to
  // it first) and checked, each kernel's arrays per repetition at the path's rate (a CPU's
  // limited by its threads).
  double expected_seconds(size_t i) const override {
    const BwCase& c = cases_[i].bw;
    const double arrays_bytes = 3 * static_cast<double>(c.size);
    const double gbps = model::threads_gbps(rates_, c.pu_kind, c.via, c.threads);
    int arrays = 0;
    for (const auto& k : stream_kernels(c.pu_kind)) arrays += k.arrays;
    // A path no allocator serves is skipped; its arrays count as pageable memory.
    const Alloc alloc = c.alloc.value_or(Alloc::System);
    const double made = model::setup_s(arrays_bytes, alloc) + model::migration_s(arrays_bytes, c.pu_kind, alloc, c.mem);
    return model::kCaseOverheadS + made + model::verify_s(arrays_bytes, alloc) +
           model::seconds((warmup_ + reps_) * arrays * static_cast<double>(c.size), gbps);
  }
  Outcome run(size_t i) override {
    Measured m = mempath::run(*topo_, cases_[i], warmup_, reps_);
    return {m.status, m.reason, m};
  }

  // One cases row per kernel.
  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const StreamCase& sc = cases_[i];
    const BwCase& c = sc.bw;
    const auto* m = std::any_cast<Measured>(&out.data);
    const bool ok = out.status == "ok";
    const auto& kernels = stream_kernels(c.pu_kind);
    CaseRows rows;
    for (size_t k = 0; k < kernels.size(); ++k, ++id) {
      const uint64_t bytes = static_cast<uint64_t>(kernels[k].arrays) * c.size;
      std::vector<double> gbps;
      if (ok && m && k < m->seconds.size())
        for (size_t r = 0; r < m->seconds[k].size(); ++r) {
          gbps.push_back(static_cast<double>(bytes) / m->seconds[k][r] / 1e9);
          rows.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", m->seconds[k][r]},
                                  {"bandwidth_GBps", gbps.back()}});
        }
      const Summary sum = ok ? summarize(gbps) : Summary{};
      rows.cases.push_back({{"case_id", id}, {"pu", c.pu}, {"pu_kind", std::string(pu_kind_name(c.pu_kind))},
                            {"mem", c.mem}, {"alloc", std::string(alloc_name(c.alloc))}, {"via", c.via},
                            {"threads", static_cast<int64_t>(m ? m->threads : c.threads)}, {"kernel", kernels[k].name},
                            {"elements", static_cast<int64_t>(c.size / sizeof(double))},
                            {"array_bytes", static_cast<int64_t>(c.size)}, {"bytes", static_cast<int64_t>(bytes)},
                            {"status", out.status}, {"reason", out.reason},
                            {"reps", static_cast<int64_t>(ok ? gbps.size() : 0)}, {"best_GBps", sum.max},
                            {"median_GBps", sum.median}, {"min_GBps", sum.min}, {"max_GBps", sum.max},
                            {"verified", static_cast<int64_t>(m && m->verified)},
                            {"placement", m ? m->placement : ""},
                            {"placed", placed_column(out.status, ok && m && placed_as_named(*topo_, m->placement, c.mem,
                                                                                             *c.alloc))},
                            {"sweep", static_cast<int64_t>(sc.sweep >= 0)},
                            {"best_threads", static_cast<int64_t>(-1)},
                            // 0 until the sweep's last thread count has run: a run ended by
                            // --timeout or a signal leaves it 0, so no reader takes the
                            // thread counts it reached for the sweep's best.
                            {"sweep_complete", static_cast<int64_t>(sc.sweep >= 0 ? 0 : -1)}});
    }
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row& row) const override {
    std::vector<SummaryField> fields = {field("pu"), field("mem"), field("alloc"), field("via"), field("threads"),
                                        field("kernel"), field("size", "array_bytes"), field("placement"),
                                        field("placed"), field("status")};
    if (std::get<int64_t>(row.at("sweep")) == 1) fields.push_back(field("sweep_complete"));
    fields.push_back(metric("best_GBps", 2));
    fields.push_back(metric("median_GBps", 2));
    return fields;
  }

  // A thread sweep's rows learn its best thread count (the one whose triad, STREAM's
  // figure, was fastest) when the sweep ends.
  std::string group(size_t i) const override {
    return cases_[i].sweep >= 0 ? "sweep" + std::to_string(cases_[i].sweep) : "case" + std::to_string(i);
  }
  bool end_group(Table& table, const std::vector<size_t>& rows) override {
    if (std::get<int64_t>(table_row(table, rows.front()).at("sweep")) == 0) return false;
    int64_t best = -1;
    double best_bw = -1;
    for (size_t r : rows) {
      const Row row = table_row(table, r);
      const double triad = std::get<double>(row.at("best_GBps"));
      if (is_triad(row) && !std::isnan(triad) && triad > best_bw) best_bw = triad, best = std::get<int64_t>(row.at("threads"));
    }
    for (size_t r : rows) table.set(r, "best_threads", best), table.set(r, "sweep_complete", int64_t{1});
    return true;
  }

 private:
  static bool is_triad(const Row& row) {
    for (const auto& k : stream_kernels(pu_kind(std::get<std::string>(row.at("pu_kind")))))
      if (k.kernel == StreamKernel::Triad) return k.name == std::get<std::string>(row.at("kernel"));
    return false;
  }
  const Topology* topo_ = nullptr;
  model::Rates rates_;
  int reps_ = 10, warmup_ = 1;
  std::vector<StreamCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_stream() { return std::make_unique<StreamBenchmark>(); }

}  // namespace mempath
