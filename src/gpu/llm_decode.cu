// `mempath llm`'s GPU side (gpu/llm_api.hpp): the weights' values written where they lie, the
// decode step as one CUDA graph over the fused kernels (gpu/llm_kernels.cuh), with the
// streamed layers' copies on a second stream inside the same graph, and the read and copy
// rates the bounds are made of.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/llm_api.hpp"
#include "gpu/llm_kernels.cuh"

namespace mempath::gpu {
namespace {

using namespace mempath::llm_kernels;

constexpr float kEps = 1e-5f;  // RMSNorm's epsilon (Llama's)

template <typename T>
__global__ void fill_kernel(T* __restrict__ dst, int64_t first, int64_t count, uint32_t seed, uint32_t tensor,
                            float scale, bool ones) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    dst[i] = from_f<T>(ones ? 1.0f : llm_weight(seed, tensor, static_cast<uint32_t>(first + i), scale));
}

void fill_on_gpu(int dtype, void* dst, int64_t first, int64_t count, uint32_t seed, uint32_t tensor, float scale,
                 bool ones, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((count + 255) / 256, 65535));
  if (dtype == 0)
    fill_kernel<<<blocks, 256, 0, s>>>(static_cast<__half*>(dst), first, count, seed, tensor, scale, ones);
  else
    fill_kernel<<<blocks, 256, 0, s>>>(static_cast<__nv_bfloat16*>(dst), first, count, seed, tensor, scale, ones);
  cuda_check(cudaGetLastError(), "fill kernel");
}

// The state after the prompt again (its KV cache slots hold the same keys and values each
// time): the position past the prompt, the first new token's embedding as the residual stream.
template <typename T>
__global__ void resume(const T* __restrict__ embed, int hidden, const int* __restrict__ out, int prompt_len,
                       T* __restrict__ x, int* __restrict__ pos_ptr) {
  const T* row = embed + static_cast<size_t>(out[0]) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[i] = row[i];
  if (threadIdx.x == 0) *pos_ptr = prompt_len;
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
};

template <typename T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(size_t n) { cuda_check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  ~DeviceArray() { cudaFree(p); }
};

void check(int code, const char* what) { cuda_check(static_cast<cudaError_t>(code), what); }

// One decode: the state a step reads and writes (all in the GPU's memory), the step's
// kernels on the compute stream, a streamed layer's copy on the copy stream.
class Decode {
 public:
  explicit Decode(const LlmDecodeSpec& spec)
      : sp_(spec), positions_(static_cast<int>(spec.prompt.size()) + spec.new_tokens),
        x_(spec.shape.hidden * 2), qkv_((spec.shape.hidden + 2 * spec.shape.kv_dim()) * 2),
        attn_(spec.shape.hidden * 2), act_(spec.shape.intermediate * 2), logits_(spec.shape.vocab),
        pos_(1), out_(spec.new_tokens), prompt_(spec.prompt.size()) {
    cuda_check(cudaMemcpy(prompt_.p, spec.prompt.data(), spec.prompt.size() * sizeof(int), cudaMemcpyHostToDevice),
               "prompt");
    for (int64_t i = 0; i < std::max<int64_t>(sp_.ring_slots, 1); ++i) {
      ready_.emplace_back(event());
      free_.emplace_back(event());
    }
    fork_ = event();
    join_ = event();
  }
  ~Decode() {
    if (exec_) cudaGraphExecDestroy(exec_);
    for (cudaEvent_t e : ready_) cudaEventDestroy(e);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    cudaEventDestroy(fork_);
    cudaEventDestroy(join_);
  }

