// `mempath atomics`: atomic fetch-and-add throughput of each GPU on a counter array in
// each memory, through each allocator (docs/cli.md). The count
// every counter ends with is the data check.
#include <cstdlib>
#include <cstring>
#include <limits>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "core/duration_model.hpp"
#include "core/allocators.hpp"
#include "core/atomics_plan.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "gpu/atomics_api.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// 2^20 counters are 128 MiB of lines: far more than any GPU has warps.
constexpr long long kMaxCounters = 1LL << 20;

struct Settings {
  gpu::AtomicScope scope = gpu::AtomicScope::Device;
  std::string scope_name = "device";
  uint64_t counters = 0;  // 0: one per warp
  uint64_t ops = 64;
  int warmup = 1, reps = 10;
};

struct Measured {
  std::vector<double> seconds;
  uint64_t counters = 0, warps = 0;
  int host_native_atomics = -1;
  bool verified = false;
  std::string placement;
};

constexpr Repetitions kRepetitions = {10, 1};

// Test-only (tests/python/test_atomics.py, docs/cli.md): MEMPATH_TEST_EXTRA_ATOMIC=1 adds
// one increment after the timed launches, to prove that the count check can fail.
bool inject_fault() {
  const char* v = std::getenv("MEMPATH_TEST_EXTRA_ATOMIC");
  return v && std::strcmp(v, "1") == 0;
}

