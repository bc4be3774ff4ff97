#pragma once
// The pointer chain of `mempath chase`: one element per line of the buffer, linked into a
// single cycle, so every load depends on the one before and the walk visits every line
// before it repeats. Pure arithmetic: the caller owns the memory the chain is written to.
#include <cstdint>
#include <string>
#include <vector>

namespace mempath {

struct ChainSpec {
  uint64_t size = 0;      // bytes covered by the chain
  uint64_t line = 64;     // bytes between elements
  uint64_t locality = 0;  // random order kept within groups of this many bytes (0: size)
  bool sequential = false;
  uint64_t seed = 42;
};

// Throws UsageError when the spec cannot make a chain (line too small or not a multiple
// of 8, size not a multiple of line, locality not a multiple of line, too many elements).
void check_chain(const ChainSpec& spec);

// Element indices in walk order: the chain goes order[0] -> order[1] -> ... -> order[0].
// Random: groups of `locality` bytes in random order, the lines of each group in random
// order (multichase's TLB locality). Sequential: 0, 1, 2, ... (a prefetcher's best case).
std::vector<uint32_t> chain_order(const ChainSpec& spec);

// Writes the chain into `view` (a CPU-writable image of the buffer) as addresses based at
// `base` (the address the walker will use: the buffer itself, or its device address).
void write_chain(void* view, uint64_t base, const ChainSpec& spec, const std::vector<uint32_t>& order);

// Address of the element reached after `steps` loads from order[0]: the value a walk of
// that many steps must end on, whatever a compiler or cache did.
uint64_t chain_address_after(uint64_t base, const ChainSpec& spec, const std::vector<uint32_t>& order,
                             uint64_t steps);

}  // namespace mempath
