// `mempath pingpong`: compare-and-swap round trips on a one-byte flag between two agents
// (a CPU core, a GPU thread), with the flag in each memory (docs/cli.md).
// Agent a turns the flag 0 -> 1 and agent b 1 -> 0, each retrying its CAS until it
// succeeds: a round trip is the time between two successes of a.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "core/allocators.hpp"
#include "core/cycle_counter.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/pingpong_plan.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "cpu/latency.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/latency_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The flag's allocation: a page of its own, so nothing else shares its cache lines.
constexpr size_t kFlagAllocation = 4096;

struct Settings {
  uint64_t round_trips = 10000, warmup = 1000;
  double timeout_s = 10;
};

struct PingOutcome {
  std::string status = "ok", reason, placement;
  std::vector<double> rtt_ns;
  bool verified = false;
};

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return kNaN;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct Side {
  uint8_t from, to;
};
constexpr Side kSideA{0, 1}, kSideB{1, 0};

PingOutcome run(const Topology& topo, const PingPongCase& c, const Settings& s) {
  PingOutcome o;
  const uint64_t exchanges = s.warmup + s.round_trips + 1;
  auto buf = allocate(topo, c.alloc, c.mem, kFlagAllocation, 0);
  auto* flag = static_cast<uint8_t*>(buf->data());
  for (const Agent* x : {&c.a, &c.b})
    if (x->kind == PuKind::Gpu && buf->gpu() >= 0 && buf->gpu() != x->gpu && c.alloc == Alloc::Device)
      gpu::enable_peer_access(x->gpu, buf->gpu());

  uint64_t done_a = 0, done_b = 0;
  std::vector<double> stamps_ns;
  // GPU agents first: they spin until the CPU agents (or each other) answer.
  std::vector<std::pair<int, gpu::PingPongKernel*>> kernels;
  if (c.a.kind == PuKind::Gpu && c.b.kind == PuKind::Gpu && c.a.gpu == c.b.gpu) {
    kernels.push_back({0, gpu::start_pingpong(c.a.gpu, {{flag, kSideA.from, kSideA.to, exchanges, true},
                                                         {flag, kSideB.from, kSideB.to, exchanges, false}},
                                              s.timeout_s)});
  } else {
    if (c.a.kind == PuKind::Gpu)
      kernels.push_back({0, gpu::start_pingpong(c.a.gpu, {{flag, kSideA.from, kSideA.to, exchanges, true}}, s.timeout_s)});
    if (c.b.kind == PuKind::Gpu)
      kernels.push_back({1, gpu::start_pingpong(c.b.gpu, {{flag, kSideB.from, kSideB.to, exchanges, false}}, s.timeout_s)});
  }
  std::vector<int> cpus;
  std::vector<const Side*> cpu_sides;
  if (c.a.kind == PuKind::Cpu) cpus.push_back(c.a.cpu), cpu_sides.push_back(&kSideA);
  if (c.b.kind == PuKind::Cpu) cpus.push_back(c.b.cpu), cpu_sides.push_back(&kSideB);
  if (!cpus.empty()) {
    std::vector<uint64_t> ticks(c.a.kind == PuKind::Cpu ? exchanges : 0);
    run_on_threads(static_cast<int>(cpus.size()), cpus, -1, [&](int i, int) {
      const bool is_a = cpu_sides[i] == &kSideA;
      const double s0 = now_seconds();
      const uint64_t k0 = cycle_ticks();
      const uint64_t n = cpu::pingpong(flag, cpu_sides[i]->from, cpu_sides[i]->to, exchanges, s.timeout_s,
                                       is_a ? ticks.data() : nullptr);
      const uint64_t k1 = cycle_ticks();
      const double s1 = now_seconds();
      if (!is_a) {
        done_b = n;
        return;
      }
      done_a = n;
      const double ns_per_tick = k1 > k0 ? (s1 - s0) * 1e9 / static_cast<double>(k1 - k0) : 0;
      for (uint64_t k = 0; k < n; ++k) stamps_ns.push_back(static_cast<double>(ticks[k] - k0) * ns_per_tick);
    });
  }
  for (auto& [side, kernel] : kernels) {
    const gpu::PingPongOutcome r = gpu::finish_pingpong(kernel);
    if (r.successes.size() == 2) {
      done_a = r.successes[0], done_b = r.successes[1];
    } else {
      (side == 0 ? done_a : done_b) = r.successes[0];
    }
    if (side == 0) stamps_ns = r.stamps_ns;
  }
  uint8_t final_flag = 0xff;
  if (buf->gpu() >= 0 && c.alloc == Alloc::Device)
    final_flag = gpu::count_device_byte_mismatches(buf->gpu(), flag, 1, 0) == 0 ? 0 : 1;
  else
    final_flag = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
  o.placement = placement(*buf);
  o.verified = done_a == exchanges && done_b == exchanges && final_flag == 0;
  if (done_a < exchanges || done_b < exchanges) {
    o.status = "failed";
    o.reason = "timed out: a partner waited over " + std::to_string(s.timeout_s) + " s (" + c.a.name + " made " +
               std::to_string(done_a) + ", " + c.b.name + " made " + std::to_string(done_b) + " of " +
               std::to_string(exchanges) + " exchanges)";
    return o;
  }
  if (!o.verified) {
    o.status = "failed";
    o.reason = "the flag ended at " + std::to_string(final_flag) + ", not 0: an update was lost";
    return o;
  }
  for (uint64_t k = s.warmup; k + 1 < stamps_ns.size(); ++k) o.rtt_ns.push_back(stamps_ns[k + 1] - stamps_ns[k]);
  return o;
}

