// `mempath stream`: STREAM's Copy/Scale/Add/Triad on CPU cores by thread count, and
// BabelStream's Copy/Mul/Add/Triad/Dot on GPUs, over arrays from any allocator and
// memory (issue 6; docs/cli.md).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "apps/commands.hpp"
#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "apps/plan_print.hpp"
#include "core/result_run.hpp"
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
constexpr double kDotTolerance = 1e-8;  // a sum of n products rounds; the elements do not

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""}, {"rep", ColumnType::Int, ""},
    {"time_s", ColumnType::Float, "s"}, {"bandwidth_GBps", ColumnType::Float, "GB/s"},
};
const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},       {"pu", ColumnType::String, ""},
    {"pu_kind", ColumnType::String, ""},    {"mem", ColumnType::String, ""},
    {"alloc", ColumnType::String, ""},      {"via", ColumnType::String, ""},
    {"threads", ColumnType::Int, ""},       {"kernel", ColumnType::String, ""},
    {"elements", ColumnType::Int, ""},      {"array_bytes", ColumnType::Int, "bytes"},
    {"bytes", ColumnType::Int, "bytes"},    {"status", ColumnType::String, ""},
    {"reason", ColumnType::String, ""},     {"reps", ColumnType::Int, ""},
    {"best_GBps", ColumnType::Float, "GB/s"}, {"median_GBps", ColumnType::Float, "GB/s"},
    {"min_GBps", ColumnType::Float, "GB/s"}, {"max_GBps", ColumnType::Float, "GB/s"},
    {"verified", ColumnType::Int, ""},      {"placement", ColumnType::String, ""},
    {"sweep", ColumnType::Int, ""},         {"best_threads", ColumnType::Int, ""},
};

struct Outcome {
  std::string status = "ok", reason, placement;
  std::vector<std::vector<double>> seconds;  // [kernel][rep]
  int threads = -1;
  bool verified = false;
};

