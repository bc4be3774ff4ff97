// libmempath_decode.so: the batch-1 decode step of a Llama-style model in a few fused
// kernels, for src/llm/llm_placement.py (`--decode fused`). A decode step reads every
// weight once; at batch 1 its matrix products are matrix-vector products, bound by how fast
// the GPU reads the weights' memory. PyTorch runs each as a cuBLAS GEMM of n = 1 with its
// norms, rotary embedding, attention, SwiGLU and residual adds as separate kernels (about
// 20 a layer) and reaches 40 % of that bound on an H200; these kernels stream the weights
// with 16-byte loads, a warp per output row, and fold the rest into five kernels a layer:
//   1. RMSNorm of the residual stream (each block computes it again; the vector is small)
//      and the fused q|k|v rows                                   -> qkv
//   2. rotary embedding of q and k, the k and v of this position into the cache, attention
//      over the cached positions, one block a head                 -> attn
//   3. the o rows, added to the residual stream                    -> x
//   4. RMSNorm and the stacked gate|up rows, SiLU(gate) x up       -> act
//   5. the down rows, added to the residual stream                 -> x
// then RMSNorm and the lm_head rows (logits), and one block that takes the argmax (or the
// prompt's next token while the prompt is being read), writes it, reads its embedding row
// into the residual stream and advances the position: every input of a step lives on the
// GPU, so the whole step is one CUDA graph the script replays, with no host in between.
// Rounding follows PyTorch's fp16/bf16 decode (products accumulated in fp32, each op's
// output rounded to the model's dtype), so that greedy tokens match the plain decode's but
// for near-ties, which the script checks (llm_placement.py, verify_tokens).
// C entry points for ctypes; each returns 0 or a CUDA error code (mempath_decode_error).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

cudaError_t g_error = cudaSuccess;

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
      const uint4 v = xin[i], w = g[i];
      uint4 r;
      const T* xv = reinterpret_cast<const T*>(&v);
      const T* wv = reinterpret_cast<const T*>(&w);
      T* rv = reinterpret_cast<T*>(&r);
#pragma unroll
      for (int j = 0; j < 8; ++j) rv[j] = from_f<T>(round_to<T>(to_f<T>(xv[j]) * s) * to_f<T>(wv[j]));
      smem_vec[i] = r;
    }
    __syncthreads();
  }
  // A warp's rows: ROWS consecutive ones, or gate_j and up_j (rows j and N/2 + j).
  if (EPI == kSwiglu ? warp >= N / 2 : row0 >= N) return;
  const uint4* xs = NORM ? smem_vec : xin;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
  const uint4* rows[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int n = EPI == kSwiglu ? warp + r * (N / 2) : min(row0 + r, N - 1);
    rows[r] = reinterpret_cast<const uint4*>(W + size_t(n) * K);
  }
  for (int base = lane; base < kv; base += 32 * kUnroll) {
    uint4 w[ROWS][kUnroll], xx[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * 32;
      if (i < kv) {
        xx[u] = xs[i];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) w[r][u] = __ldcs(rows[r] + i);  // streamed: read once a step
      }
    }
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

