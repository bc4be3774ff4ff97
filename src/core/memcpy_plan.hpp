#pragma once
// Which host<->device transfer cases `mempath memcpy` runs (docs/cli.md), and the pure
// arithmetic around them: the size sweep, the saturation size, percentiles, what fits.
// Nothing here allocates or touches a GPU, so all of it is testable on any machine.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/topology.hpp"

namespace mempath {

inline const std::vector<std::string>& memcpy_directions() {
  static const std::vector<std::string> d = {"h2d", "d2h", "bidir"};
  return d;
}
inline const std::vector<std::string>& memcpy_engines() {
  static const std::vector<std::string> e = {"ce", "sm"};
  return e;
}
// Host allocators a transfer can use, in the order --alloc lists them, the default first.
inline const std::vector<Alloc>& memcpy_allocs() {
  static const std::vector<Alloc> a = {Alloc::Pinned, Alloc::Registered, Alloc::System, Alloc::Managed};
  return a;
}

// GPU<->GPU transfers (--direction d2d, d2d-bidir): peer copies by the copy engine or an
// SM kernel, and a copy staged through pinned host memory (docs/cli.md).
inline const std::vector<std::string>& memcpy_d2d_directions() {
  static const std::vector<std::string> d = {"d2d", "d2d-bidir"};
  return d;
}
inline const std::vector<std::string>& memcpy_d2d_engines() {
  static const std::vector<std::string> e = {"ce", "sm", "staged"};
  return e;
}
inline bool is_d2d_direction(const std::string& d) { return d == "d2d" || d == "d2d-bidir"; }

inline constexpr uint64_t kMemcpyDefaultSize = 512ULL << 20;  // nvbandwidth's default
inline constexpr uint64_t kStagedChunk = 16ULL << 20;         // staged d2d: bytes per pipeline chunk
inline constexpr uint64_t kSweepMinSize = 4ULL << 10;
inline constexpr uint64_t kSweepMaxSize = 4ULL << 30;
inline constexpr uint64_t kLatencyMinSize = 4;
inline constexpr uint64_t kLatencyMaxSize = 1ULL << 20;
inline constexpr double kSaturationFraction = 0.95;

// The transfer sizes of --sweep (4 KiB .. max_size) and of --latency (4 B .. 1 MiB).
std::vector<uint64_t> sweep_sizes(uint64_t max_size);
std::vector<uint64_t> latency_sizes();

// The smallest size whose bandwidth reaches `fraction` of the largest bandwidth of the
// sweep; NaN entries (cases that did not run) are ignored. -1 when no entry is finite.
// `sizes` and `gbps` are parallel; sizes need not be sorted.
int64_t saturation_size(const std::vector<uint64_t>& sizes, const std::vector<double>& gbps,
                        double fraction = kSaturationFraction);

// Nearest-rank percentile (p in (0, 100]): the smallest value with at least p % of the
// values at or below it. NaN for no values.
double percentile(std::vector<double> values, double p);

// Whether `host_buffers` buffers of `size` bytes fit in `free_host` bytes (of which only
// kHostShare may be taken: pinned memory cannot be swapped out) and `device_buffers` in
// `free_device` less kDeviceReserve.
bool buffers_fit(uint64_t size, uint64_t free_host, uint64_t free_device, int host_buffers, int device_buffers);
// The largest sweep size <= max_size whose buffers fit (buffers_fit); 0 when not even
// kSweepMinSize does.
uint64_t fit_sweep_max(uint64_t max_size, uint64_t free_host, uint64_t free_device,
                       int host_buffers, int device_buffers);
// Bytes to allocate for one buffer on a memory with `free` bytes: `capacity`, or for a
// sweep the largest sweep size <= capacity; 0 when it does not fit.
uint64_t buffer_capacity(uint64_t capacity, uint64_t free, bool host, bool sweep);
// The host NUMA nodes of a `--mem` list (numaN, all), sorted and distinct.
std::vector<int> host_numa_list(const Topology& topo, const std::vector<std::string>& mems);
inline constexpr double kHostShare = 0.8;
inline constexpr uint64_t kDeviceReserve = 256ULL << 20;

// Buffers one case needs per GPU: h2d and d2h one host and one device buffer, bidir two
// of each (a separate pair per direction, so each destination can be checked).
int memcpy_buffers_per_side(const std::string& direction);

// What the user asked for (empty lists = defaults).
struct MemcpyRequest {
  std::vector<std::string> gpus;        // "0", "gpu1", "all"; empty = gpu0
  bool all_gpus = false;                // every GPU at once
  std::vector<std::string> mems;        // host buffer nodes "numaN" or "all"; empty = each GPU's nearest host node
  int cpu_numa = -1;                    // issuing thread's node; -1 = the GPU's nearest host node
  std::vector<std::string> allocs;      // empty = pinned
  std::vector<std::string> directions;  // empty = h2d, d2h, bidir (latency: h2d, d2h)
  std::vector<std::string> engines;     // empty = ce, sm (latency: ce)
  uint64_t size = 0;                    // 0 = kMemcpyDefaultSize
  bool sweep = false;
  uint64_t max_size = kSweepMaxSize;
  bool latency = false;
  uint64_t chunk = 0;                   // staged d2d chunk; 0 = kStagedChunk
};

struct MemcpyCase {
  std::string mode = "bandwidth";  // bandwidth or latency
  std::vector<int> gpus;           // one GPU, or every GPU of an --all-gpus case
  bool all_gpus = false;
  std::vector<int> host_numas;     // the host buffer's node for each GPU of `gpus`
  int cpu_numa = -1;               // the issuing thread is bound to this node
  Alloc alloc = Alloc::Pinned;     // the host buffer's; d2d: device (peer) or pinned (staged)
  std::string direction, engine, via;
  uint64_t size = 0;
  bool sweep = false;              // one size of a sweep: saturation is found over its group
  std::string timing;              // events (spin-kernel gated CUDA events) or host
  std::string skip_reason;         // non-empty: the node cannot run this case
  // GPU<->GPU (direction d2d, d2d-bidir): gpus = {source, destination} (d2d-bidir: both
  // ways at once), dst_gpu = the destination; host_numas = the staging node of each
  // direction (engine staged), empty for peer copies; chunk = staged chunk bytes.
  int dst_gpu = -1;
  uint64_t chunk = 0;
  bool d2d() const { return is_d2d_direction(direction); }

