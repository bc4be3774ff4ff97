#pragma once
// Runs one planned bandwidth case: allocate, (start the noise), time, check, locate.
#include <atomic>
#include <map>
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
  int blocks = -1;            // GPU blocks launched; -1 for a CPU
  int passes = 1;
  uint64_t bytes_per_rep = 0;
  std::vector<double> seconds;
  std::string placement, dst_placement;
  bool verified = false;
  // The contention reader within the case's window (docs/methodology.md, "Contention").
  uint64_t noise_bytes = 0;
  double noise_seconds = 0;  // 0: no window (no noise, or the case did not run)
  int noise_threads = -1;
};

// What a contention reader read within a window, and how many threads read.
struct NoiseWindow {
  uint64_t bytes = 0;
  double seconds = 0;
  int threads = 0;
  bool verified = false;  // every load's sum is what the buffer's content implies
};

// A reader that keeps another processor busy on its memory while a case is measured and
// counts what it reads: CPU threads (one per core of spec.cpus) sum chunks of 256 KiB
// and add each chunk's bytes to their own counter; a GPU kernel (gpu::start_noise)
// publishes per-block byte counts. The window is [open_window, close_window], both
// host-clock marks of the bytes read so far.
class NoiseRunner {
 public:
  NoiseRunner(const Topology& topo, const NoiseSpec& spec, const Buffer& buffer, uint8_t fill);
  ~NoiseRunner();  // stops a reader that still runs
  NoiseRunner(const NoiseRunner&) = delete;
  NoiseRunner& operator=(const NoiseRunner&) = delete;
  void start();  // returns once every thread or block is reading
  void open_window();
  void close_window();
  NoiseWindow stop();  // stops the reader; the window's bytes and seconds

 private:
  uint64_t bytes_so_far() const;
  struct alignas(64) Counter {
    std::atomic<uint64_t> bytes{0};
    uint64_t bad_chunks = 0;  // chunks whose sum was not the fill's (read after join)
    std::string error;        // why the thread could not start (set before it counts as reading)
  };
  const Topology& topo_;
  NoiseSpec spec_;
  const Buffer& buffer_;
  uint8_t fill_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Counter[]> counters_;
  std::atomic<int> reading_{0};
  std::atomic<bool> stop_{false};
  gpu::Noise* gpu_noise_ = nullptr;
  uint64_t open_bytes_ = 0, close_bytes_ = 0;
  double open_s_ = 0, close_s_ = 0;
  bool opened_ = false, closed_ = false, stopped_ = true;
};

// Noise buffers kept for the whole run, one per allocator, memory and size: the cases
// that share a reader's memory share its buffer instead of filling 8 GiB each.
class NoiseBuffers {
 public:
  explicit NoiseBuffers(const Topology& topo) : topo_(topo) {}
  const Buffer& get(const NoiseSpec& spec, uint8_t fill);

 private:
  const Topology& topo_;
  std::map<std::string, std::unique_ptr<Buffer>> buffers_;
};

// A case that did not run (skipped by the plan, or by an error before it started): the
// kernel and threads it would have used, as run_case records them.
CaseOutcome unrun_outcome(const BwCase& c, const std::string& status, const std::string& reason);

// Sweeps of the buffer per repetition: 1, or enough for 256 MiB when it is in cache.
int bw_passes(const BwCase& c);

// Throws UsageError when the buffers do not fit in the memory's free space; every other
// problem becomes a skipped or failed outcome. A case with noise takes its reader's
// buffer from `noise_buffers`.
CaseOutcome run_case(const Topology& topo, const BwCase& c, const BwSettings& settings,
                     NoiseBuffers* noise_buffers);

}  // namespace mempath
