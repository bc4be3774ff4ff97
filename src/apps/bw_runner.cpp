#include "apps/bw_runner.hpp"


#include <cmath>

#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/numa_policy.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kSourceByte = 0x01;   // every source buffer holds this byte
constexpr uint8_t kDestByte = 0x00;     // destinations start cleared
constexpr uint64_t kGpuWriteWord = 0x0202020202020202ULL;
constexpr uint64_t kMinBytesPerRep = 256ULL << 20;  // in-cache runs sweep repeatedly

int index_of(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0 ? std::stoi(name.substr(prefix.size())) : -1;
}

void check_fits(const BwCase& c) {
  uint64_t need_src = c.size, need_dst = c.op == Op::Copy ? c.size : 0;
  if (c.op == Op::Copy && c.dst_mem == c.mem) need_src += need_dst, need_dst = 0;
  auto check = [](const std::string& mem, uint64_t need) {
    if (need == 0) return;
    const uint64_t free = free_bytes(mem);
    if (need > free)
      throw UsageError("--size needs " + format_size(need) + " on " + mem + ", which has " +
                       format_size(free) + " free; valid: a smaller --size");
  };
  check(c.mem, need_src);
  if (c.op == Op::Copy) check(c.dst_mem, need_dst);
}

}  // namespace

NoiseRunner::NoiseRunner(const Topology& topo, const NoiseSpec& spec, uint64_t size)
    : topo_(topo), spec_(spec) {
  buffer_ = allocate(topo, spec.alloc, spec.mem, size, kSourceByte);
}

NoiseRunner::~NoiseRunner() { stop(); }

void NoiseRunner::start() {
  const Processor* p = topo_.find_pu(spec_.pu);
  stop_ = false;
  if (p->kind == "gpu") {
    gpu_noise_ = gpu::start_noise(p->gpu, buffer_->data(), buffer_->bytes());
    return;
  }
  const auto& isa = cpu::best_isa();
  const int n = static_cast<int>(p->cpus.size() > static_cast<size_t>(p->cores) && p->cores > 0 ? p->cores : p->cpus.size());
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this, i, n, cpu = p->cpus[i], &isa] {
      pin_this_thread(cpu);
      size_t begin, end;
      slice(buffer_->bytes(), i, n, 4096, &begin, &end);
      volatile uint64_t sink = 0;
      while (!stop_.load(std::memory_order_relaxed))
        sink = sink + isa.read(static_cast<char*>(buffer_->data()) + begin, end - begin);
    });
  }
}

void NoiseRunner::stop() {
  stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
  gpu::stop_noise(gpu_noise_);
  gpu_noise_ = nullptr;
}

int bw_passes(const BwCase& c) {
  return c.in_cache ? static_cast<int>(std::max<uint64_t>(1, (kMinBytesPerRep + c.size - 1) / c.size)) : 1;
}

CaseOutcome unrun_outcome(const BwCase& c, const std::string& status, const std::string& reason) {
  CaseOutcome o;
  o.status = status;
  o.reason = reason;
  o.kernel = c.pu_kind == "cpu" ? cpu::best_isa().name : c.kernel;
  o.threads = c.threads;
  return o;
}

CaseOutcome run_case(const Topology& topo, const BwCase& c, const BwSettings& settings,
                     NoiseRunner* noise) {
  if (!c.skip_reason.empty()) return unrun_outcome(c, "skipped", c.skip_reason);
  CaseOutcome out = unrun_outcome(c, "ok", "");
  check_fits(c);
  out.passes = bw_passes(c);
  out.bytes_per_rep = c.size * out.passes * (c.op == Op::Copy ? 2 : 1);
  try {
    // src: what is read (read, copy); dst: what is written (write, copy).
    std::unique_ptr<Buffer> src, dst;
    if (c.op != Op::Write) src = allocate(topo, c.alloc, c.mem, c.size, kSourceByte);
    if (c.op == Op::Write) dst = allocate(topo, c.alloc, c.mem, c.size, kDestByte);
    if (c.op == Op::Copy) dst = allocate(topo, c.dst_alloc, c.dst_mem, c.size, kDestByte);
    const void* s = src ? src->data() : nullptr;
    void* d = dst ? dst->data() : nullptr;

    if (noise) noise->start();
    struct NoiseStop {
      NoiseRunner* n;
      ~NoiseStop() {
        if (n) n->stop();
      }
    } noise_stop{noise};

    const uint64_t expected_sum = (c.size / 8) * cpu::word_of(kSourceByte) * out.passes;
    if (c.pu_kind == "cpu") {
      auto run = cpu::run_bw(cpu::best_isa(), c.cpus, c.op, s, d, c.size, out.passes,
                             settings.warmup, settings.reps, kSourceByte);
      out.seconds = run.seconds;
      out.verified = run.verified;
      if (!run.verified) out.reason = run.detail;
      if (out.verified) out.reason = cpu_timing_problem(summarize(out.seconds).median);
    } else {
      const int g = topo.find_pu(c.pu)->gpu;
      // Another GPU's memory (gpuH) is reached through peer access, off until enabled.
      for (const Buffer* b : {src.get(), dst.get()})
        if (b && b->gpu() >= 0 && b->gpu() != g) gpu::enable_peer_access(g, b->gpu());
      auto run = gpu::run_bw(g, c.op, s, d, c.size, out.passes, c.kernel == "block",
                             settings.warmup, settings.reps, kGpuWriteWord);
      noise_stop.n = nullptr;
      if (noise) noise->stop();
      out.seconds = run.seconds;
      out.threads = run.threads;
      if (c.op == Op::Read) {
        out.verified = run.read_sum == expected_sum;
        if (!out.verified) out.reason = "read sum differs from the buffer's known content";
      } else {
        const uint64_t word = c.op == Op::Write ? kGpuWriteWord : cpu::word_of(kSourceByte);
        const uint64_t bad = gpu::count_mismatches(g, d, c.size, word);
        out.verified = bad == 0;
        if (!out.verified) out.reason = std::to_string(bad) + " words hold the wrong value after " + op_name(c.op);
      }
      if (out.verified) out.reason = gpu_timing_problem(summarize(out.seconds).median, run.empty_launch_s);
    }
    // A failed data check or timing guard: the numbers are kept but not reported as ok.
    if (!out.verified || !out.reason.empty()) out.status = "failed";
    if (src) out.placement = placement(*src);
    if (dst) (c.op == Op::Write ? out.placement : out.dst_placement) = placement(*dst);
  } catch (const Unsupported& e) {
    out = unrun_outcome(c, "skipped", e.what());
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    out.status = "failed";
    out.reason = e.what();
    out.seconds.clear();
  }
  return out;
}

}  // namespace mempath
