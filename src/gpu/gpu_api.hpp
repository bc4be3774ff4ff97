#pragma once
// What the rest of mempath asks of CUDA. Implemented in gpu/*.cu; in a CPU-only build by
// gpu/none/, where every call that needs a GPU throws Unsupported with the reason.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/op.hpp"

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

// Byte pattern fill and verification run by GPU `gpu` on memory it can access.
void fill(int gpu, void* ptr, size_t bytes, uint8_t value);
// Number of 8-byte words in [ptr, ptr+bytes) that differ from `word`.
uint64_t count_mismatches(int gpu, const void* ptr, size_t bytes, uint64_t word);

struct KernelRun {
  std::vector<double> seconds;  // one per timed repetition, from CUDA events
  uint64_t read_sum = 0;        // sum of 8-byte words of the last read repetition
  int threads = 0;              // threads launched
  double empty_launch_s = 0;    // event-timed empty kernel: the floor of the timer
};

// Runs `warmup` + `reps` repetitions of op over `bytes` (each `passes` times) on GPU
// `gpu`: read sums src, write stores `word` to dst, copy src -> dst. `single_block`
// launches one block of 1024 threads instead of filling the GPU.
KernelRun run_bw(int gpu, Op op, const void* src, void* dst, size_t bytes, int passes,
                 bool single_block, int warmup, int reps, uint64_t word);

// A reader that runs on `gpu` over [ptr, ptr+bytes) until stop_noise(); for contention.
struct Noise;
Noise* start_noise(int gpu, const void* ptr, size_t bytes);
void stop_noise(Noise* noise);

}  // namespace mempath::gpu
