#include "core/llm_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {

const std::vector<LlmShape>& llm_models() {
  static const std::vector<LlmShape> models = {
#define MEMPATH_LLM_MODEL(name, hidden, layers, heads, kv_heads, inter, vocab, tied, bos) \
  {name, hidden, layers, heads, kv_heads, inter, vocab, tied != 0, bos},
#include "core/llm_models.def"
#undef MEMPATH_LLM_MODEL
  };
  return models;
}

const LlmShape& llm_model(const std::string& name) {
  std::string valid;
  for (const auto& m : llm_models()) {
    if (m.name == name) return m;
    valid += (valid.empty() ? "" : ", ") + m.name;
  }
  throw UsageError("unknown --model '" + name + "'; valid: " + valid);
}

int llm_dtype_bytes(const std::string& dtype) {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  throw UsageError("invalid --dtype '" + dtype + "'; valid: fp16, bf16");
}

namespace {
uint64_t aligned(uint64_t bytes) { return (bytes + kLlmAlign - 1) / kLlmAlign * kLlmAlign; }
}  // namespace

LlmLayerLayout llm_layer_layout(const LlmShape& s, int b) {
  const uint64_t h = s.hidden, kv = s.kv_dim(), in = s.intermediate;
  LlmLayerLayout l;
  uint64_t at = 0;
  auto place = [&](uint64_t elements) {
    const uint64_t here = at;
    at += aligned(elements * b);
    return here;
  };
  l.qkv = place((h + 2 * kv) * h);
  l.o = place(h * h);
  l.gu = place(2 * in * h);
  l.down = place(h * in);
  l.n1 = place(h);
  l.n2 = place(h);
  l.bytes = at;
  return l;
}

uint64_t llm_embed_bytes(const LlmShape& s, int b) { return static_cast<uint64_t>(s.vocab * s.hidden) * b; }
uint64_t llm_head_bytes(const LlmShape& s, int b) { return s.tied ? 0 : llm_embed_bytes(s, b); }

uint64_t llm_params(const LlmShape& s) {
  const uint64_t h = s.hidden, kv = s.kv_dim(), in = s.intermediate;
  const uint64_t layer = (h + 2 * kv) * h + h * h + 3 * in * h + 2 * h;
  return s.layers * layer + h + static_cast<uint64_t>(s.vocab * s.hidden) * (s.tied ? 1 : 2);
}

uint64_t llm_step_weight_bytes(const LlmShape& s, int b) {
  return llm_params(s) * b - (s.tied ? 0 : llm_embed_bytes(s, b));
}

double llm_kv_bytes(const LlmShape& s, double slots, int b) {
  return 2.0 * static_cast<double>(s.layers * s.kv_dim()) * b * slots;
}

uint32_t llm_tensor(const LlmShape& s, int64_t layer, LlmPart part) {
  const uint32_t first = s.tied ? 2 : 3;
  return first + static_cast<uint32_t>(layer) * 9 + static_cast<uint32_t>(part);
}

float llm_scale(int64_t fan_in) { return static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in))); }

std::vector<int> llm_prompt(const LlmShape& s, const std::string& text, uint32_t seed) {
  if (text == "empty") return {static_cast<int>(s.bos)};
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || n < 1 || n > 65536)
    throw UsageError("invalid --prompt-tokens '" + text + "'; valid: empty (the BOS token alone) or 1 .. 65536");
  std::vector<int> out;
  for (long i = 0; i < n; ++i)
    out.push_back(static_cast<int>(llm_hash(seed, kLlmPromptTensor, static_cast<uint32_t>(i)) % s.vocab));
  return out;
}

std::vector<int64_t> llm_offload_layers(const std::vector<std::string>& values, const LlmShape& s, int b) {
  std::vector<int64_t> out;
  auto add = [&](int64_t n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  const std::string valid = "; valid: a share of the layers (25%, 0.25), a size (20GiB: whole layers holding it), "
                            "all, or sweep (0 and every tenth of the layers)";
  for (const auto& v : values) {
    if (v == "sweep") {
      for (int k = 0; k <= 10; ++k) add((s.layers * k + 5) / 10);
    } else if (v == "all") {
      add(s.layers);
    } else if (!v.empty() && (v.back() == '%' || v.find('.') != std::string::npos || v == "0" || v == "1")) {
      char* end = nullptr;
      double share = std::strtod(v.c_str(), &end);
      if (*end == '%') share /= 100, ++end;
      if (*end || !(share >= 0 && share <= 1)) throw UsageError("invalid --offload '" + v + "'" + valid);
      add(static_cast<int64_t>(std::llround(share * static_cast<double>(s.layers))));
    } else {
      uint64_t bytes = 0;
      try {
        bytes = parse_size(v);
      } catch (const UsageError&) {
        throw UsageError("invalid --offload '" + v + "'" + valid);
      }
      const uint64_t layer = llm_layer_layout(s, b).bytes;
      add(std::min<int64_t>(s.layers, static_cast<int64_t>((bytes + layer - 1) / layer)));
    }
  }
  return out;
}

double llm_in_place_step_s(const std::vector<LlmRead>& parts) {
  double t = 0;
  for (const auto& p : parts)
    if (p.bytes > 0) t += p.bytes / (p.gbps * 1e9);
  return t;
}

double llm_streamed_step_s(double before_s, double after_s, int64_t streamed, double layer_bytes, double hbm_gbps,
                           double h2d_gbps, int64_t ring) {
  if (streamed <= 0) return before_s + after_s;
  ring = std::max<int64_t>(1, std::min(ring, streamed));
  const double copy = layer_bytes / (h2d_gbps * 1e9), read = layer_bytes / (hbm_gbps * 1e9);
  std::vector<double> copied(streamed), done(streamed);
  double engine = 0, compute = before_s;
  for (int64_t j = 0; j < streamed; ++j) {
    // a slot is free once the layer read from it `ring` layers before is done
    const double start = std::max(engine, j >= ring ? done[j - ring] : 0.0);
    copied[j] = engine = start + copy;
    compute = std::max(compute, copied[j]) + read;
    done[j] = compute;
  }
  return compute + after_s;
}

int64_t llm_default_ring(double before_s, int64_t streamed, double layer_bytes, double h2d_gbps) {
  const double copy = layer_bytes / (h2d_gbps * 1e9);
  const auto ring = static_cast<int64_t>(std::ceil(before_s / copy)) + 1;
  return std::max<int64_t>(std::min<int64_t>(2, streamed), std::min(ring, streamed));
}

}  // namespace mempath
