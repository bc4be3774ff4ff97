// Thread layouts of the GPU STREAM kernels, timed side by side on one GPU (docs/results/,
// "GPU kernels against BabelStream"). Not part of mempath: a tool to choose the layout that
// src/gpu/stream.cu uses, run on the device machine beside BabelStream.
//
//   nvcc -O3 -arch=sm_90 -o gpu_stream_layouts tests/perf/gpu_stream_layouts.cu
//   ./gpu_stream_layouts [--elements N] [--reps R] [--mem device|pinned|managed]
//
// Each layout runs the five kernels (copy, mul, add, triad, dot) in BabelStream's order,
// R times after 5 warm-ups, each kernel timed by events between back-to-back launches.
// Printed per layout and kernel: best and median GB/s (10^9 bytes/s, bytes read + written
// as BabelStream counts them). The arrays are checked after every layout.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr double kScalar = 0.4;

// --- layouts -------------------------------------------------------------------------
// E elements per thread as V-wide vectors (V = 1: double, 2: double2), thread t of block b
// taking vectors b*B*E/V + t + k*B (k < E/V): every load instruction of a warp is one
// contiguous run, and a block's vectors are neighbours. Grid: covers the arrays once.
template <int V>
struct Vec;
template <>
struct Vec<1> {
  using T = double;
  __device__ static T mul(double s, T v) { return s * v; }
  __device__ static T add(T a, T b) { return a + b; }
  __device__ static T fma(T b, double s, T c) { return b + s * c; }
};
template <>
struct Vec<2> {
  using T = double2;
  __device__ static T mul(double s, T v) { return make_double2(s * v.x, s * v.y); }
  __device__ static T add(T a, T b) { return make_double2(a.x + b.x, a.y + b.y); }
  __device__ static T fma(T b, double s, T c) { return make_double2(b.x + s * c.x, b.y + s * c.y); }
};

template <int V, int U>
__global__ void copy_tile(const typename Vec<V>::T* __restrict a, typename Vec<V>::T* __restrict c, size_t nv) {
  const size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  typename Vec<V>::T v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) v[k] = a[i];
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) c[i] = v[k];
  }
}
template <int V, int U>
__global__ void mul_tile(typename Vec<V>::T* __restrict b, const typename Vec<V>::T* __restrict c, double s, size_t nv) {
  const size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  typename Vec<V>::T v[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) v[k] = c[i];
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) b[i] = Vec<V>::mul(s, v[k]);
  }
}
template <int V, int U>
__global__ void add_tile(const typename Vec<V>::T* __restrict a, const typename Vec<V>::T* __restrict b,
                         typename Vec<V>::T* __restrict c, size_t nv) {
  const size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  typename Vec<V>::T x[U], y[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) x[k] = a[i], y[k] = b[i];
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) c[i] = Vec<V>::add(x[k], y[k]);
  }
}
template <int V, int U>
__global__ void triad_tile(typename Vec<V>::T* __restrict a, const typename Vec<V>::T* __restrict b,
                           const typename Vec<V>::T* __restrict c, double s, size_t nv) {
  const size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  typename Vec<V>::T x[U], y[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) x[k] = b[i], y[k] = c[i];
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const size_t i = base + static_cast<size_t>(k) * blockDim.x;
    if (i < nv) a[i] = Vec<V>::fma(x[k], s, y[k]);
  }
}

// Grid-stride over doubles with the loop unrolled by 4 (the form BabelStream's CUDA model
// uses by default), n/4 threads in blocks of B.
__global__ void add_stride(const double* __restrict a, const double* __restrict b, double* __restrict c, size_t n) {
#pragma unroll 4
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    c[i] = a[i] + b[i];
}
__global__ void triad_stride(double* __restrict a, const double* __restrict b, const double* __restrict c, double s,
                             size_t n) {
#pragma unroll 4
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    a[i] = b[i] + s * c[i];
}
__global__ void copy_stride(const double* __restrict a, double* __restrict c, size_t n) {
#pragma unroll 4
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    c[i] = a[i];
}
__global__ void mul_stride(double* __restrict b, const double* __restrict c, double s, size_t n) {
#pragma unroll 4
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    b[i] = s * c[i];
}

