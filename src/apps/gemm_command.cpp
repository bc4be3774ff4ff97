// `mempath gemm`: cuBLAS GEMM on one GPU with A and B in each memory (C in the GPU's
// own), fp16/tf32/fp32/fp64, by size; TFLOP/s against the peak model (issue 6).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "apps/benchmark.hpp"
#include "apps/plan_print.hpp"
#include "core/duration_model.hpp"
#include "core/alloc_kind.hpp"
#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/error.hpp"
#include "core/gemm_model.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/gemm_api.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""}, {"rep", ColumnType::Int, ""},
    {"time_s", ColumnType::Float, "s"}, {"tflops", ColumnType::Float, "TFLOP/s"},
};
const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},           {"gpu", ColumnType::Int, ""},
    {"dtype", ColumnType::String, ""},          {"m", ColumnType::Int, ""},
    {"n", ColumnType::Int, ""},                 {"k", ColumnType::Int, ""},
    {"a_mem", ColumnType::String, ""},          {"a_alloc", ColumnType::String, ""},
    {"b_mem", ColumnType::String, ""},          {"b_alloc", ColumnType::String, ""},
    {"c_mem", ColumnType::String, ""},          {"via", ColumnType::String, ""},
    {"status", ColumnType::String, ""},         {"reason", ColumnType::String, ""},
    {"reps", ColumnType::Int, ""},              {"median_TFLOPs", ColumnType::Float, "TFLOP/s"},
    {"best_TFLOPs", ColumnType::Float, "TFLOP/s"}, {"min_TFLOPs", ColumnType::Float, "TFLOP/s"},
    {"peak_TFLOPs", ColumnType::Float, "TFLOP/s"}, {"fraction_of_peak", ColumnType::Float, ""},
    {"operand_bytes", ColumnType::Int, "bytes"}, {"flops", ColumnType::Int, "FLOP"},
    {"placement", ColumnType::String, ""},      {"placed", ColumnType::Int, ""},
    {"verified", ColumnType::Int, ""},
    {"cublas_version", ColumnType::Int, ""},
    {"calls_per_rep", ColumnType::Int, ""},
};

struct Placement {
  std::string mem, alloc, via, skip_reason;
};

struct GemmOutcome {
  std::string status = "ok", reason, placement;
  std::vector<double> seconds;
  bool verified = false;
  int cublas_version = 0;
  int calls_per_rep = 0;
};

GemmOutcome run(const Topology& topo, int gpu, const std::string& dtype, int64_t n, const Placement& p, int warmup,
                int reps) {
  GemmOutcome o;
  const uint64_t bytes = static_cast<uint64_t>(n) * n * gemm_element_bytes(dtype);
  const std::string c_mem = "gpu" + std::to_string(gpu);
  const uint64_t need_ops = p.mem == c_mem ? 3 * bytes : 2 * bytes;
  if (need_ops > free_bytes(p.mem) || bytes > free_bytes(c_mem)) {
    o.status = "skipped";
    o.reason = "three " + format_size(bytes) + " matrices do not fit (" + format_size(free_bytes(p.mem)) +
               " free on " + p.mem + ")";
    return o;
  }
  auto a = allocate(topo, p.alloc, p.mem, bytes, 0);
  auto b = allocate(topo, p.alloc, p.mem, bytes, 0);
  auto c = allocate(topo, "device", c_mem, bytes, 0);
  const bool on_gpu = a->gpu() >= 0;
  if (on_gpu && a->gpu() != gpu) gpu::enable_peer_access(gpu, a->gpu());
  gpu::gemm_fill(on_gpu ? a->gpu() : gpu, dtype, a->data(), n * n, false, on_gpu);
  gpu::gemm_fill(on_gpu ? a->gpu() : gpu, dtype, b->data(), n * n, true, on_gpu);
  // Corners and an interior point: every row and column block of C is somewhere probed.
  const std::vector<std::pair<int64_t, int64_t>> probes = {{0, 0}, {n - 1, n - 1}, {n / 3, 2 * n / 3}, {n - 1, 0}};
  const gpu::GemmRun r = gpu::run_gemm(gpu, dtype, n, a->data(), b->data(), c->data(), warmup, reps, probes);
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
  o.placement = placement(*a);
  return o;
}

