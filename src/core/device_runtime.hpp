#pragma once
// What core asks of a GPU runtime: facts for provenance, allocation and fills for the
// allocator layer. Core declares it and gpu/ implements it (gpu/*.cu with CUDA, gpu/none/
// without), so dependencies point one way: gpu/ includes core/, never the reverse
// (tests/cpp/test_layering.cpp). gpu/gpu_api.hpp includes this for everything else.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mempath::gpu {

bool built_with_cuda();
int device_count();  // 0 without CUDA or without a GPU
int driver_version();
int runtime_version();
std::string clocks_json();  // [{"gpu":0,"sm_clock_khz":..,"mem_clock_khz":..}]
// Each GPU's 16-byte UUID (cudaDeviceProp::uuid) in device order: what names a GPU across
// reboots and renumbering, so a fleet's history follows the board, not the index. Empty
// without CUDA or GPUs; a GPU whose properties cannot be read gives 16 zero bytes.
using Uuid = std::array<unsigned char, 16>;
std::vector<Uuid> device_uuids();
// Free and total bytes of a GPU's device memory.
void mem_info(int gpu, size_t* free_bytes, size_t* total_bytes);

// Allocation. Host allocations take the calling thread's NUMA memory policy.
void* alloc_device(int gpu, size_t bytes);
void* alloc_managed(size_t bytes);
void* alloc_pinned(size_t bytes);
void register_host(void* ptr, size_t bytes);
void unregister_host(void* ptr);
void free_device(void* ptr);
void free_managed(void* ptr);
void free_pinned(void* ptr);
// Moves managed pages to GPU `gpu`, or to the host when gpu < 0, and waits.
void prefetch_managed(void* ptr, size_t bytes, int gpu);
// Managed pages stay at `home` (GPU index, or the host when home < 0) and are mapped for
// `user_gpu`: its accesses then cross the path to them instead of migrating the pages to
// itself on first fault, which would turn every managed case into a local one.
void keep_managed_at(void* ptr, size_t bytes, int home, int user_gpu);

// Byte pattern fill run by GPU `gpu` on memory it can access.
void fill(int gpu, void* ptr, size_t bytes, uint8_t value);
}  // namespace mempath::gpu
