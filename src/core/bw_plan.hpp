#pragma once
// Which bandwidth cases to run: one case from the command line, validated against the
// node, or every case the node supports (--all). Pure planning: nothing is allocated.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/op.hpp"
#include "core/topology.hpp"

namespace mempath {

// A processor that reads a memory continuously while a case is measured (contention,
// `--noise`): docs/methodology.md, "Contention".
struct NoiseSpec {
  std::string pu, mem;
  Alloc alloc = Alloc::Numa;
  std::vector<int> cpus;  // a CPU reader's threads, one per CPU (physical cores)
  uint64_t size = 0;      // bytes of the buffer it reads
  bool empty() const { return pu.empty(); }
  std::string label() const { return empty() ? "" : pu + ":" + mem; }
  // Readers of one key share one buffer (set up once per run).
  std::string buffer_key() const { return std::string(alloc_name(alloc)) + ":" + mem + ":" + std::to_string(size); }
};

// Threads per block of a GPU grid sweep (`--threads sweep` on a GPU); the GPU kernels
// launch blocks of this size (static_assert in gpu/bw_kernels.cu).
inline constexpr int kSweepBlockThreads = 512;
// The most such blocks one SM holds (2,048 resident threads on sm_70 and later): the
// sweep's largest power of two stays within SMs x this.
inline constexpr int kSweepBlocksPerSm = 4;

struct BwCase {
  Op op = Op::Read;
  std::string pu;
  PuKind pu_kind = PuKind::Cpu;
  std::string mem, dst_mem;
  std::optional<Alloc> alloc, dst_alloc;  // none where the path has none (skipped); dst_alloc: copies only
  std::string kernel, via;
  int threads = -1;              // CPU threads; GPU: blocks x 512 of a sweep point, else -1 (known after launch)
  int blocks = 0;                // GPU sweep point: this many 512-thread blocks; 0: the kernel's own grid
  std::vector<int> cpus;         // CPUs the threads are pinned to
  uint64_t size = 0;             // bytes per buffer
  bool in_cache = false;         // size allowed below 4 x the caches on the path
  std::string skip_reason;       // non-empty: the node cannot run this case
  NoiseSpec noise;               // the concurrent reader, if any
};

struct BwSettings {
  uint64_t size = 0;  // 0: the default for each path
  int reps = 10;
  int warmup = 2;
  bool in_cache = false;
};

struct BwFilters {  // the options' comma-separated lists, as given; empty = everything
  std::vector<std::string> ops, pus, pu_kinds, mems, allocs, kernels;
  bool thread_sweep = true;  // false: CPU cases at all cores only (`--threads all`)
  bool gpu_sweep = false;    // `--threads sweep` given: GPU grid sweeps and copy sweeps too (never by default)
};

inline constexpr uint64_t kDefaultSize = 1ULL << 30;
inline constexpr int kCacheFactor = 4;  // buffers exceed the caches on the path 4x

Op parse_op(const std::string& name);  // throws UsageError listing read, write, copy

// The allocator used when none is given: numa for NUMA memory the PU can reach through
// it, else registered host memory, device for gpuN; none when the path has none.
std::optional<Alloc> default_alloc(const Topology& topo, const std::string& pu, const std::string& mem);

// Caches a buffer on this path must exceed (LLCs of the sockets taking part, GPU L2).
uint64_t path_cache_bytes(const Topology& topo, const std::string& pu);
uint64_t default_size(const Topology& topo, const std::string& pu);

// CPUs for `threads` threads of PU `pu`: physical cores first; for `cpus` spread
// round-robin over the CPU nodes. Throws UsageError when threads exceed the PU's CPUs.
std::vector<int> pick_cpus(const Topology& topo, const std::string& pu, int threads);
std::vector<int> thread_sweep(int cores);  // 1, 2, 4, ..., cores

// A GPU case's grid sweep: the case with 1, 2, 4, ... 512-thread blocks (powers of two up
// to kSweepBlocksPerSm x the GPU's SMs), then the case itself (its kernel's full grid).
// Throws UsageError for the block kernel and for a GPU whose SM count is unknown.
std::vector<BwCase> gpu_grid_sweep(const Topology& topo, const BwCase& grid);

// Validates one case from options (empty strings = defaults; `alloc` an allocator's name).
// Throws UsageError for names the node does not have, sizes below the cache guard, bad
// thread counts; sets skip_reason when the node has the names but cannot run the combination.
BwCase make_case(const Topology& topo, Op op, std::string pu, std::string mem,
                 std::string dst_mem, std::string alloc, int threads, std::string kernel,
                 const BwSettings& settings);

// Every case of `mempath bw --all` (docs/cli.md), skipped ones included, filtered.
std::vector<BwCase> all_cases(const Topology& topo, const BwFilters& filters,
                              const BwSettings& settings);

// The noise paper-style contention pairs a processor with (`--noise partner`): the other
// processor of its superchip (or, on x86, the GPU and its nearest socket), reading the
// memory across the link between them. Returns "" and sets *out, or why `pu` has none.
std::string partner_noise(const Topology& topo, const BwCase& measured, NoiseSpec* out);

// "cpu0:numa1" -> the reader of `measured`'s case; throws UsageError for anything the
// node does not have and for a reader left without cores of its own.
NoiseSpec parse_noise(const Topology& topo, const std::string& text, const BwCase& measured);

// The noise buffer: `requested` (0: min(8 GiB, half the memory's free bytes), the paper's
// 8 GB where it fits), rounded down to 2 MiB. Throws UsageError for a requested size
// that is not a multiple of 4 KiB or below 4 x the reader's caches.
uint64_t noise_size(const Topology& topo, const NoiseSpec& spec, uint64_t requested);

// Sets every case's noise from `--noise` TEXT (`partner` or PU:MEM; empty: none): a case
// without a partner is skipped with the reason; bad input throws UsageError.
void plan_noise(const Topology& topo, const std::string& text, uint64_t requested_size,
                std::vector<BwCase>& cases);

}  // namespace mempath
