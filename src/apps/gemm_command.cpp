// `mempath gemm`: cuBLAS GEMM on one GPU with A and B in each memory, together or each in
// its own (the paper's Figure 15: A's memory x B's memory), C in the GPU's own device
// memory; fp16/tf32/fp32/fp64, by size; TFLOP/s against the peak model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/driver.hpp"
#include "apps/plan_print.hpp"
#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/gemm_model.hpp"
#include "core/guards.hpp"
#include "core/kinds.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"
#include "core/units.hpp"
#include "gpu/gemm_api.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Where one operand lives: memory, allocator, the path class from the GPU to it, and why
// the GPU cannot read it there (empty: it can).
struct Placement {
  std::string mem;
  std::optional<Alloc> alloc;  // none where the path has none (skipped)
  std::string via, skip_reason;
  bool operator==(const Placement& o) const { return mem == o.mem && alloc == o.alloc; }
};

// C's allocator, on the GPU that multiplies: the paper keeps C in local HBM, having found
// its placement of negligible effect; A's and B's reads are what placement changes.
constexpr Alloc kCAlloc = Alloc::Device;

struct GemmOutcome {
  std::string status = "ok", reason, a_placement, b_placement;
  std::vector<double> seconds;
  bool verified = false;
  int cublas_version = 0;
  int calls_per_rep = 0;
};

GemmOutcome run(const Topology& topo, int gpu, const std::string& dtype, int64_t n, const Placement& pa,
                const Placement& pb, int warmup, int reps, bool reps_given) {
  GemmOutcome o;
  const uint64_t bytes = static_cast<uint64_t>(n) * n * gemm_element_bytes(dtype);
  const std::string c_mem = "gpu" + std::to_string(gpu);
  std::map<std::string, std::vector<std::string>> on;  // memory -> the matrices it holds
  on[pa.mem].push_back("A"), on[pb.mem].push_back("B"), on[c_mem].push_back("C");
  for (const auto& [mem, names] : on) {
    const uint64_t free = free_bytes(mem);
    if (names.size() * bytes > free) {
      o.status = "skipped";
      o.reason = join(names, " + ") + " (" + format_size(bytes) + (names.size() > 1 ? " each) do" : ") does") +
                 " not fit on " + mem + " (" + format_size(free) + " free)";
      return o;
    }
  }
  auto a = allocate(topo, *pa.alloc, pa.mem, bytes, 0);  // a case that runs has both
  auto b = allocate(topo, *pb.alloc, pb.mem, bytes, 0);
  auto c = allocate(topo, kCAlloc, c_mem, bytes, 0);
  for (const Buffer* x : {a.get(), b.get()}) {
    const bool on_gpu = x->gpu() >= 0;
    if (on_gpu && x->gpu() != gpu) gpu::enable_peer_access(gpu, x->gpu());
    // Each operand written where it lives: by its GPU, or by the host for host memory.
    gpu::gemm_fill(on_gpu ? x->gpu() : gpu, dtype, x->data(), n * n, x == b.get(), on_gpu);
  }
  // Corners and an interior point: every row and column block of C is somewhere probed.
  const std::vector<std::pair<int64_t, int64_t>> probes = {{0, 0}, {n - 1, n - 1}, {n / 3, 2 * n / 3}, {n - 1, 0}};
  const gpu::GemmRun r = gpu::run_gemm(gpu, dtype, n, a->data(), b->data(), c->data(), warmup, reps, reps_given, probes);
  o.seconds = r.seconds;
  o.cublas_version = r.cublas_version;
  o.calls_per_rep = r.calls_per_rep;
  o.verified = true;
  for (size_t k = 0; k < probes.size(); ++k) {
    const double want = gemm_expected(n, probes[k].first, probes[k].second);
    if (!gemm_close(dtype, r.probes[k], want)) {
      o.verified = false;
      o.status = "failed";
      o.reason = "C(" + std::to_string(probes[k].first) + "," + std::to_string(probes[k].second) + ") = " +
                 std::to_string(r.probes[k]) + ", expected " + std::to_string(want);
      break;
    }
  }
  if (o.verified) {
    // The guard holds the timed interval (calls_per_rep calls) against an empty launch.
    const std::string guard = gpu_timing_problem(summarize(o.seconds).median * r.calls_per_rep, r.empty_launch_s);
    if (!guard.empty()) o.status = "failed", o.reason = guard;
  }
  o.a_placement = placement(*a);
  o.b_placement = placement(*b);
  return o;
}

