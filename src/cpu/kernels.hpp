#pragma once
// CPU memory kernels, one set per instruction set, chosen at run time. Wide loads into
// several independent accumulators keep enough misses in flight to saturate memory;
// x86 writes use non-temporal stores so write bandwidth is not halved by the
// read-for-ownership of ordinary stores. Every kernel's work is observable: read
// returns the sum of the 8-byte words it loaded, write/copy leave data that is checked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mempath::cpu {

struct Isa {
  std::string name;
  uint64_t (*read)(const void* src, size_t bytes);          // sum of 8-byte words
  void (*write)(void* dst, size_t bytes, uint64_t word);    // dst[i] = word
  void (*copy)(void* dst, const void* src, size_t bytes);   // dst = src
};

// The instruction sets this CPU can run, best first (the last is always "scalar").
// Kernels need 64-byte aligned pointers and sizes that are multiples of 64 bytes.
const std::vector<Isa>& available_isas();
const Isa& best_isa();
const Isa& isa_by_name(const std::string& name);  // throws UsageError if unavailable

}  // namespace mempath::cpu
