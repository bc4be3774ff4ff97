// Atomic fetch-and-add throughput: every thread of a full grid adds 1 to its warp's
// counter `ops` times, the launches timed by events recorded between back-to-back
// launches, so no host launch latency is inside.
#include <algorithm>

#include "gpu/atomics_api.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/tiles.cuh"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 256;
constexpr uint64_t kWords = kCounterStride / sizeof(unsigned long long);

// The fetched values feed a store that no run takes (a sum of counts never reaches ~0):
// each atomic stays a fetch-and-add whose old value travels back over the path, as a PCIe
// AtomicOp does, not a fire-and-forget reduction (RED) the compiler makes of an unused one.
template <bool kSystem>
__global__ void atomics_kernel(unsigned long long* base, uint64_t counters, uint64_t ops, unsigned long long* sink) {
  const uint64_t warp = (blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x) / 32;
  unsigned long long* counter = base + (warp % counters) * kWords;
  unsigned long long seen = 0;
  for (uint64_t i = 0; i < ops; ++i) seen += kSystem ? atomicAdd_system(counter, 1ULL) : atomicAdd(counter, 1ULL);
  if (seen == ~0ULL) *sink = seen;
}

__global__ void reset_kernel(unsigned long long* base, uint64_t counters) {
  for (uint64_t c = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; c < counters;
       c += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    base[c * kWords] = 0;
}

// Dense copy of the strided counters into device memory, for one cudaMemcpy back: the
// counters may be in memory the host cannot read directly (another GPU's).
__global__ void gather_kernel(const unsigned long long* base, uint64_t counters, unsigned long long* out) {
  for (uint64_t c = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; c < counters;
       c += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    out[c] = base[c * kWords];
}

__global__ void extra_increment_kernel(unsigned long long* counter) { atomicAdd_system(counter, 1ULL); }

int grid_blocks(int gpu) {
  int sms = 0, per_sm = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  // Both scopes' kernels have the same registers; the device one stands for both.
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, atomics_kernel<false>, kBlock, 0), "occupancy");
  return sms * std::max(1, per_sm);
}

struct Stream {
  cudaStream_t s{};
  Stream() { cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
};

struct DeviceWords {
  unsigned long long* p = nullptr;
  explicit DeviceWords(size_t count) { cuda_check(cudaMalloc(&p, count * sizeof *p), "cudaMalloc"); }
  ~DeviceWords() { cudaFree(p); }
};

}  // namespace

uint64_t atomics_warps(int gpu) {
  use_device(gpu);
  return static_cast<uint64_t>(grid_blocks(gpu)) * kBlock / 32;
}

AtomicsRun run_atomics(int gpu, void* base_host, uint64_t counters, uint64_t ops, AtomicScope scope, int warmup,
                       int reps, bool inject_fault) {
  use_device(gpu);
  auto* base = static_cast<unsigned long long*>(device_address(base_host));
  const int blocks = grid_blocks(gpu);
  const int small_grid = static_cast<int>(std::min<uint64_t>((counters + kBlock - 1) / kBlock, 65535));
  AtomicsRun run;
  run.warps = static_cast<uint64_t>(blocks) * kBlock / 32;
  cuda_check(cudaDeviceGetAttribute(&run.host_native_atomics, cudaDevAttrHostNativeAtomicSupported, gpu),
             "host native atomics");
  Stream stream;
  DeviceWords sink(1), dense(counters);
  const auto launch = [&] {
    if (scope == AtomicScope::System)
      atomics_kernel<true><<<blocks, kBlock, 0, stream.s>>>(base, counters, ops, sink.p);
    else
      atomics_kernel<false><<<blocks, kBlock, 0, stream.s>>>(base, counters, ops, sink.p);
  };
  for (int r = 0; r < warmup; ++r) launch();
  reset_kernel<<<small_grid, kBlock, 0, stream.s>>>(base, counters);
  cuda_check(cudaGetLastError(), "atomics warm-up");
  Events ev(static_cast<size_t>(reps) + 1);
  cuda_check(cudaEventRecord(ev.e[0], stream.s), "cudaEventRecord");
  for (int r = 0; r < reps; ++r) {
    launch();
    cuda_check(cudaEventRecord(ev.e[r + 1], stream.s), "cudaEventRecord");
  }
  cuda_check(cudaGetLastError(), "atomics kernels");
  if (inject_fault) extra_increment_kernel<<<1, 1, 0, stream.s>>>(base);
  gather_kernel<<<small_grid, kBlock, 0, stream.s>>>(base, counters, dense.p);
  run.counts.resize(counters);
  cuda_check(cudaMemcpyAsync(run.counts.data(), dense.p, counters * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                             stream.s),
             "counters");
  cuda_check(cudaStreamSynchronize(stream.s), "atomics kernels");
  for (int r = 0; r < reps; ++r) run.seconds.push_back(ev.seconds(r, r + 1));
  run.empty_launch_s = empty_launch_seconds(stream.s);
  return run;
}

}  // namespace mempath::gpu
