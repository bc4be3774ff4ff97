// `mempath um`: unified-memory behaviour (issue 3, item 5; docs/cli.md):
//   interleave  GPU writes (cudaMemset bursts of 1..N back-to-back iterations) interleaved
//               with CPU writes (memset, and one store per page) on managed and on
//               system-allocated memory: what page migration costs each side;
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

#include "apps/commands.hpp"
#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "apps/plan_print.hpp"
#include "core/result_run.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/um_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kFill = 0x01;

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""},         {"experiment", ColumnType::String, ""},
    {"alloc", ColumnType::String, ""},        {"gpu", ColumnType::String, ""},
    {"mem", ColumnType::String, ""},          {"size_bytes", ColumnType::Int, "bytes"},
    {"iterations", ColumnType::Int, ""},      {"rep", ColumnType::Int, ""},
    {"run", ColumnType::Int, ""},             {"phase", ColumnType::String, ""},
    {"preceded_by", ColumnType::String, ""},  {"state", ColumnType::String, ""},
    {"bytes", ColumnType::Int, "bytes"},      {"time_s", ColumnType::Float, "s"},
    {"bandwidth_GBps", ColumnType::Float, "GB/s"}, {"placement", ColumnType::String, ""},
};
const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},   {"experiment", ColumnType::String, ""},
    {"alloc", ColumnType::String, ""},  {"gpu", ColumnType::String, ""},
    {"mem", ColumnType::String, ""},    {"size_bytes", ColumnType::Int, "bytes"},
    {"status", ColumnType::String, ""}, {"reason", ColumnType::String, ""},
    {"verified", ColumnType::Int, ""},
};

struct Sample {
  int iterations = -1, rep = -1, run = -1;
  std::string phase, preceded_by, state, placement;
  uint64_t bytes = 0;
  double seconds = 0;
};

struct Context {
  const Topology& topo;
  int gpu;
  std::string mem;
  uint64_t size;
  int reps, max_iterations;
};

double timed_cpu(const std::function<void()>& fn) {
  const double t0 = now_seconds();
  fn();
  return now_seconds() - t0;
}

// interleave: per burst length n and repetition, a GPU burst after a CPU memset and a
// GPU burst after CPU stores of one byte per page, each CPU phase timed too.
bool interleave(const Context& c, const std::string& alloc, std::vector<Sample>& out) {
  auto buf = allocate(c.topo, alloc, c.mem, c.size, kFill);
  auto* p = static_cast<char*>(buf->data());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // CPU phases run on one core of the buffer's node, as a pinned application thread would.
  run_on_threads(1, setup_cpus(c.topo, buf->numa()), -1, [&](int, int) {
    for (int n = 1; n <= c.max_iterations; n *= 2) {
      for (int r = 0; r < c.reps; ++r) {
        for (const char* cpu_phase : {"cpu_memset", "cpu_page_stride"}) {
          const double cpu_s = timed_cpu([&] {
            if (std::strcmp(cpu_phase, "cpu_memset") == 0) std::memset(p, r & 0x7f, c.size);
            else for (size_t off = 0; off < c.size; off += page) p[off] = static_cast<char>(r);
          });
          out.push_back({n, r, -1, cpu_phase, "gpu_memset", "", "", c.size, cpu_s});
          const double gpu_s = gpu::memset_burst(c.gpu, p, c.size, n, 0x5a);
          out.push_back({n, r, -1, "gpu_memset", cpu_phase, "", "", c.size * n, gpu_s});
        }
      }
    }
  });
  // The last GPU burst wrote 0x5a everywhere: the data check of the whole exercise.
  return gpu::count_mismatches(c.gpu, p, c.size, cpu::word_of(0x5a)) == 0;
}

bool inplace(const Context& c, const std::string& alloc, std::vector<Sample>& out) {
  const std::string mem = alloc == "device" ? "gpu" + std::to_string(c.gpu) : c.mem;
  auto buf = allocate(c.topo, alloc, mem, c.size, kFill);
  const int runs = std::max(c.reps, 2);
  const auto seconds = gpu::inplace_update_runs(c.gpu, buf->data(), c.size, runs);
  const std::string where = placement(*buf);
  for (int r = 0; r < runs; ++r)
    out.push_back({-1, 0, r, "inplace", "", r == 0 ? "first" : "later", r + 1 == runs ? where : "",
                   2 * c.size, seconds[r]});
  return gpu::count_mismatches(c.gpu, buf->data(), c.size, cpu::word_of(kFill) + runs) == 0;
}

