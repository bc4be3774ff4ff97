#pragma once
// What `mempath um` (unified-memory behaviour) asks of CUDA. Implemented in gpu/um.cu; in a
// CPU-only build they throw Unsupported (gpu/entry.hpp).
#include <cstddef>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

// `count` back-to-back cudaMemsetAsync(ptr, value, bytes) on GPU `gpu`; seconds from a
// CUDA event before the first to one after the last.
MEMPATH_GPU_ENTRY(double, memset_burst, (int gpu, void* ptr, size_t bytes, int count, int value))

// `runs` launches of an in-place update (every 8-byte word += 1) over [ptr, ptr+bytes),
// each timed with CUDA events on its own, so the first run (page faults, migrations) and
// the later ones are told apart.
MEMPATH_GPU_ENTRY(std::vector<double>, inplace_update_runs, (int gpu, void* ptr, size_t bytes, int runs))

}  // namespace mempath::gpu
