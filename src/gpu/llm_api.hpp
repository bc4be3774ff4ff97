#pragma once
// The batch-1 decode of a Llama-style model on one GPU (gpu/llm_decode.cu): its fused
// kernels read each weight where the caller placed it, or a ring of the GPU's own memory
// that the copy engines fill ahead of the layers streamed into it; the weights' values
// (core/llm_model.hpp's hash) written in place; the read and copy rates the bounds are
// made of. A CPU-only build throws Unsupported (gpu/entry.hpp).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/llm_model.hpp"
#include "gpu/entry.hpp"

namespace mempath::gpu {

// Writes rows [first_row, first_row + rows) of tensor `tensor` (cols columns; its element
// index counts from its row 0) into `dst`, in the model's dtype (0 fp16, 1 bf16); `ones`:
// a norm (every value 1). Memory the GPU cannot write directly (dst_on_gpu false: host
// memory) is filled through a staging buffer of the GPU and a copy.
MEMPATH_GPU_ENTRY(void, llm_fill,
                  (int gpu, int dtype, void* dst, int64_t first_row, int64_t rows, int64_t cols, uint32_t seed,
                   uint32_t tensor, float scale, bool ones, bool dst_on_gpu))

struct LlmLayerPtrs {
  const void* block = nullptr;  // the layer's weights (core/llm_model.hpp's LlmLayerLayout)
  bool streamed = false;        // copied into the ring before it is read
};

struct LlmDecodeSpec {
  int gpu = 0, dtype = 0;
  LlmShape shape;
  LlmLayerLayout layout;
  const void* embed = nullptr;
  const void* norm = nullptr;
  const void* head = nullptr;  // the embedding where tied
  std::vector<LlmLayerPtrs> layers;
  void* ring = nullptr;        // ring_slots x layout.bytes of the GPU's memory, for streamed layers
  int64_t ring_slots = 0;
  void* k_cache = nullptr;     // layers x positions x kv_dim each, wherever the caller placed them
  void* v_cache = nullptr;
  std::vector<int> prompt;
  int new_tokens = 0;
  int warmup = 1, reps = 5;
  double rep_budget_s = 2.0;   // a repetition times every new token after the first, or fewer
                               // when a step is slow (at least 8)
};

struct LlmDecodeRun {
  std::vector<double> seconds;  // per timed repetition: CUDA events around its steps
  int timed_steps = 0;
  std::vector<int> tokens;      // the first new token and one a timed step, of the last repetition
  bool graph = false;           // the step replayed as one CUDA graph
  std::string graph_why;        // why not, where not
  bool programmatic = false;    // kernels launched as programmatic dependents (Hopper)
  double empty_launch_s = 0;    // an empty kernel's launch, for the timing guard
};
MEMPATH_GPU_ENTRY(LlmDecodeRun, run_llm_decode, (const LlmDecodeSpec& spec))

// Seconds of the fastest read of `parts` (pointer, bytes) by GPU `gpu` with the decode's
// streaming 16-byte loads, every bit folded into one word so no read is left out: `reps`
// reads in each of two orders at 1, 2, 4 and 8 blocks an SM (the best is the path's rate).
MEMPATH_GPU_ENTRY(double, llm_read_seconds, (int gpu, const std::vector<std::pair<const void*, uint64_t>>& parts,
                                             int reps))
// Seconds of the fastest of `reps` copies of `bytes` from `src` into the GPU's memory by a
// copy engine (cudaMemcpyAsync, events around it): a streamed layer's transfer.
MEMPATH_GPU_ENTRY(double, llm_copy_seconds, (int gpu, const void* src, uint64_t bytes, int reps))

}  // namespace mempath::gpu
