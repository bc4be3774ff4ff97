// libmempath_decode.so: the fused decode kernels (gpu/llm_kernels.cuh) behind C entry points
// for ctypes, for the referee's `default` placement (src/llm/referee.py: the weights in
// PyTorch's own allocator, decoded by the kernels `mempath llm` uses). Each entry point
// returns 0 or a CUDA error code (mempath_decode_error says which).
#include "gpu/llm_kernels.cuh"

namespace {

using namespace mempath::llm_kernels;

cudaError_t g_error = cudaSuccess;

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
  return record(dtype == 0 ? launch_attention<__half>(qkv, k_cache, v_cache, out, pos, heads, kv_heads, head_dim,
                                                      max_positions, s)
                           : launch_attention<__nv_bfloat16>(qkv, k_cache, v_cache, out, pos, heads, kv_heads,
                                                             head_dim, max_positions, s));
}

int mempath_decode_next_token(int dtype, const float* logits, int vocab, const void* embed, int hidden, void* x,
                              const int* prompt, int prompt_len, int* out, int out_len, int* pos, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return record(dtype == 0 ? launch(next_token<__half>, 1, 1024, 0, s, logits, vocab,
                                    static_cast<const __half*>(embed), hidden, static_cast<__half*>(x), prompt,
                                    prompt_len, out, out_len, pos)
                           : launch(next_token<__nv_bfloat16>, 1, 1024, 0, s, logits, vocab,
                                    static_cast<const __nv_bfloat16*>(embed), hidden,
                                    static_cast<__nv_bfloat16*>(x), prompt, prompt_len, out, out_len, pos));
}

int mempath_decode_start(int dtype, const void* embed, int hidden, const int* prompt, void* x, int* pos,
                         void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return record(dtype == 0 ? launch(start<__half>, 1, 256, 0, s, static_cast<const __half*>(embed), hidden, prompt,
                                    static_cast<__half*>(x), pos)
                           : launch(start<__nv_bfloat16>, 1, 256, 0, s, static_cast<const __nv_bfloat16*>(embed),
                                    hidden, prompt, static_cast<__nv_bfloat16*>(x), pos));
}

// Whether the kernels go out with programmatic dependent launch (Hopper and later, unless
// MEMPATH_DECODE_PDL=0), for the record of the run.
int mempath_decode_programmatic_launch() { return programmatic_launch() ? 1 : 0; }

// The first error any entry point met (0: none), as text.
const char* mempath_decode_error() { return g_error == cudaSuccess ? "" : cudaGetErrorString(g_error); }

}  // extern "C"
