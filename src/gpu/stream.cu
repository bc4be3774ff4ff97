// BabelStream-class kernels (layouts below) and a grid-stride dot with a block reduction;
// every kernel timed by events recorded between back-to-back launches, so no host launch
// latency is inside.
#include <algorithm>
#include <cmath>

#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/stream_api.hpp"
#include "gpu/tiles.cuh"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 1024;  // every kernel's block (the dot reduces over it)
constexpr int kKernels = 5;

__global__ void init_kernel(double* a, double* b, double* c, size_t n, double a0, double b0, double c0) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    a[i] = a0, b[i] = b0, c[i] = c0;
}

__device__ __forceinline__ size_t element() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }

// Copy, mul, add and triad in one layout: one 16-byte pair of doubles per thread, blocks of
// 1024, a grid that covers the arrays once. On H100 copy and mul measured 3,046 GB/s in it
// against 2,820 for block tiles on a resident grid and 2,980 for BabelStream's copy
// (docs/results/2026-11-24-gpu-kernels.md); on H200 add and triad with one double per
// thread trailed BabelStream by 8 %: three arrays in flight need the wider loads more
// (docs/results/2026-11-28-gpu-stream.md).
__global__ void copy_kernel(const double2* __restrict a, double2* __restrict c, size_t n2) {
  const size_t i = element();
  if (i < n2) c[i] = a[i];
}
__global__ void mul_kernel(double2* __restrict b, const double2* __restrict c, double s, size_t n2) {
  const size_t i = element();
  if (i < n2) {
    const double2 v = c[i];
    b[i] = make_double2(s * v.x, s * v.y);
  }
}
__global__ void add_kernel(const double2* __restrict a, const double2* __restrict b, double2* __restrict c,
                           size_t n2) {
  const size_t i = element();
  if (i < n2) {
    const double2 x = a[i], y = b[i];
    c[i] = make_double2(x.x + y.x, x.y + y.y);
  }
}
__global__ void triad_kernel(double2* __restrict a, const double2* __restrict b, const double2* __restrict c,
                             double s, size_t n2) {
  const size_t i = element();
  if (i < n2) {
    const double2 x = b[i], y = c[i];
    a[i] = make_double2(x.x + s * y.x, x.y + s * y.y);
  }
}

__global__ void dot_kernel(const double* __restrict a, const double* __restrict b, double* __restrict partial, size_t n) {
  __shared__ double sums[kBlock];
  double sum = 0;
  for (size_t i = element(); i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) sum += a[i] * b[i];
  sums[threadIdx.x] = sum;
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

__device__ __forceinline__ bool off(double got, double want) {
  return fabs(got - want) > 1e-12 * fmax(fabs(want), 1e-300);
}

__global__ void mismatch_kernel(const double* a, const double* b, const double* c, size_t n, double wa, double wb,
                                double wc, unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = element(); i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += off(a[i], wa) + off(b[i], wb) + off(c[i], wc);
  if (local) atomicAdd(bad, local);
}

template <typename T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(size_t count) { cuda_check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc"); }
  ~DeviceArray() { cudaFree(p); }
};

struct Stream {
  cudaStream_t s{};
  Stream() { cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
};

}  // namespace

StreamRun run_stream(int gpu, double* a_host, double* b_host, double* c_host, size_t n, int warmup, int reps,
                     double scalar, const double start[3], const double want[3]) {
  use_device(gpu);
  double* a = static_cast<double*>(device_address(a_host));
  double* b = static_cast<double*>(device_address(b_host));
  double* c = static_cast<double*>(device_address(c_host));
  int sms = 0, dot_per_sm = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&dot_per_sm, dot_kernel, kBlock, 0), "occupancy");
  const int dot_blocks = sms * std::max(1, dot_per_sm);
  // n is a multiple of 8 (arrays are whole 64-byte lines): pairs cover every element.
  const size_t n2 = n / 2;
  const size_t pair_blocks = (n2 + kBlock - 1) / kBlock;
  auto* a2 = reinterpret_cast<double2*>(a);
  auto* b2 = reinterpret_cast<double2*>(b);
  auto* c2 = reinterpret_cast<double2*>(c);
  Stream stream;
  DeviceArray<double> partial(static_cast<size_t>(dot_blocks));
  DeviceArray<unsigned long long> bad(1);

  StreamRun run;
  run.threads = static_cast<int>(std::min<size_t>(pair_blocks * kBlock, 1ULL << 30));
  run.seconds.resize(kKernels);
  init_kernel<<<dot_blocks, kBlock, 0, stream.s>>>(a, b, c, n, start[0], start[1], start[2]);
  cuda_check(cudaGetLastError(), "init kernel");
  Events ev(kKernels + 1);
  for (int r = 0; r < warmup + reps; ++r) {
    cuda_check(cudaEventRecord(ev.e[0], stream.s), "cudaEventRecord");
    copy_kernel<<<pair_blocks, kBlock, 0, stream.s>>>(a2, c2, n2);
    cuda_check(cudaEventRecord(ev.e[1], stream.s), "cudaEventRecord");
    mul_kernel<<<pair_blocks, kBlock, 0, stream.s>>>(b2, c2, scalar, n2);
    cuda_check(cudaEventRecord(ev.e[2], stream.s), "cudaEventRecord");
    add_kernel<<<pair_blocks, kBlock, 0, stream.s>>>(a2, b2, c2, n2);
    cuda_check(cudaEventRecord(ev.e[3], stream.s), "cudaEventRecord");
    triad_kernel<<<pair_blocks, kBlock, 0, stream.s>>>(a2, b2, c2, scalar, n2);
    cuda_check(cudaEventRecord(ev.e[4], stream.s), "cudaEventRecord");
    dot_kernel<<<dot_blocks, kBlock, 0, stream.s>>>(a, b, partial.p, n);
    cuda_check(cudaEventRecord(ev.e[5], stream.s), "cudaEventRecord");
    cuda_check(cudaGetLastError(), "stream kernels");
    cuda_check(cudaStreamSynchronize(stream.s), "stream kernels");
    if (r >= warmup)
      for (int k = 0; k < kKernels; ++k) run.seconds[k].push_back(ev.seconds(k, k + 1));
  }
  std::vector<double> sums(static_cast<size_t>(dot_blocks));
  cuda_check(cudaMemcpy(sums.data(), partial.p, sums.size() * sizeof(double), cudaMemcpyDeviceToHost), "dot partials");
  for (double s : sums) run.dot += s;
  cuda_check(cudaMemsetAsync(bad.p, 0, sizeof(unsigned long long), stream.s), "cudaMemset");
  mismatch_kernel<<<dot_blocks, kBlock, 0, stream.s>>>(a, b, c, n, want[0], want[1], want[2], bad.p);
  unsigned long long count = 0;
  cuda_check(cudaMemcpyAsync(&count, bad.p, sizeof count, cudaMemcpyDeviceToHost, stream.s), "mismatches");
  cuda_check(cudaStreamSynchronize(stream.s), "data check");
  run.mismatches = count;
  run.empty_launch_s = empty_launch_seconds(stream.s);
  return run;
}

}  // namespace mempath::gpu
