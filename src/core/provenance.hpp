#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/topology.hpp"
#include "core/device_runtime.hpp"

namespace mempath {

// Root attributes of a result file (docs/schema.md): tool, build, host, time, topology,
// kernel, page size, THP, governor, CUDA versions, clocks and GPU UUIDs.
std::map<std::string, Attribute> collect_provenance(const Topology& topo,
                                                    const std::vector<std::string>& argv);
std::string utc_now_iso8601();
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and CUDA_VISIBLE_DEVICES spell it.
std::string gpu_uuid_text(const gpu::Uuid& uuid);
// Comma list of gpu_uuid_text in GPU order; "" for none.
std::string gpu_uuid_list(const std::vector<gpu::Uuid>& uuids);
// "mempath-bw-HOST-20261122T101500.h5"
std::string default_output_name(const std::string& bench, const std::string& host);

}  // namespace mempath
