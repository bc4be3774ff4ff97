#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "core/topology.hpp"

namespace mempath {

// Root attributes of a result file (docs/schema.md): tool, build, host, time, topology,
// kernel, page size, THP, governor, CUDA versions and clocks.
std::map<std::string, Attribute> collect_provenance(const Topology& topo,
                                                    const std::vector<std::string>& argv);
std::string utc_now_iso8601();
// "mempath-bw-HOST-20261122T101500.h5"
std::string default_output_name(const std::string& bench, const std::string& host);

}  // namespace mempath
