#pragma once
// The batch-1 decode step of a Llama-style model in a few fused kernels, shared by
// `mempath llm` (gpu/llm_decode.cu) and the referee's library (src/llm/decode_library.cu,
// libmempath_decode.so: the `default` placement, PyTorch's own allocator). A decode step
// reads every weight once; at batch 1 its matrix products are matrix-vector products, bound
// by how fast the GPU reads the weights' memory. PyTorch runs each as a cuBLAS GEMM of n = 1
// with its norms, rotary embedding, attention, SwiGLU and residual adds as separate kernels
// (about 20 a layer) and reaches 40 % of that bound on an H200; these kernels stream the
// weights with 16-byte loads, a warp per output row, and fold the rest into five kernels a
// layer:
//   1. RMSNorm of the residual stream (each block computes it again; the vector is small)
//      and the fused q|k|v rows                                   -> qkv
//   2. rotary embedding of q and k, the k and v of this position into the cache, attention
//      over the cached positions, one block of 8 warps a head      -> attn
//   3. the o rows, added to the residual stream                    -> x
//   4. RMSNorm and the stacked gate|up rows, SiLU(gate) x up       -> act
//   5. the down rows, added to the residual stream                 -> x
// then RMSNorm and the lm_head rows (logits), and one block that takes the argmax (or the
// prompt's next token while the prompt is being read), writes it, reads its embedding row
// into the residual stream and advances the position: every input of a step lives on the
// GPU, so the whole step is one CUDA graph, with no host in between.
// On Hopper each kernel is launched as a programmatic dependent of the one before, so the
// gaps between the 162 kernels of a 7B step overlap with the first weight loads.
// Rounding follows PyTorch's fp16/bf16 decode (products accumulated in fp32, each op's
// output rounded to the model's dtype), so that greedy tokens match the plain decode's but
// for near-ties, which the referee checks (src/llm/referee.py).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace mempath::llm_kernels {

// Programmatic dependent launch (Hopper and later): each kernel may start while the one before
// it drains, loads the weights it will need (they never change during a decode) and only then
// waits for that kernel's results. It hides most of the gap between the 162 kernels of a 7B
// step. MEMPATH_DECODE_PDL=0 turns it off (for a driver that mishandles it in a graph).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // Let the next kernel be scheduled once every block here has passed its wait: it then
  // only takes SM slots this kernel's last wave leaves free.
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// v rounded to T and back: what a PyTorch op's output in the model's dtype holds.
template <typename T>
__device__ __forceinline__ float round_to(float v) { return to_f<T>(from_f<T>(v)); }

