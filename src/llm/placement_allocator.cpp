// libmempath_placement.so: a PyTorch pluggable CUDA allocator (torch.cuda.memory.
// CUDAPluggableAllocator) that puts the allocations made while a placement is set into
// that memory through mempath's one allocator layer, and everything else into the GPU's
// stream-ordered pool (cudaMallocAsync), so that only the weights move (src/llm/README in
// docs/cli.md). C entry points for ctypes; errors are kept for mempath_last_error().
// It also keeps the current and peak bytes of small (<= 1 MiB, PyTorch's small-pool rule)
// and large allocations, which the paper reports per model (Sec. IV-B).
#include <cuda_runtime.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/topology.hpp"
#include "gpu/memcpy_api.hpp"

namespace {

std::mutex mutex;
std::optional<mempath::Alloc> placed_alloc;  // none: the GPU's pool
std::string placed_mem;
std::map<void*, std::unique_ptr<mempath::Buffer>> buffers;
std::string last_error, last_placement;

// Index 0: allocations of at most 1 MiB (PyTorch's kSmallSize, so that these match the
// small_pool/large_pool peaks of PyTorch's own allocator); 1: larger ones.
constexpr size_t kSmallBytes = 1 << 20;
int64_t live_bytes[2] = {0, 0}, peak_bytes[2] = {0, 0};

void count(size_t size, int64_t sign) {
  const int k = size <= kSmallBytes ? 0 : 1;
  live_bytes[k] += sign * static_cast<int64_t>(size);
  peak_bytes[k] = std::max(peak_bytes[k], live_bytes[k]);
}

const mempath::Topology& topology() {
  static const mempath::Topology topo = mempath::discover();
  return topo;
}

}  // namespace

extern "C" {

// Where the next allocations go: ("numa", "numa0"), ("pinned", "numa1"), ("device", "gpu1");
// ("", "") back to the GPU's pool. Returns 0, or -1 with mempath_last_error() saying why.
int mempath_place(const char* alloc, const char* mem) {
  std::lock_guard<std::mutex> lock(mutex);
  const std::string a = alloc ? alloc : "", m = mem ? mem : "";
  if (a.empty() != m.empty()) {
    last_error = "mempath_place needs both an allocator and a memory, or neither";
    return -1;
  }
  std::optional<mempath::Alloc> kind;
  if (!a.empty()) {
    try {
      kind = mempath::alloc_kind(a);  // the table's one-line message names the valid allocators
    } catch (const mempath::UsageError& e) {
      last_error = e.what();
      return -1;
    }
    if (!topology().find_mem(m)) {
      last_error = "unknown memory '" + m + "' on this node";
      return -1;
    }
  }
  placed_alloc = kind, placed_mem = m;
  return 0;
}

const char* mempath_last_error() { return last_error.c_str(); }

void* mempath_alloc(ssize_t size, int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex);
  try {
    if (!placed_alloc) {
      void* p = nullptr;
      cudaSetDevice(device);
      if (cudaMallocAsync(&p, static_cast<size_t>(size), stream) != cudaSuccess) {
        last_error = "cudaMallocAsync of " + std::to_string(size) + " bytes failed";
        return nullptr;
      }
      count(static_cast<size_t>(size), 1);
      return p;
    }
    auto buf = mempath::allocate(topology(), *placed_alloc, placed_mem, static_cast<size_t>(size), 0);
    cudaSetDevice(device);  // allocating on another GPU made that one current; PyTorch asked for `device`
    // Another GPU's memory: `device`'s kernels reach it only once peer access is on (as the
    // gemm, chase and atomics commands turn it on); without it the first read is an illegal
    // address. A pair with no peer path is this allocation's error, not a crash later.
    if (buf->gpu() >= 0 && buf->gpu() != device) mempath::gpu::enable_peer_access(device, buf->gpu());
    void* p = buf->data();
    buffers[p] = std::move(buf);
    count(static_cast<size_t>(size), 1);
    return p;
  } catch (const std::exception& e) {
    last_error = e.what();
    cudaSetDevice(device);
    std::fprintf(stderr, "mempath_placement: %zd bytes of %s on %s: %s\n", size, mempath::alloc_name(placed_alloc),
                 placed_mem.c_str(), e.what());  // PyTorch reports only that the tensor has no data
    return nullptr;
  }
}

void mempath_free(void* ptr, ssize_t size, int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex);
  if (ptr) count(static_cast<size_t>(size), -1);
  auto it = buffers.find(ptr);
  if (it != buffers.end()) {
    cudaDeviceSynchronize();  // the GPU may still read it
    buffers.erase(it);
    return;
  }
  cudaSetDevice(device);
  cudaFreeAsync(ptr, stream);
}

// Peak bytes held at once since the last mempath_reset_peaks(): large != 0 for the
// allocations over 1 MiB, else those of at most 1 MiB.
long long mempath_peak_bytes(int large) {
  std::lock_guard<std::mutex> lock(mutex);
  return peak_bytes[large ? 1 : 0];
}

void mempath_reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex);
  peak_bytes[0] = live_bytes[0], peak_bytes[1] = live_bytes[1];
}

// Bytes free in `mem` ("numa1", "gpu0") as the allocator layer sees them (free_bytes: a
// lone NUMA node's MemAvailable, a node's free pages, a GPU's cudaMemGetInfo), so that a
// placement whose weights cannot fit is skipped with the reason rather than failing (or,
// for first-touched host memory, being killed) halfway. -1 with mempath_last_error().
long long mempath_free_bytes(const char* mem) {
  std::lock_guard<std::mutex> lock(mutex);
  int device = 0;
  cudaGetDevice(&device);
  try {
    const std::string m = mem ? mem : "";
    if (!topology().find_mem(m)) throw std::runtime_error("unknown memory '" + m + "' on this node");
    const auto free = static_cast<long long>(mempath::free_bytes(m));
    cudaSetDevice(device);  // asking a GPU made it current
    return free;
  } catch (const std::exception& e) {
    last_error = e.what();
    cudaSetDevice(device);
    return -1;
  }
}

// Where the pages of a placed allocation are ("numa0", "gpu0", a mix, "unknown"); "" for
// memory from the GPU's pool.
const char* mempath_placement_of(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [base, buf] : buffers) {
    const char* b = static_cast<const char*>(base);
    if (ptr >= base && static_cast<const char*>(ptr) < b + buf->bytes()) {
      last_placement = mempath::placement(*buf);
      return last_placement.c_str();
    }
  }
  last_placement.clear();
  return last_placement.c_str();
}

}  // extern "C"
