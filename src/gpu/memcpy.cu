// Host<->device transfers (memcpy_api.hpp): copy-engine copies and an SM copy kernel,
// queued behind a spin kernel that a host-mapped flag releases, one CUDA event after each
// copy, so every timed interval holds one copy and no launch or enqueue cost.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/gpu_api.hpp"
#include "gpu/memcpy_api.hpp"
#include "gpu/tiles.cuh"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 512;
// Enqueueing a few hundred copies takes milliseconds; a spin kernel still waiting after
// this long means the host blocked while queueing (e.g. a transfer that is synchronous
// for this memory), so the timing would include launch overhead: the case fails.
constexpr unsigned long long kSpinTimeoutNs = 5ULL * 1000 * 1000 * 1000;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds its stream until the host sets flag[0]; sets flag[1] when it gave up waiting.
__global__ void spin_kernel(volatile int* flag, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (flag[0] == 0) {
    if (global_ns() - start > timeout_ns) {
      flag[1] = 1;
      break;
    }
  }
}

// The block-tile copy of the bandwidth kernels (tiles.cuh); block 0 also copies the tail
// bytes past the last whole vector.
__global__ void sm_copy_kernel(Vec* __restrict__ dst, const Vec* __restrict__ src, size_t n,
                               unsigned char* __restrict__ dst_tail,
                               const unsigned char* __restrict__ src_tail, unsigned tail) {
  copy_tiles(dst, src, n);
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

int resident_blocks(int gpu) {
  int sms = 0, per_sm = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sm_copy_kernel, kBlock, 0), "occupancy");
  return sms * std::max(1, per_sm);
}

// The flag the spin kernels wait on: pinned, mapped for every GPU.
struct Latch {
  int* host = nullptr;
  Latch() {
    cuda_check(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
    host[0] = host[1] = 0;
  }
  ~Latch() { cudaFreeHost(host); }
  int* device() const {
    int* d = nullptr;
    cuda_check(cudaHostGetDevicePointer(&d, host, 0), "cudaHostGetDevicePointer");
    return d;
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *reinterpret_cast<volatile int*>(host) = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  bool timed_out() const { return *reinterpret_cast<volatile int*>(host + 1) != 0; }
};

// One queue of copies with its events; frees what it took on every path.
struct Lane {
  int gpu = 0;
  cudaStream_t stream = nullptr;
  Events events;  // created on the lane's GPU: gpu's initialiser selects it first
  Lane(int g, size_t event_count) : gpu((use_device(g), g)), events(event_count) {
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~Lane() {
    cudaSetDevice(gpu);
    if (stream) cudaStreamSynchronize(stream);
    if (stream) cudaStreamDestroy(stream);
  }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  double seconds(size_t a, size_t b) const { return events.seconds(a, b); }
};

}  // namespace

CopyRun run_copies(const std::vector<CopyStream>& streams, int warmup, int reps, int cooldown) {
  const int total = warmup + reps + cooldown;
  CopyRun run;
  Latch latch;
  std::vector<std::unique_ptr<Lane>> lanes;
  // On every way out (a failed launch included) the spin kernels are released before the
  // lanes wait for their streams.
  struct ReleaseOnExit {
    Latch& latch;
    ~ReleaseOnExit() { latch.release(); }
  } release_on_exit{latch};
  struct Launch {
    Vec* dst;
    const Vec* src;
    size_t n;
    unsigned char* dst_tail;
    const unsigned char* src_tail;
    unsigned tail;
    int blocks;
  };
  std::vector<Launch> launches(streams.size());
  for (size_t s = 0; s < streams.size(); ++s) {
    const CopyStream& c = streams[s];
    lanes.push_back(std::make_unique<Lane>(c.gpu, static_cast<size_t>(total) + 1));
    if (c.sm) {
      auto* d = static_cast<unsigned char*>(device_address(c.dst));
      auto* src = static_cast<const unsigned char*>(device_address(c.src));
      const size_t n = c.bytes / sizeof(Vec);
      const int blocks = std::max(1, resident_blocks(c.gpu) / std::max(1, c.sm_share));
      launches[s] = {reinterpret_cast<Vec*>(d), reinterpret_cast<const Vec*>(src), n, d + n * sizeof(Vec),
                     src + n * sizeof(Vec), static_cast<unsigned>(c.bytes - n * sizeof(Vec)), blocks};
      run.sm_threads = blocks * kBlock;
    }
  }
  // Hold every stream, then queue all copies (interleaved over the streams, so that no
  // stream's copies are queued much earlier than another's), then release them at once.
  for (size_t s = 0; s < streams.size(); ++s) {
    Lane& lane = *lanes[s];
    use_device(lane.gpu);
    spin_kernel<<<1, 1, 0, lane.stream>>>(latch.device(), kSpinTimeoutNs);
    cuda_check(cudaGetLastError(), "spin kernel launch");
    cuda_check(cudaEventRecord(lane.events.e[0], lane.stream), "cudaEventRecord");
  }
  for (int r = 0; r < total; ++r) {
    for (size_t s = 0; s < streams.size(); ++s) {
      const CopyStream& c = streams[s];
      Lane& lane = *lanes[s];
      if (streams.size() > 1) cuda_check(cudaSetDevice(lane.gpu), "cudaSetDevice");
      if (c.sm) {
        const Launch& l = launches[s];
        sm_copy_kernel<<<l.blocks, kBlock, 0, lane.stream>>>(l.dst, l.src, l.n, l.dst_tail, l.src_tail, l.tail);
        cuda_check(cudaGetLastError(), "SM copy launch");
      } else if (c.dst_gpu >= 0) {
        cuda_check(cudaMemcpyPeerAsync(c.dst, c.dst_gpu, c.src, c.gpu, c.bytes, lane.stream), "cudaMemcpyPeerAsync");
      } else {
        cuda_check(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDefault, lane.stream), "cudaMemcpyAsync");
      }
      cuda_check(cudaEventRecord(lane.events.e[r + 1], lane.stream), "cudaEventRecord");
    }
  }
  latch.release();
  for (auto& lane : lanes) {
    cuda_check(cudaSetDevice(lane->gpu), "cudaSetDevice");
    cuda_check(cudaStreamSynchronize(lane->stream), "copies");
  }
  run.released_late = latch.timed_out();
  run.seconds.resize(streams.size());
  for (size_t s = 0; s < streams.size(); ++s) {
    cuda_check(cudaSetDevice(lanes[s]->gpu), "cudaSetDevice");
    for (int r = warmup; r < warmup + reps; ++r) run.seconds[s].push_back(lanes[s]->seconds(r, r + 1));
  }
  return run;
}

void enable_peer_access(int gpu, int peer) {
  int can = 0;
  cuda_check(cudaDeviceCanAccessPeer(&can, gpu, peer), "cudaDeviceCanAccessPeer");
  if (!can) throw Unsupported("no peer access from GPU " + std::to_string(gpu) + " to GPU " + std::to_string(peer));
  use_device(gpu);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the sticky-free error of an earlier case's enable
    return;
  }
  cuda_check(status, "cudaDeviceEnablePeerAccess");
}