// Eight elements of a 16-byte vector times eight of another, accumulated in fp32.
template <typename T>
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b) {
  const T* x = reinterpret_cast<const T*>(&a);
  const T* y = reinterpret_cast<const T*>(&b);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s = fmaf(to_f<T>(x[j]), to_f<T>(y[j]), s);
  return s;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

constexpr int kThreads = 256;  // 8 warps a block in the matrix-vector kernels
constexpr int kUnroll = 4;     // 16-byte loads in flight per lane and row

// What a matrix-vector kernel does with its rows' dot products.
enum Epilogue : int {
  kStore = 0,    // y[n] = dot
  kResidual = 1, // y[n] = y[n] + dot (the residual stream, in place)
  kSwiglu = 2,   // rows j and N/2 + j are gate_j and up_j (gate|up stacked): y[j] = SiLU(gate_j) x up_j
  kLogits = 3,   // y (float) [n] = dot rounded to T (PyTorch's logits are in the model's dtype)
};

// The matrix-vector kernel: ROWS rows per warp, K a multiple of 8. With NORM, the input is
// RMSNorm(x) x norm_w, computed by each block into shared memory (eps `eps`); else x as given.
template <typename T, int ROWS, bool NORM, int EPI>
__global__ void __launch_bounds__(kThreads) gemv(const T* __restrict__ W, const T* __restrict__ x,
                                                 const T* __restrict__ norm_w, void* __restrict__ out, int N,
                                                 int K, float eps) {
  extern __shared__ uint4 smem_vec[];
  const int lane = threadIdx.x & 31;
  const int warp = (blockIdx.x * kThreads + threadIdx.x) >> 5;
  const int row0 = warp * ROWS;
  const int kv = K >> 3;  // 16-byte vectors a row
  // A warp's rows: ROWS consecutive ones, or gate_j and up_j (rows j and N/2 + j).
  const bool active = EPI == kSwiglu ? warp < N / 2 : row0 < N;
  const uint4* rows[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int n = EPI == kSwiglu ? min(warp, N / 2 - 1) + r * (N / 2) : min(row0 + r, N - 1);
    rows[r] = reinterpret_cast<const uint4*>(W + size_t(n) * K);
  }
  uint4 w[ROWS][kUnroll];
  auto load_weights = [&](int base) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * 32 < kv) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) w[r][u] = __ldcs(rows[r] + base + u * 32);  // streamed: read once a step
      }
    }
  };
  // The first weights are in flight before the wait and the norm, which need the kernel
  // before this one; the weights do not.
  if (active) load_weights(lane);
  wait_for_previous_kernel();
  const uint4* xin = reinterpret_cast<const uint4*>(x);
  if (NORM) {
    // RMSNorm as PyTorch's decode computes it: x * rsqrt(mean(x^2) + eps) rounded to T, then
    // times the norm weight, rounded to T.
    __shared__ float partial[kThreads / 32];
    __shared__ float scale;
    float ss = 0.f;
    for (int i = threadIdx.x; i < kv; i += kThreads) {
      const uint4 v = xin[i];
      ss += dot8<T>(v, v);
    }
    ss = warp_sum(ss);
    if (lane == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
      float t = lane < kThreads / 32 ? partial[lane] : 0.f;
      t = warp_sum(t);
      if (lane == 0) scale = rsqrtf(t / K + eps);
    }
    __syncthreads();
    const float s = scale;
    const uint4* g = reinterpret_cast<const uint4*>(norm_w);
    for (int i = threadIdx.x; i < kv; i += kThreads) {
      const uint4 v = xin[i], wn = g[i];
      uint4 r;
      const T* xv = reinterpret_cast<const T*>(&v);
      const T* wv = reinterpret_cast<const T*>(&wn);
      T* rv = reinterpret_cast<T*>(&r);
#pragma unroll
      for (int j = 0; j < 8; ++j) rv[j] = from_f<T>(round_to<T>(to_f<T>(xv[j]) * s) * to_f<T>(wv[j]));
      smem_vec[i] = r;
    }
    __syncthreads();
  }
  if (!active) return;
  const uint4* xs = NORM ? smem_vec : xin;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
  for (int base = lane; base < kv; base += 32 * kUnroll) {
    if (base != lane) load_weights(base);
    uint4 xx[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * 32 < kv) xx[u] = xs[base + u * 32];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * 32 < kv) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] += dot8<T>(w[r][u], xx[u]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = warp_sum(acc[r]);
  if (lane != 0) return;
  if constexpr (EPI == kSwiglu) {
    const float gate = round_to<T>(acc[0]), up = round_to<T>(acc[1]);
    const float silu = round_to<T>(gate / (1.f + __expf(-gate)));
    static_cast<T*>(out)[warp] = from_f<T>(silu * up);
  } else {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const int n = row0 + r;
      if (n >= N) break;
      if constexpr (EPI == kStore) {
        static_cast<T*>(out)[n] = from_f<T>(acc[r]);
      } else if constexpr (EPI == kResidual) {
        T* y = static_cast<T*>(out);
        y[n] = from_f<T>(to_f<T>(y[n]) + round_to<T>(acc[r]));
      } else {
        static_cast<float*>(out)[n] = round_to<T>(acc[r]);
      }
    }
  }
}

