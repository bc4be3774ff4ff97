#include "apps/memcpy_runner.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/units.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kH2DByte = 0x5A;  // host sources of h2d copies
constexpr uint8_t kD2HByte = 0xA5;  // device sources of d2h copies

// Bytes of host memory that differ from `value`, counted by threads of the buffer's node.
uint64_t count_host_mismatches(const Topology& topo, int numa, const void* ptr, size_t bytes, uint8_t value) {
  auto count = [&](size_t begin, size_t end) {
    const auto* p = static_cast<const uint8_t*>(ptr);
    uint64_t bad = 0;
    for (size_t i = begin; i < end; ++i) bad += p[i] != value;
    return bad;
  };
  if (bytes < (64u << 20)) return count(0, bytes);
  const auto cpus = setup_cpus(topo, numa);
  const int threads = static_cast<int>(std::max<size_t>(1, std::min<size_t>(8, cpus.size())));
  std::atomic<uint64_t> bad{0};
  run_on_threads(threads, cpus, -1, [&](int i, int n) {
    size_t begin, end;
    page_slice(bytes, i, n, page_size(), &begin, &end);
    bad += count(begin, end);
  });
  return bad;
}

}  // namespace

std::string join_distinct(const std::vector<std::string>& items) {
  std::vector<std::string> seen;
  std::string out;
  for (const auto& s : items) {
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
    seen.push_back(s);
    out += (out.empty() ? "" : ";") + s;
  }
  return out;
}

MemcpyOutcome run_memcpy_case(const MemcpyCase& c, const std::function<void(MemcpyOutcome&)>& measure,
                              const std::function<void()>& forget) {
  MemcpyOutcome out;
  if (!c.skip_reason.empty()) {
    out.status = "skipped";
    out.reason = c.skip_reason;
    return out;
  }
  try {
    measure(out);
  } catch (const UsageError&) {
    throw;
  } catch (const Unsupported& e) {
    out = MemcpyOutcome{};
    out.status = "skipped";
    out.reason = e.what();
  } catch (const std::exception& e) {
    out.status = "failed";
    out.reason = e.what();
    out.verified = false;
    for (auto& p : out.parts) p.seconds.clear();
    forget();
  }
  return out;
}

bool skipped_for(const std::string& why, bool single, MemcpyOutcome& out) {
  if (why.empty()) return false;
  if (single) throw UsageError(why);
  out.status = "skipped";
  out.reason = why;
  return true;
}

void judge(MemcpyOutcome& out, bool released_late, uint64_t bad) {
  if (released_late)
    out.reason = "the spin kernel timed out before every copy was queued, so launch overhead is inside the "
                 "timing (the host blocked while queueing)";
  out.verified = bad == 0;
  if (!out.verified)
    out.reason = std::to_string(bad) + " bytes (or words) of the destination differ from the source after the copies";
  if (!out.verified || !out.reason.empty()) out.status = "failed";
}

// The issuing thread runs on the CPUs of `node` with its memory bound there (what
// `numactl --cpunodebind=N --membind=N` does for a whole process).
void bind_issuing_thread(const Topology& topo, int node) {
  const NumaNode* n = topo.find_numa(node);
  if (!n || n->cpus.empty()) throw UsageError("--cpu-numa " + std::to_string(node) + " has no CPUs");
  pin_this_thread(n->cpus);
  bind_this_thread_memory(node);
}

std::string MemcpyRunner::ensure(std::unique_ptr<Buffer>& slot, const MemcpyCase& c, size_t i, bool host,
                                 uint8_t fill, uint64_t capacity) {
  if (slot) return slot->bytes() >= c.size ? "" : "buffers of " + format_size(c.size) + " do not fit (" +
                                                     format_size(slot->bytes()) + " could be allocated)";
  const int g = c.gpus[i];
  const std::string mem = host ? "numa" + std::to_string(c.host_numas[i]) : "gpu" + std::to_string(g);
  const uint64_t free = free_bytes(mem);
  const uint64_t size = buffer_capacity(capacity, free, host, c.sweep);
  if (size < c.size)
    return "buffers of " + format_size(c.size) + " do not fit on " + mem + " (" + format_size(free) +
           " free); valid: a smaller --size or --max-size";
  slot = allocate(topo_, host ? c.alloc : Alloc::Device, mem, size, fill);
  if (host && c.alloc == Alloc::Managed) gpu::keep_managed_at(slot->data(), slot->bytes(), -1, g);
  return "";
}