std::vector<int64_t> sizes_from(const Options& opts, const std::string& dtype) {
  if (auto bytes = opts.get("matrix-bytes")) {
    const int64_t n = gemm_size_for_bytes(dtype, parse_size(*bytes));
    if (n < 256) throw UsageError("--matrix-bytes " + *bytes + " holds no 256 x 256 matrix; valid: e.g. 4GiB");
    return {n};
  }
  const std::string text = opts.get_or("size", "sweep");
  if (text == "sweep") return {1024, 2048, 4096, 8192, 16384};
  std::vector<int64_t> out;
  for (const auto& item : opts.list("size")) {
    const long long n = parse_int(item, "--size");
    if (n < 64 || n > 65536) throw UsageError("invalid --size '" + item + "'; valid: 64 .. 65536 (square m = n = k)");
    out.push_back(n);
  }
  return out;
}

struct GemmCase {
  Placement p;
  std::string dtype;
  int64_t n;
};

class GemmBenchmark : public Benchmark {
 public:
  std::string name() const override { return "gemm"; }
  std::string description() const override {
    return "cuBLAS GEMM with A and B in each memory, fp16/tf32/fp32/fp64, by size";
  }
  std::string summary() const override {
    return "cuBLAS GEMM with A and B placed in each memory, C in the GPU's (docs/cli.md).";
  }
  std::vector<OptionSpec> options() const override {
    return {{"gpu", "N", "the GPU that multiplies (default 0)"},
            {"dtype", "LIST", "fp16, tf32, fp32, fp64 (default: all)"},
            {"size", "LIST|sweep", "square sizes m = n = k (default sweep 1024 .. 16384)"},
            {"matrix-bytes", "SIZE", "instead of --size: the square size whose matrix has SIZE bytes (e.g. 4GiB)"},
            {"mem", "MEM", "memory of A and B: numaN or gpuN (default: the GPU's own); --all: a filter"},
            {"alloc", "ALLOC", "allocator of A and B (default: the path's); --all: a filter"},
            {"all", "", "A and B in every memory x allocator the GPU can read"},
            {"reps", "N", "timed calls (default 10)"},
            {"warmup", "N", "untimed calls first (default 2)"}};
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only && !gpu::built_with_cuda()) throw UsageError("this mempath build has no CUDA support: gemm needs a CUDA build");
    topo_ = &topo;
    gpu_ = static_cast<int>(opts.integer("gpu", 0, 0));
    reps_ = static_cast<int>(opts.integer("reps", 10, 1, kMaxReps));
    warmup_ = static_cast<int>(opts.integer("warmup", 2, 0, kMaxReps));
    std::vector<std::string> dtypes = opts.has("dtype") ? opts.list("dtype") : split_list("fp16,tf32,fp32,fp64");
    for (const auto& d : dtypes) gemm_element_bytes(d);
    if (opts.has("size") && opts.has("matrix-bytes")) throw UsageError("--size and --matrix-bytes exclude each other; valid: one of them");
    for (const auto& d : dtypes) sizes_from(opts, d);
    pu_ = "gpu" + std::to_string(gpu_);
    if (!topo.find_pu(pu_))
      throw UsageError("--gpu " + std::to_string(gpu_) + ": this node has no " + pu_ + "; valid: " + join(topo.pu_names()));
    std::vector<Placement> placements;
    BwSettings settings;
    settings.size = 1ULL << 30;  // placement only: sizes are GEMM's own
    settings.in_cache = true;
    if (opts.flag("all")) {
      BwFilters f;
      f.ops = {"read"}, f.kernels = {"grid"}, f.pus = {pu_};
      f.mems = opts.list("mem"), f.allocs = opts.list("alloc");
      for (const auto& c : all_cases(topo, f, settings))
        placements.push_back({c.mem, alloc_name(c.alloc), c.via, c.skip_reason});
    } else {
      const BwCase c = make_case(topo, Op::Read, pu_, opts.get_or("mem", pu_), "", opts.get_or("alloc", ""), -1, "grid", settings);
      placements.push_back({c.mem, alloc_name(c.alloc), c.via, c.skip_reason});
    }
    if (placements.empty()) throw UsageError("the filters select no memory this GPU reads");
    for (const auto& p : placements)
      for (const auto& dtype : dtypes)
        for (int64_t n : sizes_from(opts, dtype)) cases_.push_back({p, dtype, n});
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const GemmCase& c = cases_[i];
    return {{"gpu", pu_}, {"dtype", c.dtype}, {"n", std::to_string(c.n)}, {"mem", c.p.mem}, {"alloc", c.p.alloc},
            {"via", c.p.via}};
  }
  std::string skip_reason(size_t i) const override { return cases_[i].p.skip_reason; }
  // Modelled: three matrices set up and C checked; per call 2 n^3 flops at the dtype's
  // rate, or, where A and B stay off the GPU and are read in place over a link, the
  // bytes cuBLAS re-reads at that link's rate (model::gemm_in_place_s).
  double expected_seconds(size_t i) const override {
    const GemmCase& c = cases_[i];
    const double n = static_cast<double>(c.n);
    const double matrix = n * n * static_cast<double>(gemm_element_bytes(c.dtype));
    const bool tensor16 = c.dtype == "fp16" || c.dtype == "tf32";
    const double compute = 2 * n * n * n / ((tensor16 ? model::kGemmTflops16 : model::kGemmTflops32) * 1e12);
    // Managed operands migrate to the GPU in the warm-up; device ones are there already.
    const bool in_place = c.p.via != "local" && c.p.alloc != "managed" && c.p.alloc != "device";
    const double call = in_place ? std::max(compute, model::gemm_in_place_s(n, tensor16, c.p.via))
                                 : compute + model::seconds(2 * matrix, model::path_gbps("gpu", c.p.via));
    return model::kCaseOverheadS + model::setup_s(3 * matrix) + model::verify_s(matrix) + (warmup_ + reps_) * call;
  }

  void prepare() override { dev_ = gpu::gemm_device(gpu_); }
  Outcome run(size_t i) override {
    const GemmCase& c = cases_[i];
    GemmOutcome o = mempath::run(*topo_, gpu_, c.dtype, c.n, c.p, warmup_, reps_);
    return {o.status, o.reason, o};
  }

  TableSpec cases_table() const override { return {"gemm/cases", kCaseColumns}; }
  TableSpec samples_table() const override { return {"gemm/samples", kSampleColumns}; }
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
    rows.cases.push_back(
        {{"case_id", id}, {"gpu", static_cast<int64_t>(gpu_)}, {"dtype", c.dtype}, {"m", n}, {"n", n}, {"k", n},
         {"a_mem", c.p.mem}, {"a_alloc", c.p.alloc}, {"b_mem", c.p.mem}, {"b_alloc", c.p.alloc}, {"c_mem", pu_},
         {"via", c.p.via}, {"status", out.status}, {"reason", out.reason},
         {"reps", static_cast<int64_t>(ok ? tf.size() : 0)}, {"median_TFLOPs", s.median},
         {"best_TFLOPs", s.max}, {"min_TFLOPs", s.min}, {"peak_TFLOPs", peak},
         {"fraction_of_peak", ok ? s.median / peak : kNaN}, {"operand_bytes", 2 * bytes},
         {"flops", static_cast<int64_t>(flops)}, {"placement", o ? o->placement : ""},
         {"placed", placed_column(out.status, o && placed_as_named(*topo_, o->placement, c.p.mem, c.p.alloc))},
         {"verified", static_cast<int64_t>(o && o->verified)},
         {"cublas_version", static_cast<int64_t>(o ? o->cublas_version : 0)},
         {"calls_per_rep", static_cast<int64_t>(o ? o->calls_per_rep : 0)}});
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("gpu"), field("dtype"), field("n"), field("mem", "a_mem"), field("alloc", "a_alloc"), field("via"),
            field("placement"), field("placed"), field("status"),
            metric("median_TFLOPs", 2), metric("best_TFLOPs", 2), metric("fraction_of_peak", 3)};
  }

 private:
  const Topology* topo_ = nullptr;
  int gpu_ = 0, reps_ = 10, warmup_ = 2;
  std::string pu_;
  gpu::GemmDevice dev_{};
  std::vector<GemmCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_gemm() { return std::make_unique<GemmBenchmark>(); }

}  // namespace mempath