  // The step's kernels (and copies) on the compute stream, as the graph captures them.
  void launch_step() {
    const auto& s = sp_.shape;
    const int d = sp_.dtype, hidden = static_cast<int>(s.hidden), kv = static_cast<int>(s.kv_dim());
    const int inter = static_cast<int>(s.intermediate);
    const cudaStream_t c = compute_.s;
    std::vector<int64_t> streamed;
    for (size_t i = 0; i < sp_.layers.size(); ++i)
      if (sp_.layers[i].streamed) streamed.push_back(static_cast<int64_t>(i));
    const int64_t ring = std::min<int64_t>(sp_.ring_slots, static_cast<int64_t>(streamed.size()));
    if (!streamed.empty()) {  // the copy stream joins the step, and the first slots fill at once
      cuda_check(cudaEventRecord(fork_, c), "cudaEventRecord");
      cuda_check(cudaStreamWaitEvent(copy_.s, fork_, 0), "cudaStreamWaitEvent");
      for (int64_t j = 0; j < ring; ++j) copy_layer(streamed[j], j);
    }
    const char* const kv_cache = static_cast<const char*>(sp_.k_cache);
    const size_t cache_layer = static_cast<size_t>(positions_) * kv * 2;
    for (size_t i = 0; i < sp_.layers.size(); ++i) {
      const char* w = static_cast<const char*>(sp_.layers[i].block);
      int64_t slot = -1;
      if (sp_.layers[i].streamed) {
        const int64_t j = std::find(streamed.begin(), streamed.end(), static_cast<int64_t>(i)) - streamed.begin();
        slot = j % ring;
        cuda_check(cudaStreamWaitEvent(c, ready_[slot], 0), "cudaStreamWaitEvent");
        w = static_cast<const char*>(sp_.ring) + slot * sp_.layout.bytes;
      }
      const auto& l = sp_.layout;
      char* kc = static_cast<char*>(sp_.k_cache) + i * cache_layer;
      char* vc = static_cast<char*>(sp_.v_cache) + i * cache_layer;
      (void)kv_cache;
      check(gemv(d, 0, w + l.qkv, x_.p, w + l.n1, qkv_.p, hidden + 2 * kv, hidden, c), "q|k|v");
      check(attention(d, qkv_.p, kc, vc, attn_.p, pos_.p, static_cast<int>(s.heads), static_cast<int>(s.kv_heads),
                      static_cast<int>(s.head_dim()), positions_, c), "attention");
      check(gemv(d, 1, w + l.o, attn_.p, nullptr, x_.p, hidden, hidden, c), "o");
      check(gemv(d, 2, w + l.gu, x_.p, w + l.n2, act_.p, 2 * inter, hidden, c), "gate|up");
      check(gemv(d, 1, w + l.down, act_.p, nullptr, x_.p, hidden, inter, c), "down");
      if (slot >= 0) {  // the slot is free once this layer is read; the layer `ring` on fills it
        cuda_check(cudaEventRecord(free_[slot], c), "cudaEventRecord");
        const int64_t j = std::find(streamed.begin(), streamed.end(), static_cast<int64_t>(i)) - streamed.begin();
        if (j + ring < static_cast<int64_t>(streamed.size())) {
          cuda_check(cudaStreamWaitEvent(copy_.s, free_[slot], 0), "cudaStreamWaitEvent");
          copy_layer(streamed[j + ring], slot);
        }
      }
    }
    check(gemv(d, 3, sp_.head, x_.p, sp_.norm, logits_.p, static_cast<int>(s.vocab), hidden, c), "lm_head");
    check(next_token(d), "next token");
    if (!streamed.empty()) {  // the copy stream rejoins (a capture needs every fork joined)
      cuda_check(cudaEventRecord(join_, copy_.s), "cudaEventRecord");
      cuda_check(cudaStreamWaitEvent(c, join_, 0), "cudaStreamWaitEvent");
    }
  }

  void restart() {
    const int hidden = static_cast<int>(sp_.shape.hidden);
    check(sp_.dtype == 0
              ? launch(start<__half>, 1, 256, 0, compute_.s, static_cast<const __half*>(sp_.embed), hidden, prompt_.p,
                       reinterpret_cast<__half*>(x_.p), pos_.p)
              : launch(start<__nv_bfloat16>, 1, 256, 0, compute_.s, static_cast<const __nv_bfloat16*>(sp_.embed),
                       hidden, prompt_.p, reinterpret_cast<__nv_bfloat16*>(x_.p), pos_.p),
          "start");
  }

  void step() {
    if (exec_)
      cuda_check(cudaGraphLaunch(exec_, compute_.s), "cudaGraphLaunch");
    else
      launch_step();
  }

