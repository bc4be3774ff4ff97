#include "cpu/latency.hpp"

#include "core/cycle_counter.hpp"
#include "core/timer.hpp"

namespace mempath::cpu {

const void* chase(const void* start, uint64_t steps) {
  const void* p = start;
  uint64_t i = 0;
  // Unrolled so the loop branch is a small part of each step; the chain itself
  // serialises the loads.
#define MEMPATH_STEP p = *static_cast<const void* const*>(p);
  for (; i + 16 <= steps; i += 16) {
    MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP
    MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP MEMPATH_STEP
  }
  for (; i < steps; ++i) MEMPATH_STEP
#undef MEMPATH_STEP
  return p;
}

uint64_t pingpong(uint8_t* flag, uint8_t from, uint8_t to, uint64_t exchanges, double timeout_s, uint64_t* ticks) {
  for (uint64_t i = 0; i < exchanges; ++i) {
    // The clock is read only once a wait is long (every 4096 tries), so it costs nothing
    // in a quick exchange; the timeout bounds one wait for the partner, not the whole run.
    double waiting_since = 0;
    for (uint64_t tries = 1;; ++tries) {
      uint8_t expected = from;
      if (__atomic_compare_exchange_n(flag, &expected, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
      if (tries % 4096) continue;
      if (waiting_since == 0) waiting_since = now_seconds();
      else if (now_seconds() - waiting_since > timeout_s) return i;
    }
    if (ticks) ticks[i] = cycle_ticks();
  }
  return exchanges;
}

}  // namespace mempath::cpu
