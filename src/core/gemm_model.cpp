#include "core/gemm_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/options.hpp"

namespace mempath {

int gemm_element_bytes(const std::string& dtype) {
  if (dtype == "fp16") return 2;
  if (dtype == "tf32" || dtype == "fp32") return 4;
  if (dtype == "fp64") return 8;
  throw UsageError("invalid --dtype '" + dtype + "'; valid: " + join(gemm_dtypes()));
}

int gemm_timed_reps(int reps, bool reps_given, double per_call_s) {
  if (reps_given || per_call_s * reps <= kGemmTimedBudgetS) return reps;
  return std::min(reps, std::max(kGemmMinReps, static_cast<int>(kGemmTimedBudgetS / per_call_s)));
}

std::vector<int64_t> gemm_sweep_sizes(bool operand_over_link) {
  std::vector<int64_t> sizes;
  for (int64_t n = kGemmSweepMin; n <= (operand_over_link ? kGemmLinkSweepMax : kGemmSweepMax); n *= 2)
    sizes.push_back(n);
  return sizes;
}

bool gemm_read_over_link(const std::string& via, std::optional<Alloc> alloc) {
  return via != "local" && alloc != Alloc::Managed;
}

int64_t gemm_size_for_bytes(const std::string& dtype, uint64_t bytes) {
  const uint64_t elements = bytes / static_cast<uint64_t>(gemm_element_bytes(dtype));
  auto n = static_cast<int64_t>(std::sqrt(static_cast<double>(elements)));
  // sqrt of a double can land one off at these magnitudes: settle n exactly.
  while (n > 0 && static_cast<uint64_t>(n) * static_cast<uint64_t>(n) > elements) --n;
  while (static_cast<uint64_t>(n + 1) * static_cast<uint64_t>(n + 1) <= elements) ++n;
  return gemm_round_size(n);
}

int gemm_flop_per_sm_clock(int major, int minor, const std::string& dtype) {
  (void)minor;
  // Hopper: H100 SXM's 989.4 dense fp16 TFLOP/s = 132 SMs x 1.83 GHz x 4096; tf32 half of
  // that; fp64 tensor 66.9 = 132 x 1.98 GHz x 256; fp32 128 FMA units x 2. Ampere (A100):
  // 312 fp16 = 108 x 1.41 GHz x 2048, tf32 1024, fp64 tensor 128, fp32 128.
  if (major == 9) return dtype == "fp16" ? 4096 : dtype == "tf32" ? 2048 : 256;
  if (major == 8 && minor == 0) return dtype == "fp16" ? 2048 : dtype == "tf32" ? 1024 : 128;
  return 0;
}

double gemm_peak_tflops(int major, int minor, int sms, int sm_clock_khz, const std::string& dtype) {
  const int rate = gemm_flop_per_sm_clock(major, minor, dtype);
  if (rate == 0 || sms <= 0 || sm_clock_khz <= 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(rate) * sms * sm_clock_khz * 1e3 / 1e12;
}

double gemm_expected(int64_t n, int64_t i, int64_t j) {
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += gemm_a_value(i + k * n) * gemm_b_value(k + j * n);
  return sum;
}

bool gemm_close(const std::string& dtype, double got, double want) {
  const double tolerance = dtype == "fp16" ? 2e-3 * std::fabs(want) + 1e-3 : 1e-9 * std::fabs(want) + 1e-9;
  return std::fabs(got - want) <= tolerance;
}

}  // namespace mempath
