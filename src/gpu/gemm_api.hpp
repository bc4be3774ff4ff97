#pragma once
// cuBLAS GEMM on one GPU with operands wherever the caller placed them (gpu/cublas_gemm.cu;
// a CPU-only build throws Unsupported, gpu/entry.hpp). cuBLAS is opened at run time, so a node without it on
// the library path still runs every other benchmark.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

struct GemmDevice {
  int cc_major = 0, cc_minor = 0, sms = 0, sm_clock_khz = 0;
};
MEMPATH_GPU_ENTRY(GemmDevice, gemm_device, (int gpu))

// Writes gemm_a_value / gemm_b_value (core/gemm_model.hpp) of `dtype` into n x n elements:
// by GPU `gpu` for memory it holds (on_gpu), by the host otherwise, so that host memory is
// not migrated or cached on the GPU before the timed calls.
MEMPATH_GPU_ENTRY(void, gemm_fill,
                  (int gpu, const std::string& dtype, void* p, int64_t elements, bool operand_b, bool on_gpu))

struct GemmRun {
  std::vector<double> seconds;  // per call: CUDA events around `calls_per_rep` calls, divided
  int calls_per_rep = 1;        // calls per timed interval: each lasts about 50 empty launches
  double empty_launch_s = 0;
  int cublas_version = 0;
  std::vector<double> probes;   // C at the probe positions after the last call
};

// C = A x B (column-major n x n); C in GPU memory. `probes` are (i, j) pairs read back.
// `reps` timed intervals, fewer for long calls unless `reps_given` (gemm_timed_reps).
MEMPATH_GPU_ENTRY(GemmRun, run_gemm,
                  (int gpu, const std::string& dtype, int64_t n, const void* a, const void* b, void* c, int warmup,
                   int reps, bool reps_given, const std::vector<std::pair<int64_t, int64_t>>& probes))

}  // namespace mempath::gpu
