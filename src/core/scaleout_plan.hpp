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