constexpr int kAttnThreads = 256;  // 8 warps a head in the attention kernel

// One block a query head (HD = head_dim, 64 or 128): rotary embedding of q and of this
// position's k (pairs 2i, 2i+1; angle pos / 10000^(2i/d), cos and sin rounded to T as the
// plain decode rounds them), k and v into the cache at `pos`, then softmax(q k^T / sqrt(d))
// over positions 0..pos and its sum of v. qkv = q (heads x d) | k (kv_heads x d) | v.
// Caches: [positions][kv_heads x d] of this layer. Blocks of one KV head write the same
// k and v (grouped-query attention): the same values, and each reads only its own writes.
// The cache is small and its reads are latency-bound: a thread scores a position with its
// whole k row in flight at once, and the eight warps share the positions of the sum of v.
template <typename T, int HD>
__global__ void __launch_bounds__(kAttnThreads) attention(const T* __restrict__ qkv, T* __restrict__ k_cache,
                                                          T* __restrict__ v_cache, T* __restrict__ out,
                                                          const int* __restrict__ pos_ptr, int heads, int kv_heads) {
  constexpr int kWarps = kAttnThreads / 32, kPer = HD / 32;
  extern __shared__ float scores[];
  __shared__ float qs[HD];
  __shared__ float partial[kWarps][HD];
  __shared__ float red[2][kWarps];
  wait_for_previous_kernel();
  const int h = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int kvh = h / (heads / kv_heads);
  const int pos = *pos_ptr;
  const int kv_dim = kv_heads * HD;
  const size_t head_off = static_cast<size_t>(kvh) * HD;
  if (tid < HD) {
    const T* q = qkv + h * HD;
    const T* k = qkv + heads * HD + head_off;
    const T* v = qkv + heads * HD + kv_dim + head_off;
    // Rotary embedding: thread d holds element d of its pair (d even: x1, odd: x2).
    const int d = tid, i = d >> 1;
    const float inv = 1.f / powf(10000.f, (2.f * i) / HD);
    const float ang = static_cast<float>(pos) * inv;
    const float c = round_to<T>(cosf(ang)), s = round_to<T>(sinf(ang));
    auto rope = [&](const T* x) {
      const float x1 = to_f<T>(x[d & ~1]), x2 = to_f<T>(x[d | 1]);
      return (d & 1) ? round_to<T>(round_to<T>(x1 * s) + round_to<T>(x2 * c))
                     : round_to<T>(round_to<T>(x1 * c) - round_to<T>(x2 * s));
    };
    qs[d] = rope(q);
    const size_t here = static_cast<size_t>(pos) * kv_dim + head_off + d;
    k_cache[here] = from_f<T>(rope(k));
    v_cache[here] = v[d];
  }
  __syncthreads();
  const float scale = rsqrtf(static_cast<float>(HD));
  float m = -INFINITY;
  for (int t = tid; t <= pos; t += kAttnThreads) {
    const uint4* kt = reinterpret_cast<const uint4*>(k_cache + static_cast<size_t>(t) * kv_dim + head_off);
    uint4 kr[HD / 8];
#pragma unroll
    for (int e = 0; e < HD / 8; ++e) kr[e] = kt[e];
    float a = 0.f;
#pragma unroll
    for (int e = 0; e < HD / 8; ++e) {
      const T* kx = reinterpret_cast<const T*>(&kr[e]);
#pragma unroll
      for (int j = 0; j < 8; ++j) a = fmaf(qs[e * 8 + j], to_f<T>(kx[j]), a);
    }
    scores[t] = a * scale;
    m = fmaxf(m, a * scale);
  }
  m = warp_max(m);
  if (lane == 0) red[0][warp] = m;
  __syncthreads();
  m = red[0][0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, red[0][w]);
  float sum = 0.f;
  for (int t = tid; t <= pos; t += kAttnThreads) {
    const float e = __expf(scores[t] - m);
    scores[t] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (lane == 0) red[1][warp] = sum;
  __syncthreads();
  sum = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) sum += red[1][w];
  // Sum of v: warp w takes positions w, w + 8, ...; lane l elements l*kPer .. l*kPer + kPer - 1.
  float acc[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) acc[e] = 0.f;
#pragma unroll 4
  for (int t = warp; t <= pos; t += kWarps) {
    const T* vt = v_cache + static_cast<size_t>(t) * kv_dim + head_off + lane * kPer;
    const float p = scores[t];
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = fmaf(p, to_f<T>(vt[e]), acc[e]);
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e) partial[warp][lane * kPer + e] = acc[e];
  __syncthreads();
  if (tid < HD) {
    float a = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) a += partial[w][tid];
    out[h * HD + tid] = from_f<T>(a / sum);
  }
}

