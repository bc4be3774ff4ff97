// CPU-only build: the runtime's side of the one seam (the families' is gpu/entry.hpp; the
// GPU facts', gpu_facts_none.cpp): every call that needs a GPU throws Unsupported and
// never crashes the run.
#include "gpu/entry.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath::gpu {

bool built_with_cuda() { return false; }
int device_count() { return 0; }
int driver_version() { return 0; }
int runtime_version() { return 0; }
std::string clocks_json() { return "[]"; }
void mem_info(int, size_t*, size_t*) { no_cuda(); }
void* alloc_device(int, size_t) { no_cuda(); }
void* alloc_managed(size_t) { no_cuda(); }
void* alloc_pinned(size_t) { no_cuda(); }
void register_host(void*, size_t) { no_cuda(); }
void unregister_host(void*) { no_cuda(); }
void free_device(void*) { no_cuda(); }
void free_managed(void*) { no_cuda(); }
void free_pinned(void*) { no_cuda(); }
void prefetch_managed(void*, size_t, int) { no_cuda(); }
void keep_managed_at(void*, size_t, int, int) { no_cuda(); }
void fill(int, void*, size_t, uint8_t) { no_cuda(); }
uint64_t count_mismatches(int, const void*, size_t, uint64_t) { no_cuda(); }
KernelRun run_bw(int, Op, const void*, void*, size_t, int, int, int, int, uint64_t, const std::function<void()>&,
                 const std::function<void()>&) {
  no_cuda();
}
struct Noise {};
Noise* start_noise(int, const void*, size_t, uint8_t) { no_cuda(); }
uint64_t noise_progress(const Noise*) { return 0; }
NoiseTotal stop_noise(Noise*) { return {}; }
}  // namespace mempath::gpu
