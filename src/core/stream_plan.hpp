#pragma once
// STREAM-class kernels: which cases run, the bytes each kernel is counted for
// (as STREAM and BabelStream count them), and the values the arrays must hold after a
// number of repetitions, which is the data check. Pure planning: nothing is allocated.
#include <cstdint>
#include <string>
#include <vector>

#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/topology.hpp"

namespace mempath {

enum class StreamKernel { Copy, Scale, Add, Triad, Dot };

struct StreamKernelInfo {
  StreamKernel kernel;
  std::string name;  // CPU: copy, scale, add, triad (STREAM); GPU: copy, mul, add, triad, dot (BabelStream)
  int arrays;        // arrays counted per element: 2 for copy/scale/dot, 3 for add/triad
};
const std::vector<StreamKernelInfo>& stream_kernels(PuKind kind);

// BabelStream's start values and scalar: each repetition (copy, scale, add, triad) maps
// a to 0.96 a, so any number of repetitions stays finite and exactly predictable.
inline constexpr double kStreamScalar = 0.4;
struct StreamValues {
  double a = 0.1, b = 0.2, c = 0.0;
};
StreamValues stream_values_after(int repetitions);
// Relative tolerance of the data check: the kernels and this prediction may round
// differently (fused multiply-add), by far less than this.
bool stream_close(double got, double want);

struct StreamCase {
  BwCase bw;      // pu, mem, alloc, threads, cpus, size (bytes per array), skip_reason
  int sweep = -1; // cases of one CPU thread sweep share this id (>= 0)
};

struct StreamRequest {
  std::string pu, mem, alloc, threads;  // one case (or one sweep); "" = defaults
  bool all = false;                     // every processor x memory; the lists filter
  BwFilters filters;
  BwSettings settings;
};

// Throws UsageError for names the node lacks or bad thread counts; a combination the node
// cannot run carries its skip_reason. CPU cases sweep threads 1, 2, 4 .. all cores unless
// threads is a number or "all".
std::vector<StreamCase> stream_cases(const Topology& topo, const StreamRequest& request);

}  // namespace mempath
