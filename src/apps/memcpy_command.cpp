// `mempath memcpy`: host<->device transfer bandwidth and latency (docs/cli.md).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/commands.hpp"
#include "apps/memcpy_d2d_runner.hpp"
#include "apps/memcpy_runner.hpp"
#include "core/error.hpp"
#include "core/memcpy_plan.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/result_run.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {
namespace {

constexpr int kLatencyReps = 1000;
constexpr int kLatencyWarmup = 100;

std::vector<OptionSpec> memcpy_option_specs() {
  return with_run_options({
      {"gpu", "LIST", "GPUs, each in turn: N or gpuN, a comma list, or all (default gpu0;\n"
                      "                            d2d: the GPUs whose pairs are measured, default all)"},
      {"all-gpus", "", "every GPU to/from its own host buffer at once"},
      {"mem", "LIST", "host buffer's NUMA node: numaN, a comma list, or all host nodes\n"
                      "                            (default: each GPU's nearest host node; d2d staged:\n"
                      "                            the staging node, default the source GPU's nearest)"},
      {"cpu-numa", "N", "bind the issuing thread to NUMA node N (default: the GPU's nearest host node)"},
      {"alloc", "LIST", "host buffer: pinned (default), registered, system (pageable), managed"},
      {"direction", "LIST", "h2d, d2h, bidir (both at once on two streams); default all three;\n"
                            "                            or GPU<->GPU: d2d (every ordered pair), d2d-bidir (both ways)"},
      {"engine", "LIST", "ce (cudaMemcpyAsync, copy engines), sm (a copy kernel); default both;\n"
                         "                            d2d also staged (through pinned host memory), default all"},
      {"chunk", "SIZE", "d2d staged: bytes per pipeline chunk (default 16MiB)"},
      {"size", "SIZE", "bytes per transfer (default 512MiB)"},
      {"sweep", "", "transfer sizes 4KiB .. --max-size (powers of two) and the saturation size"},
      {"max-size", "SIZE", "largest size of --sweep (default 4GiB; lowered to what fits)"},
      {"latency", "", "host-observed cudaMemcpyAsync + cudaStreamSynchronize, 4B .. 1MiB"},
      {"reps", "N", "timed repetitions (default 10; --latency 1000)"},
      {"warmup", "N", "untimed repetitions first (default 2; --latency 100)"},
      {"from", "DIR", "plan against a saved topology snapshot: print the cases and exit"},
  }, "memcpy");
}

MemcpyRequest request_from(const Options& opts) {
  MemcpyRequest r;
  r.gpus = opts.list("gpu");
  r.all_gpus = opts.flag("all-gpus");
  r.mems = opts.list("mem");
  r.cpu_numa = static_cast<int>(opts.integer("cpu-numa", -1, 0));
  r.allocs = opts.list("alloc");
  r.directions = opts.list("direction");
  r.engines = opts.list("engine");
  if (auto v = opts.get("size")) r.size = parse_size(*v);  // refuses 0
  r.sweep = opts.flag("sweep");
  if (auto v = opts.get("max-size")) r.max_size = parse_size(*v);
  r.latency = opts.flag("latency");
  if (auto v = opts.get("chunk")) r.chunk = parse_size(*v);  // refuses 0
  return r;
}

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""},         {"rep", ColumnType::Int, ""},
    {"mode", ColumnType::String, ""},         {"gpu", ColumnType::Int, ""},
    {"host_numa", ColumnType::Int, ""},       {"cpu_numa", ColumnType::Int, ""},
    {"alloc", ColumnType::String, ""},        {"direction", ColumnType::String, ""},
    {"part", ColumnType::String, ""},         {"engine", ColumnType::String, ""},
    {"size_bytes", ColumnType::Int, "bytes"}, {"bytes", ColumnType::Int, "bytes"},
    {"time_s", ColumnType::Float, "s"},       {"bandwidth_GBps", ColumnType::Float, "GB/s"},
    {"timing", ColumnType::String, ""},       {"dst_gpu", ColumnType::Int, ""},
};

