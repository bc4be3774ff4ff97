#pragma once
// Which pointer-chase cases to run (`mempath chase`): one processor thread, one memory,
// one allocator, a list of buffer sizes. Pure planning: nothing is allocated.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/topology.hpp"

namespace mempath {

struct ChaseCase {
  std::string pu;
  PuKind pu_kind = PuKind::Cpu;
  std::string mem;
  std::optional<Alloc> alloc;  // none where the path has none (skipped)
  std::string via;
  int cpu = -1;             // logical CPU the chasing thread is pinned to; -1 for a GPU
  std::string skip_reason;  // non-empty: the node cannot run this case
};

struct CacheInfo {
  std::string pu, level;  // "L1d", "L2", "L3"
  uint64_t bytes = 0;
  std::string source;     // "sysfs", "cuda", "table"
};

// One case from the command line. `pu` empty: the node of `cpu`, or the first CPU node;
// `cpu` < 0: the PU's first core; `mem` empty: the PU's own memory; `alloc` (a name) empty:
// the path's default. Throws UsageError for names the node does not have.
ChaseCase make_chase_case(const Topology& topo, std::string pu, int cpu, std::string mem, std::string alloc);

// Every processor x memory (each CPU node's first core, each GPU), with each path's
// default allocator, or with every allocator that fits the memory when `allocs` is
// {"all"}; the filters are the options' name lists (empty = everything).
std::vector<ChaseCase> all_chase_cases(const Topology& topo, const std::vector<std::string>& pus,
                                       const std::vector<std::string>& mems,
                                       const std::vector<std::string>& allocs);

// The caches a chase by this case's thread can hit, smallest first: the core's levels
// from sysfs under `sysfs_root`, or a GPU's L1 (by compute capability) and L2.
std::vector<CacheInfo> chase_caches(const Topology& topo, const ChaseCase& c, const std::string& sysfs_root);

// Top of the default sweep: the larger of 1 GiB and 4 x the largest cache, a power of two.
uint64_t default_max_size(const std::vector<CacheInfo>& caches);

}  // namespace mempath
