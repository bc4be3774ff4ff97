#pragma once
// What `mempath llm` decodes, without a GPU: the models' shapes (core/llm_models.def), how a
// layer's weights lie in one block, the weights' values (a counter-based hash that
// src/llm/referee.py computes alike, so the referee checks the same model without holding
// it), the prompt, which layers an --offload moves, and each way's bound: the time of a
// batch-1 decode step that reads every weight once at the measured rates of its paths
// (docs/methodology.md, "LLM decode").
#include <cstdint>
#include <string>
#include <vector>

namespace mempath {

struct LlmShape {
  std::string name;
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, intermediate = 0, vocab = 0;
  bool tied = false;
  int64_t bos = 0;
  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
};

const std::vector<LlmShape>& llm_models();
// UsageError naming the valid models for another name.
const LlmShape& llm_model(const std::string& name);
// 2 for fp16 and bf16; UsageError for another.
int llm_dtype_bytes(const std::string& dtype);

// One layer's weights as one block (so a streamed layer is one copy): q|k|v rows, o, gate|up
// rows, down, the two norms, each at an offset aligned to kLlmAlign bytes.
inline constexpr uint64_t kLlmAlign = 256;
struct LlmLayerLayout {
  uint64_t qkv = 0, o = 0, gu = 0, down = 0, n1 = 0, n2 = 0, bytes = 0;
};
LlmLayerLayout llm_layer_layout(const LlmShape& s, int dtype_bytes);
// The embedding table (vocab x hidden), the final norm, an untied lm_head: bytes each.
uint64_t llm_embed_bytes(const LlmShape& s, int dtype_bytes);
uint64_t llm_head_bytes(const LlmShape& s, int dtype_bytes);  // 0 where tied
uint64_t llm_params(const LlmShape& s);
// Bytes of weights a batch-1 step reads: every layer, the final norm and the lm_head (a tied
// one is the embedding, read whole); of an untied embedding one row, not counted.
uint64_t llm_step_weight_bytes(const LlmShape& s, int dtype_bytes);
// Bytes of KV cache a step reads: keys and values of `slots` positions in every layer.
double llm_kv_bytes(const LlmShape& s, double slots, int dtype_bytes);

// The weights' values. Tensors are numbered in the published checkpoint's order: embed 0,
// norm 1, an untied head 2, then each layer's q, k, v, o, gate, up, down, n1, n2. Element i
// (row-major) of a matrix of fan-in K is (2u - 1) x llm_scale(K) in fp32, u the top 24 bits
// of llm_hash(seed, tensor, i) over 2^24, rounded to the model's dtype; norms are 1.
enum class LlmPart { Q, K, V, O, Gate, Up, Down, N1, N2 };
uint32_t llm_tensor(const LlmShape& s, int64_t layer, LlmPart part);
inline constexpr uint32_t kLlmEmbedTensor = 0, kLlmNormTensor = 1, kLlmHeadTensor = 2;
// The prompt's tokens are drawn from this tensor number (past any model's weights).
inline constexpr uint32_t kLlmPromptTensor = 0xFFFFFFFFu;
// lowbias32 (Chris Wellons' hash prospector) of a seed-and-tensor mixed counter: every bit
// of the index moves the output, and its 32-bit steps are the same in Python's integers. One
// definition for the host and the GPU's fill kernel.
#ifdef __CUDACC__
#define MEMPATH_HOST_DEVICE __host__ __device__
#else
#define MEMPATH_HOST_DEVICE
#endif
MEMPATH_HOST_DEVICE inline uint32_t llm_hash(uint32_t seed, uint32_t tensor, uint32_t index) {
  uint32_t h = seed * 0x9E3779B1u + tensor * 0x85EBCA77u + index;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}
MEMPATH_HOST_DEVICE inline float llm_weight(uint32_t seed, uint32_t tensor, uint32_t index, float scale) {
  const float u = static_cast<float>(llm_hash(seed, tensor, index) >> 8) * (1.0f / 16777216.0f);
  return (u * 2.0f - 1.0f) * scale;
}
#undef MEMPATH_HOST_DEVICE
float llm_scale(int64_t fan_in);

// `empty`: the BOS token alone (what Hugging Face generate starts from); N: N tokens drawn
// from the hash. UsageError for another text.
std::vector<int> llm_prompt(const LlmShape& s, const std::string& text, uint32_t seed);

// --offload: how many of the last layers go to host memory, per value of the list: a share
// of the layers (25%, 0.25), a size (20GiB: whole layers until they hold it), `all`, or
// `sweep` (0 and every tenth of the layers). Distinct counts, in the order given.
std::vector<int64_t> llm_offload_layers(const std::vector<std::string>& values, const LlmShape& s, int dtype_bytes);

// The bounds. A part of a step: bytes read from one memory at that path's measured GB/s.
struct LlmRead {
  double bytes = 0, gbps = 0;
};
// Read in place: the step reads each part where it lies, one after the other.
double llm_in_place_step_s(const std::vector<LlmRead>& parts);
// Streamed: the resident layers (`before_s`, KV cache included) run first while the copy
// engines bring the first `ring` offloaded layers into the ring; each offloaded layer is read
// from its slot (layer_bytes at hbm_gbps) once its copy (layer_bytes at h2d_gbps) is in, and a
// copy into a slot waits for the layer read from it before; then the step's tail (the final
// norm and lm_head, `after_s`). The time of that schedule at those rates.
double llm_streamed_step_s(double before_s, double after_s, int64_t streamed, double layer_bytes,
                           double hbm_gbps, double h2d_gbps, int64_t ring);
// The ring a streamed decode gets by default: enough slots that the copies of the resident
// part's time are in flight (before_s over one layer's copy), at least 2, at most `streamed`.
int64_t llm_default_ring(double before_s, int64_t streamed, double layer_bytes, double h2d_gbps);

}  // namespace mempath
