#include "core/guards.hpp"

#include <cstdio>

#include "core/units.hpp"

namespace mempath {

std::string gpu_timing_problem(double median_s, double empty_launch_s) {
  if (median_s >= kLaunchGuardFactor * empty_launch_s) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "timed kernel (%.1f us) is within %.0fx of an empty launch (%.1f us); raise --size",
                median_s * 1e6, kLaunchGuardFactor, empty_launch_s * 1e6);
  return buf;
}

std::string cpu_timing_problem(double median_s) {
  if (median_s >= kMinCpuSeconds) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "a repetition took %.1f us, under the %.0f us that can be timed reliably; raise --size",
                median_s * 1e6, kMinCpuSeconds * 1e6);
  return buf;
}

std::string cache_problem(uint64_t size, uint64_t cache_bytes, int cache_factor) {
  const uint64_t need = cache_bytes * static_cast<uint64_t>(cache_factor);
  if (size >= need) return "";
  return "--size " + format_size(size) + " may stay in the caches on this path (" +
         format_size(cache_bytes) + "); valid: at least " + format_size(need) +
         ", or add --in-cache to measure cache bandwidth";
}

}  // namespace mempath
