#pragma once
// How long a planned case is expected to take: a model, never a measurement
// (docs/methodology.md, "Expected duration"). Every constant of it is here, named; each
// benchmark adds up what its case does (buffers set up, repetitions x bytes at the
// path's rate, dependent loads, checks) from these. The rates are deliberately low (a
// PCIe-attached GPU, a far socket) so that the estimate errs long; it aims to be right
// within a factor of ~2, and a run's ELAPSED line says how far off it was.
#include <cstdint>
#include <string>

namespace mempath::model {

// The column of every family's cases table that holds the wall seconds of the run that
// produced the row: what this model is held against (docs/results/, "duration model").
inline constexpr const char* kCaseSecondsColumn = "case_s";

// --- fixed costs --------------------------------------------------------------------
// Per case: the result file rewritten and renamed, threads or a kernel launched, the
// summary built. Also what makes every planned case cost more than nothing.
inline constexpr double kCaseOverheadS = 0.1;
// Allocating, first-touching and filling a buffer, any allocator (page faults, pinning
// or registering, cudaMalloc plus a fill kernel), GB/s.
inline constexpr double kSetupGBps = 4;
// Checking a destination's bytes afterwards (host byte compares dominate), GB/s.
inline constexpr double kVerifyGBps = 4;

// --- bandwidth of a path, GB/s (the slowest link of a route counts) ------------------
inline constexpr double kCpuCoreGBps = 5;        // one CPU core streaming memory
inline constexpr double kCpuLocalGBps = 100;     // a CPU socket on its own memory
inline constexpr double kGpuLocalGBps = 1500;    // a GPU on its own HBM, all SMs (A100: ~1500)
inline constexpr double kGpuBlockGBps = 10;      // one GPU block of 1024 threads, anywhere
inline constexpr double kC2cGBps = 100;          // Grace <-> Hopper (NVLink-C2C)
inline constexpr double kNvlinkGBps = 100;       // GPU <-> GPU over NVLink
inline constexpr double kInterconnectGBps = 30;  // between CPU sockets
inline constexpr double kPcieGBps = 25;          // PCIe (gen 4 x16; gen 5 moves ~50), a peer without NVLink, unknown links
inline constexpr double kPageableCopyGBps = 5;   // cudaMemcpy of pageable or managed memory
inline constexpr double kMigrateGBps = 5;        // managed pages moved by faults

// --- latency ---------------------------------------------------------------------------
inline constexpr double kCacheLoadS = 10e-9;    // a dependent load that hits a cache
inline constexpr double kCpuMemoryLoadS = 200e-9;  // one that misses, CPU
inline constexpr double kGpuMemoryLoadS = 1e-6;    // one that misses, GPU (host memory: more)
inline constexpr double kChainElementS = 30e-9;    // building a chase chain, per element
inline constexpr double kRoundTripS = 5e-6;        // a ping-pong round trip, any pair
inline constexpr double kCopyCallS = 20e-6;        // one cudaMemcpyAsync + synchronise

// --- scale-out (mempath-mpi) -----------------------------------------------------------
// One node into the network, all its ranks together (an Alps node's Slingshot 11 NICs
// move 25 GB/s each; one 100 Gb/s NIC elsewhere), GB/s.
inline constexpr double kNetworkGBps = 10;
inline constexpr double kMpiMessageS = 2e-6;    // one MPI message's software cost (tiny messages)
inline constexpr double kCollectiveS = 50e-6;   // one NCCL collective's launch and steps, any size
inline constexpr double kNcclInitS = 5;         // ncclCommInitRank over the job, once per run

// --- compute -----------------------------------------------------------------------
inline constexpr double kGemmTflops16 = 200;  // fp16 / tf32 tensor cores
inline constexpr double kGemmTflops32 = 20;   // fp32 / fp64
// A GEMM whose A and B stay in host (or peer) memory re-reads their tiles over the link:
// flops per byte crossing it. Measured on the H100 with pinned operands over PCIe gen 5
// (docs/results/2026-11-22-applications.md: 5.6 TFLOP/s fp16, 0.55 fp64 at ~50 GB/s),
// rounded down.
inline constexpr double kGemmInPlaceFlopPerByte16 = 100;
inline constexpr double kGemmInPlaceFlopPerByte32 = 10;
inline constexpr double kAtomicsOpsPerS = 1e9;  // fetch-and-adds of a whole GPU
inline constexpr double kAtomicsThreads = 1 << 18;  // threads of one launch on a large GPU

// GB/s of a processor of kind `pu_kind` ("cpu"/"gpu") on a route `via` (topology's
// names joined by '+': local, c2c, nvlink, interconnect, pcie...): its slowest link.
double path_gbps(const std::string& pu_kind, const std::string& via);
// path_gbps of `threads` threads of a processor: a CPU's limited to kCpuCoreGBps each.
double threads_gbps(const std::string& pu_kind, const std::string& via, int threads);
// Seconds to move `bytes` at `gbps`.
double seconds(double bytes, double gbps);
// Seconds of one n x n GEMM call whose operands are read in place over `via`.
double gemm_in_place_s(double n, bool tensor16, const std::string& via);
// Seconds to set up (allocate, touch, fill) `bytes` of buffers.
double setup_s(double bytes);
// Seconds to check `bytes` of a destination.
double verify_s(double bytes);

// The lines that state the model and calibrate it (docs/cli.md, "Expected duration").
// Not `MEMPATH ` lines: the summary parsers never see them.
std::string expect_line(const std::string& bench, size_t cases, size_t planned, double expected_s);
std::string elapsed_line(const std::string& bench, size_t cases, double elapsed_s, double expected_s);

}  // namespace mempath::model
