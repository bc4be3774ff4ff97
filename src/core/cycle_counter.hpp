#pragma once
// The cheapest monotonic counter of the CPU, for per-event timestamps inside tight loops
// where a steady_clock call would be a sizable part of what is measured. Its rate is
// calibrated against now_seconds() over the whole measurement by the caller.
#include <chrono>
#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace mempath {

inline uint64_t cycle_ticks() {
#if defined(__x86_64__)
  // Plain rdtsc, not rdtscp or lfence;rdtsc: a stamp that waits for the CAS before it
  // delays the next CAS enough to change a core-to-core ping-pong (measured: the mean
  // round trip halves). rdtsc may run up to one CAS early, which smears single events;
  // sums over many events stay exact. Invariant TSC on every x86 server.
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("isb; mrs %0, cntvct_el0" : "=r"(v));  // the generic timer (1 GHz on Grace)
  return v;
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

}  // namespace mempath
