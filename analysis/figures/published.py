"""Values the source texts PRINT (numbers in their text or tables, never read off a plot),
each with the document and the section, figure or table that prints it. Builders hold
this run's same quantity (same processor role, memory role, operation) against them as
``Comparison`` rows (items.py); a value no builder compares is kept for the record.

Documents are named by their files in shared/references/ (README.md there says what
each is): ``alps-gh200-data-movement-paper.txt`` (Fusco et al., quad GH200 of CSCS Alps),
``dual-gh200-workstation-blog.txt``, ``gh200-memcpy-article.txt`` (DataCrunch),
``cpu-gpu-throughput-article.txt``. Keys: ``<figure or document>.<processor>.<op>.<memory
role>.<statistic>``; each builder's section below is contiguous.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.peaks import ALPS_PAPER

@dataclass(frozen=True)
class Published:
    key: str        # "fig7.hopper.read.local_lpddr.pct"
    quantity: str   # what was measured, in words
    value: float    # as printed
    unit: str       # as printed ("%", "GB/s", "GiB/s")
    source: str     # document, section / figure / table


PAPER = "Fusco et al. (alps-gh200-data-movement-paper.txt)"
DUAL_BLOG = "What 2x GH200 delivers (dual-gh200-workstation-blog.txt)"
DATACRUNCH = "DataCrunch, MEMCPY Analysis from Grace Hopper GH200 (gh200-memcpy-article.txt)"
THROUGHPUT_ARTICLE = "Benchmarking GPUs: Measuring Throughput between CPU and GPU (cpu-gpu-throughput-article.txt)"
H100_DATASHEET = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
                  "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
                  "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html")

VALUES: tuple[Published, ...] = (
    # --- mpi_bandwidth (Fig. 14), nccl_by_size (Fig. 18), nccl_by_nodes (Fig. 19): analysis/figures/scaleout.py
    # Figs. 18 and 19 print no value in the text (only their sizes, kept in scaleout.py).
    Published("fig14.bi.node_max", "node to other nodes, bidirectional, maximum achievable "
              "(4 Slingshot 11 ports of 200 Gb/s per node)", 100.0, "GB/s",
              f"{ALPS_PAPER}, Sec. II: \"a maximum achievable bidirectional bandwidth of 100 GB/s to "
              "other nodes\""),
    Published("fig14.uni.port", "one GH200's network port (one MPI process uses one interface, "
              "Sec. III-F)", 200.0, "Gb/s",
              f"{ALPS_PAPER}, Sec. II: \"Each GH200 is connected to a switch through a 200 Gb/s "
              "ethernet port\""),
    # --- end of Figs. 14, 18, 19
    # --- Table I (hardware.py), Fig. 4 (unified_memory.py), Table III (gemm.py), Fig. 17 (llm.py) ---
    # Table I prints four GPU columns: GH200 with 96 GB HBM3, GH200 with 144 GB HBM3e, H100 SXM,
    # H100 PCIe (SMs 132 | 132 | 114: the GH200 variants share one cell).
    Published("table1.gh200_hbm3.sms", "GH200 (96 GB HBM3): streaming multiprocessors", 132, "SMs",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.gh200_hbm3.memory", "GH200 (96 GB HBM3): GPU memory size", 96, "GB",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.gh200_hbm3.bandwidth", "GH200 (96 GB HBM3): GPU memory bandwidth", 4.0, "TB/s",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.gh200_hbm3e.sms", "GH200 (144 GB HBM3e): streaming multiprocessors", 132, "SMs",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.gh200_hbm3e.memory", "GH200 (144 GB HBM3e): GPU memory size", 144, "GB",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.gh200_hbm3e.bandwidth", "GH200 (144 GB HBM3e): GPU memory bandwidth", 4.9, "TB/s",
              f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_sxm.sms", "H100 SXM: streaming multiprocessors", 132, "SMs", f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_sxm.memory", "H100 SXM: GPU memory size", 80, "GB", f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_sxm.bandwidth", "H100 SXM: GPU memory bandwidth", 3.35, "TB/s", f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_pcie.sms", "H100 PCIe: streaming multiprocessors", 114, "SMs", f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_pcie.memory", "H100 PCIe: GPU memory size", 80, "GB", f"{ALPS_PAPER}, Table I"),
    Published("table1.h100_pcie.bandwidth", "H100 PCIe: GPU memory bandwidth", 2.0, "TB/s", f"{ALPS_PAPER}, Table I"),
    # The text beside Table I, about the GH200's Hopper the paper measured.
    Published("table1.gh200_hbm3.l2", "GH200 Hopper: L2 cache shared by all SMs", 52, "MB",
              f"{ALPS_PAPER}, sec. II-A3"),
    Published("table1.gh200_hbm3.l1_per_sm", "GH200 Hopper: private L1 cache per SM", 256, "KB",
              f"{ALPS_PAPER}, sec. II-A3"),
    Published("table1.gh200_hbm3.threads_per_sm", "GH200 Hopper: concurrent threads per SM", 2048, "threads",
              f"{ALPS_PAPER}, sec. II-A3"),
    Published("table1.gh200_hbm3.threads", "GH200 Hopper: concurrent threads in all", 270336, "threads",
              f"{ALPS_PAPER}, sec. II-A3"),
    # Fig. 4: the burst length from which managed memory beats system-allocated memory.
    Published("fig4.managed_faster.iterations",
              "back-to-back Hopper iterations from which managed memory's runtime is faster than "
              "system-allocated memory's", 128, "iterations", f"{ALPS_PAPER}, sec. II-C, text on Fig. 4"),
    # Table III: dense peaks of the H100 SXM the paper holds its GEMM against.
    Published("table3.fp16.tflops", "H100 SXM FP16 tensor-core peak", 989, "TFLOP/s", f"{ALPS_PAPER}, Table III"),
    Published("table3.tf32.tflops", "H100 SXM TF32 tensor-core peak", 494, "TFLOP/s", f"{ALPS_PAPER}, Table III"),
    Published("table3.fp32.tflops", "H100 SXM FP32 peak (no tensor core)", 67, "TFLOP/s", f"{ALPS_PAPER}, Table III"),
    Published("table3.fp64.tflops", "H100 SXM FP64 tensor-core peak", 67, "TFLOP/s", f"{ALPS_PAPER}, Table III"),
    Published("table3.datasheet.fp16_sparse.tflops", "H100 SXM FP16 tensor core, with sparsity", 1979, "TFLOP/s",
              H100_DATASHEET),
    Published("table3.datasheet.tf32_sparse.tflops", "H100 SXM TF32 tensor core, with sparsity", 989, "TFLOP/s",
              H100_DATASHEET),
    Published("table3.datasheet.fp32.tflops", "H100 SXM FP32", 67, "TFLOP/s",
              H100_DATASHEET),
    Published("table3.datasheet.fp64_tensor.tflops", "H100 SXM FP64 tensor core", 67, "TFLOP/s",
              H100_DATASHEET),
    Published("table3.datasheet.fp64.tflops", "H100 SXM FP64 (no tensor core)", 34, "TFLOP/s",
              H100_DATASHEET),
    # Fig. 17's section prints the peak memory of its allocator (small: < 1 MB allocations).
    Published("fig17.llama-2-7b.peak_small", "Llama-2 7B fp16 decode: peak of small (< 1 MB) allocations",
              133, "MB", f"{ALPS_PAPER}, sec. IV-B"),
    Published("fig17.llama-2-7b.peak_large", "Llama-2 7B fp16 decode: peak of large allocations",
              27, "GB", f"{ALPS_PAPER}, sec. IV-B"),
    Published("fig17.llama-2-13b.peak_small", "Llama-2 13B fp16 decode: peak of small (< 1 MB) allocations",
              168, "MB", f"{ALPS_PAPER}, sec. IV-B"),
    Published("fig17.llama-2-13b.peak_large", "Llama-2 13B fp16 decode: peak of large allocations",
              52, "GB", f"{ALPS_PAPER}, sec. IV-B"),
    # --- end of Table I, Fig. 4, Table III, Fig. 17 ---
    # --- Figs. 5, 7, 9, 10 and Table II: bandwidth of processor x memory, under contention,
    # copies, cudaMemcpy between allocators (analysis/figures/bandwidth.py, copies.py). ---
    # The paper prints Fig. 7's ratios in sec. III-C; Figs. 5, 9 and 10 print no number
    # (sec. III-A's 250 and 450 GB/s are theoretical copy peaks, not measurements).
    Published("fig7.hopper.read.local_lpddr.pct", "Hopper read of local LPDDR, % of the path's peak",
              93.0, "%", f"{PAPER}, sec. III-C (Fig. 7)"),
    Published("fig7.hopper.write.local_lpddr.pct", "Hopper write of local LPDDR, % of the path's peak",
              84.0, "%", f"{PAPER}, sec. III-C (Fig. 7)"),
    Published("fig7.grace.read.local_hbm.pct", "Grace read of local HBM, % of the path's peak",
              53.0, "%", f"{PAPER}, sec. III-C (Fig. 7)"),
    Published("fig7.grace.write.local_hbm.pct", "Grace write of local HBM, % of the path's peak",
              64.0, "%", f"{PAPER}, sec. III-C (Fig. 7)"),
    Published("fig7.hopper.any.peer_lpddr.max_pct",
              "Hopper read or write of peer LPDDR (C2C and NVLink), % of the path's peak: at most",
              60.0, "%", f"{PAPER}, sec. III-C (Fig. 7: 'never go above 60%')"),
    Published("fig7.contention.grace.write.local_hbm.pct",
              "Grace write of local HBM while Hopper reads local LPDDR, % of the path's peak",
              17.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)"),
    Published("fig7.contention.hopper.write.local_hbm.pct",
              "Hopper write of local HBM while Grace reads it, % of the path's peak",
              65.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)"),
    Published("fig7.contention.sum.write.local_hbm.gbps",
              "Hopper write of local HBM + Grace reading it at once, summed",
              2682.8, "GB/s", f"{PAPER}, sec. III-C (Fig. 7, with noise: 'Summing the bandwidth of both PUs')"),
    Published("fig7.contention.sum.write.local_hbm.pct",
              "Hopper write of local HBM + Grace reading it at once, summed, % of the HBM's peak",
              67.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)"),
    # The dual GH200 workstation's 16 paths (its TL;DR table). Gx = GPU x (H), Lx = the
    # LPDDR of Grace x, the GPU's host node; copies are NVBandwidth's copy-engine memcpy
    # of host buffers bound with numactl (pinned, cudaMallocHost), the rest STREAM,
    # BabelStream or a staged copy (kept for the record: not a bw or cudaMemcpy quantity).
    Published("dual_gh200.h0_h0.triad", "GPU0 local HBM, BabelStream Triad", 3728.0, "GB/s",
              f"{DUAL_BLOG}, TL;DR table (H0 -> H0)"),
    Published("dual_gh200.h1_h1.triad", "GPU1 local HBM, BabelStream Triad", 3724.0, "GB/s",
              f"{DUAL_BLOG}, TL;DR table (H1 -> H1)"),
    Published("dual_gh200.l0_l0.stream_triad", "Grace0 local LPDDR, STREAM Triad at the best thread count",
              348.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L0 -> L0)"),
    Published("dual_gh200.l1_l1.stream_triad", "Grace1 local LPDDR, STREAM Triad at the best thread count",
              348.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L1 -> L1)"),
    Published("dual_gh200.l0_h0.h2d", "cudaMemcpy pinned local LPDDR -> device memory (GPU0 from Grace0's LPDDR)",
              377.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L0 -> H0, local C2C, H2D copy)"),
    Published("dual_gh200.l1_h1.h2d", "cudaMemcpy pinned local LPDDR -> device memory (GPU1 from Grace1's LPDDR)",
              380.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L1 -> H1, local C2C, H2D copy)"),
    Published("dual_gh200.h0_l0.d2h", "cudaMemcpy device memory -> pinned local LPDDR (GPU0 to Grace0's LPDDR)",
              297.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H0 -> L0, local C2C, D2H copy)"),
    Published("dual_gh200.h1_l1.d2h", "cudaMemcpy device memory -> pinned local LPDDR (GPU1 to Grace1's LPDDR)",
              298.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H1 -> L1, local C2C, D2H copy)"),
    Published("dual_gh200.l0_h1.h2d", "cudaMemcpy pinned peer LPDDR -> device memory (GPU1 from Grace0's LPDDR)",
              133.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L0 -> H1, remote socket)"),
    Published("dual_gh200.l1_h0.h2d", "cudaMemcpy pinned peer LPDDR -> device memory (GPU0 from Grace1's LPDDR)",
              133.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L1 -> H0, remote socket)"),
    Published("dual_gh200.h0_l1.d2h", "cudaMemcpy device memory -> pinned peer LPDDR (GPU0 to Grace1's LPDDR)",
              132.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H0 -> L1, remote socket)"),
    Published("dual_gh200.h1_l0.d2h", "cudaMemcpy device memory -> pinned peer LPDDR (GPU1 to Grace0's LPDDR)",
              133.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H1 -> L0, remote socket)"),
    Published("dual_gh200.l0_l1.stream", "Grace1's cores on Grace0's LPDDR, STREAM (inter-Grace)",
              119.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L0 -> L1)"),
    Published("dual_gh200.l1_l0.stream", "Grace0's cores on Grace1's LPDDR, STREAM (inter-Grace)",
              112.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (L1 -> L0)"),
    Published("dual_gh200.h0_h1.staged", "GPU0 HBM -> GPU1 HBM, sustained copy staged through host memory",
              58.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H0 -> H1)"),
    Published("dual_gh200.h1_h0.staged", "GPU1 HBM -> GPU0 HBM, sustained copy staged through host memory",
              57.0, "GB/s", f"{DUAL_BLOG}, TL;DR table (H1 -> H0)"),
    # DataCrunch's Table 1: cudaMemcpyAsync of 500 MiB host -> device; the article does not
    # name the host allocator (compared with pinned: an asynchronous copy needs pinned
    # memory, and the H200 row is beyond what pageable copies reach over PCIe). The
    # round trip adds a device -> host copy; its rate's definition is not given (record only).
    Published("datacrunch.gh200.h2d", "cudaMemcpyAsync local LPDDR -> device memory, 500 MiB (GH200)",
              135.0, "GiB/s", f"{DATACRUNCH}, Table 1 (GH200, Host->Device)"),
    Published("datacrunch.gh200.round_trip", "cudaMemcpyAsync host -> device -> host, 500 MiB (GH200)",
              65.0, "GiB/s", f"{DATACRUNCH}, Table 1 (GH200, Round-trip)"),
    Published("datacrunch.h200.h2d", "cudaMemcpyAsync local DDR -> device memory, 500 MiB (x86 + H200)",
              57.0, "GiB/s", f"{DATACRUNCH}, Table 1 (H200, Host->Device)"),
    Published("datacrunch.h200.round_trip", "cudaMemcpyAsync host -> device -> host, 500 MiB (x86 + H200)",
              41.0, "GiB/s", f"{DATACRUNCH}, Table 1 (H200, Round-trip)"),
    # The throughput article: an NVIDIA A10 on PCIe Gen4 x16 of a two-socket x86 server.
    Published("cpu_gpu_article.a10.h2d.nvbandwidth_ce", "copy-engine memcpy pinned local DDR -> device memory "
              "(nvbandwidth host_to_device_memcpy_ce, x86 + A10 PCIe Gen4)",
              25.17, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (nvbandwidth SUM host_to_device_memcpy_ce)"),
    Published("cpu_gpu_article.a10.h2d.nvbandwidth_sm", "SM-copy memcpy pinned local DDR -> device memory "
              "(nvbandwidth host_to_device_memcpy_sm, x86 + A10 PCIe Gen4)",
              25.25, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (nvbandwidth SUM host_to_device_memcpy_sm)"),
    Published("cpu_gpu_article.a10.h2d.local", "cudaMemcpyAsync pinned local DDR -> device memory "
              "(Bandwidth_Check, x86 + A10 PCIe Gen4)",
              25.149124, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (first of 10 printed runs)"),
    Published("cpu_gpu_article.a10.h2d.remote", "cudaMemcpyAsync pinned peer DDR (other socket) -> device "
              "memory (Bandwidth_Check, x86 + A10 PCIe Gen4)",
              25.131380, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Measuring Remote Memory Throughput' (first of 10 printed runs)"),
    Published("cpu_gpu_article.x86.cpu.read.local_ddr", "CPU socket read of local DDR, all cores (Intel MLC, '~')",
              300.0, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (sanity checks: 'DRAM per socket is ~300GB/s')"),
    # --- end of Figs. 5, 7, 9, 10 and Table II ---
)


def of(prefix: str) -> list[Published]:
    """The published values whose key starts with ``prefix``, in the order above."""
    return [value for value in VALUES if value.key.startswith(prefix)]