// Square sizes of one dtype: the sweep (shorter where an operand is read over a link:
// gemm_sweep_sizes), a list, or the one whose matrix has --matrix-bytes; every size
// rounded down to a multiple of 8 (gemm_round_size, the paper's rule).
std::vector<int64_t> sizes_from(const Options& opts, const std::string& dtype, bool over_link = false) {
  if (auto bytes = opts.get("matrix-bytes")) {
    const int64_t n = gemm_size_for_bytes(dtype, parse_size(*bytes));
    if (n < 64) throw UsageError("--matrix-bytes " + *bytes + " holds no 64 x 64 " + dtype + " matrix; valid: e.g. 4GiB");
    return {n};
  }
  const std::string text = opts.get_or("size", "sweep");
  if (text == "sweep") return gemm_sweep_sizes(over_link);
  std::vector<int64_t> out;
  for (const auto& item : opts.list("size")) {
    const long long n = parse_int(item, "--size");
    if (n < 64 || n > 65536) throw UsageError("invalid --size '" + item + "'; valid: 64 .. 65536 (square m = n = k)");
    const int64_t rounded = gemm_round_size(n);
    if (std::find(out.begin(), out.end(), rounded) == out.end()) out.push_back(rounded);
  }
  return out;
}

// --size values that are no multiple of 8, for the note that says what they became.
std::vector<std::string> rounded_sizes(const Options& opts) {
  std::vector<std::string> out;
  if (opts.get_or("size", "sweep") == "sweep") return out;
  for (const auto& item : opts.list("size")) {
    const long long n = parse_int(item, "--size");
    if (gemm_round_size(n) != n) out.push_back(item + " -> " + std::to_string(gemm_round_size(n)));
  }
  return out;
}

// Why a pair of placements does not run: the operand(s) the GPU cannot read, named.
std::string pair_skip_reason(const Placement& a, const Placement& b) {
  if (a == b || (a.skip_reason.empty() && b.skip_reason.empty())) return a.skip_reason;
  if (b.skip_reason.empty()) return "A: " + a.skip_reason;
  if (a.skip_reason.empty()) return "B: " + b.skip_reason;
  if (a.skip_reason == b.skip_reason) return "A and B: " + a.skip_reason;
  return "A: " + a.skip_reason + "; B: " + b.skip_reason;
}

struct GemmCase {
  Placement a, b;
  std::string dtype;
  int64_t n;
};

