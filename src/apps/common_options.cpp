#include "apps/common_options.hpp"

#include "core/device_runtime.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {

void append(std::vector<OptionSpec>& specs, std::vector<OptionSpec> more) {
  for (auto& spec : more) specs.push_back(std::move(spec));
}

std::vector<OptionSpec> repetition_options(Repetitions defaults, const std::string& unit) {
  return {{"reps", "N", "timed " + unit + " (default " + std::to_string(defaults.reps) + ")"},
          {"warmup", "N", "untimed " + unit + " first (default " + std::to_string(defaults.warmup) + ")"}};
}

Repetitions read_repetitions(const Options& opts, Repetitions defaults) {
  return {static_cast<int>(opts.integer("reps", defaults.reps, 1, kMaxReps)),
          static_cast<int>(opts.integer("warmup", defaults.warmup, 0, kMaxReps))};
}

std::vector<OptionSpec> cache_sized_options(const std::string& buffer) {
  return {{"size", "SIZE", "bytes per " + buffer + " (default 1GiB, raised to 4x the caches on the path)"},
          {"in-cache", "", "allow " + buffer + "s smaller than 4x the caches (cache bandwidth)"}};
}

OptionSpec pu_kind_filter_option() { return {"pu-kind", "KIND", "with --all: cpu or gpu only"}; }

uint64_t page_multiple_size(const Options& opts, uint64_t fallback) {
  const uint64_t size = opts.has("size") ? parse_size(*opts.get("size")) : fallback;
  if (size % 4096) throw UsageError("--size must be a multiple of 4KiB");
  return size;
}

void require_cuda_build(const std::string& why) {
  if (!gpu::built_with_cuda()) throw UsageError("this mempath build has no CUDA support: " + why);
}

const GpuInfo& gpu_option(const Options& opts, const Topology& topo) {
  // N or gpuN; anything else names the node's GPUs as memcpy does (issue 40: `gemm --gpu
  // cpu0` answered with the integer range).
  const std::string text = opts.get_or("gpu", "0");
  const int g = gpu_named(topo, text);
  if (g < 0) throw UsageError(unknown_gpu_text(topo, text, opts.command()));
  return *topo.find_gpu(g);
}

}  // namespace mempath
