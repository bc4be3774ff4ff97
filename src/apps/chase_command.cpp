// `mempath chase`: dependent-load latency of one CPU thread or one GPU thread over a
// buffer of each memory and allocator, swept over sizes (docs/cli.md); and `mempath tlb`,
// its preset of one load a page (docs/benchmarks.md, "A preset of a benchmark").
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <utility>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/plan_print.hpp"
#include "core/allocators.hpp"
#include "core/chase_chain.hpp"
#include "core/chase_plan.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/guards.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "cpu/latency.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/latency_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Below this an in-kernel %globaltimer interval is too coarse to trust.
constexpr double kMinGpuChaseSeconds = 100e-6;

struct Settings {
  std::vector<uint64_t> sizes;  // empty: the sweep
  uint64_t min_size = 4096, max_size = 0;
  std::vector<std::string> patterns;
  uint64_t line = 64, locality = 0, accesses = 0, seed = 42;
  bool huge_pages = false;
  int reps = 3;
};

struct Walk {
  std::string status = "ok", reason, placement;
  std::vector<double> seconds, cycles;
  uint64_t accesses = 0;
  double huge_fraction = kNaN;
  bool verified = false;
};

// Default dependent loads per repetition: ~0.1-0.4 s at memory latency on each kind.
uint64_t default_accesses(const ChaseCase& c) { return c.pu_kind == PuKind::Gpu ? 1ULL << 18 : 1ULL << 20; }

Walk run(const Topology& topo, const ChaseCase& c, uint64_t size, bool sequential, const Settings& s) {
  Walk o;
  o.accesses = s.accesses ? s.accesses : default_accesses(c);
  const uint64_t free = free_bytes(c.mem);
  if (size > free) {
    o.status = "skipped";
    o.reason = format_size(size) + " does not fit in the " + format_size(free) + " free on " + c.mem;
    return o;
  }
  const ChainSpec spec{size, s.line, s.locality, sequential, s.seed};
  const std::vector<uint32_t> order = chain_order(spec);
  auto buf = allocate(topo, *c.alloc, c.mem, size, 0, s.huge_pages);  // a case that runs has one
  const uint64_t base = reinterpret_cast<uintptr_t>(buf->data());
  const uint64_t start = chain_address_after(base, spec, order, 0);
  if (buf->gpu() >= 0) {  // GPU-resident: the CPU writes an image, the GPU copies it in
    std::vector<char> image(size);
    write_chain(image.data(), base, spec, order);
    gpu::upload(buf->gpu(), buf->data(), image.data(), size);
  } else {
    write_chain(buf->data(), base, spec, order);
  }
  // Warm-up: one pass over the chain (up to one repetition's worth) fills caches and TLBs.
  const uint64_t warm = std::min<uint64_t>(order.size(), o.accesses);
  uint64_t steps = warm;
  uint64_t end = 0;
  bool ends_ok = true;
  auto check_end = [&] { ends_ok = ends_ok && end == chain_address_after(base, spec, order, steps); };
  if (c.pu_kind == PuKind::Cpu) {
    run_on_threads(1, {c.cpu}, -1, [&](int, int) {
      end = reinterpret_cast<uintptr_t>(cpu::chase(reinterpret_cast<const void*>(start), warm));
      check_end();
      for (int r = 0; r < s.reps; ++r) {
        const double t0 = now_seconds();
        end = reinterpret_cast<uintptr_t>(cpu::chase(reinterpret_cast<const void*>(end), o.accesses));
        o.seconds.push_back(now_seconds() - t0);
        steps += o.accesses;
        check_end();
      }
    });
  } else {
    const int g = topo.find_pu(c.pu)->gpu;
    if (buf->gpu() >= 0 && buf->gpu() != g && c.alloc == Alloc::Device) gpu::enable_peer_access(g, buf->gpu());
    end = gpu::chase(g, start, warm).end;
    check_end();
    for (int r = 0; r < s.reps; ++r) {
      const gpu::ChaseRun run = gpu::chase(g, end, o.accesses);
      end = run.end;
      steps += o.accesses;
      check_end();
      if (run.seconds > run.event_s) {
        o.status = "failed";
        o.reason = "in-kernel timer (" + std::to_string(run.seconds) + " s) exceeds the launch's events (" +
                   std::to_string(run.event_s) + " s)";
      }
      o.seconds.push_back(run.seconds);
      o.cycles.push_back(run.cycles);
    }
  }
  o.verified = ends_ok;
  o.placement = placement(*buf);
  o.huge_fraction = huge_page_fraction(*buf);
  const double median = summarize(o.seconds).median;
  std::string guard = c.pu_kind == PuKind::Cpu ? cpu_timing_problem(median) : "";
  if (c.pu_kind == PuKind::Gpu && median < kMinGpuChaseSeconds)
    guard = "a repetition took " + std::to_string(median * 1e6) + " us, too short for %globaltimer; raise --accesses";
  if (!ends_ok) o.status = "failed", o.reason = "the walk did not end on the element the chain predicts";
  else if (!guard.empty() && o.status == "ok") o.status = "failed", o.reason = guard;
  return o;
}