class GemmBenchmark : public Benchmark {
 public:
  GemmBenchmark()
      : Benchmark({"gemm",
                   "cuBLAS GEMM with A and B in each memory (or each pair), fp16/tf32/fp32/fp64, by size",
                   "cuBLAS GEMM with A and B placed in each memory, together or each on its own, C in the GPU's "
                   "device memory (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override {
    return {{"gpu", "N", "the GPU that multiplies (default 0)"},
            {"dtype", "LIST", "fp16, tf32, fp32, fp64 (default: all)"},
            {"size", "LIST|sweep", "square sizes m = n = k, rounded down to a multiple of 8 (default sweep 1024 .. 32768; "
                                  "to 8192 where A or B is read over a link, whose TFLOP/s are flat from there)"},
            {"matrix-bytes", "SIZE", "instead of --size: the largest multiple of 8 whose matrix fits in SIZE bytes (e.g. 4GiB)"},
            {"mem", "MEM", "memory of A and B: numaN or gpuN (default: the GPU's own); --all: a filter"},
            {"alloc", "ALLOC", "allocator of A and B (default: the path's); --all: a filter"},
            {"a-mem", "MEM", "memory of A alone (instead of --mem); --all --ab independent: a filter"},
            {"b-mem", "MEM", "memory of B alone (instead of --mem); --all --ab independent: a filter"},
            {"a-alloc", "ALLOC", "allocator of A alone (instead of --alloc; default: the path's); --all --ab "
                                 "independent: a filter"},
            {"b-alloc", "ALLOC", "allocator of B alone (instead of --alloc; default: the path's); --all --ab "
                                 "independent: a filter"},
            {"all", "", "A and B in every memory x allocator the GPU can read"},
            {"ab", "shared|independent", "with --all: A and B in one placement (shared, the default) or in every "
                                         "pair of placements, A's x B's (independent)"},
            {"reps", "N", "timed calls (default 10; without it, as many as fit in 10 s, at least 3)"},
            {"warmup", "N", "untimed calls first (default 2)"}};
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only) require_cuda_build("gemm needs a CUDA build");
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    gpu_ = gpu_option(opts, topo).id;
    const Repetitions r = read_repetitions(opts, {10, 2});
    reps_ = r.reps, warmup_ = r.warmup;
    reps_given_ = opts.has("reps");
    std::vector<std::string> dtypes = opts.has("dtype") ? opts.list("dtype") : split_list("fp16,tf32,fp32,fp64");
    for (const auto& d : dtypes) gemm_element_bytes(d);
    if (opts.has("size") && opts.has("matrix-bytes")) throw UsageError("--size and --matrix-bytes exclude each other; valid: one of them");
    for (const auto& d : dtypes) sizes_from(opts, d);
    pu_ = "gpu" + std::to_string(gpu_);
    const bool all = opts.flag("all");
    independent_ = opts.choice("ab", {"shared", "independent"}, "shared") == "independent";
    if (opts.has("ab") && !all)
      throw UsageError("--ab chooses the pairs of --all; valid: --all --ab shared|independent, or one pair with "
                       "--a-mem/--b-mem");
    for (const char* what : {"mem", "alloc"})
      for (const char* side : {"a", "b"}) {
        const std::string own = std::string(side) + "-" + what;
        if (opts.has(own) && opts.has(what))
          throw UsageError("--" + std::string(what) + " places A and B, --" + own + " one of them; valid: --" + what +
                           " or --a-" + what + "/--b-" + what + ", not both");
        if (opts.has(own) && all && !independent_)
          throw UsageError("--" + own + " with --all filters one operand; valid: --all --ab independent --" + own +
                           " LIST (--all alone: --" + what + " filters both)");
        if (std::string(what) == "alloc") parse_allocs(opts.list(own), own);
      }
    // One operand's option: its own (--a-mem), else the one for both (--mem).
    auto side_opt = [&](const char* side, const std::string& what) -> std::string {
      const std::string own = std::string(side) + "-" + what;
      return opts.has(own) ? own : what;
    };
    BwSettings settings;
    settings.size = 1ULL << 30;  // placement only: sizes are GEMM's own
    settings.in_cache = true;
    std::vector<std::pair<Placement, Placement>> pairs;
    if (all) {
      auto readable = [&](const char* side) {
        BwFilters f;
        f.ops = {"read"}, f.kernels = {"grid"}, f.pus = {pu_};
        f.mems = opts.list(side_opt(side, "mem")), f.allocs = opts.list(side_opt(side, "alloc"));
        std::vector<Placement> out;
        for (const auto& c : all_cases(topo, f, settings)) out.push_back({c.mem, c.alloc, c.via, c.skip_reason});
        if (out.empty())
          throw UsageError("--" + side_opt(side, "mem") + "/--" + side_opt(side, "alloc") + " select no memory " + pu_ +
                           " reads; valid: a memory and allocator it reads (`mempath gemm --all` plans them all)");
        return out;
      };
      if (independent_) {
        const std::vector<Placement> as = readable("a"), bs = readable("b");
        for (const auto& a : as)
          for (const auto& b : bs) pairs.push_back({a, b});
      } else {
        for (const auto& p : readable("a")) pairs.push_back({p, p});
      }
    } else {
      auto one = [&](const char* side) {
        const BwCase c = make_case(topo, Op::Read, pu_, opts.get_or(side_opt(side, "mem"), pu_), "",
                                   opts.get_or(side_opt(side, "alloc"), ""), -1, "grid", settings);
        return Placement{c.mem, c.alloc, c.via, c.skip_reason};
      };
      pairs.push_back({one("a"), one("b")});
    }
    for (const auto& [a, b] : pairs)
      for (const auto& dtype : dtypes)
        for (int64_t n : sizes_from(opts, dtype, gemm_read_over_link(a.via, a.alloc) ||
                                                      gemm_read_over_link(b.via, b.alloc)))
          cases_.push_back({a, b, dtype, n});
    first_planned_ = 0;
    while (first_planned_ < cases_.size() && !skip_reason(first_planned_).empty()) ++first_planned_;
    const std::vector<std::string> rounded = rounded_sizes(opts);
    if (!rounded.empty())
      std::fprintf(stderr, "mempath: note: --size rounds down to a multiple of 8 (tensor-core tiles): %s\n",
                   join(rounded).c_str());
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const GemmCase& c = cases_[i];
    return {{"gpu", pu_},           {"dtype", c.dtype},     {"n", std::to_string(c.n)}, {"mem", c.a.mem},
            {"alloc", alloc_name(c.a.alloc)},   {"via", c.a.via},       {"b_mem", c.b.mem},
            {"b_alloc", alloc_name(c.b.alloc)}, {"b_via", c.b.via},     {"c_mem", pu_},
            {"c_alloc", alloc_name(kCAlloc)}};
  }
  std::string skip_reason(size_t i) const override { return pair_skip_reason(cases_[i].a, cases_[i].b); }
  // Modelled: three matrices set up and C checked; per call 2 n^3 flops at the dtype's rate.
  // An operand that stays off the GPU is read in place over its link, re-reading its half
  // of the bytes model::gemm_in_place_s counts for both; the calls take the longer of the
  // flops and those reads. One that is the GPU's (its own HBM, or managed pages migrating
  // in the warm-up, or a peer's device memory) is read once per call at its path's rate.
  // Plus the one call that probes calls_per_rep.
  double expected_seconds(size_t i) const override {
    const GemmCase& c = cases_[i];
    const double n = static_cast<double>(c.n);
    const double matrix = n * n * static_cast<double>(gemm_element_bytes(c.dtype));
    const bool tensor16 = c.dtype == "fp16" || c.dtype == "tf32";
    const double compute = 2 * n * n * n / ((tensor16 ? model::kGemmTflops16 : model::kGemmTflops32) * 1e12);
    double in_place = 0, moved = 0;
    for (const Placement* p : {&c.a, &c.b}) {
      if (p->via != "local" && p->alloc != Alloc::Managed && p->alloc != Alloc::Device)
        in_place += model::gemm_in_place_s(rates_, n, tensor16, p->via) / 2;
      else
        moved += model::seconds(matrix, model::path_gbps(rates_, PuKind::Gpu, p->via));
    }
    const double call = std::max(compute, in_place) + moved;
    // A path no allocator serves is skipped; its operand counts as pageable memory.
    const double made = model::setup_s(matrix, c.a.alloc.value_or(Alloc::System)) +
                        model::setup_s(matrix, c.b.alloc.value_or(Alloc::System)) + model::setup_s(matrix, kCAlloc);
    const int reps = gemm_timed_reps(reps_, reps_given_, call);
    const double load = i == first_planned_ ? model::kCublasLoadS : 0;
    return model::kCaseOverheadS + load + made + model::verify_s(matrix, Alloc::System) + (warmup_ + reps + 1) * call;
  }

