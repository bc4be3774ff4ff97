#pragma once
// Runs one planned bandwidth case: allocate, (start the noise), time, check, locate.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {

struct CaseOutcome {
  std::string status = "ok";  // ok, skipped, failed
  std::string reason;
  std::string kernel;         // ISA or grid/block
  int threads = -1;
  int passes = 1;
  uint64_t bytes_per_rep = 0;
  std::vector<double> seconds;
  std::string placement, dst_placement;
  bool verified = false;
};

// A reader that keeps another processor busy on its memory while cases are measured.
class NoiseRunner {
 public:
  NoiseRunner(const Topology& topo, const NoiseSpec& spec, uint64_t size);
  ~NoiseRunner();
  void start();
  void stop();
  std::string label() const { return spec_.pu + ":" + spec_.mem; }

 private:
  const Topology& topo_;
  NoiseSpec spec_;
  std::unique_ptr<Buffer> buffer_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  gpu::Noise* gpu_noise_ = nullptr;
};

// A case that did not run (skipped by the plan, or by an error before it started): the
// kernel and threads it would have used, as run_case records them.
CaseOutcome unrun_outcome(const BwCase& c, const std::string& status, const std::string& reason);

// Sweeps of the buffer per repetition: 1, or enough for 256 MiB when it is in cache.
int bw_passes(const BwCase& c);

// Throws UsageError when the buffers do not fit in the memory's free space; every other
// problem becomes a skipped or failed outcome.
CaseOutcome run_case(const Topology& topo, const BwCase& c, const BwSettings& settings,
                     NoiseRunner* noise);

}  // namespace mempath