const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},           {"mode", ColumnType::String, ""},
    {"gpu", ColumnType::Int, ""},               {"gpus", ColumnType::String, ""},
    {"all_gpus", ColumnType::Int, ""},          {"host_numa", ColumnType::Int, ""},
    {"cpu_numa", ColumnType::Int, ""},          {"alloc", ColumnType::String, ""},
    {"direction", ColumnType::String, ""},      {"engine", ColumnType::String, ""},
    {"size_bytes", ColumnType::Int, "bytes"},   {"bytes", ColumnType::Int, "bytes"},
    {"timing", ColumnType::String, ""},         {"via", ColumnType::String, ""},
    {"sweep", ColumnType::Int, ""},             {"status", ColumnType::String, ""},
    {"reason", ColumnType::String, ""},         {"reps", ColumnType::Int, ""},
    {"median_GBps", ColumnType::Float, "GB/s"}, {"min_GBps", ColumnType::Float, "GB/s"},
    {"max_GBps", ColumnType::Float, "GB/s"},    {"h2d_median_GBps", ColumnType::Float, "GB/s"},
    {"d2h_median_GBps", ColumnType::Float, "GB/s"}, {"median_time_s", ColumnType::Float, "s"},
    {"p99_time_s", ColumnType::Float, "s"},     {"min_time_s", ColumnType::Float, "s"},
    {"max_time_s", ColumnType::Float, "s"},     {"saturation_bytes", ColumnType::Int, "bytes"},
    {"sm_threads", ColumnType::Int, ""},        {"placement", ColumnType::String, ""},
    {"verified", ColumnType::Int, ""},
    {"dst_gpu", ColumnType::Int, ""},           {"chunk_bytes", ColumnType::Int, "bytes"},
    {"fwd_median_GBps", ColumnType::Float, "GB/s"}, {"rev_median_GBps", ColumnType::Float, "GB/s"},
};

std::string dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// One repetition's numbers: the parts (one per stream) and, with several, their total.
struct Measured {
  std::vector<Row> sample_rows;
  std::vector<double> total_gbps, total_s, h2d_gbps, d2h_gbps;
  std::vector<double> fwd_gbps, rev_gbps;  // d2d: gpus[0] -> gpus[1] and back
  uint64_t bytes = 0;
  size_t reps = 0;
};

Measured measure(const MemcpyCase& c, const MemcpyOutcome& o, const Row& common) {
  Measured m;
  if (o.status != "ok" || o.parts.empty()) return m;
  m.reps = o.parts.front().seconds.size();
  for (const auto& p : o.parts) m.bytes += p.bytes;
  for (size_t r = 0; r < m.reps; ++r) {
    double total = 0, h2d = 0, d2h = 0, fwd = 0, rev = 0;
    for (const auto& p : o.parts) {
      const double t = p.seconds[r];
      const double gbps = static_cast<double>(p.bytes) / t / 1e9;
      total += gbps;
      if (p.direction == "d2d") (p.gpu == c.gpus.front() ? fwd : rev) += gbps;
      else (p.direction == "h2d" ? h2d : d2h) += gbps;
      Row row = common;
      row["rep"] = static_cast<int64_t>(r);
      row["gpu"] = static_cast<int64_t>(p.gpu);
      row["host_numa"] = static_cast<int64_t>(p.host_numa);
      row["part"] = p.direction;
      row["dst_gpu"] = static_cast<int64_t>(p.dst_gpu);
      row["bytes"] = static_cast<int64_t>(p.bytes);
      row["time_s"] = t;
      row["bandwidth_GBps"] = gbps;
      m.sample_rows.push_back(row);
    }
    // Several streams at once: the total is the sum of their bandwidths; its time_s is
    // the time the total bytes take at that rate (docs/schema.md).
    const double total_s = static_cast<double>(m.bytes) / (total * 1e9);
    if (o.parts.size() > 1) {
      Row row = common;
      row["rep"] = static_cast<int64_t>(r);
      row["gpu"] = static_cast<int64_t>(c.all_gpus ? -1 : c.gpus.front());
      row["host_numa"] = static_cast<int64_t>(c.host_numa());
      row["part"] = std::string("total");
      row["dst_gpu"] = static_cast<int64_t>(c.dst_gpu);
      row["bytes"] = static_cast<int64_t>(m.bytes);
      row["time_s"] = total_s;
      row["bandwidth_GBps"] = total;
      m.sample_rows.push_back(row);
    }
    m.total_gbps.push_back(total);
    m.total_s.push_back(o.parts.size() > 1 ? total_s : o.parts.front().seconds[r]);
    if (c.direction == "h2d" || c.direction == "bidir") m.h2d_gbps.push_back(h2d);
    if (c.direction == "d2h" || c.direction == "bidir") m.d2h_gbps.push_back(d2h);
    if (c.d2d()) m.fwd_gbps.push_back(fwd);
    if (c.direction == "d2d-bidir") m.rev_gbps.push_back(rev);
  }
  return m;
}

