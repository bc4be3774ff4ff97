#include "apps/memcpy_d2d_runner.hpp"

#include <algorithm>

#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/units.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath {
namespace {

constexpr uint8_t kForwardByte = 0x3C;  // sources of the gpus[0] -> gpus[1] direction
constexpr uint8_t kReverseByte = 0xC3;  // sources of the gpus[1] -> gpus[0] direction (d2d-bidir)

// One direction of a case.
struct Leg {
  int src, dst, stage;
  uint8_t byte;
  std::string tag;  // names its buffers
};

}  // namespace

std::string MemcpyD2dRunner::ensure(const std::string& name, Alloc alloc, const std::string& mem,
                                    uint64_t bytes, uint64_t capacity, bool sweep, uint8_t fill) {
  auto& slot = buffers_[name];
  if (slot) return slot->bytes() >= bytes ? "" : "buffers of " + format_size(bytes) + " do not fit on " + mem + " (" +
                                                     format_size(slot->bytes()) + " could be allocated)";
  const bool host = alloc != Alloc::Device;
  const uint64_t free = free_bytes(mem);
  // Host staging slots hold one chunk size; device buffers the group's largest size.
  const uint64_t size = host ? buffer_capacity(bytes, free, true, false)
                             : buffer_capacity(std::max(bytes, capacity), free, false, sweep);
  if (size < bytes)
    return "buffers of " + format_size(bytes) + " do not fit on " + mem + " (" + format_size(free) +
           " free); valid: a smaller --size, --max-size or --chunk";
  slot = allocate(topo_, alloc, mem, size, fill);
  return "";
}

MemcpyOutcome MemcpyD2dRunner::run(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings,
                                   bool single) {
  return run_memcpy_case(c, [&](MemcpyOutcome& out) { measure(c, capacity, settings, single, out); }, [this] {
    buffers_.clear();
    key_.clear();
  });
}

void MemcpyD2dRunner::measure(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single,
                              MemcpyOutcome& out) {
  if (key_ != c.buffer_key()) {
    buffers_.clear();
    key_ = c.buffer_key();
  }
  const bool staged = c.engine == "staged";
  const int g = c.gpus.at(0), h = c.gpus.at(1);
  std::vector<Leg> legs = {{g, h, staged ? c.host_numas.at(0) : -1, kForwardByte, "fwd"}};
  if (c.direction == "d2d-bidir") legs.push_back({h, g, staged ? c.host_numas.at(1) : -1, kReverseByte, "rev"});

  for (const auto& leg : legs) {
    std::string why = ensure("src:" + leg.tag, Alloc::Device, "gpu" + std::to_string(leg.src), c.size, capacity, c.sweep,
                             leg.byte);
    if (why.empty())
      why = ensure("dst:" + leg.tag, Alloc::Device, "gpu" + std::to_string(leg.dst), c.size, capacity, c.sweep, kClearByte);
    if (why.empty() && staged)
      why = ensure("stage:" + leg.tag + ":" + std::to_string(c.chunk), Alloc::Pinned, "numa" + std::to_string(leg.stage),
                   2 * c.chunk, 0, false, kClearByte);
    if (skipped_for(why, single, out)) return;
  }

  bind_issuing_thread(topo_, c.cpu_numa);
  for (const auto& leg : legs) {
    // Peer copies need the source to reach the destination's memory (the SM kernel runs
    // on the source and writes the peer's memory; the copy engine copy is issued there).
    if (!staged) gpu::enable_peer_access(leg.src, leg.dst);
    gpu::set_device_bytes(leg.dst, buffers_["dst:" + leg.tag]->data(), c.size, kClearByte);
    out.parts.push_back({"d2d", leg.src, staged ? leg.stage : -1, c.size, {}, leg.dst});
  }

  const int cooldown = legs.size() > 1 ? std::max(kMinCooldown, settings.warmup) : 0;
  gpu::CopyRun run;
  if (staged) {
    std::vector<gpu::StagedStream> pipes;
    for (const auto& leg : legs) {
      gpu::StagedStream p;
      p.src_gpu = leg.src;
      p.dst_gpu = leg.dst;
      p.dst = buffers_["dst:" + leg.tag]->data();
      p.src = buffers_["src:" + leg.tag]->data();
      p.bytes = c.size;
      p.stage = buffers_["stage:" + leg.tag + ":" + std::to_string(c.chunk)]->data();
      p.chunk = c.chunk;
      pipes.push_back(p);
    }
    run = gpu::run_staged(pipes, settings.warmup, settings.reps, cooldown);
  } else {
    std::vector<gpu::CopyStream> streams;
    for (const auto& leg : legs) {
      gpu::CopyStream s;
      s.gpu = leg.src;
      s.dir = gpu::CopyDir::D2D;
      s.dst = buffers_["dst:" + leg.tag]->data();
      s.src = buffers_["src:" + leg.tag]->data();
      s.bytes = c.size;
      s.sm = c.engine == "sm";
      s.sm_share = 1;  // each GPU runs one kernel: its own direction's push
      s.dst_gpu = leg.dst;
      streams.push_back(s);
    }
    run = gpu::run_copies(streams, settings.warmup, settings.reps, cooldown);
    if (c.engine == "sm") out.sm_threads = run.sm_threads;
  }
  for (size_t i = 0; i < legs.size(); ++i) out.parts[i].seconds = run.seconds[i];

  uint64_t bad = 0;
  for (const auto& leg : legs)
    bad += gpu::count_device_byte_mismatches(leg.dst, buffers_["dst:" + leg.tag]->data(), c.size, leg.byte);
  judge(out, run.released_late, bad);

  std::vector<std::string> where;
  if (staged)
    for (const auto& leg : legs) where.push_back(placement(*buffers_["stage:" + leg.tag + ":" + std::to_string(c.chunk)]));
  out.placement = join_distinct(where);
}

}  // namespace mempath
