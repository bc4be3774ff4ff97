#pragma once
// Runs planned GPU<->GPU cases of `mempath memcpy --direction d2d,d2d-bidir`
// (core/memcpy_plan.hpp, plan_memcpy_d2d): peer copies (copy engine or an SM kernel on the
// source GPU) and copies staged through pinned host memory, timed by gpu/memcpy_api.hpp,
// every destination checked on its GPU.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "apps/memcpy_runner.hpp"
#include "core/allocators.hpp"
#include "core/memcpy_plan.hpp"
#include "core/topology.hpp"

namespace mempath {

class MemcpyD2dRunner {
 public:
  explicit MemcpyD2dRunner(const Topology& topo) : topo_(topo) {}
  // As MemcpyRunner::run: `capacity` is the largest size of the cases sharing this case's
  // buffers; `single`: buffers that do not fit are bad input rather than a skipped case.
  MemcpyOutcome run(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single);

 private:
  void measure(const MemcpyCase& c, uint64_t capacity, const MemcpySettings& settings, bool single,
               MemcpyOutcome& out);
  // The buffer named `name`, allocated on first use with at least `bytes` (device buffers:
  // `capacity`, or for a sweep the largest of its sizes that fits). "" or why it cannot.
  std::string ensure(const std::string& name, Alloc alloc, const std::string& mem, uint64_t bytes,
                     uint64_t capacity, bool sweep, uint8_t fill);

  const Topology& topo_;
  std::string key_;  // buffer_key of the buffers held
  std::map<std::string, std::unique_ptr<Buffer>> buffers_;
};

}  // namespace mempath