  // The step as one graph; "" or why not (each step then launches its kernels).
  std::string capture() {
    restart();
    for (int i = 0; i < std::min(2, positions_ - 1); ++i) launch_step();  // first launches outside the capture
    cuda_check(cudaStreamSynchronize(compute_.s), "warm-up steps");
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamBeginCapture(compute_.s, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) {
      try {
        launch_step();
      } catch (const std::exception&) {
      }
      e = cudaStreamEndCapture(compute_.s, &graph);
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec_, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    prefilled_ = false;  // the warm-up steps moved the state: the first generate reads the prompt again
    if (e != cudaSuccess) {
      cudaGetLastError();
      exec_ = nullptr;
      cudaStreamSynchronize(compute_.s);
      return std::string("CUDA graph capture of the step failed: ") + cudaGetErrorString(e);
    }
    return "";
  }

  // The prompt, a position a step (not timed; once: later repetitions resume after it);
  // then `steps` timed steps: seconds, and the tokens so far (the first new token and one a step).
  std::pair<double, std::vector<int>> generate(int steps) {
    if (!prefilled_) {
      restart();
      for (size_t i = 0; i < sp_.prompt.size(); ++i) step();
      prefilled_ = true;
    } else {
      const int hidden = static_cast<int>(sp_.shape.hidden), plen = static_cast<int>(sp_.prompt.size());
      if (sp_.dtype == 0)
        resume<<<1, 256, 0, compute_.s>>>(static_cast<const __half*>(sp_.embed), hidden, out_.p, plen,
                                          reinterpret_cast<__half*>(x_.p), pos_.p);
      else
        resume<<<1, 256, 0, compute_.s>>>(static_cast<const __nv_bfloat16*>(sp_.embed), hidden, out_.p, plen,
                                          reinterpret_cast<__nv_bfloat16*>(x_.p), pos_.p);
      cuda_check(cudaGetLastError(), "resume");
    }
    Events ev(2);
    cuda_check(cudaEventRecord(ev.e[0], compute_.s), "cudaEventRecord");
    for (int i = 0; i < steps; ++i) step();
    cuda_check(cudaEventRecord(ev.e[1], compute_.s), "cudaEventRecord");
    cuda_check(cudaStreamSynchronize(compute_.s), "decode steps");
    std::vector<int> tokens(steps + 1);
    cuda_check(cudaMemcpy(tokens.data(), out_.p, tokens.size() * sizeof(int), cudaMemcpyDeviceToHost), "tokens");
    return {ev.seconds(0, 1), tokens};
  }

  cudaStream_t stream() const { return compute_.s; }

 private:
  static cudaEvent_t event() {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    return e;
  }
  void copy_layer(int64_t layer, int64_t slot) {
    void* to = static_cast<char*>(sp_.ring) + slot * sp_.layout.bytes;
    cuda_check(cudaMemcpyAsync(to, sp_.layers[layer].block, sp_.layout.bytes, cudaMemcpyDefault, copy_.s),
               "streamed layer's copy");
    cuda_check(cudaEventRecord(ready_[slot], copy_.s), "cudaEventRecord");
  }
  int gemv(int d, int op, const void* W, const void* x, const void* n, void* out, int N, int K, cudaStream_t s) {
    return d == 0 ? launch_all<__half>(op, W, x, n, out, N, K, kEps, s)
                  : launch_all<__nv_bfloat16>(op, W, x, n, out, N, K, kEps, s);
  }
  int attention(int d, const void* qkv, void* kc, void* vc, void* out, const int* pos, int heads, int kvh, int hd,
                int positions, cudaStream_t s) {
    if ((hd != 64 && hd != 128) || heads % kvh != 0) return cudaErrorInvalidValue;
    return d == 0 ? launch_attention<__half>(qkv, kc, vc, out, pos, heads, kvh, hd, positions, s)
                  : launch_attention<__nv_bfloat16>(qkv, kc, vc, out, pos, heads, kvh, hd, positions, s);
  }
  int next_token(int d) {
    const int vocab = static_cast<int>(sp_.shape.vocab), hidden = static_cast<int>(sp_.shape.hidden);
    const int plen = static_cast<int>(sp_.prompt.size());
    return d == 0 ? launch(llm_kernels::next_token<__half>, 1, 1024, 0, compute_.s, logits_.p, vocab,
                           static_cast<const __half*>(sp_.embed), hidden, reinterpret_cast<__half*>(x_.p), prompt_.p,
                           plen, out_.p, sp_.new_tokens, pos_.p)
                  : launch(llm_kernels::next_token<__nv_bfloat16>, 1, 1024, 0, compute_.s, logits_.p, vocab,
                           static_cast<const __nv_bfloat16*>(sp_.embed), hidden,
                           reinterpret_cast<__nv_bfloat16*>(x_.p), prompt_.p, plen, out_.p, sp_.new_tokens, pos_.p);
  }

  const LlmDecodeSpec& sp_;
  int positions_;
  Stream compute_, copy_;
  DeviceArray<char> x_, qkv_, attn_, act_;
  DeviceArray<float> logits_;
  DeviceArray<int> pos_, out_, prompt_;
  std::vector<cudaEvent_t> ready_, free_;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  bool prefilled_ = false;
};

constexpr int kMinTimed = 8;  // the referee's MIN_TIMED too (src/llm/referee.py)

}  // namespace

