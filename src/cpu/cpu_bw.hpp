#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu/kernels.hpp"
#include "core/op.hpp"

namespace mempath::cpu {

struct BwRun {
  std::vector<double> seconds;  // one per timed repetition
  bool verified = false;
  std::string detail;           // what the data check found when it failed
};

// `warmup` + `reps` repetitions of `op` by threads pinned to `cpus`, each repetition
// `passes` sweeps over `bytes` of src (read, copy) / dst (write, copy). src holds the
// byte `fill` everywhere; the check afterwards compares the read sums, the written
// words or the copied data with what they must be. `on_start` runs just before the first
// repetition, `on_end` just after the last (a contention reader's window).
BwRun run_bw(const Isa& isa, const std::vector<int>& cpus, Op op, const void* src, void* dst,
             size_t bytes, int passes, int warmup, int reps, uint8_t fill,
             const std::function<void()>& on_start = {}, const std::function<void()>& on_end = {});

// The 8-byte word whose bytes are all `byte`.
inline uint64_t word_of(uint8_t byte) { return 0x0101010101010101ULL * byte; }

}  // namespace mempath::cpu
