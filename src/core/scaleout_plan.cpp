#include "core/scaleout_plan.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/options.hpp"

namespace mempath {

int mpi_windows(uint64_t size, int window) {
  const uint64_t per_window = std::max<uint64_t>(1, size) * static_cast<uint64_t>(window);
  const uint64_t target = 256ULL << 20;
  return static_cast<int>(std::clamp<uint64_t>(target / per_window, 2, 100));
}

int mpi_partner(int rank, const std::vector<int>& node_of, const std::vector<int>& local_of) {
  const int peer_node = node_of[rank] == 0 ? 1 : 0;
  for (size_t r = 0; r < node_of.size(); ++r)
    if (node_of[r] == peer_node && local_of[r] == local_of[rank]) return static_cast<int>(r);
  return -1;
}

std::vector<int> ranks_per_node(const std::vector<int>& node_of) {
  std::vector<int> count;
  for (int node : node_of) {
    if (node >= static_cast<int>(count.size())) count.resize(node + 1, 0);
    ++count[node];
  }
  return count;
}

int mpi_pairs(const std::vector<int>& node_of, const std::vector<int>& local_of) {
  int pairs = 0;
  for (size_t r = 0; r < node_of.size(); ++r)
    pairs += node_of[r] == 0 && mpi_partner(static_cast<int>(r), node_of, local_of) >= 0;
  return pairs;
}

namespace {
uint64_t mix(uint64_t x) {  // splitmix64's finaliser: nearby tags give unrelated words
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t pattern_tag(int sender, uint64_t size, int rep) {
  return mix(mix(static_cast<uint64_t>(sender)) ^ mix(size + 1) ^ static_cast<uint64_t>(rep));
}

// Word j is mix(tag) ^ j: unique per offset within a message; the tail takes the first
// bytes of the next word. Words are copied with memcpy: buffers need not be aligned.
void fill_pattern(void* buf, uint64_t bytes, uint64_t tag) {
  auto* out = static_cast<unsigned char*>(buf);
  const uint64_t base = mix(tag), words = bytes / 8;
  for (uint64_t j = 0; j < words; ++j) {
    const uint64_t w = base ^ j;
    std::memcpy(out + 8 * j, &w, 8);
  }
  const uint64_t tail = base ^ words;
  std::memcpy(out + 8 * words, &tail, bytes % 8);
}

uint64_t pattern_mismatch(const void* buf, uint64_t bytes, uint64_t tag) {
  const auto* in = static_cast<const unsigned char*>(buf);
  const uint64_t base = mix(tag), words = bytes / 8;
  for (uint64_t j = 0; j < words; ++j) {
    uint64_t w = 0;
    std::memcpy(&w, in + 8 * j, 8);
    if (w != (base ^ j)) {
      const uint64_t want = base ^ j;
      for (uint64_t b = 0;; ++b)
        if (in[8 * j + b] != reinterpret_cast<const unsigned char*>(&want)[b]) return 8 * j + b;
    }
  }
  const uint64_t tail = base ^ words;
  for (uint64_t b = 0; b < bytes % 8; ++b)
    if (in[8 * words + b] != reinterpret_cast<const unsigned char*>(&tail)[b]) return 8 * words + b;
  return bytes;
}

float nccl_input(int rank, uint64_t element) {
  return static_cast<float>((element + static_cast<uint64_t>(rank)) % 8 + 1);
}

float nccl_allreduce_expected(int ranks, uint64_t element) {
  // The sum over ranks of nccl_input: whole rounds of 1..8 plus the remainder.
  const uint64_t n = static_cast<uint64_t>(ranks);
  float sum = static_cast<float>((n / 8) * 36);
  for (uint64_t r = 0; r < n % 8; ++r) sum += nccl_input(static_cast<int>(r), element);
  return sum;
}

float nccl_allgather_expected(uint64_t count, uint64_t pos) {
  return nccl_input(static_cast<int>(pos / count), pos % count);
}

int rank_numa(int local_rank, const std::vector<int>& host_numa_ids) {
  if (host_numa_ids.empty()) return -1;
  return host_numa_ids[static_cast<size_t>(local_rank) % host_numa_ids.size()];
}

const std::vector<std::string>& nccl_collectives() {
  static const std::vector<std::string> names = {"allreduce", "allgather"};
  return names;
}

double busbw_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather") return (n - 1) / n;
  throw UsageError("invalid collective '" + collective + "'; valid: " + join(nccl_collectives()));
}

}  // namespace mempath
