#include "apps/bw_runner.hpp"


#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/numa_policy.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "core/units.hpp"
#include "cpu/cpu_bw.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kSourceByte = 0x01;   // every source buffer holds this byte
constexpr uint8_t kDestByte = 0x00;     // destinations start cleared
constexpr uint64_t kGpuWriteWord = 0x0202020202020202ULL;
constexpr uint64_t kMinBytesPerRep = 256ULL << 20;  // in-cache runs sweep repeatedly
constexpr size_t kNoiseChunk = 256 << 10;             // a CPU noise thread's read between counts

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

NoiseRunner::NoiseRunner(const Topology& topo, const NoiseSpec& spec, const Buffer& buffer, uint8_t fill)
    : topo_(topo), spec_(spec), buffer_(buffer), fill_(fill) {}

NoiseRunner::~NoiseRunner() {
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; the case that owned the reader is failing already.
  }
}

void NoiseRunner::start() {
  const Processor* p = topo_.find_pu(spec_.pu);
  stop_ = false;
  stopped_ = false;
  if (p->kind == PuKind::Gpu) {
    gpu_noise_ = gpu::start_noise(p->gpu, buffer_.data(), buffer_.bytes(), fill_);
    return;
  }
  const auto& isa = cpu::best_isa();
  const int n = static_cast<int>(spec_.cpus.size());
  counters_ = std::make_unique<Counter[]>(n);
  reading_ = 0;
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this, i, n, &isa] {
      try {
        pin_this_thread(spec_.cpus[i]);
      } catch (const std::exception& e) {
        counters_[i].error = e.what();
        reading_.fetch_add(1);
        return;
      }
      size_t begin, end;
      slice(buffer_.bytes(), i, n, kNoiseChunk, &begin, &end);
      const char* base = static_cast<const char*>(buffer_.data());
      Counter& mine = counters_[i];
      reading_.fetch_add(1);
      // Chunks keep the flag checks and the counter updates frequent (tens of us apart) and
      // each chunk's sum is compared with the fill's, so no load can be dropped.
      for (size_t pos = begin; !stop_.load(std::memory_order_relaxed) && end > begin;) {
        const size_t len = std::min(kNoiseChunk, end - pos);
        if (isa.read(base + pos, len) != (len / 8) * cpu::word_of(fill_)) ++mine.bad_chunks;
        mine.bytes.store(mine.bytes.load(std::memory_order_relaxed) + len, std::memory_order_relaxed);
        pos = pos + len >= end ? begin : pos + len;
      }
    });
  }
  while (reading_.load() < n) std::this_thread::yield();
  for (int i = 0; i < n; ++i)
    if (!counters_[i].error.empty()) {
      const std::string error = "noise reader on " + spec_.pu + ": " + counters_[i].error;
      stop();
      throw std::runtime_error(error);
    }
}

uint64_t NoiseRunner::bytes_so_far() const {
  if (gpu_noise_) return gpu::noise_progress(gpu_noise_);
  uint64_t total = 0;
  for (size_t i = 0; i < threads_.size(); ++i) total += counters_[i].bytes.load(std::memory_order_relaxed);
  return total;
}

void NoiseRunner::open_window() {
  open_bytes_ = bytes_so_far();
  open_s_ = now_seconds();
  opened_ = true;
}

void NoiseRunner::close_window() {
  close_s_ = now_seconds();
  close_bytes_ = bytes_so_far();
  closed_ = true;
}

NoiseWindow NoiseRunner::stop() {
  NoiseWindow w;
  if (stopped_) return w;
  stopped_ = true;
  stop_ = true;
  for (auto& t : threads_) t.join();
  uint64_t bad = 0;
  for (size_t i = 0; i < threads_.size(); ++i) bad += counters_[i].bad_chunks;
  w.threads = static_cast<int>(threads_.size());
  w.verified = bad == 0;
  threads_.clear();
  if (gpu_noise_) {
    const gpu::NoiseTotal total = gpu::stop_noise(gpu_noise_);
    gpu_noise_ = nullptr;
    w.threads = total.threads;
    w.verified = total.verified;
  }
  if (opened_ && closed_) {
    w.bytes = close_bytes_ - open_bytes_;
    w.seconds = close_s_ - open_s_;
  }
  return w;
}

const Buffer& NoiseBuffers::get(const NoiseSpec& spec, uint8_t fill) {
  auto& slot = buffers_[spec.buffer_key()];
  if (!slot) slot = allocate(topo_, spec.alloc, spec.mem, spec.size, fill);
  return *slot;
}