std::vector<double> per_access(const std::vector<double>& totals, uint64_t accesses, double scale) {
  std::vector<double> out;
  for (double t : totals) out.push_back(t / accesses * scale);
  return out;
}

std::vector<uint64_t> parse_sizes(const Options& opts) {
  if (opts.get_or("size", "sweep") == "sweep") return {};
  return opts.sizes("size");
}

uint64_t parse_bytes_option(const Options& opts, const std::string& name, uint64_t fallback) {
  return opts.has(name) ? parse_size(*opts.get(name)) : fallback;
}

// What a family of the chase fixes: its name, words and family, and the defaults of the
// chain's spacing and of the sweep's start, said in its help.
struct ChasePreset {
  About about;
  uint64_t line, min_size;
  std::string line_default, min_size_default;
};

ChasePreset chase_preset() {
  return {{"chase", "pointer-chase latency of one CPU or GPU thread over each memory, by size",
           "Pointer-chase latency of one CPU or GPU thread over each memory (docs/cli.md)."},
          64, 4096, "64", "4KiB"};
}

// One load a page: a 4 KiB line puts each element on its own page, so past the TLBs' reach
// every load misses them, while the lines loaded (64 B a page) stay in the caches far longer.
ChasePreset tlb_preset() {
  return {{"tlb", "TLB-miss latency: a pointer chase of one load a page, by size",
           "TLB-miss latency of one CPU or GPU thread: a pointer chase of one load a 4 KiB page (docs/cli.md)."},
          4096, 64 * 1024, "4096: one load a page", "64KiB: 16 pages"};
}

