#pragma once
// NVML, the NVIDIA Management Library, loaded at run time with dlopen for the conditions a
// case ran in (core/conditions.hpp, docs/methodology.md "Conditions"). mempath does not
// link it and runs without it: where the library is missing or fails, open() says why and
// the run records that sentence instead of readings; a query the GPU or the driver does not
// answer leaves its value unknown and names it in `missing`, never failing a case.
//
// MEMPATH_NVML_LIBRARY names the library to load instead of libnvidia-ml.so.1 (the tests'
// fake, tests/fake_nvml/fake_nvml.c, that answers from a readings file).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mempath::nvml {

// Unknown integers are -1, unknown floats NaN.
struct GpuFacts {
  std::string name;
  int max_sm_clock_mhz = -1, max_mem_clock_mhz = -1;
  int default_app_sm_clock_mhz = -1, default_app_mem_clock_mhz = -1;
  // Application clocks set (nvidia-smi -ac): read once, a query costs ~1 ms on an H200.
  int app_sm_clock_mhz = -1, app_mem_clock_mhz = -1;
  int pcie_max_gen = -1, pcie_max_width = -1;  // what the GPU and its slot allow together
  double default_power_limit_w = std::nan("");
  int persistence = -1, compute_mode = -1, mig = -1, ecc = -1;
  std::vector<int> nvlinks;  // the links NVML reports a state for (present), by number
  int c2c_links = -1;        // NVLink-C2C links (GH200); -1 where NVML has no such field
  std::string missing;       // "field (why), ..." of the queries NVML did not answer
};

// One look at a GPU between two cases: instantaneous values and cumulative counters. Only
// queries of microseconds (measured on an H200, tests/perf/nvml_cost.c): the energy counter
// (2.8 ms a query) is not read, the clock limits' times come in one batch of field values
// (0.56 ms for five, against 0.7 ms each through nvmlDeviceGetViolationStatus).
struct GpuReading {
  int pstate = -1;
  int sm_clock_mhz = -1, mem_clock_mhz = -1;
  int64_t event_reasons = -1;  // nvmlClocksEventReason* bits active now
  double power_w = std::nan(""), power_limit_w = std::nan("");
  int temperature_c = -1, pcie_gen = -1, pcie_width = -1;
  // Time the clocks were held down by each policy since the driver loaded (violation time).
  double power_capped_s = std::nan(""), thermal_s = std::nan(""), sync_boost_s = std::nan(""),
         board_limit_s = std::nan(""), reliability_s = std::nan("");
  int64_t ecc_corrected = -1, ecc_uncorrected = -1;  // volatile totals
  int retirement_pending = -1, remap_pending = -1, remap_failure = -1;
  int nvlink_active = -1;   // of the present links
  std::string nvlink_down;  // present links not active: "3,7"
  int64_t nvlink_replay = -1, nvlink_recovery = -1, nvlink_crc = -1;  // totals over the links
  std::string missing;
};

class Library {
 public:
  // Loads the library and initialises NVML; nullptr with `why` set where it cannot
  // ("libnvidia-ml.so.1: cannot open shared object file: ...", "nvmlInit_v2: Driver Not Loaded").
  static std::unique_ptr<Library> open(std::string* why);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // "NVML 12.580.159.04, driver 580.159.04 (libnvidia-ml.so.1)".
  std::string describe() const;
  // The UUIDs of every GPU NVML counts, by NVML's index ("" for one it counts but cannot
  // open; `why` says so); empty with `why` set where it cannot list them.
  std::vector<std::string> uuids(std::string* why) const;
  // The GPU of this UUID ("GPU-..." as CUDA and nvidia-smi spell it); nullptr and `why` where NVML has none.
  void* device(const std::string& uuid, std::string* why) const;
  GpuFacts facts(void* device) const;
  // `links`: GpuFacts::nvlinks of the device.
  GpuReading read(void* device, const std::vector<int>& links) const;

  struct Api;

 private:
  Library() = default;
  void* handle_ = nullptr;
  std::string path_;
  std::unique_ptr<Api> api_;
};

// The library dlopen loads: MEMPATH_NVML_LIBRARY where set, else libnvidia-ml.so.1.
std::string library_path();

}  // namespace mempath::nvml
