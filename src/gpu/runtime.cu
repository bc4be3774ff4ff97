// Device queries and allocation through the CUDA runtime (gpu_api.hpp).
#include <cstdio>
#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/gpu_api.hpp"

namespace mempath::gpu {

bool built_with_cuda() { return true; }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear "no device" so later calls start clean
    return 0;
  }
  return count;
}

int driver_version() {
  int v = 0;
  cudaDriverGetVersion(&v);
  return v;
}

int runtime_version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}

std::string clocks_json() {
  std::string out = "[";
  for (int g = 0; g < device_count(); ++g) {
    int sm = 0, mem = 0;
    cudaDeviceGetAttribute(&sm, cudaDevAttrClockRate, g);
    cudaDeviceGetAttribute(&mem, cudaDevAttrMemoryClockRate, g);
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s{\"gpu\":%d,\"sm_clock_khz\":%d,\"mem_clock_khz\":%d}",
                  g ? "," : "", g, sm, mem);
    out += buf;
  }
  return out + "]";
}

void mem_info(int gpu, size_t* free_bytes, size_t* total_bytes) {
  use_device(gpu);
  cuda_check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

void* alloc_device(int gpu, size_t bytes) {
  use_device(gpu);
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void* alloc_managed(size_t bytes) {
  if (device_count() == 0) throw Unsupported("no CUDA GPU on this node");
  void* p = nullptr;
  cuda_check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "cudaMallocManaged");
  return p;
}

void* alloc_pinned(size_t bytes) {
  if (device_count() == 0) throw Unsupported("no CUDA GPU on this node");
  void* p = nullptr;
  cuda_check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  return p;
}

void register_host(void* ptr, size_t bytes) {
  if (device_count() == 0) throw Unsupported("no CUDA GPU on this node");
  cuda_check(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped),
             "cudaHostRegister");
}

void unregister_host(void* ptr) { cuda_check(cudaHostUnregister(ptr), "cudaHostUnregister"); }
void free_device(void* ptr) { cuda_check(cudaFree(ptr), "cudaFree"); }
void free_managed(void* ptr) { cuda_check(cudaFree(ptr), "cudaFree"); }
void free_pinned(void* ptr) { cuda_check(cudaFreeHost(ptr), "cudaFreeHost"); }

void prefetch_managed(void* ptr, size_t bytes, int gpu) {
  cudaMemLocation loc{};
  loc.type = gpu >= 0 ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
  loc.id = gpu >= 0 ? gpu : 0;
  if (gpu >= 0) use_device(gpu);
  cuda_check(cudaMemPrefetchAsync(ptr, bytes, loc, 0, 0), "cudaMemPrefetchAsync");
  cuda_check(cudaDeviceSynchronize(), "prefetch");
}

void keep_managed_at(void* ptr, size_t bytes, int home, int user_gpu) {
  cudaMemLocation where{};
  where.type = home >= 0 ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
  where.id = home >= 0 ? home : 0;
  cudaMemLocation user{};
  user.type = cudaMemLocationTypeDevice;
  user.id = user_gpu;
  use_device(user_gpu);
  cuda_check(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetPreferredLocation, where), "cudaMemAdvise(preferred location)");
  cuda_check(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetAccessedBy, user), "cudaMemAdvise(accessed by GPU)");
}

}  // namespace mempath::gpu
