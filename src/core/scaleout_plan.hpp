#pragma once
// Pure arithmetic of the scale-out benchmarks (`mempath-mpi`): message sizes and
// repetitions, which rank talks to which, where each rank lives, and nccl-tests'
// bandwidth definitions. No MPI here, so all of it is unit-tested.
#include <cstdint>
#include <string>
#include <vector>

namespace mempath {

inline constexpr int kMpiWindow = 64;  // messages in flight per window, as OSU's osu_bw

// Windows per timed repetition: enough to move ~256 MiB (at most 100, at least 2).
int mpi_windows(uint64_t size, int window);

// The rank on the other node with the same local index, or -1 (node has fewer ranks).
// `node_of[r]` and `local_of[r]` describe every rank of the job.
int mpi_partner(int rank, const std::vector<int>& node_of, const std::vector<int>& local_of);

// Ranks on each node (index = node), and the rank pairs of `bw`: node 0's ranks that have a
// partner on node 1. Every rank computes both alike from the job's layout, without messages.
std::vector<int> ranks_per_node(const std::vector<int>& node_of);
int mpi_pairs(const std::vector<int>& node_of, const std::vector<int>& local_of);

// The data check of `bw`: a sender fills its message with 64-bit words that differ per
// offset and per `tag`, the tag differing per sender, message size and repetition, so the
// receiver tells a stale, shifted, torn or never-written message from the right one.
uint64_t pattern_tag(int sender, uint64_t size, int rep);
void fill_pattern(void* buf, uint64_t bytes, uint64_t tag);
// The offset of the first byte that differs from the pattern, or `bytes` when none does.
uint64_t pattern_mismatch(const void* buf, uint64_t bytes, uint64_t tag);

// The data check of `nccl`: rank r's input element i, and what every element of the
// output must then be. Small whole numbers, so every sum is exact in float whatever the
// reduction order (up to 2^24 / 9 ranks).
float nccl_input(int rank, uint64_t element);
float nccl_allreduce_expected(int ranks, uint64_t element);
// Element `pos` of the gathered buffer of `count` elements per rank.
float nccl_allgather_expected(uint64_t count, uint64_t pos);

// The NUMA node a rank binds to: local rank l takes host node l (round-robin when there
// are more ranks than host nodes).
int rank_numa(int local_rank, const std::vector<int>& host_numa_ids);

// nccl-tests' definitions (PERFORMANCE.md): algbw = bytes / time, with bytes the
// per-rank buffer of all-reduce and the whole gathered buffer of all-gather; busbw =
// algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather. Throws UsageError for an
// unknown collective.
double busbw_factor(const std::string& collective, int ranks);
const std::vector<std::string>& nccl_collectives();

}  // namespace mempath
