#pragma once
// What `mempath memcpy` asks of CUDA: host<->device transfers by the copy engine
// (cudaMemcpyAsync) or by an SM copy kernel, queued behind a spin kernel so that launch
// overhead stays out of the timing (docs/methodology.md, "Host<->device transfers").
// Implemented in gpu/memcpy.cu; in a CPU-only build they throw Unsupported (gpu/entry.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

enum class CopyDir { H2D, D2H, D2D };

// One stream of copies: `dst` <- `src` on GPU `gpu`, `bytes` each repetition.
struct CopyStream {
  int gpu = 0;
  CopyDir dir = CopyDir::H2D;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  bool sm = false;    // an SM copy kernel instead of cudaMemcpyAsync
  int sm_share = 1;   // SM kernels running on this GPU at once: each gets 1/sm_share of the grid
  int dst_gpu = -1;   // D2D: the GPU holding dst; the copy engine copy is cudaMemcpyPeerAsync
                      // on `gpu`'s stream, the SM copy a kernel on `gpu` writing the peer's memory
};

struct CopyRun {
  // seconds[s][r]: timed repetition r of stream s, from CUDA events on that stream.
  std::vector<std::vector<double>> seconds;
  int sm_threads = 0;          // threads of one SM copy kernel (0 for copy-engine copies)
  bool released_late = false;  // the spin kernel timed out before every copy was queued
};

// Queues, on one stream per CopyStream, a spin kernel that waits on a host-mapped flag,
// then `warmup` + `reps` + `cooldown` copies with a CUDA event after each; releases the
// flag from the host once everything is queued and waits. Repetitions warmup ..
// warmup+reps-1 are returned: the cooldown copies keep every stream busy until the others'
// timed copies are done (bidirectional and all-GPU runs).
MEMPATH_GPU_ENTRY(CopyRun, run_copies, (const std::vector<CopyStream>& streams, int warmup, int reps, int cooldown))

// GPU<->GPU (mempath memcpy --direction d2d). Lets `gpu` access `peer`'s memory
// (cudaDeviceEnablePeerAccess; already enabled is fine); Unsupported when
// cudaDeviceCanAccessPeer says it cannot.
MEMPATH_GPU_ENTRY(void, enable_peer_access, (int gpu, int peer))

// One staged GPU->GPU copy: `bytes` from `src` (on src_gpu) to `dst` (on dst_gpu) through
// `stage`, pinned host memory of 2 * `chunk` bytes (two slots), chunk by chunk: the D2H of
// chunk i+1 (on a stream of src_gpu) overlaps the H2D of chunk i (on a stream of dst_gpu),
// the streams ordered by cross-device cudaStreamWaitEvent.
struct StagedStream {
  int src_gpu = 0, dst_gpu = 1;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  void* stage = nullptr;
  size_t chunk = 0;
};
// As run_copies, for staged copies: every repetition of every pipeline is queued behind a
// spin kernel on its destination GPU's stream; repetition r is the interval between two
// events on that stream (the source stream waits on the first before its first D2H, the
// second follows the last H2D), so each is timed on one GPU's clock.
MEMPATH_GPU_ENTRY(CopyRun, run_staged, (const std::vector<StagedStream>& pipes, int warmup, int reps, int cooldown))

// Host-observed time of cudaMemcpyAsync + cudaStreamSynchronize, one sample per
// repetition (steady_clock), after `warmup` untimed ones. For pageable memory and latency.
MEMPATH_GPU_ENTRY(std::vector<double>, time_sync_copies,
                  (int gpu, CopyDir dir, void* dst, const void* src, size_t bytes, int warmup, int reps))

// Bytes of device memory [ptr, ptr+bytes) that differ from `value` (any size, any tail).
MEMPATH_GPU_ENTRY(uint64_t, count_device_byte_mismatches, (int gpu, const void* ptr, size_t bytes, uint8_t value))
// Sets device memory to `value` and waits.
MEMPATH_GPU_ENTRY(void, set_device_bytes, (int gpu, void* ptr, size_t bytes, uint8_t value))

}  // namespace mempath::gpu