CopyRun run_staged(const std::vector<StagedStream>& pipes, int warmup, int reps, int cooldown) {
  const int total = warmup + reps + cooldown;
  CopyRun run;
  Latch latch;
  // A pipeline: the source GPU's stream (D2H into the staging slots) and the destination
  // GPU's stream (H2D out of them, and the timing events). Slot s is free again for a D2H
  // once the H2D that read it recorded h2d_done[s]; its data is there for the H2D once the
  // D2H recorded d2h_done[s].
  struct Pipe {
    std::unique_ptr<Lane> out, in;
    cudaEvent_t d2h_done[2] = {nullptr, nullptr};
    cudaEvent_t h2d_done[2] = {nullptr, nullptr};
    ~Pipe() {
      for (cudaEvent_t e : d2h_done)
        if (e) cudaEventDestroy(e);
      for (cudaEvent_t e : h2d_done)
        if (e) cudaEventDestroy(e);
    }
  };
  std::vector<std::unique_ptr<Pipe>> lines;
  struct ReleaseOnExit {
    Latch& latch;
    ~ReleaseOnExit() { latch.release(); }
  };
  for (const auto& p : pipes) {
    if (p.chunk == 0 || !p.stage) throw std::runtime_error("staged copy without a staging buffer");
    auto line = std::make_unique<Pipe>();
    line->out = std::make_unique<Lane>(p.src_gpu, 0);
    for (auto& e : line->d2h_done) cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    line->in = std::make_unique<Lane>(p.dst_gpu, static_cast<size_t>(total) + 1);
    for (auto& e : line->h2d_done) cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    lines.push_back(std::move(line));
  }
  // Declared after the lanes: released (on every way out) before they wait for their streams.
  ReleaseOnExit release_on_exit{latch};
  // A long pipeline (a 4 GiB sweep size in 16 MiB chunks: thousands of operations per
  // stream) would fill a stream's queue while the spin kernel holds it, and the host would
  // block: the spin kernel is released once this many operations wait on a stream. The GPU
  // then has that much queued work (>= 170 chunks) ahead of a host that queues a chunk's
  // six calls far faster than a chunk copies, so enqueue cost stays out of the timing.
  constexpr size_t kQueuedBeforeRelease = 512;
  size_t queued = 0;
  for (auto& line : lines) {
    Lane& in = *line->in;
    use_device(in.gpu);
    spin_kernel<<<1, 1, 0, in.stream>>>(latch.device(), kSpinTimeoutNs);
    cuda_check(cudaGetLastError(), "spin kernel launch");
    cuda_check(cudaEventRecord(in.events.e[0], in.stream), "cudaEventRecord");
  }
  for (int r = 0; r < total; ++r) {
    for (size_t k = 0; k < pipes.size(); ++k) {
      const StagedStream& p = pipes[k];
      Pipe& line = *lines[k];
      Lane& out = *line.out;
      Lane& in = *line.in;
      auto* stage = static_cast<char*>(p.stage);
      const auto* src = static_cast<const char*>(p.src);
      auto* dst = static_cast<char*>(p.dst);
      // Repetition r starts when the previous one ended on the destination (events[r]).
      cuda_check(cudaSetDevice(out.gpu), "cudaSetDevice");
      cuda_check(cudaStreamWaitEvent(out.stream, in.events.e[r], 0), "cudaStreamWaitEvent");
      size_t i = 0;
      for (size_t off = 0; off < p.bytes; off += p.chunk, ++i) {
        const size_t n = std::min(p.chunk, p.bytes - off);
        const int slot = static_cast<int>(i % 2);
        char* staged = stage + slot * p.chunk;
        cuda_check(cudaSetDevice(out.gpu), "cudaSetDevice");
        if (i >= 2) cuda_check(cudaStreamWaitEvent(out.stream, line.h2d_done[slot], 0), "cudaStreamWaitEvent");
        cuda_check(cudaMemcpyAsync(staged, src + off, n, cudaMemcpyDeviceToHost, out.stream), "cudaMemcpyAsync D2H");
        cuda_check(cudaEventRecord(line.d2h_done[slot], out.stream), "cudaEventRecord");
        cuda_check(cudaSetDevice(in.gpu), "cudaSetDevice");
        cuda_check(cudaStreamWaitEvent(in.stream, line.d2h_done[slot], 0), "cudaStreamWaitEvent");
        cuda_check(cudaMemcpyAsync(dst + off, staged, n, cudaMemcpyHostToDevice, in.stream), "cudaMemcpyAsync H2D");
        cuda_check(cudaEventRecord(line.h2d_done[slot], in.stream), "cudaEventRecord");
        if ((queued += 3) >= kQueuedBeforeRelease) latch.release();
      }
      cuda_check(cudaEventRecord(in.events.e[r + 1], in.stream), "cudaEventRecord");
    }
  }
  latch.release();
  for (auto& line : lines) {
    for (Lane* lane : {line->out.get(), line->in.get()}) {
      cuda_check(cudaSetDevice(lane->gpu), "cudaSetDevice");
      cuda_check(cudaStreamSynchronize(lane->stream), "staged copies");
    }
  }
  run.released_late = latch.timed_out();
  run.seconds.resize(pipes.size());
  for (size_t k = 0; k < pipes.size(); ++k) {
    cuda_check(cudaSetDevice(lines[k]->in->gpu), "cudaSetDevice");
    for (int r = warmup; r < warmup + reps; ++r) run.seconds[k].push_back(lines[k]->in->seconds(r, r + 1));
  }
  return run;
}

