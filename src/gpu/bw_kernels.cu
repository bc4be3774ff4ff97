// GPU bandwidth kernels: 16-byte accesses, several independent loads in flight per
// thread, timed with CUDA events between back-to-back launches so that no launch latency
// falls inside a timed interval; every repetition's read sum is kept and checked.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bw_plan.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/gpu_api.hpp"
#include "gpu/tiles.cuh"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 512;
constexpr int kOneBlockThreads = 1024;
constexpr int kWaves = 4;
static_assert(kBlock == kSweepBlockThreads, "a sweep point's threads are planned as blocks x kSweepBlockThreads");
// A noise block reads this many tiles (128 KiB at 512 threads) between two looks at the
// stop flag, and reports its progress after each such chunk.
constexpr int kNoiseChunkTiles = 4;

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void read_kernel(const Vec* __restrict__ src, size_t n, int passes,
                            unsigned long long* __restrict__ sum) {
  const size_t tile = static_cast<size_t>(kUnroll) * blockDim.x;
  unsigned long long acc = 0;
  for (int p = 0; p < passes; ++p) {
    for (size_t base = blockIdx.x * tile; base < n; base += gridDim.x * tile) {
      Vec v[kUnroll];
      load_tile(src, base, n, v);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc += v[u].x + v[u].y;
    }
  }
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

__global__ void write_kernel(Vec* __restrict__ dst, size_t n, int passes, unsigned long long word) {
  const size_t tile = static_cast<size_t>(kUnroll) * blockDim.x;
  const Vec v = make_ulonglong2(word, word);
  for (int p = 0; p < passes; ++p) {
    for (size_t base = blockIdx.x * tile; base < n; base += gridDim.x * tile) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const size_t i = tile_index(base, u);
        if (i < n) dst[i] = v;
      }
    }
  }
}

__global__ void copy_kernel(Vec* __restrict__ dst, const Vec* __restrict__ src, size_t n, int passes) {
  for (int p = 0; p < passes; ++p) copy_tiles(dst, src, n);
}

// One pass out of cache (the usual case): one vector per thread on a grid that covers the
// buffer once beat block tiles on a resident grid by 6 % on H100 (3,046 vs 2,878 GB/s,
// docs/results/2026-11-24-gpu-kernels.md). Passes over a cache-resident buffer keep the
// resident grid, whose blocks sweep the whole buffer between passes.
__global__ void copy_once_kernel(Vec* __restrict__ dst, const Vec* __restrict__ src, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

__global__ void mismatch_kernel(const unsigned long long* __restrict__ p, size_t n,
                                unsigned long long word, unsigned long long* __restrict__ bad) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    local += p[i] != word;
  local = warp_sum(local);
  if ((threadIdx.x & 31) == 0 && local) atomicAdd(bad, local);
}

// The contention reader: each block sweeps its tiles of the buffer again and again (every
// load's value summed, so none can be removed) until the host sets *stop. Thread 0 counts
// the block's loaded vectors and, after every chunk, publishes them to host-mapped
// progress[block] (the host sums them while the kernel runs).
__global__ void noise_kernel(const Vec* __restrict__ src, size_t n, const volatile int* stop,
                             volatile unsigned long long* progress, unsigned long long* sum) {
  __shared__ int done;
  const size_t tile = static_cast<size_t>(kUnroll) * blockDim.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * tile;
  const size_t first = static_cast<size_t>(blockIdx.x) * tile;
  unsigned long long acc = 0, loaded = 0;  // loaded: vectors of the whole block (thread 0)
  size_t base = first;
  for (;;) {
    // The flag is loaded before the chunk and used after it: its round trip to host memory
    // hides behind the chunk's loads instead of stalling the block (a stop costs a chunk).
    const int stop_seen = threadIdx.x == 0 ? *stop : 0;
    for (int t = 0; t < kNoiseChunkTiles; ++t) {
      Vec v[kUnroll];
      load_tile(src, base, n, v);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc += v[u].x + v[u].y;
      if (threadIdx.x == 0 && base < n) loaded += n - base < tile ? n - base : tile;
      base += stride;
      if (base >= n) base = first;
    }
    if (threadIdx.x == 0) {
      // No fence: the host may see a count a little late, never a wrong one; the last is
      // visible once the kernel has ended.
      *(progress + blockIdx.x) = loaded * sizeof(Vec);
      done = stop_seen;
    }
    __syncthreads();
    if (done) break;
    __syncthreads();  // every thread has read `done` before thread 0 writes it again
  }
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

// Blocks of `kernel` (kBlock threads) resident on all SMs at once.
template <typename Kernel>
int resident_grid(int gpu, Kernel kernel) {
  int sms = 0, blocks_per_sm = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kBlock, 0), "occupancy");
  return sms * std::max(1, blocks_per_sm);
}

int full_grid(int gpu) { return resident_grid(gpu, read_kernel); }

