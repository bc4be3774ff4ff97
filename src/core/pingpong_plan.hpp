#pragma once
// Which ping-pong cases to run (`mempath pingpong`): every pair of agents (a core of
// each CPU node, one thread of each GPU) x every memory the flag can live in x every
// allocator that fits it. Pure planning: nothing is allocated.
#include <string>
#include <vector>

#include "core/topology.hpp"

namespace mempath {

struct Agent {
  std::string name;  // cpuN or gpuN
  PuKind kind = PuKind::Cpu;
  int cpu = -1;      // logical CPU of a CPU agent
  int gpu = -1;
};

struct PingPongCase {
  Agent a, b;  // a initiates and times
  std::string mem;
  Alloc alloc = Alloc::Numa;
  std::string via;  // pair_via: the links between the two agents and the flag
  std::string skip_reason;
};

inline const std::vector<Alloc>& pingpong_allocators() {
  static const std::vector<Alloc> allocs = {Alloc::Numa, Alloc::Pinned, Alloc::Device, Alloc::Managed};
  return allocs;
}

// Pairs (a, b) with a before b in node order (CPU nodes, then GPUs), each agent also
// with itself: two cores of one node, or two blocks of one GPU. Filters are the options'
// name lists (empty: every agent, every memory, numa/pinned/device/managed). Throws
// UsageError for names the node does not have.
std::vector<PingPongCase> pingpong_cases(const Topology& topo, const std::vector<std::string>& pus,
                                         const std::vector<std::string>& mems,
                                         const std::vector<std::string>& allocs);

}  // namespace mempath
