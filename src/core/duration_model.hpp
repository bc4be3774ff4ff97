#pragma once
// How long a planned case is expected to take: a model, never a measurement
// (docs/methodology.md, "Expected duration"). Every constant of it is here, named; each
// benchmark adds up what its case does (buffers made, repetitions x bytes at the path's
// rate, dependent loads, checks) from these, at the rates of the node it plans for
// (Rates, from its topology). The constants are measured on H100 and H200 nodes (case_s
// of every case, docs/results/2026-11-28-duration-model.md); a GH200's links come from
// their documented peaks at the efficiency the Alps paper measured. The aim is to be right
// within 1.5x per check; a run's ELAPSED line says how far off it was.
#include <cstdint>
#include <string>

#include "core/kinds.hpp"

namespace mempath {
struct Topology;
}

namespace mempath::model {

// The column of every family's cases table that holds the wall seconds of the run that
// produced the row: what this model is held against.
inline constexpr const char* kCaseSecondsColumn = "case_s";

// --- fixed costs --------------------------------------------------------------------
// Once per run: the process and its first file, and the CUDA context of each GPU (0.1 to
// 0.3 s measured with one GPU, 0.25 to 0.65 s with two).
inline constexpr double kRunOverheadS = 0.1;
inline constexpr double kGpuContextS = 0.1;
// Per case: threads or kernels launched, the summary built, the file checkpointed.
inline constexpr double kCaseOverheadS = 0.005;

// --- making buffers (allocate, first touch or fill) and checking them, GB/s ----------
// Pageable memory (system, numa, managed) first touched by the case's CPU threads.
inline constexpr double kTouchGBps = 6;
// cudaMallocHost: the driver pins page by page (1.7 to 4.5 GB/s on H100 and H200 nodes).
inline constexpr double kPinnedGBps = 3;
// numa_alloc_onnode, touched, then cudaHostRegister.
inline constexpr double kRegisteredGBps = 5;
// cudaMalloc and a fill kernel; a check of device memory runs on the GPU as fast.
inline constexpr double kDeviceFillGBps = 300;
// A destination checked by the CPU, byte for byte.
inline constexpr double kHostVerifyGBps = 15;
// Managed pages moved by faults to the processor that touches them.
inline constexpr double kMigrateGBps = 5;

// --- bandwidth of a path, GB/s (the slowest link of a route counts) ------------------
// One CPU core streaming memory (8.6 measured per core of a 16-core x86 socket).
inline constexpr double kCpuCoreGBps = 8;
// A whole x86 socket on its own DDR (137-152 measured on the H100 and H200 hosts, 83 on a
// busier H200 host); a Grace socket on its LPDDR5X (500 GB/s documented, at 80 %).
inline constexpr double kX86SocketGBps = 120;
inline constexpr double kGraceSocketGBps = 400;
// A Hopper GPU on its own HBM, all SMs (H100 3,050, H200 4,300 measured; A100's
// 1,500-1,900 errs short).
inline constexpr double kGpuLocalGBps = 3000;
// One GPU block of 1024 threads on its own HBM (113-117 measured on H200); a path's rate
// caps it elsewhere (32 over PCIe, 53 over NVLink measured).
inline constexpr double kGpuBlockGBps = 100;
// PCIe per lane and generation, one direction, at the 80 % a GPU copy reaches (gen 5 x16:
// 50 GB/s, 51-55 measured); a link of unknown width or generation: gen 4 x16.
inline constexpr double kPcieLaneGBps[6] = {0, 0.2, 0.4, 0.79, 1.58, 3.15};
// NVLink: a Hopper GPU's 18 links (450 GB/s per direction), at the 83 % measured between
// two H200s, shared evenly by the peers it is wired to (a quad GH200's pair: 125, also when
// the driver fenced one of its GPUs: the board's wiring counts, not the GPUs left).
inline constexpr double kNvlinkGpuGBps = 375;
// NVLink-C2C (450 GB/s): Hopper reads LPDDR at 93 %, Grace reads HBM at 53 % (Alps paper).
inline constexpr double kC2cGBps = 300;
// Between the Grace sockets of a quad GH200.
inline constexpr double kInterconnectGBps = 100;
// cudaMemcpy of pageable memory (staged through the driver's buffers).
inline constexpr double kPageableCopyGBps = 5;

// --- latency ---------------------------------------------------------------------------
inline constexpr double kCacheLoadS = 10e-9;       // a dependent load that hits a cache
inline constexpr double kCpuMemoryLoadS = 250e-9;  // one that misses, CPU (180-280 ns measured)
inline constexpr double kGpuLocalLoadS = 400e-9;   // a GPU's miss to its own HBM (340-350 ns)
inline constexpr double kGpuRemoteLoadS = 1.5e-6;  // to another memory (NVLink 1.0, PCIe 1.5 us)
// Building a chase chain, per element: its order shuffled and written (50 ns measured).
inline constexpr double kChainElementS = 50e-9;
inline constexpr double kRoundTripS = 5e-6;        // a ping-pong round trip (0.1-6.5 us measured)
// A CPU<->GPU round trip on a managed flag where the GPU has no ATS: the page moves by a
// fault each way (1.25 ms measured on two H200s).
inline constexpr double kManagedBounceS = 1.25e-3;
inline constexpr double kCopyCallS = 12e-6;        // one cudaMemcpyAsync + synchronise (12 us measured)
// A transfer's sample row written to the file (its text columns: 12-15 us measured).
inline constexpr double kTransferRowS = 12e-6;

// --- scale-out (mempath-mpi) -----------------------------------------------------------
// One node into the network, all its ranks together (an Alps node's Slingshot 11 NICs
// move 25 GB/s each; one 100 Gb/s NIC elsewhere), GB/s. Not fitted to a test cluster of
// network namespaces on one machine (TCP over veth: ~2 GB/s, 4 us a small message), which
// takes about five times as long (docs/methodology.md, "The network").
inline constexpr double kNetworkGBps = 10;
inline constexpr double kMpiMessageS = 2e-6;    // one MPI message's software cost (tiny messages)
inline constexpr double kCollectiveS = 50e-6;   // one NCCL collective's launch and steps, any size
// ncclCommInitRank over the job, once per run, with the ranks' topology discovery and CUDA
// start (the whole start-up before the result file: 1-2 s measured with 1 to 4 ranks of one
// H200 node and 2 ranks of two nodes).
inline constexpr double kNcclInitS = 1;
// A rank's buffer written or checked by the host element by element through its 16 MiB
// pageable stage (the input computed and copied in; the output copied back and compared
// with what the collective must give), GB/s of the buffer: 0.5-1.2 measured (1 to 4 ranks
// of H200 nodes: the step's time less its collectives, per byte filled and checked).
inline constexpr double kNcclCheckGBps = 0.65;

// --- compute -----------------------------------------------------------------------
// Hopper at large sizes: fp16 700-900 and tf32 ~400 TFLOP/s on tensor cores, fp32 (FP32
// cores) and fp64 (tensor cores) 50-65 measured on H100 and H200.
inline constexpr double kGemmTflops16 = 500;  // fp16 / tf32
inline constexpr double kGemmTflops32 = 50;   // fp32 / fp64
// A GEMM whose A and B stay in host (or peer) memory re-reads their tiles over the link:
// flops per byte crossing it. Measured on the H100 with pinned operands over PCIe gen 5
// (docs/results/2026-11-22-applications.md: 5.6 TFLOP/s fp16, 0.55 fp64 at ~50 GB/s),
// rounded down.
inline constexpr double kGemmInPlaceFlopPerByte16 = 100;
inline constexpr double kGemmInPlaceFlopPerByte32 = 10;
// Fetch-and-adds of a whole GPU on counters in its own memory, another GPU's, host memory
// (H200: a launch of 2^18 x 64 in 0.5 ms, 15 ms over NVLink, 70 ms over PCIe).
inline constexpr double kAtomicsLocalOpsPerS = 1e10;
inline constexpr double kAtomicsPeerOpsPerS = 1e9;
inline constexpr double kAtomicsHostOpsPerS = 2.5e8;
inline constexpr double kAtomicsThreads = 1 << 18;  // threads of one launch on a large GPU
// cuBLAS opened and its first handle made: the first GEMM case of a run (0.4 s measured).
inline constexpr double kCublasLoadS = 0.4;

// The rates of one node's links, from its topology.
struct Rates {
  double cpu_socket_gbps = kX86SocketGBps;
  double gpu_local_gbps = kGpuLocalGBps;
  double pcie_gbps = 16 * kPcieLaneGBps[4];
  double nvlink_gbps = kNvlinkGpuGBps;  // one GPU pair
  double c2c_gbps = kC2cGBps;
  double interconnect_gbps = kInterconnectGBps;
};
Rates rates_of(const Topology& topo);

// GB/s of a processor of kind `pu_kind` on a route `via` (topology's names joined by '+':
// local, c2c, nvlink, interconnect, pcie...): its slowest link.
double path_gbps(const Rates& rates, PuKind pu_kind, const std::string& via);
// path_gbps of `threads` threads of a processor: a CPU's limited to kCpuCoreGBps each.
double threads_gbps(const Rates& rates, PuKind pu_kind, const std::string& via, int threads);
// Seconds to move `bytes` at `gbps`.
double seconds(double bytes, double gbps);
// Seconds of a run's fixed costs on a node with `gpus` GPUs.
double run_overhead_s(size_t gpus);
// Seconds of one n x n GEMM call whose operands are read in place over `via`.
double gemm_in_place_s(const Rates& rates, double n, bool tensor16, const std::string& via);
// Seconds to make `bytes` of buffers of allocator `alloc`.
double setup_s(double bytes, Alloc alloc);
// Seconds to check `bytes` of a destination of allocator `alloc` (device memory on the GPU).
double verify_s(double bytes, Alloc alloc);
// Seconds the faults take to move `bytes` of managed host pages to a GPU that reads them
// (0 for a CPU, another allocator, or memory already on a GPU).
double migration_s(double bytes, PuKind pu_kind, Alloc alloc, const std::string& mem);

// The lines that state the model and calibrate it (docs/cli.md, "Expected duration").
// Not `MEMPATH ` lines: the summary parsers never see them.
std::string expect_line(const std::string& bench, size_t cases, size_t planned, double expected_s);
std::string elapsed_line(const std::string& bench, size_t cases, double elapsed_s, double expected_s);

}  // namespace mempath::model
