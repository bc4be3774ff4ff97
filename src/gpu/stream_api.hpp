#pragma once
// BabelStream's five kernels on one GPU over three arrays that may live in any memory
// the GPU can address (implemented in gpu/stream.cu; a CPU-only build throws Unsupported,
// gpu/entry.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

struct StreamRun {
  std::vector<std::vector<double>> seconds;  // [kernel][rep]: copy, mul, add, triad, dot
  double dot = 0;            // the last repetition's dot product
  uint64_t mismatches = 0;   // elements of a, b, c off the expected values afterwards
  int threads = 0;           // threads of the elementwise launches
  double empty_launch_s = 0; // event-timed empty kernel: the floor of the timer
};

// Sets a, b, c to (a0, b0, c0), runs warmup + reps repetitions of copy, mul, add, triad,
// dot with `scalar`, each kernel timed by CUDA events, and counts the elements that differ
// from (want_a, want_b, want_c) by more than a relative 1e-12.
MEMPATH_GPU_ENTRY(StreamRun, run_stream,
                  (int gpu, double* a, double* b, double* c, size_t n, int warmup, int reps, double scalar,
                   const double start[3], const double want[3]))

}  // namespace mempath::gpu