class ChaseBenchmark : public Benchmark {
 public:
  explicit ChaseBenchmark(ChasePreset preset) : Benchmark(preset.about), preset_(std::move(preset)) {}
  std::vector<OptionSpec> options() const override {
    return {{"pu", "PU", "cpuN (one thread on a core of NUMA node N) or gpuN (one GPU thread); "
                             "with --all a comma list filter"},
                {"cpu", "N", "logical CPU the chasing thread is pinned to (default: the PU's first core)"},
                {"mem", "MEM", "memory chased: numaN or gpuN (default: the PU's own); --all: a filter"},
                {"alloc", "ALLOC", kind_list(kAllocTable) + " (default: the path's); "
                                   "with --all a comma list, or all"},
                {"size", "SIZE|sweep", "buffer size(s), comma list, or sweep (default): powers of two "
                                       "from --min-size to --max-size"},
                {"min-size", "SIZE", "sweep from the first power of two >= SIZE (default " + preset_.min_size_default + ")"},
                {"max-size", "SIZE", "sweep up to the last power of two <= SIZE "
                                     "(default: max(1GiB, 4 x the largest cache))"},
                {"pattern", "LIST", "random (default), sequential, or both: random,sequential"},
                {"line", "BYTES", "bytes between chain elements (default " + preset_.line_default + ")"},
                {"locality", "BYTES", "keep the random order within groups of this size (multichase -T; "
                                      "default: the whole buffer)"},
                {"huge-pages", "", "ask for transparent huge pages (system and numa memory)"},
                {"accesses", "N", "timed dependent loads per repetition (default CPU 2^21, GPU 2^18)"},
                {"reps", "N", "timed repetitions (default 3)"},
                {"seed", "N", "seed of the random chain (default 42)"},
                {"all", "", "every processor x memory of the node (default allocator; --alloc all: every one)"}};
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    topo_ = &topo;
    Settings& s = s_;
    s.sizes = parse_sizes(opts);
    s.min_size = parse_bytes_option(opts, "min-size", preset_.min_size);
    s.max_size = parse_bytes_option(opts, "max-size", 0);
    s.line = parse_bytes_option(opts, "line", preset_.line);
    s.locality = parse_bytes_option(opts, "locality", 0);
    s.accesses = static_cast<uint64_t>(opts.integer("accesses", 0, 1, 1000000000));
    s.reps = static_cast<int>(opts.integer("reps", 3, 1, kMaxReps));
    s.seed = static_cast<uint64_t>(opts.integer("seed", 42, 0, std::numeric_limits<long long>::max()));
    s.huge_pages = opts.flag("huge-pages");
    s.patterns = opts.has("pattern") ? opts.list("pattern") : split_list("random");
    for (const auto& p : s.patterns)
      if (p != "random" && p != "sequential")
        throw UsageError("invalid --pattern '" + p + "'; valid: random, sequential");
    if (!s.sizes.empty() && (opts.has("min-size") || opts.has("max-size")))
      throw UsageError("--min-size and --max-size bound the sweep; they do not combine with --size SIZE");
    check_chain({std::max<uint64_t>(s.line, s.min_size - s.min_size % s.line), s.line, s.locality, false, 0});
    if (s.max_size && s.max_size < s.min_size)
      throw UsageError("--max-size " + format_size(s.max_size) + " is below --min-size " + format_size(s.min_size));

    for (const auto& pu : opts.list("pu"))
      if (!plan_only && pu.rfind("gpu", 0) == 0) require_cuda_build("--pu " + pu + " needs a CUDA build");
    if (opts.flag("all")) {
      if (opts.has("cpu")) throw UsageError("--cpu picks the core of one case; --all uses each node's first core");
      bases_ = all_chase_cases(topo, opts.list("pu"), opts.list("mem"), opts.list("alloc"));
      if (bases_.empty()) throw UsageError("the filters select no processor x memory on this node");
    } else {
      const int cpu = static_cast<int>(opts.integer("cpu", -1, 0));
      bases_.push_back(make_chase_case(topo, opts.get_or("pu", ""), cpu, opts.get_or("mem", ""), opts.get_or("alloc", "")));
    }
    // Bad sizes are bad input before anything runs: each must hold a line and fit in its memory.
    for (const auto& c : bases_)
      for (uint64_t size : s.sizes) {
        const Memory* m = topo.find_mem(c.mem);
        if (m && m->bytes > 0 && size > static_cast<uint64_t>(m->bytes))
          throw UsageError("--size " + format_size(size) + " is larger than " + c.mem + " (" +
                           format_size(m->bytes) + "); valid: up to " + format_size(m->bytes));
        check_chain({size, s.line, s.locality, false, 0});
      }
    for (size_t b = 0; b < bases_.size(); ++b) {
      const ChaseCase& c = bases_[b];
      if (plan_only) {
        // The snapshot's caches bound each sweep, as the live node's do: the model needs its sizes.
        model_caches_.push_back(chase_caches(topo, c, *opts.get("from")));
      } else {
        const auto caches = chase_caches(topo, c, "/");
        model_caches_.push_back(caches);
        const std::string cache_key = c.pu + ":" + std::to_string(c.cpu);
        if (std::find(cache_keys_.begin(), cache_keys_.end(), cache_key) == cache_keys_.end()) {
          cache_keys_.push_back(cache_key);
          caches_.insert(caches_.end(), caches.begin(), caches.end());
        }
      }
      // --from without --size or --max-size: one item per pattern, its whole sweep (size 0).
      const bool whole_sweep = plan_only && s.sizes.empty() && !s.max_size;
      const std::vector<uint64_t> sizes = whole_sweep ? std::vector<uint64_t>{} : sizes_of(b);
      for (const auto& pattern : s.patterns) {
        if (whole_sweep) items_.push_back({b, pattern, 0, s.locality});
        for (uint64_t size : sizes)
          items_.push_back({b, pattern, size, s.locality && s.locality < size ? s.locality : size});
      }
    }
  }
  size_t cases() const override { return items_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const Item& it = items_[i];
    const ChaseCase& c = bases_[it.base];
    // locality "-": the whole buffer (no TLB grouping) of a sweep whose sizes are not known.
    return {{"pu", c.pu},
            {"cpu", std::to_string(c.cpu)},
            {"mem", c.mem},
            {"alloc", alloc_name(c.alloc)},
            {"via", c.via},
            {"pattern", it.pattern},
            {"size", it.size ? std::to_string(it.size) : "sweep"},
            {"line", std::to_string(s_.line)},
            {"locality", it.locality ? std::to_string(it.locality) : ""},
            {"huge", s_.huge_pages ? "1" : "0"}};
  }
  std::string skip_reason(size_t i) const override { return bases_[items_[i].base].skip_reason; }
  // Modelled, per size (--from: an item is its whole sweep): the chain built (device
  // memory: as an image in pageable memory, then copied in), the buffer made, a warm-up
  // pass and the timed loads, each a cache hit while the buffer fits the largest cache,
  // else a miss: a CPU's, a GPU's to its own HBM or to another memory.
  double expected_seconds(size_t i) const override {
    const Item& it = items_[i];
    const ChaseCase& c = bases_[it.base];
    uint64_t largest = 0;
    for (const auto& k : model_caches_[it.base]) largest = std::max(largest, k.bytes);
    const double accesses = static_cast<double>(s_.accesses ? s_.accesses : default_accesses(c));
    // A path no allocator serves is skipped; its buffer counts as pageable memory.
    const Alloc alloc = c.alloc.value_or(Alloc::System);
    const double miss = c.pu_kind != PuKind::Gpu ? model::kCpuMemoryLoadS
                        : c.via == "local" ? model::kGpuLocalLoadS : model::kGpuRemoteLoadS;
    double total = 0;
    for (uint64_t size : it.size ? std::vector<uint64_t>{it.size} : sizes_of(it.base)) {
      const double bytes = static_cast<double>(size), elements = static_cast<double>(size / s_.line);
      const double load = size <= largest ? model::kCacheLoadS : miss;
      const double image = alloc == Alloc::Device ? model::setup_s(bytes, Alloc::System) + model::seconds(bytes, model::kPageableCopyGBps) : 0;
      total += model::kCaseOverheadS + model::setup_s(bytes, alloc) + image + elements * model::kChainElementS +
               (std::min(elements, accesses) + s_.reps * accesses) * load;
    }
    return total;
  }