  // host_numa as stored: the node, or -1 when the GPUs of an --all-gpus case use several.
  int host_numa() const;
  std::string gpu_label() const;  // "0" or "all"
  // Cases of one sweep group share everything but the size.
  std::string group_key() const;
  // Cases that can share buffers: the same GPUs, host nodes and allocator.
  std::string buffer_key() const;
};

// Why the node cannot run this transfer, "" when it can (docs/cli.md, `mempath memcpy`).
// The host NUMA node nearest to GPU `gpu` (the topology's, else the first host node).
int nearest_host(const Topology& topo, int gpu);
// Copy-engine copies that block the issuing thread (pageable, managed): timed on the host.
bool host_blocking_copy(Alloc alloc, const std::string& engine);
std::string memcpy_skip_reason(const Topology& topo, int gpu, int host_numa,
                               Alloc alloc, const std::string& direction,
                               const std::string& engine, bool all_gpus);

// Validates the request against the node and lists every case in run order (buffer
// groups together, sizes ascending within a group). Throws UsageError for names the
// node does not have, sizes that cannot fit, directions or engines that make no sense.
std::vector<MemcpyCase> plan_memcpy(const Topology& topo, const MemcpyRequest& request);

// The GPU<->GPU part of plan_memcpy (memcpy_d2d_plan.cpp): ordered pairs (src, dst) for
// d2d, unordered pairs (each once, lower id first) for d2d-bidir, engines ce/sm (peer
// copies, skipped without peer access) and staged (always, for two GPUs or more). A node
// with one GPU gets skipped cases ("needs two GPUs").
std::vector<MemcpyCase> plan_memcpy_d2d(const Topology& topo, const MemcpyRequest& request);
// The ordered (d2d) or unordered (d2d-bidir, lower id first) pairs of distinct GPUs.
std::vector<std::pair<int, int>> d2d_pairs(std::vector<int> gpus, bool bidir);
// "" when GPU `gpu` can access GPU `peer`'s memory, else "no peer access from GPU g to GPU h".
std::string d2d_peer_reason(const Topology& topo, int gpu, int peer);

// "numa0" / "0" -> 0 for a NUMA node with memory; throws UsageError naming the valid ones.
int parse_host_numa(const Topology& topo, const std::string& text);
// "gpu1" / "1" -> 1 for a GPU of this node; throws UsageError naming the valid ones.
int parse_gpu(const Topology& topo, const std::string& text);

}  // namespace mempath