struct Finished {  // a written case of the running group
  MemcpyCase c;
  MemcpyOutcome o;
  Row row;
  size_t row_index;
};

void print_summary(const MemcpyCase& c, const MemcpyOutcome& o, const Row& row, int64_t saturation) {
  auto f = [&](const char* k) { return std::get<double>(row.at(k)); };
  const std::string gpu = c.d2d() ? std::to_string(c.gpus.front()) : c.gpu_label();
  std::printf("MEMPATH memcpy mode=%s gpu=%s", c.mode.c_str(), gpu.c_str());
  if (c.d2d()) std::printf(" dst_gpu=%d", c.dst_gpu);
  std::printf(" host_numa=%d cpu_numa=%d alloc=%s direction=%s engine=%s size=%llu "
              "via=%s timing=%s placement=%s status=%s",
              c.host_numa(), c.cpu_numa, c.alloc.c_str(), c.direction.c_str(),
              c.engine.c_str(), static_cast<unsigned long long>(c.size), dash(c.via).c_str(), c.timing.c_str(),
              dash(o.placement).c_str(), o.status.c_str());
  if (o.status == "ok") {
    if (c.mode == "latency") {
      std::printf(" median_us=%.3f p99_us=%.3f min_us=%.3f max_us=%.3f", f("median_time_s") * 1e6,
                  f("p99_time_s") * 1e6, f("min_time_s") * 1e6, f("max_time_s") * 1e6);
    } else {
      std::printf(" median_GBps=%.2f min_GBps=%.2f max_GBps=%.2f", f("median_GBps"), f("min_GBps"), f("max_GBps"));
      if (c.direction == "bidir")
        std::printf(" h2d_median_GBps=%.2f d2h_median_GBps=%.2f", f("h2d_median_GBps"), f("d2h_median_GBps"));
      if (c.direction == "d2d-bidir")
        std::printf(" fwd_median_GBps=%.2f rev_median_GBps=%.2f", f("fwd_median_GBps"), f("rev_median_GBps"));
      if (c.engine == "staged") std::printf(" chunk=%llu", static_cast<unsigned long long>(c.chunk));
      std::printf(" saturation_bytes=%lld", static_cast<long long>(saturation));
    }
    std::printf(" reps=%lld", static_cast<long long>(std::get<int64_t>(row.at("reps"))));
  }
  if (!o.reason.empty()) std::printf(" reason=\"%s\"", o.reason.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int cmd_memcpy(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts("memcpy",
               "Host<->device transfers: copy-engine and SM copies, h2d/d2h/bidirectional, size sweep,\n"
               "small-transfer latency; GPU<->GPU peer and staged copies (--direction d2d) (docs/cli.md).",
               memcpy_option_specs());
  if (!opts.parse(args)) return kExitOk;
  const bool plan_only = opts.has("from");
  if (!plan_only && !gpu::built_with_cuda())
    throw UsageError("this mempath build has no CUDA support: 'mempath memcpy' needs a CUDA build "
                     "(rebuild where nvcc is found)");
  const Topology topo = plan_only ? load_snapshot(*opts.get("from")) : discover();
  const MemcpyRequest request = request_from(opts);
  MemcpySettings settings;
  settings.reps = static_cast<int>(opts.integer("reps", request.latency ? kLatencyReps : 10, 1, kMaxReps));
  settings.warmup = static_cast<int>(opts.integer("warmup", request.latency ? kLatencyWarmup : 2, 0, kMaxReps));
  const std::vector<MemcpyCase> cases = plan_memcpy(topo, request);

  if (plan_only) {
    for (const auto& c : cases) {
      if (c.d2d()) {
        std::printf("%-9s gpu=%-3d dst_gpu=%-3d host_numa=%-2d cpu_numa=%-2d %-6s %-9s %-6s size=%-7s", c.mode.c_str(),
                    c.gpus.front(), c.dst_gpu, c.host_numa(), c.cpu_numa, c.alloc.c_str(), c.direction.c_str(),
                    c.engine.c_str(), format_size(c.size).c_str());
        if (c.engine == "staged") std::printf(" chunk=%s", format_size(c.chunk).c_str());
        std::printf(" via=%s", dash(c.via).c_str());
        if (!c.skip_reason.empty()) std::printf("  skipped: %s", c.skip_reason.c_str());
        std::printf("\n");
        continue;
      }
      std::printf("%-9s gpu=%-3s host_numa=%-2d cpu_numa=%-2d %-10s %-5s %-2s size=%-7s via=%s", c.mode.c_str(),
                  c.gpu_label().c_str(), c.host_numa(), c.cpu_numa, c.alloc.c_str(), c.direction.c_str(),
                  c.engine.c_str(), format_size(c.size).c_str(), dash(c.via).c_str());
      if (!c.skip_reason.empty()) std::printf("  skipped: %s", c.skip_reason.c_str());
      std::printf("\n");
    }
    return kExitOk;
  }

  // The largest size of each buffer group: a sweep allocates its buffers once.
  std::map<std::string, uint64_t> capacity;
  for (const auto& c : cases) capacity[c.buffer_key()] = std::max(capacity[c.buffer_key()], c.size);

  ResultRun run(opts, "memcpy", topo, argv);
  ResultFile& file = run.file();
  Table& samples = file.table("memcpy/samples", kSampleColumns);
  Table& case_table = file.table("memcpy/cases", kCaseColumns);

  MemcpyRunner runner(topo);
  MemcpyD2dRunner d2d_runner(topo);
  int exit_code = kExitOk;
  const bool single = cases.size() == 1;
  int64_t next_id = 0;
  std::vector<Finished> group;

  // Each case is saved when it ends; a group (the sizes of one sweep) learns its
  // saturation size, and is printed, once all of its sizes ran.
  auto write_case = [&](const MemcpyCase& c, MemcpyOutcome o) {
    Row common = {{"case_id", next_id}, {"mode", c.mode}, {"cpu_numa", static_cast<int64_t>(c.cpu_numa)},
                  {"alloc", c.alloc}, {"direction", c.direction}, {"engine", c.engine},
                  {"size_bytes", static_cast<int64_t>(c.size)}, {"timing", c.timing}};
    ++next_id;
    Measured m = measure(c, o, common);
    const Summary s = o.status == "ok" ? summarize(m.total_gbps) : Summary{};
    const Summary t = o.status == "ok" ? summarize(m.total_s) : Summary{};
    Row row = common;
    row.erase("rep");
    row["gpu"] = static_cast<int64_t>(c.all_gpus ? -1 : c.gpus.front());
    row["gpus"] = ints(c.gpus);
    row["all_gpus"] = static_cast<int64_t>(c.all_gpus);
    row["host_numa"] = static_cast<int64_t>(c.host_numa());
    uint64_t bytes = 0;
    for (const auto& p : o.parts) bytes += p.bytes;
    if (bytes == 0)
      bytes = c.d2d() ? c.size * (c.direction == "d2d-bidir" ? 2 : 1)
                      : c.size * c.gpus.size() * (c.direction == "bidir" ? 2 : 1);
    row["bytes"] = static_cast<int64_t>(bytes);
    row["via"] = c.via;
    row["sweep"] = static_cast<int64_t>(c.sweep);
    row["status"] = o.status;
    row["reason"] = o.reason;
    row["reps"] = static_cast<int64_t>(o.status == "ok" ? m.reps : 0);
    row["median_GBps"] = s.median;
    row["min_GBps"] = s.min;
    row["max_GBps"] = s.max;
    row["h2d_median_GBps"] = o.status == "ok" && !m.h2d_gbps.empty() ? summarize(m.h2d_gbps).median : std::nan("");
    row["d2h_median_GBps"] = o.status == "ok" && !m.d2h_gbps.empty() ? summarize(m.d2h_gbps).median : std::nan("");
    row["median_time_s"] = t.median;
    row["p99_time_s"] = o.status == "ok" ? percentile(m.total_s, 99) : std::nan("");
    row["min_time_s"] = t.min;
    row["max_time_s"] = t.max;
    row["sm_threads"] = static_cast<int64_t>(o.sm_threads);
    row["placement"] = o.placement;
    row["verified"] = static_cast<int64_t>(o.verified);
    row["dst_gpu"] = static_cast<int64_t>(c.dst_gpu);
    row["chunk_bytes"] = c.engine == "staged" ? static_cast<int64_t>(c.chunk) : int64_t{-1};
    row["fwd_median_GBps"] = o.status == "ok" && !m.fwd_gbps.empty() ? summarize(m.fwd_gbps).median : std::nan("");
    row["rev_median_GBps"] = o.status == "ok" && !m.rev_gbps.empty() ? summarize(m.rev_gbps).median : std::nan("");
    row["saturation_bytes"] = int64_t{-1};
    for (const auto& r : m.sample_rows) samples.append(r);
    group.push_back({c, std::move(o), row, case_table.rows()});
    case_table.append(row);
    file.set_attribute("end_time", utc_now_iso8601());
    file.save();
  };
  auto end_group = [&] {
    if (group.empty()) return;
    const bool sweep = group.front().c.sweep && group.front().c.mode == "bandwidth";
    std::vector<uint64_t> sizes;
    std::vector<double> medians;
    for (const auto& f : group) sizes.push_back(f.c.size), medians.push_back(std::get<double>(f.row.at("median_GBps")));
    const int64_t saturation = sweep ? saturation_size(sizes, medians) : -1;
    if (sweep) {
      for (const auto& f : group) case_table.set(f.row_index, "saturation_bytes", saturation);
      file.save();
    }
    for (auto& f : group) {
      f.row["saturation_bytes"] = saturation;
      print_summary(f.c, f.o, f.row, saturation);
      if (f.o.status == "failed") exit_code = kExitFailed;
    }
    group.clear();
  };

  for (size_t i = 0; i < cases.size(); ++i) {
    const MemcpyCase& c = cases[i];
    if (!group.empty() && group.front().c.group_key() != c.group_key()) end_group();
    MemcpyOutcome o;
    {
      Watchdog::Scope guard(run.watchdog(), "case " + std::to_string(i) + " (memcpy " + c.mode + " " + c.direction +
                                                " " + c.engine + " " + c.alloc + " " + format_size(c.size) + ")");
      o = c.d2d() ? d2d_runner.run(c, capacity[c.buffer_key()], settings, single)
                  : runner.run(c, capacity[c.buffer_key()], settings, single);
    }
    write_case(c, std::move(o));
  }
  end_group();
  std::cerr << "mempath: " << cases.size() << " cases written to " << file.path() << "\n";
  return exit_code;
}

}  // namespace mempath
