#pragma once
// The one allocator layer (docs/design.md): system, numa, device, managed, pinned, registered.
// A Buffer owns its memory, was first touched where its memory name says, and can say
// where its pages really are.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kinds.hpp"
#include "core/topology.hpp"

namespace mempath {

// Allocator names in table order (core/kinds.def), for option checks and listings.
inline const std::vector<std::string>& allocator_names() {
  static const std::vector<std::string> names = kind_names(kAllocTable);
  return names;
}

// The memory name of pages interleaved over every host NUMA node with CPUs (numactl
// --interleave): what `stream --mem interleave` allocates and the placement rule accepts.
inline constexpr const char* kInterleave = "interleave";

class Buffer {
 public:
  Buffer(Alloc alloc, std::string mem, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Alloc kind() const { return kind_; }
  const std::string& mem() const { return mem_; }
  int numa() const { return numa_; }
  int gpu() const { return gpu_; }

 private:
  friend std::unique_ptr<Buffer> allocate(const Topology&, Alloc, const std::string&, size_t, uint8_t, bool);
  std::string mem_;
  Alloc kind_;
  size_t bytes_;
  void* ptr_ = nullptr;
  int numa_ = -1;  // memory numaN
  int gpu_ = -1;   // memory gpuN
  bool registered_ = false;
};

// Allocates `bytes` of memory `mem` (numaN or gpuN) with allocator `alloc`, first
// touched (filled with `fill` bytes) so that its pages land on that memory. Throws
// Unsupported for a combination the node or build cannot do, UsageError for an unknown
// memory. `huge_pages` asks for transparent huge pages (madvise before first touch; system
// and numa memory only).
std::unique_ptr<Buffer> allocate(const Topology& topo, Alloc alloc, const std::string& mem, size_t bytes,
                                 uint8_t fill, bool huge_pages = false);

// Share of the buffer backed by transparent huge pages now (/proc/self/smaps
// AnonHugePages of the mappings it spans); NaN for memory the kernel does not map
// (cudaMalloc) or when smaps cannot be read.
double huge_page_fraction(const Buffer& buffer);

// Where the buffer's pages are now: "numa0", "gpu0", "numa0:0.75,numa1:0.25" (fractions
// of up to 512 sampled pages), or "unknown" (docs/schema.md).
std::string placement(const Buffer& buffer);
// The same from page-status codes of move_pages (node id >= 0, or -errno); "unknown"
// when no page has a node. Exposed for tests.
std::string format_placement(const std::vector<int>& status);
// The memory a buffer is drawn under, by where its pages were (docs/design.md, "Where a case
// is drawn"; analysis/results/cases.py drawn_under is the same rule and both are tested
// against tests/fixtures/placement_cases.txt): `mem` where they stayed there (a GPU's HBM
// NUMA node and its gpuN are one memory), else the one memory that held them; "" where
// they were split, on a memory the node does not list, or not known for managed memory,
// whose pages a GPU pulls into its own HBM (3,374 GB/s "from numa0" on an H200). An
// interleaved buffer stayed in `interleave` while every page was on a host node with CPUs.
std::string drawn_under(const Topology& topo, const std::string& mem, Alloc alloc, const std::string& placement);
// Whether a case's pages were where it names them: the `placed` verdict.
inline bool placed_as_named(const Topology& topo, const std::string& placement, const std::string& mem, Alloc alloc) {
  return drawn_under(topo, mem, alloc, placement) == mem;
}
// The `placed` column of a case (bw, chase, stream, pingpong, gemm): 1 when its pages stayed where it names
// them, 0 when not (its figure is another memory's), -1 for a case that did not run.
inline int64_t placed_column(const std::string& status, bool placed) {
  return status == "ok" ? (placed ? 1 : 0) : -1;
}

// Free bytes of memory `mem` (numaN: the node's free memory; gpuN: cudaMemGetInfo) now.
uint64_t free_bytes(const std::string& mem);

// CPU threads for untimed setup on a memory: the cores of the node itself, or of the
// host node nearest to a CPU-less (HBM) node.
std::vector<int> setup_cpus(const Topology& topo, int numa);

}  // namespace mempath