class AtomicsBenchmark : public Benchmark {
 public:
  AtomicsBenchmark()
      : Benchmark({"atomics",
                   "atomic fetch-and-add throughput of GPUs on counters in each memory",
                   "Atomic fetch-and-add throughput of each GPU on counters in each memory (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override {
    std::vector<OptionSpec> specs = {
        {"pu", "LIST", "GPUs: gpuN (default: all)"},
        {"mem", "LIST", "memories of the counters: numaN, gpuN (default: all)"},
        {"alloc", "LIST", kind_list(kAllocTable) + " (default: the path's)"},
        {"all", "", "every allocator of each path, not only its default one"},
        {"scope", "SCOPE", "device (atomicAdd, default) or system (atomicAdd_system)"},
        {"counters", "N", "counters, each on its own 128-byte line (default: one per warp; "
                          "1: every thread on one counter, contention)"},
        {"ops", "N", "atomic adds per thread per launch (default 64)"}};
    append(specs, repetition_options(kRepetitions, "launches"));
    return specs;
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    topo_ = &topo;
    s_.scope_name = opts.choice("scope", {"device", "system"}, "device");
    s_.scope = s_.scope_name == "system" ? gpu::AtomicScope::System : gpu::AtomicScope::Device;
    s_.counters = static_cast<uint64_t>(opts.integer("counters", 0, 1, kMaxCounters));
    s_.ops = static_cast<uint64_t>(opts.integer("ops", 64, 1, 1LL << 20));
    const Repetitions r = read_repetitions(opts, kRepetitions);
    s_.reps = r.reps, s_.warmup = r.warmup;
    if (!plan_only) require_cuda_build("atomics runs on GPUs and needs a CUDA build");
    cases_ = atomics_cases(topo, {opts.list("pu"), opts.list("mem"), opts.list("alloc"), opts.flag("all")});
    if (cases_.empty())
      throw UsageError(topo.gpus.empty() ? no_gpu_text("atomics") : "the filters select no GPU x memory on this node");
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const auto& c = cases_[i];
    // counters "-": one per warp, counted at launch.
    return {{"pu", c.pu},
            {"mem", c.mem},
            {"alloc", alloc_name(c.alloc)},
            {"via", c.via},
            {"scope", s_.scope_name},
            {"counters", s_.counters ? std::to_string(s_.counters) : ""},
            {"ops", std::to_string(s_.ops)}};
  }
  std::string skip_reason(size_t i) const override { return cases_[i].skip_reason; }
  // Modelled: every launch a large GPU's threads x --ops fetch-and-adds at the rate of
  // where the counters are: its own memory, another GPU's (NVLink), host memory.
  double expected_seconds(size_t i) const override {
    const std::string& via = cases_[i].via;
    const double rate = via == "local"                         ? model::kAtomicsLocalOpsPerS
                        : via.find("nvlink") == 0 && via.find('+') == std::string::npos ? model::kAtomicsPeerOpsPerS
                                                               : model::kAtomicsHostOpsPerS;
    const double launch = model::kAtomicsThreads * static_cast<double>(s_.ops) / rate;
    return model::kCaseOverheadS + (s_.warmup + s_.reps) * launch;
  }

  Outcome run(size_t i) override {
    const AtomicsCase& c = cases_[i];
    Measured m;
    m.warps = gpu::atomics_warps(c.gpu);
    m.counters = s_.counters ? s_.counters : m.warps;
    auto buf = allocate(*topo_, c.alloc, c.mem, m.counters * gpu::kCounterStride, 0);
    if (buf->gpu() >= 0 && buf->gpu() != c.gpu) gpu::enable_peer_access(c.gpu, buf->gpu());
    if (c.alloc == Alloc::Managed && buf->gpu() != c.gpu)
      gpu::keep_managed_at(buf->data(), buf->bytes(), buf->gpu(), c.gpu);
    const gpu::AtomicsRun r =
        gpu::run_atomics(c.gpu, buf->data(), m.counters, s_.ops, s_.scope, s_.warmup, s_.reps, inject_fault());
    m.seconds = r.seconds;
    m.host_native_atomics = r.host_native_atomics;
    m.placement = placement(*buf);
    uint64_t wrong = 0;
    for (uint64_t k = 0; k < r.counts.size(); ++k)
      wrong += r.counts[k] != atomics_expected(k, m.counters, r.warps, s_.ops, static_cast<uint64_t>(s_.reps));
    m.verified = wrong == 0 && r.warps == m.warps;
    Outcome o;
    if (!m.verified) {
      o.status = "failed";
      o.reason = std::to_string(wrong) + " of " + std::to_string(m.counters) +
                 " counters differ from the increments they received: an atomic was lost or doubled";
    } else if (std::string guard = gpu_timing_problem(summarize(m.seconds).median, r.empty_launch_s); !guard.empty()) {
      o.status = "failed", o.reason = guard + " (raise --ops)";
    }
    o.data = m;
    return o;
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const AtomicsCase& c = cases_[i];
    const auto* m = std::any_cast<Measured>(&out.data);
    const uint64_t threads = m ? m->warps * 32 : 0;
    const uint64_t ops = threads * s_.ops;
    const bool ok = out.status == "ok";
    CaseRows rows;
    std::vector<double> mops;
    if (ok && m)
      for (size_t r = 0; r < m->seconds.size(); ++r) {
        mops.push_back(static_cast<double>(ops) / m->seconds[r] / 1e6);
        rows.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", m->seconds[r]},
                                {"Mops", mops.back()}});
      }
    const Summary sum = ok ? summarize(mops) : Summary{};
    const double median_s = ok && m ? summarize(m->seconds).median : kNaN;
    rows.cases.push_back({{"case_id", id}, {"pu", c.pu}, {"mem", c.mem}, {"alloc", std::string(alloc_name(c.alloc))}, {"via", c.via},
                          {"scope", s_.scope_name}, {"counters", static_cast<int64_t>(m ? m->counters : s_.counters)},
                          {"threads", static_cast<int64_t>(threads)}, {"ops_per_thread", static_cast<int64_t>(s_.ops)},
                          {"ops", static_cast<int64_t>(ops)}, {"status", out.status}, {"reason", out.reason},
                          {"reps", static_cast<int64_t>(mops.size())}, {"median_Mops", sum.median},
                          {"min_Mops", sum.min}, {"max_Mops", sum.max}, {"median_time_s", median_s},
                          {"verified", static_cast<int64_t>(m && m->verified)},
                          {"host_native_atomics", static_cast<int64_t>(m ? m->host_native_atomics : -1)},
                          {"placement", m ? m->placement : ""}});
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("pu"), field("mem"), field("alloc"), field("via"), field("scope"), field("counters"), field("status"),
            metric("median_Mops", 2), metric("host_native_atomics")};
  }

 private:
  const Topology* topo_ = nullptr;
  Settings s_;
  std::vector<AtomicsCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_atomics() { return std::make_unique<AtomicsBenchmark>(); }

}  // namespace mempath