// The step's last kernel, one block: the token after position `pos` (the prompt's next
// while the prompt is read, else the argmax of the logits, the lowest index on a tie as
// torch.argmax), written to out[pos - (prompt_len - 1)] once past the prompt; its
// embedding row becomes the residual stream; the position advances.
template <typename T>
__global__ void next_token(const float* __restrict__ logits, int vocab, const T* __restrict__ embed, int hidden,
                           T* __restrict__ x, const int* __restrict__ prompt, int prompt_len,
                           int* __restrict__ out, int out_len, int* __restrict__ pos_ptr) {
  __shared__ float best_v[32];
  __shared__ int best_i[32];
  __shared__ int chosen;
  wait_for_previous_kernel();
  const int pos = *pos_ptr;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (pos + 1 < prompt_len) {
    if (threadIdx.x == 0) chosen = prompt[pos + 1];
  } else {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
#pragma unroll 8
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      const float v = logits[i];
      if (v > bv || (v == bv && i < bi)) bv = v, bi = i;
    }
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
    }
    if (lane == 0) best_v[warp] = bv, best_i[warp] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
        if (best_v[w] > bv || (best_v[w] == bv && best_i[w] < bi)) bv = best_v[w], bi = best_i[w];
      // Warp 0's own pick is bv, bi already (lane 0 holds the warp's result).
      const int k = pos - (prompt_len - 1);
      if (k >= 0 && k < out_len) out[k] = bi;
      chosen = bi;
    }
  }
  __syncthreads();
  const T* row = embed + static_cast<size_t>(chosen) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[i] = row[i];
  __syncthreads();
  if (threadIdx.x == 0) *pos_ptr = pos + 1;
}

// The state before the first step: position 0, the prompt's first token's embedding.
template <typename T>
__global__ void start(const T* __restrict__ embed, int hidden, const int* __restrict__ prompt, T* __restrict__ x,
                      int* __restrict__ pos_ptr) {
  wait_for_previous_kernel();
  const T* row = embed + static_cast<size_t>(prompt[0]) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[i] = row[i];
  if (threadIdx.x == 0) *pos_ptr = 0;
}

