// core/llm_model: the weights' values against the known answers the referee is held to too
// (tests/fixtures/llm_weight_cases.txt), the offload values, the layer block, each way's bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/llm_model.hpp"

namespace mempath {
namespace {

uint16_t fp16_bits(float v) {  // round to nearest even, normal and subnormal halves
  uint32_t f;
  std::memcpy(&f, &v, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = f & 0x7FFFFFu;
  if (exp <= 0) {  // subnormal half
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

uint16_t bf16_bits(float v) {
  uint32_t f;
  std::memcpy(&f, &v, 4);
  return static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

TEST(LlmModel, WeightsAndPromptAreTheFixturesKnownAnswers) {
  std::ifstream in(std::string(MEMPATH_FIXTURES_DIR) + "/llm_weight_cases.txt");
  ASSERT_TRUE(in) << "tests/fixtures/llm_weight_cases.txt";
  int weights = 0, prompts = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "prompt") {
      uint32_t seed, vocab, i, token;
      words >> seed >> vocab >> i >> token;
      EXPECT_EQ(llm_hash(seed, kLlmPromptTensor, i) % vocab, token) << line;
      ++prompts;
      continue;
    }
    const uint32_t seed = static_cast<uint32_t>(std::stoul(first));
    uint32_t tensor, index;
    int64_t fan_in;
    std::string fp16, bf16;
    words >> tensor >> index >> fan_in >> fp16 >> bf16;
    const float v = llm_weight(seed, tensor, index, llm_scale(fan_in));
    EXPECT_EQ(fp16_bits(v), std::stoul(fp16, nullptr, 16)) << line;
    EXPECT_EQ(bf16_bits(v), std::stoul(bf16, nullptr, 16)) << line;
    ++weights;
  }
  EXPECT_GE(weights, 8);
  EXPECT_GE(prompts, 2);
}

TEST(LlmModel, ShapesAndBytesOfLlama2) {
  const LlmShape& s = llm_model("llama-2-7b");
  EXPECT_EQ(llm_params(s), 6738415616u);  // Llama-2-7b-hf's 6.74 B
  EXPECT_EQ(llm_params(llm_model("llama-2-70b")), 68976648192u);
  const LlmLayerLayout l = llm_layer_layout(s, 2);
  EXPECT_EQ(l.bytes % kLlmAlign, 0u);
  EXPECT_EQ(l.qkv, 0u);
  EXPECT_EQ(l.o, 3u * 4096 * 4096 * 2);
  EXPECT_EQ(llm_step_weight_bytes(s, 2), llm_params(s) * 2 - 32000u * 4096 * 2);  // an untied embedding: one row
  EXPECT_THROW(llm_model("gpt-5"), UsageError);
  EXPECT_THROW(llm_dtype_bytes("fp8"), UsageError);
}

TEST(LlmModel, OffloadValuesAreShareSizeAllOrSweep) {
  const LlmShape& s = llm_model("llama-2-7b");
  EXPECT_EQ(llm_offload_layers({"25%"}, s, 2), (std::vector<int64_t>{8}));
  EXPECT_EQ(llm_offload_layers({"0.5", "50%", "all"}, s, 2), (std::vector<int64_t>{16, 32}));
  const uint64_t layer = llm_layer_layout(s, 2).bytes;
  EXPECT_EQ(llm_offload_layers({std::to_string(2 * layer + 1)}, s, 2), (std::vector<int64_t>{3}));  // whole layers
  const auto sweep = llm_offload_layers({"sweep"}, s, 2);
  EXPECT_EQ(sweep.front(), 0);
  EXPECT_EQ(sweep.back(), 32);
  EXPECT_EQ(sweep.size(), 11u);
  EXPECT_THROW(llm_offload_layers({"150%"}, s, 2), UsageError);
  EXPECT_THROW(llm_offload_layers({"half"}, s, 2), UsageError);
}

TEST(LlmModel, TheStreamedBoundIsTheLargerPartPlusWhatTheRingCosts) {
  // 10 offloaded layers of 1 GB: copies at 50 GB/s (20 ms each), reads at 2,000 (0.5 ms).
  const double copy = 10 * 0.02, read = 0.0005;
  // A long resident part with a ring deep enough hides every copy but nothing of the reads.
  EXPECT_NEAR(llm_streamed_step_s(1.0, 0.0, 10, 1e9, 2000, 50, 10), 1.0 + 10 * read, 1e-9);
  // No resident part: the copies, one after the other, and the last layer's read.
  EXPECT_NEAR(llm_streamed_step_s(0.0, 0.0, 10, 1e9, 2000, 50, 2), copy + read, 1e-9);
  // A shallow ring waits for the resident part before it copies the third layer.
  EXPECT_GT(llm_streamed_step_s(0.1, 0.0, 10, 1e9, 2000, 50, 2), llm_streamed_step_s(0.1, 0.0, 10, 1e9, 2000, 50, 6));
  // The default ring: the resident part's time over a copy, plus one.
  EXPECT_EQ(llm_default_ring(0.1, 10, 1e9, 50), 6);
  EXPECT_EQ(llm_default_ring(0.0, 10, 1e9, 50), 2);
  EXPECT_EQ(llm_default_ring(10.0, 3, 1e9, 50), 3);
  // In place: each part at its own rate.
  EXPECT_NEAR(llm_in_place_step_s({{2e9, 2000}, {1e9, 50}}), 0.001 + 0.02, 1e-12);
}

}  // namespace
}  // namespace mempath