bool evict(const Context& c, const std::string& alloc, std::vector<Sample>& out) {
  bool ok = true;
  const uint64_t expected = (c.size / 8) * cpu::word_of(kFill);
  for (int r = 0; r < c.reps; ++r) {
    auto buf = allocate(c.topo, alloc, c.mem, c.size, kFill);  // fresh pages: a real cold read
    auto read = [&](const char* state) {
      auto run = gpu::run_bw(c.gpu, Op::Read, buf->data(), nullptr, c.size, 1, false, 0, 1, 0);
      ok = ok && run.read_sum == expected;
      out.push_back({-1, r, -1, "gpu_read", "", state, placement(*buf), c.size, run.seconds.front()});
    };
    read("cold");
    read("warm");
    if (alloc == "managed") {
      gpu::prefetch_managed(buf->data(), c.size, -1);
    } else {
      run_on_threads(1, setup_cpus(c.topo, buf->numa()), buf->numa(),
                     [&](int, int) { std::memset(buf->data(), kFill, c.size); });
    }
    read("evicted");
  }
  return ok;
}

using Experiment = bool (*)(const Context&, const std::string&, std::vector<Sample>&);

struct ExperimentSpec {
  const char* name;
  Experiment run;
  std::vector<std::string> allocs;
};

const std::vector<ExperimentSpec>& experiments() {
  static const std::vector<ExperimentSpec> list = {
      {"interleave", interleave, {"managed", "system"}},
      {"inplace", inplace, {"system", "managed", "device"}},
      {"evict", evict, {"system", "managed", "pinned"}},
  };
  return list;
}

