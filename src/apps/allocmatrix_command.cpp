// `mempath allocmatrix`: cudaMemcpy between every source allocator and every destination
// allocator (the paper's Figure 5). Each copy is cudaMemcpyAsync with
// cudaMemcpyDefault followed by a stream synchronise, timed on the host: what a plain
// cudaMemcpy costs an application, whatever the driver picks (copy engine, staging of
// pageable memory, a CPU copy).
#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cstring>
#include <iostream>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kSource = 0x01, kCleared = 0x00;
// Host allocators first, the order the matrix is listed in.
const std::vector<Alloc> kAllocs = {Alloc::System, Alloc::Numa, Alloc::Pinned, Alloc::Registered, Alloc::Managed,
                                    Alloc::Device};
constexpr Repetitions kRepetitions = {10, 2};

// Every byte of dst equals `value`: a GPU kernel for device memory, CPU threads otherwise.
bool holds(const Topology& topo, const Buffer& b, uint8_t value, int gpu) {
  if (b.kind() == Alloc::Device)
    return gpu::count_device_byte_mismatches(gpu, b.data(), b.bytes(), value) == 0;
  std::atomic<uint64_t> bad{0};
  run_on_threads(4, setup_cpus(topo, b.numa()), -1, [&](int i, int n) {
    size_t begin, end;
    page_slice(b.bytes(), i, n, page_size(), &begin, &end);
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
  if (b.kind() == Alloc::Device || b.kind() == Alloc::Managed) gpu::fill(gpu, b.data(), b.bytes(), kCleared);
  else std::memset(b.data(), kCleared, b.bytes());
}

struct MatrixCase {
  std::string host;
  Alloc src_alloc;
  std::string src_mem;
  Alloc dst_alloc;
  std::string dst_mem;
};

struct Copies {
  std::vector<double> seconds;
  std::string placement, dst_placement;
  bool verified = false;
};

class AllocMatrixBenchmark : public Benchmark {
 public:
  AllocMatrixBenchmark()
      : Benchmark({"allocmatrix",
                   "cudaMemcpy between every source and destination allocator",
                   "cudaMemcpy between every source and destination allocator: host memory on --mem, "
                   "device memory on --gpu (the paper's Figure 5)."}) {}
  std::vector<OptionSpec> options() const override {
    std::vector<OptionSpec> specs = {
        {"gpu", "N", "GPU of the device buffers and of the CUDA calls (default 0)"},
        {"mem", "LIST", "NUMA nodes of host buffers, one matrix each: numaN, a comma list, or all "
                        "(default: the GPU's nearest host node)"},
        {"alloc", "LIST", "allocators (default: " + alloc_list(kAllocs) + ")"},
        {"size", "SIZE", "bytes per copy (default 256MiB)"}};
    append(specs, repetition_options(kRepetitions));
    return specs;
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only) require_cuda_build("'mempath allocmatrix' needs a CUDA build");
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    const GpuInfo& info = gpu_option(opts, topo);
    g_ = info.id;
    std::vector<std::string> numa_mems;
    for (const auto& m : topo.memories)
      if (m.numa >= 0) numa_mems.push_back(m.name);
    const std::string mem_opt = opts.get_or("mem", "numa" + std::to_string(std::max(0, info.host_numa)));
    const std::vector<std::string> hosts =
        mem_opt == "all" ? numa_mems : opts.has("mem") ? opts.list("mem") : std::vector<std::string>{mem_opt};
    for (const auto& h : hosts)
      if (std::find(numa_mems.begin(), numa_mems.end(), h) == numa_mems.end())
        throw UsageError("--mem must name NUMA memories of this node, not '" + h + "'; valid: " + join(numa_mems) + ", all");
    const std::vector<Alloc> allocs = opts.has("alloc") ? parse_allocs(opts.list("alloc"), "alloc", kAllocs) : kAllocs;
    size_ = page_multiple_size(opts, 256ULL << 20);
    const Repetitions r = read_repetitions(opts, kRepetitions);
    reps_ = r.reps, warmup_ = r.warmup;
    for (const auto& h : hosts) {
      const Memory* hm = topo.find_mem(h);
      if (2 * size_ > static_cast<uint64_t>(hm->free_bytes) && hm->free_bytes > 0)
        throw UsageError("two buffers of --size " + format_size(size_) + " exceed the " +
                         format_size(hm->free_bytes) + " free on " + h + "; valid: a smaller --size");
    }
    const std::string device_mem = "gpu" + std::to_string(g_);
    for (const auto& host : hosts)
      for (const Alloc sa : allocs)
        for (const Alloc da : allocs) {
          const bool src_dev = sa == Alloc::Device, dst_dev = da == Alloc::Device;
          // device -> device does not depend on the host node: measured with the first one.
          if (src_dev && dst_dev && host != hosts.front()) continue;
          cases_.push_back({host, sa, src_dev ? device_mem : host, da, dst_dev ? device_mem : host});
        }
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const MatrixCase& c = cases_[i];
    return {{"gpu", "gpu" + std::to_string(g_)}, {"src_alloc", alloc_name(c.src_alloc)}, {"src_mem", c.src_mem},
            {"dst_alloc", alloc_name(c.dst_alloc)}, {"dst_mem", c.dst_mem}, {"size", std::to_string(size_)}};
  }
  std::string skip_reason(size_t) const override { return ""; }
  // Modelled: the buffers made, warm-up and timed copies (pageable or managed memory at
  // the pageable rate, device to device at HBM's, else over a PCIe-like link), the
  // destination cleared and checked.
  double expected_seconds(size_t i) const override {
    const MatrixCase& c = cases_[i];
    const auto pagelocked = [](Alloc a) { return a == Alloc::Pinned || a == Alloc::Registered || a == Alloc::Device; };
    const bool on_gpu = c.src_alloc == Alloc::Device && c.dst_alloc == Alloc::Device;
    const double gbps = on_gpu ? rates_.gpu_local_gbps
                        : pagelocked(c.src_alloc) && pagelocked(c.dst_alloc) ? rates_.pcie_gbps
                                                                             : model::kPageableCopyGBps;
    const double size = static_cast<double>(size_);
    // Source and destination by their allocators, the expected bytes in host memory.
    const double made = model::setup_s(size, c.src_alloc) + model::setup_s(size, c.dst_alloc) +
                        model::setup_s(size, Alloc::System);
    return model::kCaseOverheadS + made + model::verify_s(size, Alloc::System) +
           model::seconds((warmup_ + reps_) * size, gbps);
  }

  Outcome run(size_t i) override {
    const MatrixCase& c = cases_[i];
    Outcome out;
    Copies r;
    auto src = allocate(*topo_, c.src_alloc, c.src_mem, size_, kSource);
    auto dst = allocate(*topo_, c.dst_alloc, c.dst_mem, size_, kCleared);
    // The calling thread sits on the host node, as an application's would. The warm-up's
    // copies are cleared before the timed ones, so the data check proves those ran.
    run_on_threads(1, setup_cpus(*topo_, topo_->find_mem(c.host)->numa), -1, [&](int, int) {
      gpu::time_sync_copies(g_, gpu::CopyDir::H2D, dst->data(), src->data(), size_, warmup_, 0);
      if (warmup_ > 0) clear(*dst, g_);
      r.seconds = gpu::time_sync_copies(g_, gpu::CopyDir::H2D, dst->data(), src->data(), size_, 0, reps_);
    });
    // Where the copies left the pages, read before the check: its CPU threads would pull a
    // managed destination to host memory, and the case would be labelled with their node.
    r.placement = placement(*src);
    r.dst_placement = placement(*dst);
    r.verified = holds(*topo_, *dst, kSource, g_);
    if (!r.verified) out.status = "failed", out.reason = "destination differs from the source after the copies";
    out.data = r;
    return out;
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const MatrixCase& c = cases_[i];
    const Copies r = out.data.has_value() ? std::any_cast<Copies>(out.data) : Copies{};
    const bool ok = out.status == "ok";
    std::vector<double> gbps;
    for (double s : r.seconds) gbps.push_back(size_ / s / 1e9);
    const Summary s = ok ? summarize(gbps) : Summary{};
    const auto size = static_cast<int64_t>(size_);
    CaseRows rows;
    if (ok)
      for (size_t k = 0; k < r.seconds.size(); ++k)
        rows.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(k)}, {"src_alloc", std::string(alloc_name(c.src_alloc))},
                                {"src_mem", c.src_mem}, {"dst_alloc", std::string(alloc_name(c.dst_alloc))}, {"dst_mem", c.dst_mem},
                                {"size_bytes", size}, {"time_s", r.seconds[k]}, {"bandwidth_GBps", gbps[k]}});
    rows.cases.push_back({{"case_id", id}, {"src_alloc", std::string(alloc_name(c.src_alloc))}, {"src_mem", c.src_mem},
                          {"dst_alloc", std::string(alloc_name(c.dst_alloc))}, {"dst_mem", c.dst_mem}, {"size_bytes", size},
                          {"status", out.status}, {"reason", out.reason},
                          {"reps", static_cast<int64_t>(ok ? r.seconds.size() : 0)}, {"median_GBps", s.median},
                          {"min_GBps", s.min}, {"max_GBps", s.max}, {"placement", r.placement},
                          {"dst_placement", r.dst_placement}, {"verified", static_cast<int64_t>(r.verified)}});
    return rows;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("src_alloc"), field("src_mem"), field("dst_alloc"), field("dst_mem"), field("size", "size_bytes"),
            field("status"), metric("median_GBps", 2), metric("min_GBps", 2), metric("max_GBps", 2), metric("reps")};
  }

 private:
  const Topology* topo_ = nullptr;
  model::Rates rates_;
  int g_ = 0, reps_ = 10, warmup_ = 2;
  uint64_t size_ = 0;
  std::vector<MatrixCase> cases_;
};

}  // namespace

std::unique_ptr<Benchmark> make_allocmatrix() { return std::make_unique<AllocMatrixBenchmark>(); }

}  // namespace mempath