Outcome run(const Topology& topo, const StreamCase& sc, int warmup, int reps) {
  const BwCase& c = sc.bw;
  Outcome o;
  o.threads = c.threads;
  const uint64_t n = c.size / sizeof(double);
  const uint64_t free = c.mem == kInterleave ? ~0ULL : free_bytes(c.mem);
  if (3 * c.size > free) {
    o.status = "skipped";
    o.reason = "three arrays of " + format_size(c.size) + " do not fit in the " + format_size(free) + " free on " + c.mem;
    return o;
  }
  auto a = allocate(topo, c.alloc, c.mem, c.size, 0);
  auto b = allocate(topo, c.alloc, c.mem, c.size, 0);
  auto cc = allocate(topo, c.alloc, c.mem, c.size, 0);
  auto* pa = static_cast<double*>(a->data());
  auto* pb = static_cast<double*>(b->data());
  auto* pc = static_cast<double*>(cc->data());
  const StreamValues want = stream_values_after(warmup + reps);
  std::string guard;
  if (c.pu_kind == "cpu") {
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

struct SweepRow {  // a written case x kernel row whose best_threads is known at the sweep's end
  size_t row;
  int64_t threads;
  double triad_best;
};

}  // namespace

int cmd_stream(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts("stream", "STREAM (CPU) and BabelStream (GPU) kernels under placement (docs/cli.md).",
               with_from_option(with_run_options({{"pu", "PU", "cpuN, cpus or gpuN (default: the first CPU node); with --all a filter"},
                {"pu-kind", "KIND", "with --all: cpu or gpu only"},
                {"mem", "MEM", "memory of the three arrays: numaN, gpuN or interleave (pages over\n"
                               "                            every host NUMA node; read by cpus); with --all a filter"},
                {"alloc", "ALLOC", "system, numa, device, managed, pinned, registered (default: the path's)"},
                {"threads", "N|sweep|all", "CPU threads (default sweep: 1, 2, 4 .. all cores, best reported)"},
                {"size", "SIZE", "bytes per array (default 1GiB, raised to 4x the caches on the path)"},
                {"in-cache", "", "allow arrays smaller than 4x the caches (cache bandwidth)"},
                {"reps", "N", "timed repetitions of the kernel set (default 10)"},
                {"warmup", "N", "untimed repetitions first (default 1)"},
                {"all", "", "every processor x memory x allocator of the node; the options above filter"}},
                                "stream")));
  if (!opts.parse(args)) return kExitOk;
  StreamRequest req;
  req.all = opts.flag("all");
  if (auto v = opts.get("size")) {
    req.settings.size = parse_size(*v);
    if (req.settings.size < 4096 || req.settings.size % 64)
      throw UsageError("--size " + *v + " is not a multiple of 64 bytes of at least 4KiB; valid: e.g. 1GiB");
  }
  req.settings.in_cache = opts.flag("in-cache");
  const int reps = static_cast<int>(opts.integer("reps", 10, 1, kMaxReps));
  const int warmup = static_cast<int>(opts.integer("warmup", 1, 0, kMaxReps));
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
    if (!opts.has("from") && req.pu.rfind("gpu", 0) == 0 && !gpu::built_with_cuda())
      throw UsageError("this mempath build has no CUDA support: --pu " + req.pu + " needs a CUDA build");
  }
  const Topology topo = planning_topology(opts);
  const std::vector<StreamCase> cases = stream_cases(topo, req);
  if (cases.empty()) throw UsageError("the filters select no processor x memory on this node");
  if (opts.has("from")) {
    for (const auto& sc : cases)
      print_plan("stream", {{"pu", sc.bw.pu}, {"mem", sc.bw.mem}, {"alloc", sc.bw.alloc}, {"via", sc.bw.via},
                            {"threads", std::to_string(sc.bw.threads)}, {"size", std::to_string(sc.bw.size)}},
                 sc.bw.skip_reason);
    return kExitOk;
  }

  ResultRun run_out(opts, "stream", topo, argv);
  ResultFile& file = run_out.file();
  Table& samples = file.table("stream/samples", kSampleColumns);
  Table& case_rows = file.table("stream/cases", kCaseColumns);
  int64_t id = 0;
  int exit_code = kExitOk;
  // Every finished case is saved at once; a sweep's rows learn its best thread count (the
  // one whose triad, STREAM's figure, was fastest) when the sweep ends.
  std::vector<SweepRow> sweep_rows;
  auto end_sweep = [&] {
    int64_t best = -1;
    double best_bw = -1;
    for (const auto& w : sweep_rows)
      if (!std::isnan(w.triad_best) && w.triad_best > best_bw) best_bw = w.triad_best, best = w.threads;
    for (const auto& w : sweep_rows) case_rows.set(w.row, "best_threads", best);
    sweep_rows.clear();
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const StreamCase& sc = cases[i];
    const BwCase& c = sc.bw;
    Outcome o;
    if (!c.skip_reason.empty()) {
      o.status = "skipped", o.reason = c.skip_reason;
    } else {
      try {
        Watchdog::Scope guard(run_out.watchdog(), "case " + std::to_string(id) + " (stream " + c.pu + " " + c.mem +
                                                      " " + c.alloc + " threads " + std::to_string(c.threads) + ")");
        o = run(topo, sc, warmup, reps);
      } catch (const Unsupported& e) {
        o = Outcome{}, o.status = "skipped", o.reason = e.what();
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& e) {
        o = Outcome{}, o.status = "failed", o.reason = e.what();
      }
    }
    const auto& kernels = stream_kernels(c.pu_kind);
    double triad_best = kNaN;
    std::vector<size_t> rows;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const uint64_t bytes = static_cast<uint64_t>(kernels[k].arrays) * c.size;
      std::vector<double> gbps;
      const bool ok = o.status == "ok";
      if (ok && k < o.seconds.size())
        for (size_t r = 0; r < o.seconds[k].size(); ++r) {
          gbps.push_back(static_cast<double>(bytes) / o.seconds[k][r] / 1e9);
          samples.append({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", o.seconds[k][r]},
                          {"bandwidth_GBps", gbps.back()}});
        }
      const Summary sum = ok ? summarize(gbps) : Summary{};
      if (kernels[k].kernel == StreamKernel::Triad) triad_best = sum.max;
      rows.push_back(case_rows.rows());
      case_rows.append({{"case_id", id}, {"pu", c.pu}, {"pu_kind", c.pu_kind}, {"mem", c.mem}, {"alloc", c.alloc},
               {"via", c.via}, {"threads", static_cast<int64_t>(o.threads)}, {"kernel", kernels[k].name},
               {"elements", static_cast<int64_t>(c.size / sizeof(double))},
               {"array_bytes", static_cast<int64_t>(c.size)}, {"bytes", static_cast<int64_t>(bytes)},
               {"status", o.status}, {"reason", o.reason}, {"reps", static_cast<int64_t>(ok ? gbps.size() : 0)},
               {"best_GBps", sum.max}, {"median_GBps", sum.median}, {"min_GBps", sum.min}, {"max_GBps", sum.max},
               {"verified", static_cast<int64_t>(o.verified)}, {"placement", o.placement},
               {"sweep", static_cast<int64_t>(sc.sweep >= 0)}, {"best_threads", static_cast<int64_t>(-1)}});
      std::printf("MEMPATH stream pu=%s mem=%s alloc=%s threads=%d kernel=%s size=%llu status=%s", c.pu.c_str(),
                  c.mem.c_str(), c.alloc.c_str(), o.threads, kernels[k].name.c_str(),
                  static_cast<unsigned long long>(c.size), o.status.c_str());
      if (ok) std::printf(" best_GBps=%.2f median_GBps=%.2f", sum.max, sum.median);
      if (!o.reason.empty()) std::printf(" reason=\"%s\"", o.reason.c_str());
      std::printf("\n");
      ++id;
    }
    std::fflush(stdout);
    if (sc.sweep >= 0)
      for (size_t r : rows) sweep_rows.push_back({r, static_cast<int64_t>(o.threads), triad_best});
    const bool sweep_goes_on = sc.sweep >= 0 && i + 1 < cases.size() && cases[i + 1].sweep == sc.sweep;
    if (!sweep_goes_on) end_sweep();
    file.set_attribute("end_time", utc_now_iso8601());
    file.save();
    if (o.status == "failed") exit_code = kExitFailed;
  }
  std::cerr << "mempath: " << id << " cases written to " << file.path() << "\n";
  return exit_code;
}

}  // namespace mempath
