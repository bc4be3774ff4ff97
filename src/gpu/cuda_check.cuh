#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace mempath::gpu {

// A failed CUDA call ends the case (recorded as failed with this message), not the run.
inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void use_device(int gpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || gpu < 0 || gpu >= count)
    throw Unsupported("GPU " + std::to_string(gpu) + " does not exist on this node (" +
                      std::to_string(count) + " GPUs)");
  cuda_check(cudaSetDevice(gpu), "cudaSetDevice");
}

}  // namespace mempath::gpu
