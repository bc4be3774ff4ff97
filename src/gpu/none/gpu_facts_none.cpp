// CPU-only build: no GPU facts, so topology lists CPUs and NUMA memories only.
#include "core/topology.hpp"

namespace mempath {

std::vector<GpuInfo> query_gpus() { return {}; }

}  // namespace mempath