// One block a query head (blockDim = head_dim, 64 or 128): rotary embedding of q and of this
// position's k (pairs 2i, 2i+1; angle pos / 10000^(2i/d), cos and sin rounded to T as the
// plain decode rounds them), k and v into the cache at `pos`, then softmax(q k^T / sqrt(d))
// over positions 0..pos and its sum of v. qkv = q (heads x d) | k (kv_heads x d) | v.
// Caches: [positions][kv_heads x d] of this layer. Blocks of one KV head write the same
// k and v (grouped-query attention): the same values, and each reads only its own writes.
template <typename T>
__global__ void attention(const T* __restrict__ qkv, T* __restrict__ k_cache, T* __restrict__ v_cache,
                          T* __restrict__ out, const int* __restrict__ pos_ptr, int heads, int kv_heads,
                          int head_dim) {
  extern __shared__ float scores[];
  __shared__ float qs[128];
  __shared__ float red[4];
  const int h = blockIdx.x, d = threadIdx.x, lane = d & 31, warp = d >> 5, warps = head_dim >> 5;
  const int kvh = h / (heads / kv_heads);
  const int pos = *pos_ptr;
  const int kv_dim = kv_heads * head_dim;
  const T* q = qkv + h * head_dim;
  const T* k = qkv + heads * head_dim + kvh * head_dim;
  const T* v = qkv + heads * head_dim + kv_dim + kvh * head_dim;
  // Rotary embedding: thread d holds element d of its pair (d even: x1, odd: x2).
  const int i = d >> 1;
  const float inv = 1.f / powf(10000.f, (2.f * i) / head_dim);
  const float ang = static_cast<float>(pos) * inv;
  const float c = round_to<T>(cosf(ang)), s = round_to<T>(sinf(ang));
  auto rope = [&](const T* x) {
    const float x1 = to_f<T>(x[d & ~1]), x2 = to_f<T>(x[d | 1]);
    return (d & 1) ? round_to<T>(round_to<T>(x1 * s) + round_to<T>(x2 * c))
                   : round_to<T>(round_to<T>(x1 * c) - round_to<T>(x2 * s));
  };
  qs[d] = rope(q);
  const size_t here = static_cast<size_t>(pos) * kv_dim + kvh * head_dim + d;
  k_cache[here] = from_f<T>(rope(k));
  v_cache[here] = v[d];
  __syncthreads();
  // Scores: a warp per position, each lane head_dim / 32 elements.
  const float scale = rsqrtf(static_cast<float>(head_dim));
  const int per = head_dim >> 5;
  for (int t = warp; t <= pos; t += warps) {
    const T* kt = k_cache + static_cast<size_t>(t) * kv_dim + kvh * head_dim;
    float a = 0.f;
    for (int e = 0; e < per; ++e) a = fmaf(qs[lane * per + e], to_f<T>(kt[lane * per + e]), a);
    a = warp_sum(a);
    if (lane == 0) scores[t] = a * scale;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int t = d; t <= pos; t += head_dim) m = fmaxf(m, scores[t]);
  m = warp_max(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < warps; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float sum = 0.f;
  for (int t = d; t <= pos; t += head_dim) {
    const float e = __expf(scores[t] - m);
    scores[t] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (lane == 0) red[warp] = sum;
  __syncthreads();
  sum = 0.f;
  for (int w = 0; w < warps; ++w) sum += red[w];
  float acc = 0.f;
  for (int t = 0; t <= pos; ++t) acc = fmaf(scores[t], to_f<T>(v_cache[static_cast<size_t>(t) * kv_dim + kvh * head_dim + d]), acc);
  out[h * head_dim + d] = from_f<T>(acc / sum);
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
  const int pos = *pos_ptr;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (pos + 1 < prompt_len) {
    if (threadIdx.x == 0) chosen = prompt[pos + 1];
  } else {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
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
  const T* row = embed + static_cast<size_t>(prompt[0]) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[i] = row[i];
  if (threadIdx.x == 0) *pos_ptr = 0;
}

template <typename T, int ROWS, bool NORM, int EPI>
int launch_gemv(const void* W, const void* x, const void* norm_w, void* out, int N, int K, float eps,
                cudaStream_t stream) {
  if (K % 8 != 0 || N <= 0 || (EPI == kSwiglu && N % 2 != 0)) return cudaErrorInvalidValue;
  const int warps = EPI == kSwiglu ? N / 2 : (N + ROWS - 1) / ROWS;
  const int blocks = (warps * 32 + kThreads - 1) / kThreads;
  const size_t smem = NORM ? static_cast<size_t>(K) * sizeof(T) : 0;
  auto kernel = gemv<T, ROWS, NORM, EPI>;
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  kernel<<<blocks, kThreads, smem, stream>>>(static_cast<const T*>(W), static_cast<const T*>(x),
                                             static_cast<const T*>(norm_w), out, N, K, eps);
  return cudaGetLastError();
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

int record(int code) {
  if (code != cudaSuccess) g_error = static_cast<cudaError_t>(code);
  return code;
}

}  // namespace

extern "C" {

// dtype: 0 fp16, 1 bf16. op: 0 RMSNorm(x) x norm_w then rows -> out (T); 1 rows of x added
// to out (the residual stream, T); 2 RMSNorm then the stacked gate|up rows -> SiLU(gate) x up
// (N/2 outputs, T); 3 RMSNorm then rows -> out (float, rounded to T); 4 rows of x -> out (T).
int mempath_decode_gemv(int dtype, int op, const void* W, const void* x, const void* norm_w, void* out, int N,
                        int K, float eps, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return record(dtype == 0 ? launch_all<__half>(op, W, x, norm_w, out, N, K, eps, s)
                           : launch_all<__nv_bfloat16>(op, W, x, norm_w, out, N, K, eps, s));
}

// Attention of this layer at *pos (its k and v written into the caches first).
int mempath_decode_attention(int dtype, const void* qkv, void* k_cache, void* v_cache, void* out, const int* pos,
                             int heads, int kv_heads, int head_dim, int max_positions, void* stream) {
  if ((head_dim != 64 && head_dim != 128) || heads % kv_heads != 0) return record(cudaErrorInvalidValue);
  const auto s = static_cast<cudaStream_t>(stream);
  const size_t smem = static_cast<size_t>(max_positions) * sizeof(float);
  if (dtype == 0) {
    if (smem > 48 * 1024 && cudaFuncSetAttribute(attention<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  static_cast<int>(smem)) != cudaSuccess)
      return record(cudaErrorInvalidValue);
    attention<__half><<<heads, head_dim, smem, s>>>(static_cast<const __half*>(qkv), static_cast<__half*>(k_cache),
                                                     static_cast<__half*>(v_cache), static_cast<__half*>(out), pos,
                                                     heads, kv_heads, head_dim);
  } else {
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(attention<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)) != cudaSuccess)
      return record(cudaErrorInvalidValue);
    attention<__nv_bfloat16><<<heads, head_dim, smem, s>>>(
        static_cast<const __nv_bfloat16*>(qkv), static_cast<__nv_bfloat16*>(k_cache),
        static_cast<__nv_bfloat16*>(v_cache), static_cast<__nv_bfloat16*>(out), pos, heads, kv_heads, head_dim);
  }
  return record(cudaGetLastError());
}

int mempath_decode_next_token(int dtype, const float* logits, int vocab, const void* embed, int hidden, void* x,
                              const int* prompt, int prompt_len, int* out, int out_len, int* pos, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 0)
    next_token<__half><<<1, 1024, 0, s>>>(logits, vocab, static_cast<const __half*>(embed), hidden,
                                          static_cast<__half*>(x), prompt, prompt_len, out, out_len, pos);
  else
    next_token<__nv_bfloat16><<<1, 1024, 0, s>>>(logits, vocab, static_cast<const __nv_bfloat16*>(embed), hidden,
                                                 static_cast<__nv_bfloat16*>(x), prompt, prompt_len, out, out_len,
                                                 pos);
  return record(cudaGetLastError());
}

int mempath_decode_start(int dtype, const void* embed, int hidden, const int* prompt, void* x, int* pos,
                         void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (dtype == 0)
    start<__half><<<1, 256, 0, s>>>(static_cast<const __half*>(embed), hidden, prompt, static_cast<__half*>(x), pos);
  else
    start<__nv_bfloat16><<<1, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(embed), hidden, prompt,
                                           static_cast<__nv_bfloat16*>(x), pos);
  return record(cudaGetLastError());
}

// The first error any entry point met (0: none), as text.
const char* mempath_decode_error() { return g_error == cudaSuccess ? "" : cudaGetErrorString(g_error); }

}  // extern "C"
