#pragma once
// Which bandwidth cases to run: one case from the command line, validated against the
// node, or every case the node supports (--all). Pure planning: nothing is allocated.
#include <cstdint>
#include <string>
#include <vector>

#include "core/op.hpp"
#include "core/topology.hpp"

namespace mempath {

struct BwCase {
  Op op = Op::Read;
  std::string pu, pu_kind, mem, dst_mem, alloc, dst_alloc, kernel, via;
  int threads = -1;              // CPU threads; -1 for GPU (known after launch)
  std::vector<int> cpus;         // CPUs the threads are pinned to
  uint64_t size = 0;             // bytes per buffer
  bool in_cache = false;         // size allowed below 4 x the caches on the path
  std::string skip_reason;       // non-empty: the node cannot run this case
};

struct BwSettings {
  uint64_t size = 0;  // 0: the default for each path
  int reps = 10;
  int warmup = 2;
  bool in_cache = false;
};

struct BwFilters {  // comma-separated lists; empty = everything
  std::vector<std::string> ops, pus, pu_kinds, mems, allocs, kernels;
  bool thread_sweep = true;  // false: CPU cases at all cores only (`--threads all`)
};

inline constexpr uint64_t kDefaultSize = 1ULL << 30;
inline constexpr int kCacheFactor = 4;  // buffers exceed the caches on the path 4x

Op parse_op(const std::string& name);  // throws UsageError listing read, write, copy

// The allocator used when none is given: numa for NUMA memory the PU can reach through
// it, else registered host memory, device for gpuN; "" when the path has none.
std::string default_alloc(const Topology& topo, const std::string& pu, const std::string& mem);

// Caches a buffer on this path must exceed (LLCs of the sockets taking part, GPU L2).
uint64_t path_cache_bytes(const Topology& topo, const std::string& pu);
uint64_t default_size(const Topology& topo, const std::string& pu);

// CPUs for `threads` threads of PU `pu`: physical cores first; for `cpus` spread
// round-robin over the CPU nodes. Throws UsageError when threads exceed the PU's CPUs.
std::vector<int> pick_cpus(const Topology& topo, const std::string& pu, int threads);
std::vector<int> thread_sweep(int cores);  // 1, 2, 4, ..., cores

// Validates one case from options (empty strings = defaults). Throws UsageError for
// names the node does not have, sizes below the cache guard, bad thread counts; sets
// skip_reason when the node has the names but cannot run the combination.
BwCase make_case(const Topology& topo, Op op, std::string pu, std::string mem,
                 std::string dst_mem, std::string alloc, int threads, std::string kernel,
                 const BwSettings& settings);

// Every case of `mempath bw --all` (docs/cli.md), skipped ones included, filtered.
std::vector<BwCase> all_cases(const Topology& topo, const BwFilters& filters,
                              const BwSettings& settings);

// "cpu0:numa1" -> {pu, mem}; throws UsageError for anything the node does not have.
struct NoiseSpec {
  std::string pu, mem, alloc;
};
NoiseSpec parse_noise(const Topology& topo, const std::string& text, const std::string& measured_pu);

}  // namespace mempath
