#include "core/chase_chain.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mempath {

void check_chain(const ChainSpec& spec) {
  if (spec.line < 8 || spec.line % 8)
    throw UsageError("--line must be a multiple of 8 bytes (one pointer), got " + std::to_string(spec.line));
  if (spec.size < spec.line)
    throw UsageError("buffer size " + std::to_string(spec.size) + " B is smaller than one line (" +
                     std::to_string(spec.line) + " B); valid: sizes >= --line");
  if (spec.size % spec.line)
    throw UsageError("buffer size " + format_size(spec.size) + " is not a multiple of --line " +
                     std::to_string(spec.line));
  if (spec.locality && spec.locality % spec.line)
    throw UsageError("--locality " + format_size(spec.locality) + " is not a multiple of --line " +
                     std::to_string(spec.line));
  if (spec.size / spec.line > std::numeric_limits<uint32_t>::max())
    throw UsageError("a chain of " + std::to_string(spec.size / spec.line) +
                     " lines is too long; valid: at most 2^32-1 lines (raise --line)");
}

std::vector<uint32_t> chain_order(const ChainSpec& spec) {
  check_chain(spec);
  const uint64_t n = spec.size / spec.line;
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (spec.sequential) return order;
  const uint64_t locality = spec.locality && spec.locality < spec.size ? spec.locality : spec.size;
  const uint64_t per_group = locality / spec.line;
  const uint64_t groups = (n + per_group - 1) / per_group;
  std::mt19937_64 rng(spec.seed);
  std::vector<uint32_t> group_order(groups);
  std::iota(group_order.begin(), group_order.end(), 0u);
  std::shuffle(group_order.begin(), group_order.end(), rng);
  uint64_t k = 0;
  for (uint32_t g : group_order) {
    const uint64_t begin = g * per_group, end = std::min(n, begin + per_group);
    const uint64_t first = k;
    for (uint64_t e = begin; e < end; ++e) order[k++] = static_cast<uint32_t>(e);
    std::shuffle(order.begin() + first, order.begin() + k, rng);
  }
  return order;
}

void write_chain(void* view, uint64_t base, const ChainSpec& spec, const std::vector<uint32_t>& order) {
  auto* bytes = static_cast<char*>(view);
  const size_t n = order.size();
  for (size_t k = 0; k < n; ++k) {
    const uint64_t next = base + static_cast<uint64_t>(order[(k + 1) % n]) * spec.line;
    std::memcpy(bytes + static_cast<uint64_t>(order[k]) * spec.line, &next, sizeof next);
  }
}

uint64_t chain_address_after(uint64_t base, const ChainSpec& spec, const std::vector<uint32_t>& order,
                             uint64_t steps) {
  return base + static_cast<uint64_t>(order[steps % order.size()]) * spec.line;
}

}  // namespace mempath
