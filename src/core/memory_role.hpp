// Memories named by their role seen from a processor (docs/cli.md, "Memory roles"), so one
// command line selects the same kind of path on a quad GH200, a dual GH200 and an x86 node:
//   local-host  the processor's own host memory (a GH200's LPDDR; x86: its socket's DDR)
//   local-hbm   its own GPU's memory (the HBM NUMA node and the cudaMalloc memory)
//   peer-host   the next superchip's host memory (one peer stands for all: the nodes are
//               symmetric, and every peer multiplies the cases)
//   peer-hbm    the next superchip's GPU memory
//   local       local-host and local-hbm
// A superchip is a GPU with its host NUMA node; a CPU socket belongs to the GPU whose host
// node it is (x86: the socket's nearest GPU), "next" is the following GPU in order.
#pragma once

#include <string>
#include <vector>

#include "core/topology.hpp"

namespace mempath {

// The role words `--mem` accepts beside memory names.
const std::vector<std::string>& memory_role_words();
bool is_memory_role(const std::string& word);

// Whether memory `m` has role `role` seen from processor `p` (false for unknown roles and
// for processors without a superchip, such as `cpus`).
bool has_memory_role(const Topology& topo, const Processor& p, const Memory& m, const std::string& role);

// A `--mem` filter entry selects memory `m` for processor `p`: its name, or one of its roles.
bool mem_selected(const Topology& topo, const Processor& p, const Memory& m,
                  const std::vector<std::string>& filter);

}  // namespace mempath