// --alloc's help: every allocator as kinds.def names them, ping-pong's defaults first.
std::string alloc_help() {
  std::vector<Alloc> every = pingpong_allocators();
  for (const Alloc a : all_allocs())
    if (std::find(every.begin(), every.end(), a) == every.end()) every.push_back(a);
  return alloc_list(every) + " (default: " + alloc_list(pingpong_allocators()) + ")";
}

class PingPongBenchmark : public Benchmark {
 public:
  PingPongBenchmark()
      : Benchmark({"pingpong",
                   "compare-and-swap round trips between processors, flag in each memory",
                   "Compare-and-swap round trips between processors, the flag in each memory (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override {
    return {{"pu", "LIST", "agents: cpuN (a core of NUMA node N), gpuN (one GPU thread) (default: all)"},
            {"mem", "LIST", "memories the flag is placed in: numaN, gpuN (default: all)"},
            {"alloc", "LIST", alloc_help()},
            {"round-trips", "N", "timed round trips per case (default 10000)"},
            {"warmup", "N", "untimed round trips first (default 1000)"},
            {"stall-timeout", "SECONDS", "longest wait for the partner before a case fails (default 10)"}};
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    topo_ = &topo;
    // Every timed round trip keeps a sample (8 bytes each side): bounded so it fits.
    s_.round_trips = static_cast<uint64_t>(opts.integer("round-trips", 10000, 1, 100000000));
    s_.warmup = static_cast<uint64_t>(opts.integer("warmup", 1000, 0, 100000000));
    s_.timeout_s = static_cast<double>(opts.integer("stall-timeout", 10, 1, 3600));
    const auto pus = opts.list("pu");
    for (const auto& p : pus)
      if (!plan_only && p.rfind("gpu", 0) == 0) require_cuda_build("agent " + p + " needs a CUDA build");
    cases_ = pingpong_cases(topo, pus, opts.list("mem"), opts.list("alloc"));
    if (cases_.empty()) throw UsageError("the filters select no pair and memory on this node");
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const auto& c = cases_[i];
    return {{"a", c.a.name},
            {"b", c.b.name},
            {"a_cpu", std::to_string(c.a.cpu)},
            {"b_cpu", std::to_string(c.b.cpu)},
            {"mem", c.mem},
            {"alloc", alloc_name(c.alloc)},
            {"via", c.via}};
  }
  std::string skip_reason(size_t i) const override { return cases_[i].skip_reason; }
  // Modelled: warm-up and timed round trips, each at the model's round-trip time; a CPU
  // and a GPU sharing a managed flag without ATS move its page by a fault each way.
  double expected_seconds(size_t i) const override {
    const PingPongCase& c = cases_[i];
    const GpuInfo* g = topo_->find_gpu(c.a.kind == PuKind::Gpu ? c.a.gpu : c.b.gpu);
    const bool bounce = c.alloc == Alloc::Managed && c.a.kind != c.b.kind && g && !g->pageable_access;
    return model::kCaseOverheadS +
           static_cast<double>(s_.warmup + s_.round_trips) * (bounce ? model::kManagedBounceS : model::kRoundTripS);
  }
  Outcome run(size_t i) override {
    PingOutcome o = mempath::run(*topo_, cases_[i], s_);
    return {o.status, o.reason, o};
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const auto& c = cases_[i];
    const auto* o = std::any_cast<PingOutcome>(&out.data);
    const std::vector<double> rtt = o ? o->rtt_ns : std::vector<double>{};
    std::vector<double> sorted = rtt;
    std::sort(sorted.begin(), sorted.end());
    double mean = kNaN;
    if (!sorted.empty()) {
      mean = 0;
      for (double v : sorted) mean += v / sorted.size();
    }
    CaseRows rows;
    for (size_t k = 0; k < rtt.size(); ++k)
      rows.samples.push_back({{"case_id", id}, {"index", static_cast<int64_t>(k)}, {"rtt_ns", rtt[k]}});
    rows.cases.push_back(
        {{"case_id", id}, {"a", c.a.name}, {"b", c.b.name}, {"a_cpu", static_cast<int64_t>(c.a.cpu)},
         {"b_cpu", static_cast<int64_t>(c.b.cpu)}, {"mem", c.mem}, {"alloc", std::string(alloc_name(c.alloc))},
         {"via", c.via}, {"flag_bytes", static_cast<int64_t>(1)}, {"round_trips", static_cast<int64_t>(rtt.size())},
         {"status", out.status}, {"reason", out.reason}, {"median_ns", percentile(sorted, 50)}, {"mean_ns", mean},
         {"min_ns", sorted.empty() ? kNaN : sorted.front()}, {"p05_ns", percentile(sorted, 5)},
         {"p95_ns", percentile(sorted, 95)}, {"p99_ns", percentile(sorted, 99)},
         {"max_ns", sorted.empty() ? kNaN : sorted.back()}, {"placement", o ? o->placement : ""},
         {"placed", placed_column(out.status, o && placed_as_named(*topo_, o->placement, c.mem, c.alloc))},
         {"verified", static_cast<int64_t>(o && o->verified)}});
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("a"), field("b"), field("a_cpu"), field("b_cpu"), field("mem"), field("alloc"), field("via"),
            field("placement"), field("placed"), field("status"), metric("median_ns", 1), metric("mean_ns", 1), metric("p99_ns", 1), metric("round_trips")};
  }

 private:
  const Topology* topo_ = nullptr;
  Settings s_;
  std::vector<PingPongCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_pingpong() { return std::make_unique<PingPongBenchmark>(); }

}  // namespace mempath
