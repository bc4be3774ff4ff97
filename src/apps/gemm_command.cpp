// `mempath gemm`: cuBLAS GEMM on one GPU with A and B in each memory (C in the GPU's
// own), fp16/tf32/fp32/fp64, by size; TFLOP/s against the peak model (issue 6).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "apps/commands.hpp"
#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/error.hpp"
#include "core/gemm_model.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "apps/plan_print.hpp"
#include "core/result_run.hpp"
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
    {"placement", ColumnType::String, ""},      {"verified", ColumnType::Int, ""},
    {"cublas_version", ColumnType::Int, ""},
};

struct Placement {
  std::string mem, alloc, via, skip_reason;
};

struct Outcome {
  std::string status = "ok", reason, placement;
  std::vector<double> seconds;
  bool verified = false;
  int cublas_version = 0;
};

Outcome run(const Topology& topo, int gpu, const std::string& dtype, int64_t n, const Placement& p, int warmup,
            int reps) {
  Outcome o;
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
    const std::string guard = gpu_timing_problem(summarize(o.seconds).median, r.empty_launch_s);
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

}  // namespace

int cmd_gemm(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts("gemm", "cuBLAS GEMM with A and B placed in each memory, C in the GPU's (docs/cli.md).",
               with_from_option(with_run_options({{"gpu", "N", "the GPU that multiplies (default 0)"},
                {"dtype", "LIST", "fp16, tf32, fp32, fp64 (default: all)"},
                {"size", "LIST|sweep", "square sizes m = n = k (default sweep 1024 .. 16384)"},
                {"matrix-bytes", "SIZE", "instead of --size: the square size whose matrix has SIZE bytes (e.g. 4GiB)"},
                {"mem", "MEM", "memory of A and B: numaN or gpuN (default: the GPU's own); --all: a filter"},
                {"alloc", "ALLOC", "allocator of A and B (default: the path's); --all: a filter"},
                {"all", "", "A and B in every memory x allocator the GPU can read"},
                {"reps", "N", "timed calls (default 10)"},
                {"warmup", "N", "untimed calls first (default 2)"}},
                              "gemm")));
  if (!opts.parse(args)) return kExitOk;
  if (!opts.has("from") && !gpu::built_with_cuda()) throw UsageError("this mempath build has no CUDA support: gemm needs a CUDA build");
  const int gpu = static_cast<int>(opts.integer("gpu", 0, 0));
  const int reps = static_cast<int>(opts.integer("reps", 10, 1, kMaxReps));
  const int warmup = static_cast<int>(opts.integer("warmup", 2, 0, kMaxReps));
  std::vector<std::string> dtypes = opts.has("dtype") ? opts.list("dtype") : split_list("fp16,tf32,fp32,fp64");
  for (const auto& d : dtypes) gemm_element_bytes(d);
  if (opts.has("size") && opts.has("matrix-bytes")) throw UsageError("--size and --matrix-bytes exclude each other; valid: one of them");
  for (const auto& d : dtypes) sizes_from(opts, d);
  const Topology topo = planning_topology(opts);
  const std::string pu = "gpu" + std::to_string(gpu);
  if (!topo.find_pu(pu))
    throw UsageError("--gpu " + std::to_string(gpu) + ": this node has no " + pu + "; valid: " + join(topo.pu_names()));
  std::vector<Placement> placements;
  BwSettings settings;
  settings.size = 1ULL << 30;  // placement only: sizes are GEMM's own
  settings.in_cache = true;
  if (opts.flag("all")) {
    BwFilters f;
    f.ops = {"read"}, f.kernels = {"grid"}, f.pus = {pu};
    f.mems = opts.list("mem"), f.allocs = opts.list("alloc");
    for (const auto& c : all_cases(topo, f, settings)) placements.push_back({c.mem, c.alloc, c.via, c.skip_reason});
  } else {
    const BwCase c = make_case(topo, Op::Read, pu, opts.get_or("mem", pu), "", opts.get_or("alloc", ""), -1, "grid", settings);
    placements.push_back({c.mem, c.alloc, c.via, c.skip_reason});
  }
  if (placements.empty()) throw UsageError("the filters select no memory this GPU reads");
  if (opts.has("from")) {
    for (const auto& p : placements)
      for (const auto& dtype : dtypes)
        print_plan("gemm", {{"gpu", pu}, {"dtype", dtype}, {"mem", p.mem}, {"alloc", p.alloc}, {"via", p.via},
                            {"sizes", std::to_string(sizes_from(opts, dtype).size())}},
                   p.skip_reason);
    return kExitOk;
  }

  ResultRun run_out(opts, "gemm", topo, argv);
  ResultFile& file = run_out.file();
  file.table("gemm/samples", kSampleColumns);
  file.table("gemm/cases", kCaseColumns);
  const gpu::GemmDevice dev = gpu::gemm_device(gpu);
  int64_t id = 0;
  int exit_code = kExitOk;
  for (const auto& p : placements) {
    for (const auto& dtype : dtypes) {
      for (int64_t n : sizes_from(opts, dtype)) {
        Outcome o;
        if (!p.skip_reason.empty()) {
          o.status = "skipped", o.reason = p.skip_reason;
        } else {
          try {
            Watchdog::Scope guard(run_out.watchdog(), "case " + std::to_string(id) + " (gemm " + dtype + " " +
                                                          std::to_string(n) + " " + p.mem + " " + p.alloc + ")");
            o = run(topo, gpu, dtype, n, p, warmup, reps);
          } catch (const Unsupported& e) {
            o = Outcome{}, o.status = "skipped", o.reason = e.what();
          } catch (const UsageError&) {
            throw;
          } catch (const std::exception& e) {
            o = Outcome{}, o.status = "failed", o.reason = e.what();
          }
        }
        const double flops = gemm_flops(n, n, n);
        const bool ok = o.status == "ok";
        std::vector<double> tf;
        for (size_t r = 0; r < o.seconds.size(); ++r) {
          tf.push_back(flops / o.seconds[r] / 1e12);
          if (ok)
            file.table("gemm/samples", kSampleColumns)
                .append({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", o.seconds[r]}, {"tflops", tf.back()}});
        }
        const Summary s = ok ? summarize(tf) : Summary{};
        const double peak = gemm_peak_tflops(dev.cc_major, dev.cc_minor, dev.sms, dev.sm_clock_khz, dtype);
        const int64_t bytes = n * n * gemm_element_bytes(dtype);
        file.table("gemm/cases", kCaseColumns)
            .append({{"case_id", id}, {"gpu", static_cast<int64_t>(gpu)}, {"dtype", dtype}, {"m", n}, {"n", n}, {"k", n},
                     {"a_mem", p.mem}, {"a_alloc", p.alloc}, {"b_mem", p.mem}, {"b_alloc", p.alloc}, {"c_mem", pu},
                     {"via", p.via}, {"status", o.status}, {"reason", o.reason},
                     {"reps", static_cast<int64_t>(ok ? tf.size() : 0)}, {"median_TFLOPs", s.median},
                     {"best_TFLOPs", s.max}, {"min_TFLOPs", s.min}, {"peak_TFLOPs", peak},
                     {"fraction_of_peak", ok ? s.median / peak : kNaN}, {"operand_bytes", 2 * bytes},
                     {"flops", static_cast<int64_t>(flops)}, {"placement", o.placement},
                     {"verified", static_cast<int64_t>(o.verified)},
                     {"cublas_version", static_cast<int64_t>(o.cublas_version)}});
        file.set_attribute("end_time", utc_now_iso8601());
        file.save();
        std::printf("MEMPATH gemm gpu=%d dtype=%s n=%lld mem=%s alloc=%s status=%s", gpu, dtype.c_str(),
                    static_cast<long long>(n), p.mem.c_str(), p.alloc.c_str(), o.status.c_str());
        if (ok) std::printf(" median_TFLOPs=%.2f best_TFLOPs=%.2f fraction_of_peak=%.3f", s.median, s.max, s.median / peak);
        if (!o.reason.empty()) std::printf(" reason=\"%s\"", o.reason.c_str());
        std::printf("\n");
        std::fflush(stdout);
        if (o.status == "failed") exit_code = kExitFailed;
        ++id;
      }
    }
  }
  std::cerr << "mempath: " << id << " cases written to " << file.path() << "\n";
  return exit_code;
}

}  // namespace mempath
