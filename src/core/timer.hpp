#pragma once
#include <chrono>

namespace mempath {

// The host clock of every CPU measurement: monotonic, nanosecond resolution, in seconds.
// GPU work is never timed with it (CUDA events are, see gpu/).
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace mempath