// RAII device scratch and events so that a failed case frees what it took.
struct Scratch {
  unsigned long long* p = nullptr;
  explicit Scratch(size_t count) { cuda_check(cudaMalloc(&p, count * sizeof *p), "cudaMalloc"); }
  ~Scratch() { cudaFree(p); }
};

}  // namespace

KernelRun run_bw(int gpu, Op op, const void* src, void* dst, size_t bytes, int passes,
                 int grid, int warmup, int reps, uint64_t word, const std::function<void()>& on_start,
                 const std::function<void()>& on_end) {
  use_device(gpu);
  cudaStream_t stream;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};

  const Vec* s = static_cast<const Vec*>(src ? device_address(src) : nullptr);
  Vec* d = static_cast<Vec*>(const_cast<void*>(dst ? device_address(dst) : nullptr));
  const size_t n = bytes / sizeof(Vec);
  // Four waves of resident blocks: the last blocks' tails overlap the next blocks' starts
  // (measured 1-2 % faster than a single wave on H100). A sweep point launches its count.
  const bool single_block = grid == kSingleBlock;
  const int blocks = single_block ? 1 : grid > 0 ? grid : kWaves * full_grid(gpu);
  const int threads = single_block ? kOneBlockThreads : kBlock;
  const bool copy_once = op == Op::Copy && passes == 1 && grid == kDefaultGrid;
  const size_t once_blocks = (n + kOneBlockThreads - 1) / kOneBlockThreads;
  const int total = warmup + reps;

  KernelRun run;
  run.threads = copy_once ? static_cast<int>(std::min<size_t>(n, 1U << 30)) : blocks * threads;
  run.blocks = copy_once ? static_cast<int>(std::min<size_t>(once_blocks, 1U << 30)) : blocks;
  run.empty_launch_s = empty_launch_seconds(stream);
  Scratch sums(total);
  cuda_check(cudaMemsetAsync(sums.p, 0, total * sizeof(unsigned long long), stream), "cudaMemset");
  Events ev(total + 1);
  cuda_check(cudaStreamSynchronize(stream), "bandwidth setup");  // the setup stays out of on_start's window
  if (on_start) on_start();
  // All repetitions are queued before the first finishes: the GPU runs them back to back
  // and each event pair brackets exactly one kernel.
  cuda_check(cudaEventRecord(ev.e[0], stream), "cudaEventRecord");
  for (int r = 0; r < total; ++r) {
    if (op != Op::Read && warmup > 0 && r == warmup) {
      // Clear what the warm-up wrote (untimed: the event is recorded again after it), so
      // the data check proves the timed repetitions wrote or copied.
      // The write kernel, not cudaMemset: it reaches every memory the case does (ATS, peers).
      write_kernel<<<blocks, threads, 0, stream>>>(d, n, 1, 0);
      cuda_check(cudaGetLastError(), "clear kernel launch");
      cuda_check(cudaEventRecord(ev.e[r], stream), "cudaEventRecord");
    }
    if (op == Op::Read) read_kernel<<<blocks, threads, 0, stream>>>(s, n, passes, sums.p + r);
    else if (op == Op::Write) write_kernel<<<blocks, threads, 0, stream>>>(d, n, passes, word);
    else if (copy_once) copy_once_kernel<<<once_blocks, kOneBlockThreads, 0, stream>>>(d, s, n);
    else copy_kernel<<<blocks, threads, 0, stream>>>(d, s, n, passes);
    cuda_check(cudaGetLastError(), "kernel launch");
    cuda_check(cudaEventRecord(ev.e[r + 1], stream), "cudaEventRecord");
  }
  cuda_check(cudaStreamSynchronize(stream), "bandwidth kernels");
  if (on_end) on_end(), use_device(gpu);  // on_end may have stopped a reader on another GPU
  for (int r = warmup; r < total; ++r) run.seconds.push_back(ev.seconds(r, r + 1));
  if (op == Op::Read) {
    std::vector<unsigned long long> host(total);
    cuda_check(cudaMemcpy(host.data(), sums.p, total * sizeof host[0], cudaMemcpyDeviceToHost), "copy sums");
    // Every timed repetition must have read the same (known) content.
    run.read_sum = host[total - 1];
    for (int r = warmup; r < total; ++r)
      if (host[r] != run.read_sum) run.read_sum = ~host[r];
  }
  return run;
}

void fill(int gpu, void* ptr, size_t bytes, uint8_t value) {
  use_device(gpu);
  const size_t n = bytes / sizeof(Vec);
  const unsigned long long word = 0x0101010101010101ULL * value;
  write_kernel<<<full_grid(gpu), kBlock>>>(static_cast<Vec*>(const_cast<void*>(device_address(ptr))), n, 1, word);
  cuda_check(cudaGetLastError(), "fill launch");
  cuda_check(cudaDeviceSynchronize(), "fill");
}

