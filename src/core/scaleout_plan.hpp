#pragma once
// Pure arithmetic of the scale-out benchmarks (`mempath-mpi`): message sizes and
// repetitions, which rank talks to which, where each rank lives, and nccl-tests'
// bandwidth definitions, where each placement puts the buffers, and the expected
// duration of each case. No MPI here, so all of it is unit-tested.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/topology.hpp"

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

// --- `bw --split` (the paper's Fig. 14) -----------------------------------------------
// With the node's data split among its `pairs` ranks, each rank's message of a node size:
// node_bytes / pairs (0 when it leaves less than a byte each), and the node sizes of a
// sweep from min to max (powers of two from at least `pairs` bytes, so no rank sends 0).
uint64_t split_rank_bytes(uint64_t node_bytes, int pairs);
std::vector<uint64_t> split_node_sizes(uint64_t min_node, uint64_t max_node, int pairs);

// --- `nccl` placements (the paper's Figs. 18/19) -----------------------------------------
// Where rank r's buffers go when it drives GPU `gpu`:
//   device      cudaMalloc on its GPU (local HBM)
//   hbm-system  numa_alloc_onnode on its GPU's HBM NUMA node (system-allocated local HBM;
//               GH200-like nodes, whose HBM is a NUMA node the GPU reads through ATS)
//   host        its GPU's nearest host node (local DDR): numa where the GPU reads pageable
//               memory, else pinned
//   peer        the next GPU's memory (cudaMalloc there, read through peer access)
//   peer-host   the host node of the next GPU with another one (another superchip's
//               LPDDR): numa, so only where the GPU reads pageable memory (GH200's ATS)
// `reason` says why the node cannot (the case is skipped); an unknown name is UsageError.
struct NcclPlacement {
  std::string name;
  std::optional<Alloc> alloc;  // none where the node has no such placement (`reason` says why)
  std::string mem, via, reason;
};
NcclPlacement nccl_placement(const Topology& topo, const std::string& name, int gpu);
const std::vector<std::string>& nccl_placement_names();
// Throws UsageError naming the valid placements for a name that is none of them.
void check_nccl_placement_name(const std::string& name);

// The cases of one placement: nccl-tests' size (the all-reduce buffer, the gathered
// all-gather output) and each rank's input, both exact for the rank count (an all-gather
// of 3 ranks gathers 3 equal parts). A sweep gives powers of two from min (at least 4 B
// per rank) to max; a per-rank size gives one case per collective: all-reduce of that
// size, all-gather of that size from every rank (the paper's "16 MB times the number of
// processes"). Rank input sizes are whole floats.
struct NcclCase {
  std::string collective;
  uint64_t size = 0, rank_bytes = 0;
};
struct NcclSizes {
  uint64_t min_size = 1024, max_size = 1ULL << 30;
  std::optional<uint64_t> per_rank;            // --size-per-rank: every collective
  bool paper = false;                          // --paper-sizes: kPaperAllReduce, kPaperAllGatherPerRank
};
inline constexpr uint64_t kPaperAllReduceBytes = 4ULL << 30;         // Fig. 19: "4 GB"
inline constexpr uint64_t kPaperAllGatherRankBytes = 16ULL << 20;    // "16 MB times the processes"
std::vector<NcclCase> nccl_cases(const std::vector<std::string>& collectives, const NcclSizes& sizes, int ranks);

// --- a job planned, not started (`mempath-mpi CMD --from SNAPSHOT`) -----------------
// Where the ranks of a job of `ranks` ranks over `nodes` nodes would be: a block
// distribution (Slurm's default, srun --ntasks-per-node=ceil(ranks/nodes): the first
// nodes full, the last the rest). `split_one_host`: one node whose ranks play two nodes,
// the first half and the second (discover_job's rule on one host, for `bw`). Throws
// UsageError for fewer than one rank or node, or more nodes than ranks.
struct MpiLayout {
  std::vector<int> node_of, local_of;  // per rank
  int nodes = 1;
  bool split_host = false;
};
MpiLayout planned_layout(int ranks, int nodes, bool split_one_host);

// --- expected duration (core/duration_model.hpp) -------------------------------------
// What a run states before its first case (its EXPECT line) and a plan prints: the cases,
// those the model expects to run (the others are known skips) and their seconds.
struct ScaleoutExpectation {
  size_t cases = 0, planned = 0;
  double seconds = 0;
};

// Seconds of one `bw` case: a one-window warm-up and `reps` repetitions of mpi_windows
// windows between `pairs` pairs, each message `rank_bytes`, both ways when `bidir`;
// over the network, or through shared memory when the two "nodes" are halves of one host.
double mpi_bw_case_s(uint64_t rank_bytes, int pairs, bool bidir, int reps, bool same_host);
// Seconds of one `nccl` case: `warmup` + `iters` collectives moving busbw's bytes at the
// slower of the placement's path (`via`) and, with several ranks, the GPUs' link
// (`gpu_link`: nvlink, pcie) or, across nodes, the network; then the output checked.
double nccl_case_s(const NcclCase& c, int ranks, int nodes, const std::string& via, const std::string& gpu_link,
                   int warmup, int iters, bool host_output);
// Seconds to set up one placement's input and output buffers of allocator `alloc`
// (allocate; the input written through the rank's pageable stage).
double nccl_setup_s(uint64_t in_bytes, uint64_t out_bytes, Alloc alloc);

// A whole `bw` run: per allocator its two buffers of the largest message, then every mode
// x message size (`rank_sizes`, each rank's). Allocators of device memory are known skips
// when `device_problem` is not empty (no CUDA-aware MPI); their cases count, unplanned.
ScaleoutExpectation mpi_bw_expectation(const std::vector<Alloc>& allocs, const std::vector<std::string>& modes,
                                       const std::vector<uint64_t>& rank_sizes, int reps, int pairs, bool same_host,
                                       const std::string& device_problem);
// A whole `nccl` run as rank 0 (driving GPU `gpu` of `topo`) sees it: NCCL started, then
// per placement its buffers and every case; placements the node cannot host
// (nccl_placement's reason) are known skips. `hosts`: the nodes the collectives span.
ScaleoutExpectation nccl_expectation(const Topology& topo, int gpu, const std::vector<std::string>& placements,
                                     const std::vector<NcclCase>& cases, int ranks, int hosts, int warmup, int iters);

}  // namespace mempath
