// `mempath allocmatrix`: cudaMemcpy between every source allocator and every destination
// allocator (issue 3, item 3; the paper's Figure 5). Each copy is cudaMemcpyAsync with
// cudaMemcpyDefault followed by a stream synchronise, timed on the host: what a plain
// cudaMemcpy costs an application, whatever the driver picks (copy engine, staging of
// pageable memory, a CPU copy).
#include <algorithm>
#include <cstdio>
#include <atomic>
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
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kSource = 0x01, kCleared = 0x00;
const std::vector<std::string> kAllocs = {"system", "numa", "pinned", "registered", "managed", "device"};

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""},       {"rep", ColumnType::Int, ""},
    {"src_alloc", ColumnType::String, ""},  {"src_mem", ColumnType::String, ""},
    {"dst_alloc", ColumnType::String, ""},  {"dst_mem", ColumnType::String, ""},
    {"size_bytes", ColumnType::Int, "bytes"}, {"time_s", ColumnType::Float, "s"},
    {"bandwidth_GBps", ColumnType::Float, "GB/s"},
};
const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},        {"src_alloc", ColumnType::String, ""},
    {"src_mem", ColumnType::String, ""},     {"dst_alloc", ColumnType::String, ""},
    {"dst_mem", ColumnType::String, ""},     {"size_bytes", ColumnType::Int, "bytes"},
    {"status", ColumnType::String, ""},      {"reason", ColumnType::String, ""},
    {"reps", ColumnType::Int, ""},           {"median_GBps", ColumnType::Float, "GB/s"},
    {"min_GBps", ColumnType::Float, "GB/s"}, {"max_GBps", ColumnType::Float, "GB/s"},
    {"placement", ColumnType::String, ""},   {"dst_placement", ColumnType::String, ""},
    {"verified", ColumnType::Int, ""},
};

// Every byte of dst equals `value`: a GPU kernel for device memory, CPU threads otherwise.
bool holds(const Topology& topo, const Buffer& b, uint8_t value, int gpu) {
  if (b.alloc() == "device")
    return gpu::count_device_byte_mismatches(gpu, b.data(), b.bytes(), value) == 0;
  std::atomic<uint64_t> bad{0};
  run_on_threads(4, setup_cpus(topo, b.numa()), -1, [&](int i, int n) {
    size_t begin, end;
    slice(b.bytes(), i, n, 4096, &begin, &end);
    const auto* p = static_cast<const uint8_t*>(b.data());
    uint64_t local = 0;
    for (size_t k = begin; k < end; ++k) local += p[k] != value;
    bad += local;
  });
  return bad == 0;
}

// Sets every byte of `b` to kCleared where it lies: host memory by this (host-node) thread,
// whose pages are already placed (a GPU may not reach pageable memory: no ATS/HMM); device
// and managed memory by the GPU, so managed pages stay where the copies left them.
void clear(Buffer& b, int gpu) {
  if (b.alloc() == "device" || b.alloc() == "managed") gpu::fill(gpu, b.data(), b.bytes(), kCleared);
  else std::memset(b.data(), kCleared, b.bytes());
}

}  // namespace