// The read rate of each memory a decode's weights lie in, measured in the same run as its
// bound (mempath llm): the GEMV's streaming 16-byte loads, four in flight a thread, their bits
// folded into one word so that no read can be left out. Two orders, as a decode's kernels
// read: `tiles` (a block reads 4 x blockDim contiguous loads: one weight row's span) and
// strided (each load a grid apart); over PCIe or C2C the order and the loads in flight
// decide the rate, so the caller takes the best of both at several occupancies.
template <bool Tiles>
__global__ void __launch_bounds__(kThreads) read_all(const uint4* const* ptrs, const unsigned long long* counts,
                                                     int n, unsigned* out) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  unsigned fold = 0;
  for (int s = 0; s < n; ++s) {
    const uint4* p = ptrs[s];
    const size_t count = counts[s];
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (Tiles) {
      const size_t tile = size_t(blockDim.x) * 4, tiles = count / tile;
      for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint4* q = p + t * tile + threadIdx.x;
        const uint4 a = __ldcs(q), b = __ldcs(q + blockDim.x), c = __ldcs(q + 2 * blockDim.x),
                    d = __ldcs(q + 3 * blockDim.x);
        fold ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
      }
      i += tiles * tile;
    } else {
      for (; i + 3 * stride < count; i += 4 * stride) {
        const uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
                    d = __ldcs(p + i + 3 * stride);
        fold ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
      }
    }
    for (; i < count; i += stride) {
      const uint4 a = __ldcs(p + i);
      fold ^= a.x ^ a.y ^ a.z ^ a.w;
    }
  }
  for (int o = 16; o; o >>= 1) fold ^= __shfl_xor_sync(0xffffffffu, fold, o);
  if ((threadIdx.x & 31) == 0) atomicXor(out, fold);
}

inline bool programmatic_launch() {
  static const bool on = [] {
    const char* env = std::getenv("MEMPATH_DECODE_PDL");
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
      return false;
    return major >= 9 && !(env && std::strcmp(env, "0") == 0);
  }();
  return on;
}

// Every kernel goes out through here: with programmatic dependent launch where it is on.
template <typename... Params, typename... Args>
int launch(void (*kernel)(Params...), unsigned blocks, unsigned threads, size_t smem, cudaStream_t stream,
           Args... args) {
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = programmatic_launch() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

template <typename T, int ROWS, bool NORM, int EPI>
int launch_gemv(const void* W, const void* x, const void* norm_w, void* out, int N, int K, float eps,
                cudaStream_t stream) {
  if (K % 8 != 0 || N <= 0 || (EPI == kSwiglu && N % 2 != 0)) return cudaErrorInvalidValue;
  const int warps = EPI == kSwiglu ? N / 2 : (N + ROWS - 1) / ROWS;
  const int blocks = (warps * 32 + kThreads - 1) / kThreads;
  const size_t smem = NORM ? static_cast<size_t>(K) * sizeof(T) : 0;
  return launch(gemv<T, ROWS, NORM, EPI>, blocks, kThreads, smem, stream, static_cast<const T*>(W),
                static_cast<const T*>(x), static_cast<const T*>(norm_w), out, N, K, eps);
}

template <typename T>
int launch_all(int op, const void* W, const void* x, const void* norm_w, void* out, int N, int K, float eps,
               cudaStream_t stream) {
  switch (op) {
    case 0: return launch_gemv<T, 1, true, kStore>(W, x, norm_w, out, N, K, eps, stream);     // norm + rows
    case 1: return launch_gemv<T, 1, false, kResidual>(W, x, norm_w, out, N, K, eps, stream); // rows + residual
    case 2: return launch_gemv<T, 2, true, kSwiglu>(W, x, norm_w, out, N, K, eps, stream);    // norm + gate|up
    case 3: return launch_gemv<T, 1, true, kLogits>(W, x, norm_w, out, N, K, eps, stream);    // norm + lm_head
    case 4: return launch_gemv<T, 1, false, kStore>(W, x, norm_w, out, N, K, eps, stream);    // plain rows
    default: return cudaErrorInvalidValue;
  }
}

template <typename T>
int launch_attention(const void* qkv, void* k_cache, void* v_cache, void* out, const int* pos, int heads,
                     int kv_heads, int head_dim, int max_positions, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(max_positions) * sizeof(float);
  auto kernel = head_dim == 64 ? attention<T, 64> : attention<T, 128>;
  return launch(kernel, heads, kAttnThreads, smem, stream, static_cast<const T*>(qkv), static_cast<T*>(k_cache),
                static_cast<T*>(v_cache), static_cast<T*>(out), pos, heads, kv_heads);
}

}  // namespace mempath::llm_kernels
