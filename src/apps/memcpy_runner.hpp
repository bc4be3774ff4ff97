#pragma once
// Runs planned host<->device transfer cases (core/memcpy_plan.hpp): buffers from the one
// allocator layer, kept across the cases of a group, the issuing thread bound to the
// case's CPU node, copies timed (gpu/memcpy_api.hpp), destinations checked.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/allocators.hpp"
#include "core/memcpy_plan.hpp"
#include "core/topology.hpp"

namespace mempath {

struct MemcpySettings {
  int reps = 10;
  int warmup = 2;
};

// One measured stream of a case: a direction on one GPU.
struct MemcpyPart {
  std::string direction;  // h2d, d2h, or d2d (GPU<->GPU)
  int gpu = -1;
  int host_numa = -1;
  uint64_t bytes = 0;     // bytes per repetition
  std::vector<double> seconds;
  int dst_gpu = -1;       // GPU<->GPU (direction d2d): the destination GPU; `gpu` is the source
};

struct MemcpyOutcome {
  std::string status = "ok";  // ok, skipped, failed
  std::string reason;
  std::vector<MemcpyPart> parts;
  std::string placement;      // host buffers' pages after the case
  bool verified = false;
  int sm_threads = -1;        // threads of one SM copy kernel, -1 for copy-engine copies
};

class MemcpyRunner {
 public:
  explicit MemcpyRunner(const Topology& topo) : topo_(topo) {}
  // `capacity`: the largest size of the cases sharing this case's buffers (buffer_key),
  // so a sweep allocates once. `single`: the only case of the run; buffers that do not
  // fit are then bad input (UsageError) rather than a skipped case.
  MemcpyOutcome run(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single);

 private:
  struct Buffers {
    std::unique_ptr<Buffer> host_src, dev_dst, dev_src, host_dst;  // h2d pair, d2h pair
  };
  void measure(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single,
               MemcpyOutcome& out);
  // Makes sure `slot` holds a buffer for this case: allocated once per group at
  // `capacity` (a sweep: the largest of its sizes that fits). "" or why it cannot.
  std::string ensure(std::unique_ptr<Buffer>& slot, const MemcpyCase& c, size_t gpu_index, bool host,
                     uint8_t fill, uint64_t capacity);

  const Topology& topo_;
  std::string key_;                 // buffer_key of the buffers held
  std::vector<Buffers> buffers_;    // one set per GPU of the case
};

// Pins the calling thread to the CPUs of NUMA node `node` and binds its memory there (what
// `numactl --cpunodebind=N --membind=N` does for a whole process); UsageError without CPUs.
void bind_issuing_thread(const Topology& topo, int node);

// What both memcpy runners (this one and MemcpyD2dRunner) do around their own measuring:
// the plan's skip, then `measure(out)`, in which an Unsupported is a skipped case, a
// UsageError is the caller's and any other exception fails the case and calls `forget`
// (a CUDA error may have left the buffers unusable: the next case starts afresh).
MemcpyOutcome run_memcpy_case(const MemcpyCase& c, const std::function<void(MemcpyOutcome&)>& measure,
                              const std::function<void()>& forget);
// Buffers that do not fit (`why` not empty) are bad input where the case is the run's only
// one (`single`: UsageError), else a skipped case: marks `out` so and returns true.
bool skipped_for(const std::string& why, bool single, MemcpyOutcome& out);
// The verdicts after the timed copies: launch overhead inside the timing (`released_late`),
// `bad` destination bytes that differ from their source. Either fails the case.
void judge(MemcpyOutcome& out, bool released_late, uint64_t bad);
// Items in first-seen order without repeats, ";"-joined (placements of several buffers).
std::string join_distinct(const std::vector<std::string>& items);

inline constexpr uint8_t kClearByte = 0x00;  // destinations before a case's copies
inline constexpr int kMinCooldown = 2;       // copies after the timed ones on concurrent streams

}  // namespace mempath
