#pragma once
// What the rest of mempath asks of CUDA. Implemented in gpu/*.cu; in a CPU-only build by
// gpu/none/, where every call that needs a GPU throws Unsupported with the reason.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_runtime.hpp"
#include "core/op.hpp"

namespace mempath::gpu {

// Runtime facts, allocation and fills: declared by core (core/device_runtime.hpp), which
// needs them and must not include gpu/.

// Number of 8-byte words in [ptr, ptr+bytes) that differ from `word`.
uint64_t count_mismatches(int gpu, const void* ptr, size_t bytes, uint64_t word);

struct KernelRun {
  std::vector<double> seconds;  // one per timed repetition, from CUDA events
  uint64_t read_sum = 0;        // sum of 8-byte words of the last read repetition
  int threads = 0;              // threads launched
  double empty_launch_s = 0;    // event-timed empty kernel: the floor of the timer
};

// Runs `warmup` + `reps` repetitions of op over `bytes` (each `passes` times) on GPU
// `gpu`: read sums src, write stores `word` to dst, copy src -> dst. `single_block`
// launches one block of 1024 threads instead of filling the GPU.
KernelRun run_bw(int gpu, Op op, const void* src, void* dst, size_t bytes, int passes,
                 bool single_block, int warmup, int reps, uint64_t word);

// A reader that runs on `gpu` over [ptr, ptr+bytes) until stop_noise(); for contention.
struct Noise;
Noise* start_noise(int gpu, const void* ptr, size_t bytes);
void stop_noise(Noise* noise);

}  // namespace mempath::gpu