MemcpyOutcome MemcpyRunner::run(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings,
                                bool single) {
  return run_memcpy_case(c, [&](MemcpyOutcome& out) { measure(c, capacity, settings, single, out); }, [this] {
    buffers_.clear();
    key_.clear();
  });
}

void MemcpyRunner::measure(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single,
                           MemcpyOutcome& out) {
  if (key_ != c.buffer_key()) {
    buffers_.clear();  // frees the previous group's buffers before allocating new ones
    buffers_.resize(c.gpus.size());
    key_ = c.buffer_key();
  }
  const bool h2d = c.direction != "d2h", d2h = c.direction != "h2d";
  for (size_t i = 0; i < c.gpus.size(); ++i) {
    Buffers& b = buffers_[i];
    std::string why;
    if (h2d && why.empty()) why = ensure(b.host_src, c, i, true, kH2DByte, capacity);
    if (h2d && why.empty()) why = ensure(b.dev_dst, c, i, false, kClearByte, capacity);
    if (d2h && why.empty()) why = ensure(b.dev_src, c, i, false, kD2HByte, capacity);
    if (d2h && why.empty()) why = ensure(b.host_dst, c, i, true, kClearByte, capacity);
    if (skipped_for(why, single, out)) return;
  }

  bind_issuing_thread(topo_, c.cpu_numa);
  // Destinations start cleared, so the check after the case sees this case's copies.
  std::vector<gpu::CopyStream> streams;
  const int sm_share = c.direction == "bidir" ? 2 : 1;
  for (size_t i = 0; i < c.gpus.size(); ++i) {
    Buffers& b = buffers_[i];
    const int g = c.gpus[i];
    if (h2d) {
      gpu::set_device_bytes(g, b.dev_dst->data(), c.size, kClearByte);
      streams.push_back({g, gpu::CopyDir::H2D, b.dev_dst->data(), b.host_src->data(), c.size, c.engine == "sm", sm_share});
      out.parts.push_back({"h2d", g, c.host_numas[i], c.size, {}});
    }
    if (d2h) {
      std::memset(b.host_dst->data(), kClearByte, c.size);
      streams.push_back({g, gpu::CopyDir::D2H, b.host_dst->data(), b.dev_src->data(), c.size, c.engine == "sm", sm_share});
      out.parts.push_back({"d2h", g, c.host_numas[i], c.size, {}});
    }
  }

  bool released_late = false;
  if (c.timing == "host") {
    const auto& s = streams.front();  // planned: one stream (latency, pageable)
    out.parts.front().seconds = gpu::time_sync_copies(s.gpu, s.dir, s.dst, s.src, s.bytes, settings.warmup, settings.reps);
  } else {
    const int cooldown = streams.size() > 1 ? std::max(kMinCooldown, settings.warmup) : 0;
    gpu::CopyRun run = gpu::run_copies(streams, settings.warmup, settings.reps, cooldown);
    for (size_t s = 0; s < streams.size(); ++s) out.parts[s].seconds = run.seconds[s];
    if (c.engine == "sm") out.sm_threads = run.sm_threads;
    released_late = run.released_late;
  }

  // Every destination must hold its source's bytes.
  uint64_t bad = 0;
  for (size_t i = 0; i < c.gpus.size(); ++i) {
    Buffers& b = buffers_[i];
    if (h2d) bad += gpu::count_device_byte_mismatches(c.gpus[i], b.dev_dst->data(), c.size, kH2DByte);
    if (d2h) bad += count_host_mismatches(topo_, c.host_numas[i], b.host_dst->data(), c.size, kD2HByte);
  }
  judge(out, released_late, bad);

  std::vector<std::string> where;
  for (const auto& b : buffers_) {
    if (b.host_src) where.push_back(placement(*b.host_src));
    if (b.host_dst) where.push_back(placement(*b.host_dst));
  }
  out.placement = join_distinct(where);
}

}  // namespace mempath
