#pragma once
// The GPU timer layer: CUDA events on the stream of the work, and the event-timed empty
// kernel that is the floor below which an interval measured launches, not memory.
#include <algorithm>
#include <vector>

#include "gpu/cuda_check.cuh"

namespace mempath::gpu {

struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(size_t count) : e(count) {
    for (auto& ev : e) cuda_check(cudaEventCreate(&ev), "cudaEventCreate");
  }
  ~Events() {
    for (auto& ev : e) cudaEventDestroy(ev);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  double seconds(size_t a, size_t b) const {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, e[a], e[b]), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
};

namespace {  // internal to each translation unit that times kernels

__global__ void empty_kernel() {}

// Median of 16 event-timed empty launches on `stream`.
double empty_launch_seconds(cudaStream_t stream) {
  constexpr int kLaunches = 16;
  Events ev(kLaunches + 1);
  cuda_check(cudaEventRecord(ev.e[0], stream), "cudaEventRecord");
  for (int i = 0; i < kLaunches; ++i) {
    empty_kernel<<<1, 32, 0, stream>>>();
    cuda_check(cudaEventRecord(ev.e[i + 1], stream), "cudaEventRecord");
  }
  cuda_check(cudaStreamSynchronize(stream), "empty kernels");
  std::vector<double> t;
  for (int i = 0; i < kLaunches; ++i) t.push_back(ev.seconds(i, i + 1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

}  // namespace mempath::gpu
