#pragma once
// GPU sides of the latency benchmarks (`mempath chase`, `mempath pingpong`). Implemented
// in gpu/latency.cu; in a CPU-only build they throw Unsupported (gpu/entry.hpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/entry.hpp"

namespace mempath::gpu {

// Copies host bytes into memory GPU `gpu` can reach (device, managed, pinned), with the
// GPU's copy engine: how a chain is written into memory the CPU cannot store to.
MEMPATH_GPU_ENTRY(void, upload, (int gpu, void* dst, const void* src, size_t bytes))

struct ChaseRun {
  uint64_t end = 0;      // address the walk ended on
  double seconds = 0;    // %globaltimer inside the kernel around the timed loop
  double cycles = 0;     // clock64() around the same loop
  double event_s = 0;    // CUDA events around the launch: must not be below `seconds`
};

// One GPU thread follows `steps` pointers from address `start`.
MEMPATH_GPU_ENTRY(ChaseRun, chase, (int gpu, uint64_t start, uint64_t steps))

// Whether the link between GPU `gpu` and the host does atomics natively
// (cudaDevAttrHostNativeAtomicSupported: NVLink-C2C yes, PCIe no).
MEMPATH_GPU_ENTRY_OR(bool, host_native_atomics, (int gpu), false)

// One ping-pong agent running as one thread (one block) on a GPU: the same contract as
// cpu::pingpong, with timestamps converted to ns from clock64() calibrated against
// %globaltimer over the agent's whole loop.
struct PingPongRole {
  uint8_t* flag = nullptr;
  uint8_t from = 0, to = 1;
  uint64_t exchanges = 0;
  bool record = false;  // keep a timestamp per success (the timing agent)
};
struct PingPongKernel;  // running, not yet waited for
// Launches one block per role (one or two) on GPU `gpu` and returns without waiting;
// a role gives up when one wait for its partner exceeds `timeout_s`.
MEMPATH_GPU_ENTRY(PingPongKernel*, start_pingpong, (int gpu, const std::vector<PingPongRole>& roles, double timeout_s))
struct PingPongOutcome {
  std::vector<uint64_t> successes;  // per role
  std::vector<double> stamps_ns;    // the recording role's timestamps, ns from its start
};
MEMPATH_GPU_ENTRY(PingPongOutcome, finish_pingpong, (PingPongKernel * kernel))

}  // namespace mempath::gpu
