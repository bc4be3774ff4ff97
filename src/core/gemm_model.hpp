#pragma once
// GEMM arithmetic that needs no GPU: data types, the square size whose matrix has a given
// number of bytes, FLOP count, the peak model, and the operand values the data check
// predicts (docs/methodology.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/kinds.hpp"

namespace mempath {

inline const std::vector<std::string>& gemm_dtypes() {
  static const std::vector<std::string> names = {"fp16", "tf32", "fp32", "fp64"};
  return names;
}
// Bytes of one element as stored (tf32 is stored as fp32). Throws UsageError for others.
int gemm_element_bytes(const std::string& dtype);
// Square sizes are multiples of this: the paper's rule (Section IV-A), so that cuBLAS runs
// whole tensor-core tiles and no size's figure is an edge case's.
inline constexpr int64_t kGemmSizeMultiple = 8;
// `n` rounded down to a multiple of kGemmSizeMultiple.
inline int64_t gemm_round_size(int64_t n) { return n / kGemmSizeMultiple * kGemmSizeMultiple; }
// The largest multiple of kGemmSizeMultiple whose n x n matrix of `dtype` fits in `bytes`.
int64_t gemm_size_for_bytes(const std::string& dtype, uint64_t bytes);
inline double gemm_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
// Dense FLOP per SM per clock (tensor cores for fp16, tf32, fp64 on Hopper and Ampere;
// FP32 cores for fp32); 0 for an unknown architecture.
int gemm_flop_per_sm_clock(int cc_major, int cc_minor, const std::string& dtype);
// TFLOP/s at `sm_clock_khz` on `sms` SMs; NaN when the rate is unknown.
double gemm_peak_tflops(int cc_major, int cc_minor, int sms, int sm_clock_khz, const std::string& dtype);

// Timed calls of one case: `reps`; with no --reps given, a case whose calls last long
// (operands read over a link: seconds a call) times only as many as fit in
// kGemmTimedBudgetS, at least kGemmMinReps: such calls agree to 1 % (a pinned fp64 16384
// on H100 ran 0.53 TFLOP/s in every one of ten), so more repeat nothing.
inline constexpr double kGemmTimedBudgetS = 10;
inline constexpr int kGemmMinReps = 3;
int gemm_timed_reps(int reps, bool reps_given, double per_call_s);

// The default size sweep (`--size sweep`, docs/cli.md): powers of two from 1024 to
// kGemmSweepMax where A and B are the GPU's own (its memory, or managed pages that migrate
// to it); to kGemmLinkSweepMax where an operand is read in place over a link (host memory,
// another GPU's). Such a GEMM is bound by the link from n = 2048-4096 on: its TFLOP/s are
// flat past 8192 (H200: pinned host fp16 6.5 / 5.4 / 5.3 / 5.8 at 4096 / 8192 / 16384 /
// 32768, a peer's HBM 47 / 51 / 44 / 45, docs/results/2026-11-28-duration-model.md), so the
// larger sizes add no point to Fig. 16 at 8 to 64 times the time of 8192.
inline constexpr int64_t kGemmSweepMin = 1024, kGemmSweepMax = 32768, kGemmLinkSweepMax = 8192;
std::vector<int64_t> gemm_sweep_sizes(bool operand_over_link);
// Whether a GPU reads an operand of allocator `alloc` in place over a link (`via`, the
// path class from the GPU): anything off its own memory but managed pages, which migrate.
bool gemm_read_over_link(const std::string& via, std::optional<Alloc> alloc);

// The operand values: multiples of 1/8 in [-1, 1], exact in every dtype, so products are
// exact and a C element is a sum the host can predict (only fp16's output rounds).
inline double gemm_a_value(int64_t index) { return static_cast<double>((index * 7 + 3) % 17 - 8) / 8.0; }
inline double gemm_b_value(int64_t index) { return static_cast<double>((index * 5 + 1) % 13 - 6) / 8.0; }
// C(i, j) of column-major n x n A and B.
double gemm_expected(int64_t n, int64_t i, int64_t j);
// Tolerance of a C element: fp16 output rounds to 11 bits, the others are exact sums.
bool gemm_close(const std::string& dtype, double got, double want);

}  // namespace mempath
