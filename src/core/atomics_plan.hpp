#pragma once
// Which atomic-throughput cases to run (`mempath atomics`): every GPU x every memory its
// counters can live in x allocator, and how many increments each counter must hold after
// a run, which is the data check. Pure planning: nothing is allocated.
#include <cstdint>
#include <string>
#include <vector>

#include "core/topology.hpp"

namespace mempath {

struct AtomicsCase {
  std::string pu, mem;
  Alloc alloc = Alloc::Device;
  std::string via, skip_reason;
  int gpu = -1;
};

struct AtomicsFilters {  // the options' comma lists, as given; empty = everything
  std::vector<std::string> pus, mems, allocs;
  bool all = false;  // every allocator of each path; else the path's default one
};

// GPUs only: a CPU's atomics are another instrument. Throws UsageError for names the node
// lacks (or CPU names); a combination the node cannot run carries alloc_problem's reason.
std::vector<AtomicsCase> atomics_cases(const Topology& topo, const AtomicsFilters& filters);

// Threads are numbered across the grid; warp w increments counter w % counters, each of
// its 32 threads `ops` times per launch. The count counter `c` holds after `launches`.
uint64_t atomics_expected(uint64_t c, uint64_t counters, uint64_t warps, uint64_t ops, uint64_t launches);

}  // namespace mempath