int bw_passes(const BwCase& c) {
  return c.in_cache ? static_cast<int>(std::max<uint64_t>(1, (kMinBytesPerRep + c.size - 1) / c.size)) : 1;
}

CaseOutcome unrun_outcome(const BwCase& c, const std::string& status, const std::string& reason) {
  CaseOutcome o;
  o.status = status;
  o.reason = reason;
  o.kernel = c.pu_kind == PuKind::Cpu ? cpu::best_isa().name : c.kernel;
  o.threads = c.threads;
  o.blocks = c.pu_kind == PuKind::Cpu ? -1 : c.kernel == "block" ? 1 : c.blocks > 0 ? c.blocks : -1;
  o.noise_threads = c.noise.empty() || c.noise.cpus.empty() ? -1 : static_cast<int>(c.noise.cpus.size());
  return o;
}

CaseOutcome run_case(const Topology& topo, const BwCase& c, const BwSettings& settings,
                     NoiseBuffers* noise_buffers) {
  if (!c.skip_reason.empty()) return unrun_outcome(c, "skipped", c.skip_reason);
  CaseOutcome out = unrun_outcome(c, "ok", "");
  // The noise buffer first (kept for later cases), so the check below sees what is left.
  const Buffer* noise_buffer = nullptr;
  if (!c.noise.empty()) {
    try {
      noise_buffer = &noise_buffers->get(c.noise, kSourceByte);
    } catch (const Unsupported& e) {
      return unrun_outcome(c, "skipped", std::string("noise buffer: ") + e.what());
    }
  }
  check_fits(c);
  out.passes = bw_passes(c);
  out.bytes_per_rep = c.size * out.passes * (c.op == Op::Copy ? 2 : 1);
  try {
    // src: what is read (read, copy); dst: what is written (write, copy).
    std::unique_ptr<Buffer> src, dst;
    // A case that runs has its allocators (a path without one is skipped).
    if (c.op != Op::Write) src = allocate(topo, *c.alloc, c.mem, c.size, kSourceByte);
    if (c.op == Op::Write) dst = allocate(topo, *c.alloc, c.mem, c.size, kDestByte);
    if (c.op == Op::Copy) dst = allocate(topo, *c.dst_alloc, c.dst_mem, c.size, kDestByte);
    const void* s = src ? src->data() : nullptr;
    void* d = dst ? dst->data() : nullptr;

    // The reader runs from before the first warm-up repetition until the last timed one
    // has ended; its window is marked at those two points (docs/methodology.md).
    std::unique_ptr<NoiseRunner> noise;
    NoiseWindow window;
    std::function<void()> open, close;
    if (noise_buffer) {
      noise = std::make_unique<NoiseRunner>(topo, c.noise, *noise_buffer, kSourceByte);
      noise->start();
      open = [&] { noise->open_window(); };
      close = [&] {
        noise->close_window();
        window = noise->stop();
      };
    }

    const uint64_t expected_sum = (c.size / 8) * cpu::word_of(kSourceByte) * out.passes;
    if (c.pu_kind == PuKind::Cpu) {
      auto run = cpu::run_bw(cpu::best_isa(), c.cpus, c.op, s, d, c.size, out.passes,
                             settings.warmup, settings.reps, kSourceByte, open, close);
      out.seconds = run.seconds;
      out.verified = run.verified;
      if (!run.verified) out.reason = run.detail;
      if (out.verified) out.reason = cpu_timing_problem(summarize(out.seconds).median);
    } else {
      const int g = topo.find_pu(c.pu)->gpu;
      // Another GPU's memory (gpuH) is reached through peer access, off until enabled.
      for (const Buffer* b : {src.get(), dst.get()})
        if (b && b->gpu() >= 0 && b->gpu() != g) gpu::enable_peer_access(g, b->gpu());
      const int grid = c.kernel == "block" ? gpu::kSingleBlock : c.blocks > 0 ? c.blocks : gpu::kDefaultGrid;
      auto run = gpu::run_bw(g, c.op, s, d, c.size, out.passes, grid, settings.warmup, settings.reps,
                             kGpuWriteWord, open, close);
      out.seconds = run.seconds;
      out.threads = run.threads;
      out.blocks = run.blocks;
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
    if (noise) {
      out.noise_bytes = window.bytes;
      out.noise_seconds = window.seconds;
      out.noise_threads = window.threads;
      if (!window.verified && out.reason.empty())
        out.reason = "the noise reader's sums differ from its buffer's known content";
      if (window.seconds <= 0 && out.reason.empty()) out.reason = "the noise reader's window was not marked";
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
