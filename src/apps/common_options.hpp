#pragma once
// Options that several benchmarks take with the same meaning: one spec, one reading and
// one error message each, so that commands cannot drift apart (docs/cli.md).
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/topology.hpp"

namespace mempath {

// `more` after `specs`: a command's own options around the shared ones.
void append(std::vector<OptionSpec>& specs, std::vector<OptionSpec> more);

// --reps and --warmup: the defaults a command's help states are the ones its plan reads.
struct Repetitions {
  int reps;
  int warmup;
};

// --reps N and --warmup N, help in the command's own unit ("launches": "timed launches
// (default 10)", "untimed launches first (default 1)").
std::vector<OptionSpec> repetition_options(Repetitions defaults, const std::string& unit = "repetitions");
// --reps in [1, kMaxReps] and --warmup in [0, kMaxReps] (a run may skip the warm-up).
Repetitions read_repetitions(const Options& opts, Repetitions defaults);

// --size and --in-cache of the bandwidth commands, whose default size outgrows the caches
// on the path; `buffer` names what the size is of ("buffer", "array").
std::vector<OptionSpec> cache_sized_options(const std::string& buffer);

// --pu-kind, the filter of --all by processor kind.
OptionSpec pu_kind_filter_option();

// --size of a command whose buffers are whole 4KiB pages (`fallback` when not given).
uint64_t page_multiple_size(const Options& opts, uint64_t fallback);

// Throws UsageError when this build has no CUDA support: "...: " + `why` (what needed it).
// A CPU-only build sees no GPU on a live node; this says why instead of "no such GPU".
void require_cuda_build(const std::string& why);

// --gpu N (default 0): the GPU of a command that measures one; UsageError when the node
// has no such GPU.
const GpuInfo& gpu_option(const Options& opts, const Topology& topo);

}  // namespace mempath