int cmd_allocmatrix(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  Options opts("allocmatrix",
               "cudaMemcpy between every source and destination allocator: host memory on --mem,\n"
               "device memory on --gpu (the paper's Figure 5).",
               with_from_option(with_run_options({{"gpu", "N", "GPU of the device buffers and of the CUDA calls (default 0)"},
                {"mem", "LIST", "NUMA nodes of host buffers, one matrix each: numaN, a comma list, or all\n"
                                "                            (default: the GPU's nearest host node)"},
                {"alloc", "LIST", "allocators (default: system, numa, pinned, registered, managed, device)"},
                {"size", "SIZE", "bytes per copy (default 256MiB)"},
                {"reps", "N", "timed repetitions (default 10)"},
                {"warmup", "N", "untimed repetitions first (default 2)"}},
                              "allocmatrix")));
  if (!opts.parse(args)) return kExitOk;
  if (!opts.has("from") && !gpu::built_with_cuda())
    throw UsageError("this mempath build has no CUDA support: 'mempath allocmatrix' needs a CUDA build");
  const Topology topo = planning_topology(opts);
  const int g = static_cast<int>(opts.integer("gpu", 0, 0));
  const GpuInfo* info = topo.find_gpu(g);
  if (!info) throw UsageError("GPU " + std::to_string(g) + " does not exist; this node has " +
                              std::to_string(topo.gpus.size()) + " GPUs");
  std::vector<std::string> numa_mems;
  for (const auto& m : topo.memories)
    if (m.numa >= 0) numa_mems.push_back(m.name);
  const std::string mem_opt = opts.get_or("mem", "numa" + std::to_string(std::max(0, info->host_numa)));
  const std::vector<std::string> hosts =
      mem_opt == "all" ? numa_mems : opts.has("mem") ? opts.list("mem") : std::vector<std::string>{mem_opt};
  for (const auto& h : hosts)
    if (std::find(numa_mems.begin(), numa_mems.end(), h) == numa_mems.end())
      throw UsageError("--mem must name NUMA memories of this node, not '" + h + "'; valid: " + join(numa_mems) + ", all");
  std::vector<std::string> allocs = opts.has("alloc") ? opts.list("alloc") : kAllocs;
  for (const auto& a : allocs)
    if (std::find(kAllocs.begin(), kAllocs.end(), a) == kAllocs.end())
      throw UsageError("invalid --alloc '" + a + "'; valid: " + join(kAllocs));
  const uint64_t size = opts.has("size") ? parse_size(*opts.get("size")) : 256ULL << 20;
  if (size % 4096) throw UsageError("--size must be a multiple of 4KiB");
  const int reps = static_cast<int>(opts.integer("reps", 10, 1, kMaxReps));
  const int warmup = static_cast<int>(opts.integer("warmup", 2, 0, kMaxReps));
  for (const auto& h : hosts) {
    const Memory* hm = topo.find_mem(h);
    if (2 * size > static_cast<uint64_t>(hm->free_bytes) && hm->free_bytes > 0)
      throw UsageError("two buffers of --size " + format_size(size) + " exceed the " +
                       format_size(hm->free_bytes) + " free on " + h + "; valid: a smaller --size");
  }
  if (opts.has("from")) {
    for (const auto& host : hosts)
      for (const auto& sa : allocs)
        for (const auto& da : allocs)
          if (!(sa == "device" && da == "device" && host != hosts.front()))
            print_plan("allocmatrix", {{"gpu", "gpu" + std::to_string(g)}, {"src_alloc", sa}, {"dst_alloc", da},
                                       {"host", host}}, "");
    return kExitOk;
  }
  ResultRun run(opts, "allocmatrix", topo, argv);
  ResultFile& file = run.file();
  file.table("allocmatrix/samples", kSampleColumns);
  file.table("allocmatrix/cases", kCaseColumns);
  const std::string device_mem = "gpu" + std::to_string(g);
  int64_t id = 0;
  int exit_code = kExitOk;
  for (const auto& host : hosts) {
    const Memory* hm = topo.find_mem(host);
    for (const auto& sa : allocs) {
      for (const auto& da : allocs) {
        // device -> device does not depend on the host node: measured with the first one.
        if (sa == "device" && da == "device" && host != hosts.front()) continue;
        const std::string sm = sa == "device" ? device_mem : host, dm = da == "device" ? device_mem : host;
        std::string status = "ok", reason, where, dst_where;
        std::vector<double> seconds;
        bool verified = false;
        try {
          Watchdog::Scope guard(run.watchdog(), "case " + std::to_string(id) + " (allocmatrix " + sa + " " + sm +
                                                    " -> " + da + " " + dm + ")");
          auto src = allocate(topo, sa, sm, size, kSource);
          auto dst = allocate(topo, da, dm, size, kCleared);
          // The calling thread sits on the host node, as an application's would. The warm-up's
          // copies are cleared before the timed ones, so the data check proves those ran.
          run_on_threads(1, setup_cpus(topo, hm->numa), -1, [&](int, int) {
            gpu::time_sync_copies(g, gpu::CopyDir::H2D, dst->data(), src->data(), size, warmup, 0);
            if (warmup > 0) clear(*dst, g);
            seconds = gpu::time_sync_copies(g, gpu::CopyDir::H2D, dst->data(), src->data(), size, 0, reps);
          });
          verified = holds(topo, *dst, kSource, g);
          if (!verified) status = "failed", reason = "destination differs from the source after the copies";
          where = placement(*src);
          dst_where = placement(*dst);
        } catch (const Unsupported& e) {
          status = "skipped", reason = e.what();
        } catch (const std::exception& e) {
          status = "failed", reason = e.what(), seconds.clear();
        }
        std::vector<double> gbps;
        for (double s : seconds) gbps.push_back(size / s / 1e9);
        const Summary s = status == "ok" ? summarize(gbps) : Summary{};
        if (status == "ok")
          for (size_t r = 0; r < seconds.size(); ++r)
            file.table("allocmatrix/samples", kSampleColumns)
                .append({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"src_alloc", sa}, {"src_mem", sm},
                         {"dst_alloc", da}, {"dst_mem", dm}, {"size_bytes", static_cast<int64_t>(size)},
                         {"time_s", seconds[r]}, {"bandwidth_GBps", gbps[r]}});
        file.table("allocmatrix/cases", kCaseColumns)
            .append({{"case_id", id}, {"src_alloc", sa}, {"src_mem", sm}, {"dst_alloc", da}, {"dst_mem", dm},
                     {"size_bytes", static_cast<int64_t>(size)}, {"status", status}, {"reason", reason},
                     {"reps", static_cast<int64_t>(status == "ok" ? seconds.size() : 0)}, {"median_GBps", s.median},
                     {"min_GBps", s.min}, {"max_GBps", s.max}, {"placement", where}, {"dst_placement", dst_where},
                     {"verified", static_cast<int64_t>(verified)}});
        file.set_attribute("end_time", utc_now_iso8601());
        file.save();
        std::printf("MEMPATH allocmatrix src_alloc=%s src_mem=%s dst_alloc=%s dst_mem=%s size=%llu status=%s",
                    sa.c_str(), sm.c_str(), da.c_str(), dm.c_str(), static_cast<unsigned long long>(size), status.c_str());
        if (status == "ok") std::printf(" median_GBps=%.2f min_GBps=%.2f max_GBps=%.2f reps=%zu", s.median, s.min, s.max, seconds.size());
        if (!reason.empty()) std::printf(" reason=\"%s\"", reason.c_str());
        std::printf("\n");
        std::fflush(stdout);
        if (status == "failed") exit_code = kExitFailed;
        ++id;
      }
    }
  }
  std::cerr << "mempath: " << id << " cases written to " << file.path() << "\n";
  return exit_code;
}

}  // namespace mempath
