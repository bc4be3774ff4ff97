// Unified-memory behaviour kernels and timings (gpu/um_api.hpp).
#include <vector>

#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/um_api.hpp"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 512;

__global__ void increment_kernel(unsigned long long* __restrict__ p, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] += 1;
}


}  // namespace

double memset_burst(int gpu, void* ptr, size_t bytes, int count, int value) {
  use_device(gpu);
  Events ev(2);
  cuda_check(cudaEventRecord(ev.e[0], 0), "cudaEventRecord");
  for (int i = 0; i < count; ++i) cuda_check(cudaMemsetAsync(ptr, value, bytes, 0), "cudaMemsetAsync");
  cuda_check(cudaEventRecord(ev.e[1], 0), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(ev.e[1]), "memset burst");
  return ev.seconds(0, 1);
}

std::vector<double> inplace_update_runs(int gpu, void* ptr, size_t bytes, int runs) {
  use_device(gpu);
  int sms = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    Events ev(2);
    cuda_check(cudaEventRecord(ev.e[0], 0), "cudaEventRecord");
    increment_kernel<<<sms * 4, kBlock>>>(static_cast<unsigned long long*>(ptr), bytes / 8);
    cuda_check(cudaGetLastError(), "in-place launch");
    cuda_check(cudaEventRecord(ev.e[1], 0), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ev.e[1]), "in-place update");
    seconds.push_back(ev.seconds(0, 1));
  }
  return seconds;
}

}  // namespace mempath::gpu