void print_summary(const std::string& exp, const std::string& alloc, const std::string& mem, const Context& c,
                   const std::string& status, const std::string& reason, const std::vector<Sample>& s) {
  std::printf("MEMPATH um exp=%s alloc=%s gpu=gpu%d mem=%s size=%llu status=%s", exp.c_str(), alloc.c_str(),
              c.gpu, mem.c_str(), static_cast<unsigned long long>(c.size), status.c_str());
  auto median_of = [&](auto pred) {
    std::vector<double> v;
    for (const auto& x : s)
      if (pred(x)) v.push_back(x.bytes / x.seconds / 1e9);
    return summarize(v).median;
  };
  if (status == "ok" && exp == "inplace")
    std::printf(" first_GBps=%.2f later_GBps=%.2f placement=%s", median_of([](auto& x) { return x.state == "first"; }),
                median_of([](auto& x) { return x.state == "later"; }), s.back().placement.c_str());
  if (status == "ok" && exp == "evict")
    for (const char* st : {"cold", "warm", "evicted"})
      std::printf(" %s_GBps=%.3f", st, median_of([&](auto& x) { return x.state == st; }));
  if (status == "ok" && exp == "interleave") {
    for (int n : {1, c.max_iterations}) {
      std::vector<double> v;
      for (const auto& x : s)
        if (x.phase == "gpu_memset" && x.iterations == n) v.push_back(x.seconds / n * 1e6);
      std::printf(" gpu_iter_us_n%d=%.1f", n, summarize(v).median);
    }
  }
  if (!reason.empty()) std::printf(" reason=\"%s\"", reason.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int cmd_um(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts("um", "Unified-memory behaviour: interleaved CPU/GPU writes, in-place updates, cold/warm/evicted reads.",
               with_from_option(with_run_options({{"exp", "LIST", "interleave, inplace, evict (default: all)"},
                {"gpu", "N", "CUDA device (default 0)"},
                {"mem", "MEM", "host memory numaN (default: the GPU's nearest host node)"},
                {"alloc", "LIST", "allocators to try (default: each experiment's set)"},
                {"size", "SIZE", "bytes per buffer (default 256MiB)"},
                {"reps", "N", "repetitions (default 3)"},
                {"iters", "N", "longest GPU burst of interleave, a power of two (default 256)"}},
                              "um")));
  if (!opts.parse(args)) return kExitOk;
  if (!opts.has("from") && !gpu::built_with_cuda())
    throw UsageError("this mempath build has no CUDA support: 'mempath um' needs a CUDA build");
  const Topology topo = planning_topology(opts);
  const int g = static_cast<int>(opts.integer("gpu", 0, 0));
  const GpuInfo* info = topo.find_gpu(g);
  if (!info) throw UsageError("GPU " + std::to_string(g) + " does not exist; this node has " +
                              std::to_string(topo.gpus.size()) + " GPUs");
  const std::string mem = opts.get_or("mem", "numa" + std::to_string(std::max(0, info->host_numa)));
  const Memory* m = topo.find_mem(mem);
  if (!m || m->numa < 0) {
    std::vector<std::string> hosts;
    for (const auto& x : topo.memories)
      if (x.numa >= 0) hosts.push_back(x.name);
    throw UsageError("--mem must be a NUMA memory of this node, not '" + mem + "'; valid: " + join(hosts));
  }
  const long long iters = opts.integer("iters", 256, 1, 1 << 20);
  if (iters & (iters - 1)) throw UsageError("--iters must be a power of two, got " + std::to_string(iters));
  Context c{topo, g, mem, opts.has("size") ? parse_size(*opts.get("size")) : 256ULL << 20,
            static_cast<int>(opts.integer("reps", 3, 1, kMaxReps)), static_cast<int>(iters)};
  if (c.size % 4096) throw UsageError("--size must be a multiple of 4KiB");
  if (c.size > static_cast<uint64_t>(m->free_bytes) && m->free_bytes > 0)
    throw UsageError("--size " + format_size(c.size) + " exceeds the " + format_size(m->free_bytes) +
                     " free on " + mem + "; valid: a smaller --size");
  std::vector<std::string> exps = opts.has("exp") ? opts.list("exp") : split_list("interleave,inplace,evict");
  const auto alloc_filter = opts.list("alloc");
  for (const auto& e : exps) {
    bool known = false;
    for (const auto& spec : experiments()) known = known || e == spec.name;
    if (!known) throw UsageError("invalid --exp '" + e + "'; valid: interleave, inplace, evict");
  }
  for (const auto& a : alloc_filter)
    if (a != "system" && a != "managed" && a != "device" && a != "pinned")
      throw UsageError("invalid --alloc '" + a + "' for um; valid: system, managed, device, pinned");

  if (opts.has("from")) {
    for (const auto& spec : experiments()) {
      if (std::find(exps.begin(), exps.end(), spec.name) == exps.end()) continue;
      for (const auto& alloc : spec.allocs)
        if (alloc_filter.empty() || std::find(alloc_filter.begin(), alloc_filter.end(), alloc) != alloc_filter.end())
          print_plan("um", {{"experiment", spec.name}, {"alloc", alloc}, {"gpu", "gpu" + std::to_string(g)}, {"mem", mem}},
                     alloc == "device" ? "" : alloc_problem(topo, "gpu" + std::to_string(g), mem, alloc));
    }
    return kExitOk;
  }
  ResultRun run(opts, "um", topo, argv);
  ResultFile& file = run.file();
  file.table("um/samples", kSampleColumns);
  file.table("um/cases", kCaseColumns);
  int64_t id = 0;
  int exit_code = kExitOk;
  for (const auto& spec : experiments()) {
    if (std::find(exps.begin(), exps.end(), spec.name) == exps.end()) continue;
    for (const auto& alloc : spec.allocs) {
      if (!alloc_filter.empty() && std::find(alloc_filter.begin(), alloc_filter.end(), alloc) == alloc_filter.end())
        continue;
      std::vector<Sample> samples;
      std::string status = "ok", reason = alloc == "device" ? "" : alloc_problem(topo, "gpu" + std::to_string(g), mem, alloc);
      bool verified = false;
      if (!reason.empty()) {
        status = "skipped";
      } else {
        try {
          Watchdog::Scope guard(run.watchdog(), "case " + std::to_string(id) + " (um " + spec.name + " " + alloc + ")");
          verified = spec.run(c, alloc, samples);
          if (!verified) status = "failed", reason = "data check failed after the experiment";
        } catch (const Unsupported& e) {
          status = "skipped", reason = e.what();
        } catch (const std::exception& e) {
          status = "failed", reason = e.what();
        }
      }
      const std::string gpu_name = "gpu" + std::to_string(g);
      const std::string mem_used = alloc == "device" ? gpu_name : mem;  // cudaMalloc memory
      for (const auto& s : samples)
        file.table("um/samples", kSampleColumns)
            .append({{"case_id", id}, {"experiment", std::string(spec.name)}, {"alloc", alloc},
                     {"gpu", gpu_name}, {"mem", mem_used}, {"size_bytes", static_cast<int64_t>(c.size)},
                     {"iterations", static_cast<int64_t>(s.iterations)}, {"rep", static_cast<int64_t>(s.rep)},
                     {"run", static_cast<int64_t>(s.run)}, {"phase", s.phase}, {"preceded_by", s.preceded_by},
                     {"state", s.state}, {"bytes", static_cast<int64_t>(s.bytes)}, {"time_s", s.seconds},
                     {"bandwidth_GBps", s.bytes / s.seconds / 1e9}, {"placement", s.placement}});
      file.table("um/cases", kCaseColumns)
          .append({{"case_id", id}, {"experiment", std::string(spec.name)}, {"alloc", alloc}, {"gpu", gpu_name},
                   {"mem", mem_used}, {"size_bytes", static_cast<int64_t>(c.size)}, {"status", status},
                   {"reason", reason}, {"verified", static_cast<int64_t>(verified)}});
      file.set_attribute("end_time", utc_now_iso8601());
      file.save();
      print_summary(spec.name, alloc, mem_used, c, status, reason, samples);
      if (status == "failed") exit_code = kExitFailed;
      ++id;
    }
  }
  std::cerr << "mempath: " << id << " cases written to " << file.path() << "\n";
  return exit_code;
}

}  // namespace mempath
