#pragma once
// Guards that keep a benchmark from reporting something it did not measure. Each returns
// the problem as a sentence, or "" when the measurement is sound.
#include <cstdint>
#include <string>

namespace mempath {

inline constexpr double kLaunchGuardFactor = 10.0;  // a timed kernel >= 10 x an empty launch
inline constexpr double kMinCpuSeconds = 50e-6;     // steady_clock intervals worth trusting

// A GPU interval within kLaunchGuardFactor of an event-timed empty kernel is dominated by
// launch and event overhead, not by memory traffic.
std::string gpu_timing_problem(double median_s, double empty_launch_s);
// A CPU repetition shorter than kMinCpuSeconds is mostly thread start-up and clock reads.
std::string cpu_timing_problem(double median_s);
// A buffer smaller than cache_factor x the caches on the path may be served by a cache.
std::string cache_problem(uint64_t size, uint64_t cache_bytes, int cache_factor);

}  // namespace mempath
