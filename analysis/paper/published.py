"""Values the source texts print (numbers in their text or tables, never read off a plot),
each with where it is printed; a paper figure holds this run against the ones that match
its processor role, memory role and operation (``Comparison`` in items.py).

Keys: ``fig<N>.<what>...``; ``of("fig14.")`` gives one figure's values. Each figure group
keeps its values in one contiguous section headed by a comment naming its figures."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.peaks import ALPS_PAPER


@dataclass(frozen=True)
class Published:
    key: str
    quantity: str
    value: float
    unit: str
    source: str


VALUES: tuple[Published, ...] = (
    # --- mpi_bandwidth (Fig. 14), nccl_by_size (Fig. 18), nccl_by_nodes (Fig. 19): analysis/paper/scaleout.py
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
              "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
              "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
              "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"),
    Published("table3.datasheet.tf32_sparse.tflops", "H100 SXM TF32 tensor core, with sparsity", 989, "TFLOP/s",
              "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
              "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
              "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"),
    Published("table3.datasheet.fp32.tflops", "H100 SXM FP32", 67, "TFLOP/s",
              "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
              "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
              "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"),
    Published("table3.datasheet.fp64_tensor.tflops", "H100 SXM FP64 tensor core", 67, "TFLOP/s",
              "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
              "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
              "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"),
    Published("table3.datasheet.fp64.tflops", "H100 SXM FP64 (no tensor core)", 34, "TFLOP/s",
              "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
              "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
              "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html"),
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
)


def of(prefix: str) -> list[Published]:
    """The published values whose key starts with ``prefix``."""
    return [p for p in VALUES if p.key.startswith(prefix)]