  void begin(ResultFile& file) override {
    Table& table = file.table(family() + "/caches", columns_of(family() + "/caches"));
    for (const auto& k : caches_)
      table.append({{"pu", k.pu}, {"level", k.level}, {"bytes", static_cast<int64_t>(k.bytes)}, {"source", k.source}});
  }
  Outcome run(size_t i) override {
    const Item& it = items_[i];
    Walk w = mempath::run(*topo_, bases_[it.base], it.size, it.pattern == "sequential", s_);
    return {w.status, w.reason, w};
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const Item& it = items_[i];
    const ChaseCase& c = bases_[it.base];
    const Walk o = out.data.has_value() ? std::any_cast<Walk>(out.data) : Walk{};
    const auto ns = per_access(o.seconds, o.accesses, 1e9);
    const auto cycles = per_access(o.cycles, o.accesses, 1.0);
    const bool ok = out.status == "ok";
    const Summary ns_sum = ok ? summarize(ns) : Summary{};
    const Summary cycle_sum = ok ? summarize(cycles) : Summary{};
    Row common = {{"case_id", id}, {"pu", c.pu}, {"cpu", static_cast<int64_t>(c.cpu)}, {"mem", c.mem},
                  {"alloc", std::string(alloc_name(c.alloc))}, {"pattern", it.pattern}, {"size_bytes", static_cast<int64_t>(it.size)},
                  {"line_bytes", static_cast<int64_t>(s_.line)}, {"locality_bytes", static_cast<int64_t>(it.locality)},
                  {"huge_pages", static_cast<int64_t>(s_.huge_pages)}, {"accesses", static_cast<int64_t>(o.accesses)}};
    CaseRows rows;
    if (ok)
      for (size_t r = 0; r < ns.size(); ++r) {
        Row row = common;
        row["rep"] = static_cast<int64_t>(r);
        row["time_s"] = o.seconds[r];
        row["ns_per_access"] = ns[r];
        row["cycles_per_access"] = r < cycles.size() ? cycles[r] : kNaN;
        rows.samples.push_back(row);
      }
    Row row = common;
    row.insert({{"via", c.via}, {"status", out.status}, {"reason", out.reason},
                {"reps", static_cast<int64_t>(ok ? ns.size() : 0)}, {"median_ns", ns_sum.median},
                {"min_ns", ns_sum.min}, {"median_cycles", cycle_sum.median},
                {"huge_page_fraction", o.huge_fraction}, {"placement", o.placement},
                {"placed", placed_column(out.status, ok && placed_as_named(*topo_, o.placement, c.mem, *c.alloc))},
                {"verified", static_cast<int64_t>(o.verified)}});
    rows.cases.push_back(row);
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row& row) const override {
    std::vector<SummaryField> f = {field("pu"), field("cpu"), field("mem"), field("alloc"), field("via"), field("pattern"),
                                   field("size", "size_bytes"), field("line", "line_bytes"),
                                   field("locality", "locality_bytes"), field("huge", "huge_pages"), field("placement"),
                                   field("placed"), field("status"),
                                   metric("median_ns", 2), metric("min_ns", 2)};
    // CPU chases count no cycles.
    if (!std::isnan(std::get<double>(row.at("median_cycles")))) f.push_back(metric("median_cycles", 1));
    return f;
  }

 private:
  struct Item {
    size_t base;  // into bases_
    std::string pattern;
    uint64_t size, locality;
  };
  ChasePreset preset_;
  const Topology* topo_ = nullptr;
  Settings s_;
  std::vector<ChaseCase> bases_;
  std::vector<Item> items_;
  std::vector<std::string> cache_keys_;
  std::vector<std::vector<CacheInfo>> model_caches_;  // per base: its sweep's bound
  // The sizes base b runs: --size's, or its sweep up to the largest cache's bound.
  std::vector<uint64_t> sizes_of(size_t b) const {
    if (!s_.sizes.empty()) return s_.sizes;
    const uint64_t max = s_.max_size ? s_.max_size : default_max_size(model_caches_[b]);
    return power_of_two_sizes(std::max(s_.min_size, s_.line), max);
  }
  std::vector<CacheInfo> caches_;
};

}  // namespace

std::unique_ptr<Benchmark> make_chase() { return std::make_unique<ChaseBenchmark>(chase_preset()); }
std::unique_ptr<Benchmark> make_tlb() { return std::make_unique<ChaseBenchmark>(tlb_preset()); }

}  // namespace mempath
