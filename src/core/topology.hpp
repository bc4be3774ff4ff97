#pragma once
// The node as processors, memories and the paths between them (docs/topology.md).
// Built from a sysfs/procfs root ("/" live, or a snapshot folder) plus GPU facts.
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "core/kinds.hpp"

namespace mempath {

struct NumaNode {
  int id = -1;
  std::vector<int> cpus;      // one per physical core first, then SMT siblings
  int cores = 0;              // physical cores
  int64_t mem_total_bytes = 0;
  int64_t mem_free_bytes = 0;
  std::vector<int> distances;
  MemKind kind = MemKind::Empty;  // Host, Hbm (a GPU's memory) or Empty
  int gpu = -1;               // GPU whose HBM this node is, else -1
  int64_t llc_bytes = 0;      // last-level cache of one core of this node (shared size)
  // The node whose CPUs are this node's socket: itself for a node with CPUs, the first node
  // of a socket numa=fake split into several (docs/topology.md), -1 for other CPU-less nodes.
  int socket = -1;
};

struct GpuInfo {
  int id = -1;
  std::string model, cc, pci_bus_id;
  int sm_count = 0;
  int64_t memory_bytes = 0, l2_bytes = 0;
  std::string numa_config = "none";  // "numa_node" when its HBM is a NUMA node
  int hbm_numa = -1, host_numa = -1;
  std::string link_type = "pcie";    // "pcie" or "c2c"
  int pcie_gen = 0, pcie_width = 0;
  bool pageable_access = false, host_page_tables = false, concurrent_managed = false;
  std::vector<int> peers, nvlink_peers;
};

struct Processor {
  std::string name;  // cpuN, cpus, gpuN
  PuKind kind = PuKind::Cpu;
  int numa = -1;     // cpuN: N
  int gpu = -1;      // gpuN: N
  std::vector<int> cpus;  // logical CPUs to pin threads to, physical cores first
  int cores = 0;
  int64_t cache_bytes = 0;  // caches a buffer must exceed: sum of LLCs, or the GPU's L2
};

struct Memory {
  std::string name;  // numaN or gpuN
  MemKind kind = MemKind::Host;  // Host, Hbm or Device
  int numa = -1;
  int gpu = -1;
  int64_t bytes = 0;
  int64_t free_bytes = 0;
  bool offline = false;  // an HBM NUMA node a GPU names but the driver has not onlined (no memory)
};

struct SkippedAlloc {
  Alloc alloc;
  std::string reason;
};

struct Path {
  std::string pu, mem, via;
  std::vector<Alloc> allocs;           // allocators that run on this path
  std::vector<SkippedAlloc> skipped;   // the others, with the reason
};

struct Topology {
  std::string host, source, arch, cpu_model;
  std::vector<NumaNode> numa_nodes;
  std::vector<GpuInfo> gpus;
  std::vector<Processor> processors;
  std::vector<Memory> memories;
  std::vector<Path> paths;

  const Processor* find_pu(const std::string& name) const;
  const Memory* find_mem(const std::string& name) const;
  const Path* find_path(const std::string& pu, const std::string& mem) const;
  const NumaNode* find_numa(int id) const;
  const GpuInfo* find_gpu(int id) const;
  std::vector<std::string> pu_names() const;
  std::vector<std::string> mem_names() const;

  std::string to_json() const;  // docs/topology.md
  std::string to_text() const;  // human-readable, for `mempath topo`
};

// The reason processor `pu` cannot use allocator `alloc` on memory `mem`, "" when it can;
// no allocator (a path none serves) gets the path's own reason. A path that needs peer
// access and has none says so whatever the allocator (#33).
std::string alloc_problem(const Topology& topo, const std::string& pu, const std::string& mem,
                          std::optional<Alloc> alloc);
// "no peer access from GPU g to GPU h" when `pu` is GPU g and `mem` is the device memory of
// GPU h, which g has no peer access to; "" otherwise. Planners whose case has several
// agents or memories ask it first: the missing peer access outranks an allocator's reason.
std::string peer_problem(const Topology& topo, const std::string& pu, const std::string& mem);

// The `via` of a case in which processor `pu` moves data from memory `src` to memory `dst`
// (a read or write: src == dst): the links of both paths, each once, source side first;
// "local" only when neither leaves the processor's own memory; "" when a path is missing.
// Every planner names its cases with it (docs/topology.md, "Path names").
std::string route_via(const Topology& topo, const std::string& pu, const std::string& src, const std::string& dst);
// The `via` of a case in which processors `a` and `b` both reach memory `mem` (a ping-pong
// flag): the links of both agents' paths to it, each once, `a`'s first; "" when one is missing.
std::string pair_via(const Topology& topo, const std::string& a, const std::string& b, const std::string& mem);

// One wording wherever a command needs a GPU the node does not have (issue 40):
// "this node has no CUDA GPU; valid: 'mempath gemm' on a node with one".
std::string no_gpu_text(const std::string& command);
// The GPU `--gpu TEXT` names ("N" or "gpuN", as the MEMPATH lines and topology name it); -1
// where it names none of the node's GPUs.
int gpu_named(const Topology& topo, const std::string& text);
// Why `--gpu TEXT` names no GPU: "unknown GPU 'cpu0'; valid --gpu: gpu0, gpu1" + `also`, or
// no_gpu_text on a node without one.
std::string unknown_gpu_text(const Topology& topo, const std::string& text, const std::string& command,
                             const std::string& also = "");

// Allocators that can give memory of this kind at all: combinations outside these
// (cudaMalloc on a NUMA node, pinned on a GPU) are not cases, so planners leave them out.
bool alloc_fits_memory(const Memory& m, Alloc alloc);

// Live node: sysfs/procfs under "/" and the GPUs the CUDA runtime sees.
Topology discover();
// Snapshot written by save_snapshot (or a hand-written fixture).
Topology load_snapshot(const std::string& dir);
// Writes the files of the live node that load_snapshot reads, plus gpus.txt.
void save_snapshot(const std::string& dir);
// The same from the tree under `root` (a snapshot) with these GPU facts: the same writer,
// so a node that cannot be had here (an offline GH200 HBM) is round-tripped in tests.
void save_snapshot(const std::string& dir, const std::string& root, const std::vector<GpuInfo>& gpus);

// Shared by both: read the sysfs tree under `root` and derive processors/memories/paths.
Topology build_topology(const std::string& root, const std::vector<GpuInfo>& gpus,
                        const std::string& source);

// gpus.txt (docs/topology.md) in both directions.
std::vector<GpuInfo> parse_gpus_txt(const std::string& text);
std::string format_gpus_txt(const std::vector<GpuInfo>& gpus);

// Data and unified caches of one logical CPU under a sysfs root ("/" live), smallest
// level first: L1d, L2, L3 with their sizes and the CPUs sharing each.
struct CacheLevel {
  int level = 0;
  int64_t bytes = 0;
  std::vector<int> shared;
};
std::vector<CacheLevel> cpu_caches(const std::string& root, int cpu);

// Linux cpulist syntax ("0-3,8,10-11", "" = none) as sorted, distinct ids. Throws
// UsageError (one line, what is valid) for anything else: garbage, reversed ranges, ids
// above kMaxCpulistId (a sane bound that also caps what one list can expand to).
inline constexpr int kMaxCpulistId = 65535;
std::vector<int> parse_cpulist(const std::string& text);

// GPU facts from the CUDA runtime (empty in a CPU-only build or without a GPU).
std::vector<GpuInfo> query_gpus();

}  // namespace mempath
