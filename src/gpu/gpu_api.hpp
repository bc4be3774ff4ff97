#pragma once
// What the rest of mempath asks of CUDA. Implemented in gpu/*.cu; in a CPU-only build by
// gpu/none/, where every call that needs a GPU throws Unsupported with the reason.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
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
  int blocks = 0;               // blocks launched
  double empty_launch_s = 0;    // event-timed empty kernel: the floor of the timer
};

// The launch of run_bw: kDefaultGrid fills the GPU (four waves of its resident 512-thread
// blocks; a copy of one pass one 16-byte vector per thread), kSingleBlock is one block of
// 1024 threads; a positive count is that many 512-thread blocks (a grid sweep point).
inline constexpr int kDefaultGrid = 0;
inline constexpr int kSingleBlock = -1;

// Runs `warmup` + `reps` repetitions of op over `bytes` (each `passes` times) on GPU
// `gpu`: read sums src, write stores `word` to dst, copy src -> dst, with `blocks`
// (above). `on_start` runs on the host just before the first repetition is queued,
// `on_end` once the last has finished (a contention reader's window).
KernelRun run_bw(int gpu, Op op, const void* src, void* dst, size_t bytes, int passes,
                 int blocks, int warmup, int reps, uint64_t word,
                 const std::function<void()>& on_start = {}, const std::function<void()>& on_end = {});

// A reader on `gpu` over [ptr, ptr+bytes), filled with the byte `fill`, until
// stop_noise(); for contention. Each block sweeps its share again and again and reports
// the bytes it has read to host-mapped memory every 128 KiB, so the host can read the
// progress while it runs. start_noise returns once every block has read (throws if they
// have not within 10 s).
struct Noise;
Noise* start_noise(int gpu, const void* ptr, size_t bytes, uint8_t fill);
// Bytes the reader has read so far (as last reported by its blocks).
uint64_t noise_progress(const Noise* noise);
struct NoiseTotal {
  uint64_t bytes = 0;     // every byte read, start to stop
  int threads = 0;        // threads launched
  bool verified = false;  // the loads' sum is what `fill` implies
};
// Stops the reader, waits for it, frees it; nullptr gives an empty total.
NoiseTotal stop_noise(Noise* noise);

}  // namespace mempath::gpu