void llm_fill(int gpu, int dtype, void* dst, int64_t first_row, int64_t rows, int64_t cols, uint32_t seed,
              uint32_t tensor, float scale, bool ones, bool dst_on_gpu) {
  use_device(gpu);
  const int64_t count = rows * cols, first = first_row * cols;
  if (dst_on_gpu) {
    fill_on_gpu(dtype, dst, first, count, seed, tensor, scale, ones, nullptr);
    cuda_check(cudaDeviceSynchronize(), "fill");
    return;
  }
  // Host memory: written in chunks of the GPU's staging buffer, then copied (a GPU's
  // stores over the link would be as slow and leave nothing cached on the GPU either).
  constexpr int64_t kChunk = 64LL << 20;  // elements
  DeviceArray<char> stage(static_cast<size_t>(std::min(count, kChunk)) * 2);
  for (int64_t at = 0; at < count; at += kChunk) {
    const int64_t n = std::min(kChunk, count - at);
    fill_on_gpu(dtype, stage.p, first + at, n, seed, tensor, scale, ones, nullptr);
    cuda_check(cudaMemcpy(static_cast<char*>(dst) + at * 2, stage.p, n * 2, cudaMemcpyDeviceToHost), "fill copy");
  }
}

LlmDecodeRun run_llm_decode(const LlmDecodeSpec& spec) {
  use_device(spec.gpu);
  LlmDecodeRun run;
  Decode decode(spec);
  run.graph_why = decode.capture();
  run.graph = run.graph_why.empty();
  run.programmatic = programmatic_launch();
  const int most = spec.new_tokens - 1;
  const int probe = std::min(most, 3);
  const double step_s = decode.generate(probe).first / probe;
  int steps = most;
  if (step_s * most > spec.rep_budget_s)
    steps = std::min(most, std::max(kMinTimed, static_cast<int>(std::ceil(spec.rep_budget_s / step_s))));
  run.timed_steps = steps;
  for (int rep = 0; rep < spec.warmup + spec.reps; ++rep) {
    auto [seconds, tokens] = decode.generate(steps);
    if (rep >= spec.warmup) run.seconds.push_back(seconds);
    run.tokens = std::move(tokens);
  }
  run.empty_launch_s = empty_launch_seconds(decode.stream());
  return run;
}

double llm_read_seconds(int gpu, const std::vector<std::pair<const void*, uint64_t>>& parts, int reps) {
  use_device(gpu);
  std::vector<const uint4*> ptrs;
  std::vector<unsigned long long> counts;
  for (const auto& [p, bytes] : parts) {
    if (reinterpret_cast<uintptr_t>(p) % 16 || bytes % 16)
      throw std::runtime_error("llm read: a part not 16-byte aligned");
    ptrs.push_back(static_cast<const uint4*>(p));
    counts.push_back(bytes / 16);
  }
  int sms = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "cudaDeviceGetAttribute");
  DeviceArray<const uint4*> d_ptrs(ptrs.size());
  DeviceArray<unsigned long long> d_counts(counts.size());
  DeviceArray<unsigned> d_out(1);
  cuda_check(cudaMemcpy(d_ptrs.p, ptrs.data(), ptrs.size() * sizeof(void*), cudaMemcpyHostToDevice), "read ptrs");
  cuda_check(cudaMemcpy(d_counts.p, counts.data(), counts.size() * sizeof(unsigned long long),
                        cudaMemcpyHostToDevice), "read counts");
  Stream s;
  Events ev(2);
  double best = 0;
  const int n = static_cast<int>(ptrs.size());
  for (int per_sm : {1, 2, 4, 8})
    for (bool tiles : {true, false})
      for (int r = 0; r < reps; ++r) {
        cuda_check(cudaEventRecord(ev.e[0], s.s), "cudaEventRecord");
        if (tiles)
          read_all<true><<<sms * per_sm, kThreads, 0, s.s>>>(d_ptrs.p, d_counts.p, n, d_out.p);
        else
          read_all<false><<<sms * per_sm, kThreads, 0, s.s>>>(d_ptrs.p, d_counts.p, n, d_out.p);
        cuda_check(cudaGetLastError(), "read kernel");
        cuda_check(cudaEventRecord(ev.e[1], s.s), "cudaEventRecord");
        cuda_check(cudaStreamSynchronize(s.s), "read");
        const double t = ev.seconds(0, 1);
        if (best == 0 || t < best) best = t;
      }
  return best;
}

double llm_copy_seconds(int gpu, const void* src, uint64_t bytes, int reps) {
  use_device(gpu);
  DeviceArray<char> to(bytes);
  Stream s;
  Events ev(2);
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    cuda_check(cudaEventRecord(ev.e[0], s.s), "cudaEventRecord");
    cuda_check(cudaMemcpyAsync(to.p, src, bytes, cudaMemcpyDefault, s.s), "copy");
    cuda_check(cudaEventRecord(ev.e[1], s.s), "cudaEventRecord");
    cuda_check(cudaStreamSynchronize(s.s), "copy");
    const double t = ev.seconds(0, 1);
    if (r == 0 || t < best) best = t;
  }
  return best;
}

}  // namespace mempath::gpu