uint64_t count_mismatches(int gpu, const void* ptr, size_t bytes, uint64_t word) {
  use_device(gpu);
  Scratch bad(1);
  cuda_check(cudaMemset(bad.p, 0, sizeof(unsigned long long)), "cudaMemset");
  mismatch_kernel<<<full_grid(gpu), kBlock>>>(static_cast<const unsigned long long*>(device_address(ptr)),
                                             bytes / 8, word, bad.p);
  cuda_check(cudaGetLastError(), "check launch");
  unsigned long long host = 0;
  cuda_check(cudaMemcpy(&host, bad.p, sizeof host, cudaMemcpyDeviceToHost), "copy check");
  return host;
}

struct Noise {
  int gpu = -1;
  cudaStream_t stream = nullptr;
  int* stop = nullptr;                     // pinned, mapped: the host sets it, blocks poll it
  unsigned long long* progress = nullptr;  // pinned, mapped: bytes read per block
  unsigned long long* sum = nullptr;       // device: sum of every loaded word
  int blocks = 0;
  uint64_t word = 0;

  // Stops the kernel (if it runs) and frees everything; safe to call twice.
  void release() {
    if (gpu < 0) return;
    cudaSetDevice(gpu);
    if (stop) *reinterpret_cast<volatile int*>(stop) = 1;
    if (stream) cudaStreamSynchronize(stream), cudaStreamDestroy(stream);
    if (stop) cudaFreeHost(stop);
    if (progress) cudaFreeHost(progress);
    if (sum) cudaFree(sum);
    stream = nullptr, stop = nullptr, progress = nullptr, sum = nullptr;
    gpu = -1;
  }
  ~Noise() { release(); }
};

namespace {

uint64_t progress_sum(const Noise* noise) {
  uint64_t total = 0;
  const volatile unsigned long long* p = noise->progress;
  for (int b = 0; b < noise->blocks; ++b) total += p[b];
  return total;
}

}  // namespace

Noise* start_noise(int gpu, const void* ptr, size_t bytes, uint8_t fill) {
  use_device(gpu);
  auto noise = std::make_unique<Noise>();
  noise->gpu = gpu;
  noise->word = 0x0101010101010101ULL * fill;
  noise->blocks = resident_grid(gpu, noise_kernel);  // all resident: no block waits for another to end
  cuda_check(cudaStreamCreateWithFlags(&noise->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaHostAlloc(&noise->stop, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  cuda_check(cudaHostAlloc(&noise->progress, noise->blocks * sizeof(unsigned long long), cudaHostAllocMapped),
             "cudaHostAlloc");
  cuda_check(cudaMalloc(&noise->sum, sizeof(unsigned long long)), "cudaMalloc");
  cuda_check(cudaMemsetAsync(noise->sum, 0, sizeof(unsigned long long), noise->stream), "cudaMemset");
  *reinterpret_cast<volatile int*>(noise->stop) = 0;
  for (int b = 0; b < noise->blocks; ++b) noise->progress[b] = 0;
  int* stop_dev = nullptr;
  unsigned long long* progress_dev = nullptr;
  cuda_check(cudaHostGetDevicePointer(&stop_dev, noise->stop, 0), "cudaHostGetDevicePointer");
  cuda_check(cudaHostGetDevicePointer(&progress_dev, noise->progress, 0), "cudaHostGetDevicePointer");
  noise_kernel<<<noise->blocks, kBlock, 0, noise->stream>>>(static_cast<const Vec*>(device_address(ptr)),
                                                           bytes / sizeof(Vec), stop_dev, progress_dev, noise->sum);
  cuda_check(cudaGetLastError(), "noise launch");
  // Running means every block has read a chunk: the measured case must not start first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool all = true;
    const volatile unsigned long long* p = noise->progress;
    for (int b = 0; b < noise->blocks && all; ++b) all = p[b] > 0;
    if (all) break;
    if (cudaStreamQuery(noise->stream) != cudaErrorNotReady)
      throw std::runtime_error("the noise kernel on GPU " + std::to_string(gpu) + " ended before it was stopped");
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the noise kernel on GPU " + std::to_string(gpu) +
                               " did not have every block reading within 10 s");
    std::this_thread::yield();
  }
  return noise.release();
}

uint64_t noise_progress(const Noise* noise) { return noise ? progress_sum(noise) : 0; }

NoiseTotal stop_noise(Noise* noise) {
  if (!noise) return {};
  std::unique_ptr<Noise> owned(noise);
  NoiseTotal total;
  use_device(noise->gpu);
  *reinterpret_cast<volatile int*>(noise->stop) = 1;
  cuda_check(cudaStreamSynchronize(noise->stream), "noise kernel");
  total.bytes = progress_sum(noise);  // final: every block published its count before it left
  total.threads = noise->blocks * kBlock;
  unsigned long long sum = 0;
  cuda_check(cudaMemcpy(&sum, noise->sum, sizeof sum, cudaMemcpyDeviceToHost), "copy noise sum");
  // Every vector loaded is two words of the fill: the sum proves the loads happened.
  total.verified = sum == (total.bytes / 8) * noise->word;
  return total;
}

}  // namespace mempath::gpu