// mempath's dot: grid-stride, one block of B per SM x occupancy, block reduction.
template <int B>
__global__ void dot_kernel(const double* __restrict a, const double* __restrict b, double* __restrict partial,
                           size_t n) {
  __shared__ double sums[B];
  double sum = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    sum += a[i] * b[i];
  sums[threadIdx.x] = sum;
  for (int half = B / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

__global__ void init(double* a, double* b, double* c, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    a[i] = 0.1, b[i] = 0.2, c[i] = 0.0;
}

struct Layout {
  std::string name;
  // launches one kernel k (0 copy, 1 mul, 2 add, 3 triad) on the stream
  void (*launch)(int k, double* a, double* b, double* c, size_t n, cudaStream_t s);
};

size_t blocks_for(size_t items, int per_block) { return (items + per_block - 1) / per_block; }

template <int V, int U, int B>
void tiles(int k, double* a, double* b, double* c, size_t n, cudaStream_t s) {
  using T = typename Vec<V>::T;
  const size_t nv = n / V;
  const size_t g = blocks_for(nv, B * U);
  auto* a2 = reinterpret_cast<T*>(a);
  auto* b2 = reinterpret_cast<T*>(b);
  auto* c2 = reinterpret_cast<T*>(c);
  switch (k) {
    case 0: copy_tile<V, U><<<g, B, 0, s>>>(a2, c2, nv); break;
    case 1: mul_tile<V, U><<<g, B, 0, s>>>(b2, c2, kScalar, nv); break;
    case 2: add_tile<V, U><<<g, B, 0, s>>>(a2, b2, c2, nv); break;
    case 3: triad_tile<V, U><<<g, B, 0, s>>>(a2, b2, c2, kScalar, nv); break;
  }
}

template <int B>
void stride4(int k, double* a, double* b, double* c, size_t n, cudaStream_t s) {
  const size_t g = blocks_for(n / 4, B);
  switch (k) {
    case 0: copy_stride<<<g, B, 0, s>>>(a, c, n); break;
    case 1: mul_stride<<<g, B, 0, s>>>(b, c, kScalar, n); break;
    case 2: add_stride<<<g, B, 0, s>>>(a, b, c, n); break;
    case 3: triad_stride<<<g, B, 0, s>>>(a, b, c, kScalar, n); break;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  size_t n = 134217728;  // BabelStream's --arraysize of the comparison: 1 GiB per array
  int reps = 100;
  std::string mem = "device";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--elements")) n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mem")) mem = argv[i + 1];
    else { std::fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
  }
  n -= n % 2048;
  double *a, *b, *c, *partial;
  const size_t bytes = n * sizeof(double);
  for (double** p : {&a, &b, &c}) {
    if (mem == "device") CHECK(cudaMalloc(p, bytes));
    else if (mem == "pinned") CHECK(cudaMallocHost(p, bytes));
    else if (mem == "managed") CHECK(cudaMallocManaged(p, bytes));
    else { std::fprintf(stderr, "--mem device|pinned|managed\n"); return 2; }
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int dot_blocks = sms * 2;
  CHECK(cudaMalloc(&partial, dot_blocks * sizeof(double)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs, %zu doubles per array (%.2f GiB), mem=%s, %d reps\n", prop.name, sms, n,
              bytes / 1073741824.0, mem.c_str(), reps);

  const std::vector<Layout> layouts = {
      {"v1u1b1024 (mempath add/triad now)", tiles<1, 1, 1024>},
      {"v2u1b1024 (mempath copy/mul now)", tiles<2, 1, 1024>},
      {"v2u1b256", tiles<2, 1, 256>},
      {"v2u1b512", tiles<2, 1, 512>},
      {"v2u2b256", tiles<2, 2, 256>},
      {"v2u2b512", tiles<2, 2, 512>},
      {"v2u2b1024", tiles<2, 2, 1024>},
      {"v2u4b256", tiles<2, 4, 256>},
      {"v2u4b128", tiles<2, 4, 128>},
      {"v1u4b256", tiles<1, 4, 256>},
      {"stride4b256 (BabelStream's form)", stride4<256>},
      {"stride4b1024", stride4<1024>},
  };
  const char* kernel_names[5] = {"copy", "mul", "add", "triad", "dot"};
  const double moved[5] = {2, 2, 3, 3, 2};
  cudaEvent_t ev[6];
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  std::printf("%-36s %-6s %10s %10s\n", "layout", "kernel", "best_GBps", "median_GBps");
  for (const auto& layout : layouts) {
    init<<<sms * 8, 256, 0, s>>>(a, b, c, n);
    std::vector<double> t[5];
    for (int r = 0; r < reps + 5; ++r) {
      CHECK(cudaEventRecord(ev[0], s));
      for (int k = 0; k < 4; ++k) {
        layout.launch(k, a, b, c, n, s);
        CHECK(cudaEventRecord(ev[k + 1], s));
      }
      dot_kernel<1024><<<dot_blocks, 1024, 0, s>>>(a, b, partial, n);
      CHECK(cudaEventRecord(ev[5], s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaGetLastError());
      if (r < 5) continue;
      for (int k = 0; k < 5; ++k) {
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]));
        t[k].push_back(ms * 1e-3);
      }
    }
    // Check: every element of a, b, c equals the scalar recurrence after reps + 5 rounds.
    double ga = 0.1, gb = 0.2, gc = 0.0;
    for (int r = 0; r < reps + 5; ++r) gc = ga, gb = kScalar * gc, gc = ga + gb, ga = gb + kScalar * gc;
    std::vector<double> ha(n), hb(n), hc(n);
    CHECK(cudaMemcpy(ha.data(), a, bytes, cudaMemcpyDefault));
    CHECK(cudaMemcpy(hb.data(), b, bytes, cudaMemcpyDefault));
    CHECK(cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDefault));
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += std::fabs(ha[i] - ga) > 1e-12 * std::fabs(ga) || std::fabs(hb[i] - gb) > 1e-12 * std::fabs(gb) ||
             std::fabs(hc[i] - gc) > 1e-12 * std::fabs(gc);
    for (int k = 0; k < 5; ++k) {
      const double best = moved[k] * bytes / *std::min_element(t[k].begin(), t[k].end()) / 1e9;
      const double med = moved[k] * bytes / median(t[k]) / 1e9;
      std::printf("%-36s %-6s %10.1f %10.1f%s\n", layout.name.c_str(), kernel_names[k], best, med,
                  bad ? "  WRONG RESULTS" : "");
    }
  }
  return 0;
}
