// CPU-only build: no GPU facts, so topology lists CPUs and NUMA memories only.
#include "core/topology.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {

std::vector<GpuInfo> query_gpus() { return {}; }

}  // namespace mempath

namespace mempath::gpu {

std::vector<Uuid> device_uuids() { return {}; }

}  // namespace mempath::gpu