std::vector<double> time_sync_copies(int gpu, CopyDir, void* dst, const void* src, size_t bytes, int warmup,
                                     int reps) {
  use_device(gpu);
  Lane lane(gpu, 0);
  std::vector<double> seconds;
  for (int r = 0; r < warmup + reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, lane.stream), "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(lane.stream), "cudaStreamSynchronize");
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= warmup) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return seconds;
}

uint64_t count_device_byte_mismatches(int gpu, const void* ptr, size_t bytes, uint8_t value) {
  use_device(gpu);
  constexpr size_t kSmall = 1 << 20;  // small buffers: copy back and compare every byte
  if (bytes <= kSmall) {
    std::vector<uint8_t> host(bytes);
    cuda_check(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDefault), "copy back for the check");
    return static_cast<uint64_t>(std::count_if(host.begin(), host.end(), [&](uint8_t b) { return b != value; }));
  }
  const size_t words = bytes / 8 * 8;
  uint64_t bad = count_mismatches(gpu, ptr, words, 0x0101010101010101ULL * value);
  if (words < bytes) {
    std::vector<uint8_t> tail(bytes - words);
    cuda_check(cudaMemcpy(tail.data(), static_cast<const char*>(ptr) + words, tail.size(), cudaMemcpyDefault),
               "copy tail back");
    bad += static_cast<uint64_t>(std::count_if(tail.begin(), tail.end(), [&](uint8_t b) { return b != value; }));
  }
  return bad;
}

void set_device_bytes(int gpu, void* ptr, size_t bytes, uint8_t value) {
  use_device(gpu);
  cuda_check(cudaMemset(ptr, value, bytes), "cudaMemset");
  cuda_check(cudaDeviceSynchronize(), "cudaMemset");
}

}  // namespace mempath::gpu
