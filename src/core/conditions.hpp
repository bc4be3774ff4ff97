#pragma once
// The conditions each case ran in (issue 40; docs/schema.md "Conditions", docs/methodology.md
// "Conditions"): readings of the host (procfs, sysfs) and of each GPU (NVML, core/nvml.hpp)
// taken between cases, never inside one, and each case's window (the reading before it and
// the first one after it). The analysis turns them into causes (analysis/model/causes.py).
//
// A reading is taken between two cases only where the last one is at least kReadEvery of
// its own cost old, so that reading costs at most 1/kReadEvery of a run's time however short
// its cases are: a run of many short cases shares readings among them (a window then spans
// several cases), one of long cases reads around each. 0.5 %, so that with the run's first
// and last readings (0.8 ms each with one H200) the whole record stays under 1 %.
//
// MEMPATH_SYSFS_ROOT (tests only, docs/testing.md) reads the host's files below that folder
// instead of "/"; the process's own CPU time always comes from getrusage.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/nvml.hpp"
#include "core/results.hpp"
#include "core/topology.hpp"

namespace mempath {

// A reading costs at most this fraction's inverse of the time between two readings.
inline constexpr double kReadEvery = 200;

// The processors and memories a case names and its path class, from its plan fields (the
// keys of its MEMPATH line): processors from pu, a, b, gpu (a GPU index or list: 0, 0,1,
// all); memories from mem, dst, b_mem, src_mem, dst_mem, c_mem, host_numa, dst_gpu.
struct CaseParts {
  std::vector<std::string> processors, memories;
  std::string via;
};
CaseParts case_parts(const std::vector<std::pair<std::string, std::string>>& plan_fields, const Topology& topo);
// "cpu0,gpu1".
std::string join_names(const std::vector<std::string>& names);

// The folder the host's procfs and sysfs files are read below: "/", or MEMPATH_SYSFS_ROOT.
std::string host_root();
// The running kernel's random id (proc/sys/kernel/random/boot_id below host_root): two
// "nodes" of one boot id are one machine (containers, network namespaces), whatever their
// host names say. Empty where it cannot be read.
std::string boot_id();

// The kernel command line options about memory, NUMA, the IOMMU, huge pages and the cores
// the kernel keeps for itself that `cmdline` holds, in its order ("iommu=pt numa=off").
std::string kernel_memory_options(const std::string& cmdline);

class Conditions {
 public:
  // At the run's start: the run-level attributes (nvml, gpu_conditions, host_conditions)
  // set on `file`, its conditions tables created, and the first reading taken. `gpu_uuids`:
  // each GPU of `topo` in order, as CUDA names it. Never throws for what the node lacks.
  Conditions(ResultFile& file, const Topology& topo, const std::vector<std::string>& gpu_uuids);
  ~Conditions();
  Conditions(const Conditions&) = delete;
  Conditions& operator=(const Conditions&) = delete;

  // Between two cases: a reading unless the last one is younger than kReadEvery x its cost.
  // Returns whether it read.
  bool between_cases();
  // A reading now (the run's end).
  void read();
  // The reading a case that starts now starts at (the last one taken).
  int64_t last() const { return readings_ - 1; }
  // The window of a finished case: from `start` to the next reading (yet to be taken).
  void window(int64_t case_id, int64_t start, const CaseParts& parts);
  // Seconds spent reading so far.
  double reading_seconds() const { return spent_s_; }

  struct Host;
  struct Gpu;

 private:
  ResultFile& file_;
  const Topology& topo_;
  std::unique_ptr<nvml::Library> nvml_;
  std::unique_ptr<Host> host_;
  std::vector<Gpu> gpus_;
  std::chrono::steady_clock::time_point t0_;
  std::chrono::steady_clock::time_point last_end_;
  double last_cost_s_ = 0, spent_s_ = 0;
  int64_t readings_ = 0;
};

}  // namespace mempath