  void prepare() override { dev_ = gpu::gemm_device(gpu_); }
  Outcome run(size_t i) override {
    const GemmCase& c = cases_[i];
    GemmOutcome o = mempath::run(*topo_, gpu_, c.dtype, c.n, c.a, c.b, warmup_, reps_, reps_given_);
    return {o.status, o.reason, o};
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const GemmCase& c = cases_[i];
    const int64_t n = c.n;
    const auto* o = std::any_cast<GemmOutcome>(&out.data);
    const double flops = gemm_flops(n, n, n);
    const bool ok = out.status == "ok";
    CaseRows rows;
    std::vector<double> tf;
    if (o)
      for (size_t r = 0; r < o->seconds.size(); ++r) {
        tf.push_back(flops / o->seconds[r] / 1e12);
        if (ok) rows.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", o->seconds[r]}, {"tflops", tf.back()}});
      }
    const Summary s = ok ? summarize(tf) : Summary{};
    const double peak = gemm_peak_tflops(dev_.cc_major, dev_.cc_minor, dev_.sms, dev_.sm_clock_khz, c.dtype);
    const int64_t bytes = n * n * gemm_element_bytes(c.dtype);
    // Both operands' pages where the case names them: a figure of one that moved is another path's.
    const bool placed = o && placed_as_named(*topo_, o->a_placement, c.a.mem, *c.a.alloc) &&
                        placed_as_named(*topo_, o->b_placement, c.b.mem, *c.b.alloc);
    rows.cases.push_back(
        {{"case_id", id}, {"gpu", static_cast<int64_t>(gpu_)}, {"dtype", c.dtype}, {"m", n}, {"n", n}, {"k", n},
         {"a_mem", c.a.mem}, {"a_alloc", std::string(alloc_name(c.a.alloc))}, {"b_mem", c.b.mem},
         {"b_alloc", std::string(alloc_name(c.b.alloc))}, {"c_mem", pu_}, {"c_alloc", std::string(alloc_name(kCAlloc))},
         {"via", c.a.via}, {"b_via", c.b.via}, {"status", out.status}, {"reason", out.reason},
         {"reps", static_cast<int64_t>(ok ? tf.size() : 0)}, {"median_TFLOPs", s.median},
         {"best_TFLOPs", s.max}, {"min_TFLOPs", s.min}, {"peak_TFLOPs", peak},
         {"fraction_of_peak", ok ? s.median / peak : kNaN}, {"operand_bytes", 2 * bytes},
         {"flops", static_cast<int64_t>(flops)}, {"placement", o ? o->a_placement : ""},
         {"b_placement", o ? o->b_placement : ""}, {"placed", placed_column(out.status, placed)},
         {"verified", static_cast<int64_t>(o && o->verified)},
         {"cublas_version", static_cast<int64_t>(o ? o->cublas_version : 0)},
         {"calls_per_rep", static_cast<int64_t>(o ? o->calls_per_rep : 0)}});
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("gpu"), field("dtype"), field("n"), field("mem", "a_mem"), field("alloc", "a_alloc"), field("via"),
            field("b_mem"), field("b_alloc"), field("b_via"), field("c_mem"), field("c_alloc"),
            field("placement"), field("b_placement"), field("placed"), field("status"),
            metric("median_TFLOPs", 2), metric("best_TFLOPs", 2), metric("fraction_of_peak", 3)};
  }
  // --ab independent: the paper's Figure 15 per dtype, A's placement (row) x B's (column).
  void print_tables(const Table& cases) const override {
    if (!independent_) return;
    PivotByKey matrices;  // by dtype
    for (size_t r = 0; r < cases.rows(); ++r) {
      const Row row = table_row(cases, r);
      const auto text = [&](const char* column) { return std::get<std::string>(row.at(column)); };
      // Skipped cases name their row and column but never hide a size that ran.
      const double rank = text("status") == "skipped" ? -1.0 : static_cast<double>(std::get<int64_t>(row.at("n")));
      matrices[text("dtype")].add(text("a_mem") + "/" + text("a_alloc"), text("b_mem") + "/" + text("b_alloc"),
                                  status_shown(row), std::get<double>(row.at("median_TFLOPs")), rank);
    }
    for (const auto& dtype : matrices.keys())
      std::printf("\n%s", matrices.at(dtype).format("gemm " + dtype + ": median TFLOP/s at the largest n, A's memory/"
                                                    "allocator (row) x B's (column), C in " + pu_ + " (cudaMalloc); "
                                                    "- none or moved pages, fail failed",
                                                    "A\\B").c_str());
    std::fflush(stdout);
  }

 private:
  const Topology* topo_ = nullptr;
  model::Rates rates_;
  int gpu_ = 0, reps_ = 10, warmup_ = 2;
  bool reps_given_ = false;
  size_t first_planned_ = 0;  // the case that pays for opening cuBLAS
  bool independent_ = false;
  std::string pu_;
  gpu::GemmDevice dev_{};
  std::vector<GemmCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_gemm() { return std::make_unique<GemmBenchmark>(); }

}  // namespace mempath
