#pragma once
// Atomic read-modify-write throughput of one GPU on a counter array in any memory it can
// address (implemented in gpu/atomics.cu; a CPU-only build throws Unsupported, gpu/entry.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

// Each counter is one 64-bit word at the start of its own 128-byte line, so counters
// never share a line (nor an L2 sector) and only --counters 1 contends.
inline constexpr size_t kCounterStride = 128;

enum class AtomicScope { Device, System };  // atomicAdd vs atomicAdd_system

// Warps of the launch run_atomics makes on `gpu` (every SM filled): the default counter
// count, one per warp.
MEMPATH_GPU_ENTRY(uint64_t, atomics_warps, (int gpu))

struct AtomicsRun {
  std::vector<double> seconds;  // one per timed launch, from CUDA events
  uint64_t warps = 0;           // warps launched (32 threads each)
  std::vector<uint64_t> counts; // every counter after the timed launches
  int host_native_atomics = -1; // cudaDevAttrHostNativeAtomicSupported of the GPU
  double empty_launch_s = 0;    // event-timed empty kernel: the floor of the timer
};

// `warmup` launches, the counters reset to zero (untimed), then `reps` back-to-back
// launches timed by events; then every counter is read back (the caller compares them
// with core's atomics_expected). `counters` 64-bit words kCounterStride apart from
// `base`; each thread adds 1 to its warp's counter `ops` times. `inject_fault` adds one
// increment after the timed launches: the test that the check can fail.
MEMPATH_GPU_ENTRY(AtomicsRun, run_atomics,
                  (int gpu, void* base, uint64_t counters, uint64_t ops, AtomicScope scope, int warmup, int reps,
                   bool inject_fault))

}  // namespace mempath::gpu
