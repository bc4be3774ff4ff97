// Unified-memory behaviour kernels and timings (gpu/um_api.hpp).
#include <vector>

#include "gpu/cuda_check.cuh"
#include "gpu/um_api.hpp"

namespace mempath::gpu {
namespace {

constexpr int kBlock = 512;

__global__ void increment_kernel(unsigned long long* __restrict__ p, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] += 1;
}

struct EventPair {
  cudaEvent_t a, b;
  EventPair() {
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  double seconds() const {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
};

}  // namespace

double memset_burst(int gpu, void* ptr, size_t bytes, int count, int value) {
  use_device(gpu);
  EventPair ev;
  cuda_check(cudaEventRecord(ev.a, 0), "cudaEventRecord");
  for (int i = 0; i < count; ++i) cuda_check(cudaMemsetAsync(ptr, value, bytes, 0), "cudaMemsetAsync");
  cuda_check(cudaEventRecord(ev.b, 0), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(ev.b), "memset burst");
  return ev.seconds();
}

std::vector<double> inplace_update_runs(int gpu, void* ptr, size_t bytes, int runs) {
  use_device(gpu);
  int sms = 0;
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    EventPair ev;
    cuda_check(cudaEventRecord(ev.a, 0), "cudaEventRecord");
    increment_kernel<<<sms * 4, kBlock>>>(static_cast<unsigned long long*>(ptr), bytes / 8);
    cuda_check(cudaGetLastError(), "in-place launch");
    cuda_check(cudaEventRecord(ev.b, 0), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(ev.b), "in-place update");
    seconds.push_back(ev.seconds());
  }
  return seconds;
}

}  // namespace mempath::gpu
