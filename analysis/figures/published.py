"""Values the source texts PRINT (numbers in their text or tables, never read off a plot),
each with the document and the section, figure or table that prints it, and the facts
that say what it is (``Facts``: the hardware it was taken on, the link the path crosses,
its definition, its direction, bare metal or virtual machine where the text says).
Builders hold this run's same quantity (same processor role, memory role, operation)
against them with ``hold``, giving this run's facts from its topology and its cases: a
row is a comparison (with a ratio) only where hardware class, link, definition and
direction match; any other row is context, shown apart with its true source and no
ratio (``Held.differs`` says why). A value no builder holds is kept for the record.

Documents are named by their files in shared/references/ (README.md there says what
each is): ``alps-gh200-data-movement-paper.txt`` (Fusco et al., quad GH200 of CSCS Alps),
``dual-gh200-workstation-blog.txt``, ``gh200-memcpy-article.txt`` (DataCrunch),
``cpu-gpu-throughput-article.txt``. Keys: ``<figure or document>.<processor>.<op>.<memory
role>.<statistic>``; each builder's section below is contiguous.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.peaks import ALPS_PAPER, GRACE_LPDDR5X_480, PeakModel
from ..model.vocabulary import GRACE, LPDDR5X, is_grace, on_gpu
from ..render.items import Comparison
from ..results.sockets import socket_count

NA = "n/a"                 # the fact does not apply to the quantity
UNSTATED = "not stated"    # the source (or the run) does not say


@dataclass(frozen=True)
class Facts:
    """What a value is. ``hardware``: a published value's alternatives, each the classes
    the run must all be (``"GH200 96GB HBM3 + LPDDR5X 480 GB module"``), any alternative
    will do; this run's: every class its processors and memories are (hardware_classes).
    ``link``: the route of the path and its generation (a topology ``via``,
    ``pcie`` as ``pcie gen5 x16``), NA where no link is part of the quantity.
    ``definition``: what was measured and how, worded alike on both sides where alike.
    ``direction``: read, write, host to device, one direction, sum of both directions (NA:
    not part of the quantity). ``setting``: bare metal or virtual machine ('' not known)."""

    hardware: tuple[str, ...] = ()
    link: str = NA
    definition: str = UNSTATED
    direction: str = NA
    setting: str = ""

    def differences(self, run: Facts) -> list[str]:
        """Why this run's value (``run``) is not the same quantity as this published one:
        each fact that does not match, '' where all do. A fact the source does not state
        never matches (the run cannot be shown to be alike); the setting counts only where
        both sides know it (runs do not record it)."""
        out = []
        if not self.hardware:
            out.append("hardware: not stated by the source")
        elif not any(set(alternative.split(" + ")) <= set(run.hardware) for alternative in self.hardware):
            out.append(f"hardware: {' or '.join(self.hardware)} there, {_hardware_text(run.hardware)} here")
        if self.link != NA and (self.link == UNSTATED or self.link != run.link):
            out.append(f"link: {self.link} there, {run.link} here")
        if self.definition == UNSTATED or self.definition != run.definition:
            out.append(f"definition: {self.definition} there; {run.definition} here")
        if self.direction != NA and self.direction != run.direction:
            out.append(f"direction: {self.direction} there, {run.direction} here")
        if self.setting and run.setting and self.setting != run.setting:
            out.append(f"setting: {self.setting} there, {run.setting} here")
        return out


def _hardware_text(classes: Iterable[str]) -> str:
    """The run's classes, the specific ones (a GPU's variant, the node) before families."""
    names = sorted(set(classes), key=lambda c: (-len(c), c))
    kept = [c for c in names if not any(c != other and c in other for other in names)]
    return ", ".join(sorted(kept)) or "not known"


@dataclass(frozen=True)
class Published:
    key: str        # "fig7.hopper.read.local_lpddr.pct"
    quantity: str   # what was measured, in words
    value: float    # as printed
    unit: str       # as printed ("%", "GB/s", "GiB/s")
    source: str     # document, section / figure / table
    facts: Facts = field(default_factory=Facts)


@dataclass(frozen=True)
class Held(Comparison):
    """A published value beside this run's, with what keeps them apart (``differs``,
    empty: like for like, a comparison with a ratio; else context, no ratio)."""

    key: str = ""
    differs: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        return not self.differs


def hold(item_key: str, pub: Published, run: float, quantity: str, facts: Facts) -> Held:
    """``pub`` beside this run's ``run`` (NaN: not measured) of ``quantity`` (words saying
    which processors and node), decided by ``pub.facts`` against this run's ``facts``."""
    return Held(item_key, quantity, pub.value, run, pub.unit, pub.source, pub.key,
                tuple(pub.facts.differences(facts)))


# ---- this run's facts, from its topology ------------------------------------------------

def gpu_classes(model: str, memory_bytes: float = 0.0) -> set[str]:
    """The classes a GPU is by its model name: its family and its variant (``H200`` and
    ``H200 SXM``; ``GH200`` and ``GH200 96GB HBM3``, as Table I tells them apart)."""
    upper = model.upper().replace("NVIDIA", "").strip()
    if "GH200" in upper:
        big = "144G" in upper or "HBM3E" in upper or memory_bytes > 120e9
        return {"GH200", "GH200 144GB HBM3e" if big else "GH200 96GB HBM3"}
    for family in ("H200", "H100"):
        if family in upper:
            form = "PCIe" if "PCIE" in upper else "NVL" if "NVL" in upper else "SXM"
            return {family, f"{family} {form}"}
    tokens = re.findall(r"[A-Z0-9]+", upper)
    return {tokens[0] if len(tokens) == 1 else upper} if upper else {"unnamed GPU"}


def node_class(topology: Mapping[str, Any]) -> str:
    """``quad GH200``, ``dual GH200``, ``single GH200`` (Grace sockets that have a GH200),
    else '' (an x86 node is its processors' classes)."""
    gpus = [p for p in topology.get("processors", []) if p.get("kind") == "gpu"]
    if not is_grace(topology) or not any("GH200" in str(g.get("model", "")).upper() for g in gpus):
        return ""
    sockets = socket_count(topology)
    return {1: "single GH200", 2: "dual GH200", 4: "quad GH200"}.get(sockets, f"{sockets}-socket GH200")


def hardware_classes(topology: Mapping[str, Any], pu: str, mems: Sequence[str] = ()) -> tuple[str, ...]:
    """Every class this run's processor ``pu`` and the memories ``mems`` are: the node's,
    the processor's (a GPU by gpu_classes, a CPU ``Grace`` or its model name), the GPUs of
    the superchips the memories belong to, and a Grace LPDDR module by its size (120/240 GB
    modules reach 500 GB/s, the 480 GB module 384: the peak model's rule, by socket)."""
    procs = {p["name"]: p for p in topology.get("processors", [])}
    memories = {m["name"]: m for m in topology.get("memories", [])}
    gpus = {p.get("gpu"): p for p in procs.values() if p.get("kind") == "gpu"}
    out = {node_class(topology)} - {""}
    model = PeakModel(topology)

    def gpu(number: Any) -> None:
        g = gpus.get(number)
        if g is not None:
            out.update(gpu_classes(str(g.get("model", "")), float(g.get("memory_bytes") or 0)))
    p = procs.get(pu, {})
    if p.get("kind") == "gpu":
        gpu(p.get("gpu"))
    elif p.get("kind") == "cpu":
        out.add(GRACE if is_grace(topology) else str(topology.get("cpu_model") or "unnamed CPU"))
    for mem in mems:
        m = memories.get(mem, {})
        if on_gpu(m.get("kind")):
            gpu(m.get("gpu"))
        elif m.get("kind") == "host" and is_grace(topology):
            # a Grace's LPDDR is its superchip's: the GH200 is on the path (on x86 the GPU of a
            # socket's PCIe is not on a path to its DDR)
            gpu(next((g for g, q in gpus.items() if q.get("host_numa") == m.get("numa")), None))
            # (a socket numa=fake split cites the module with its nodes after it)
            big = str(model.memory(mem).citation or "").startswith(GRACE_LPDDR5X_480.citation)
            out.add(f"{LPDDR5X} 480 GB module" if big else f"{LPDDR5X} 120/240 GB module")
    return tuple(sorted(out))


def link_of(topology: Mapping[str, Any], pu: str, mem: str) -> str:
    """The route of ``pu`` to ``mem`` as the topology classifies it (``c2c``, ``nvlink+c2c``,
    ``local``), a PCIe link with its generation and width (``pcie gen5 x16``); UNSTATED
    where the topology has no such path."""
    via = next((str(p.get("via") or "") for p in topology.get("paths", []) if p["pu"] == pu and p["mem"] == mem), "")
    if not via:
        return UNSTATED
    procs = {p["name"]: p for p in topology.get("processors", [])}
    link = (procs.get(pu, {}).get("link") or {}) if procs.get(pu, {}).get("kind") == "gpu" else {}
    gen, width = int(link.get("gen") or 0), int(link.get("width") or 0)
    pcie = f"pcie gen{gen} x{width}" if gen and width else "pcie (generation not known)"
    return "+".join(pcie if token == "pcie" else token for token in via.split("+"))


def run_facts(topology: Mapping[str, Any], pu: str, mems: Sequence[str] = (), *, definition: str,
              direction: str = NA, link: str | None = None) -> Facts:
    """This run's facts for ``pu`` on ``mems``: its hardware classes, the link of the path to
    the first memory (``link`` where the caller knows better, NA where none applies). Runs
    do not record whether they ran in a virtual machine: the setting stays unknown."""
    route = link if link is not None else (link_of(topology, pu, mems[0]) if mems else NA)
    return Facts(hardware_classes(topology, pu, mems), route, definition, direction)


# ---- definitions, worded alike where a builder measures what a source measured ----------

DEF_BW_PCT = "a kernel's read or write bandwidth, % of the path's theoretical peak (Fig. 3)"
DEF_CONTENTION_PCT = "a kernel's write bandwidth while the other processor's noise kernel reads, % of the path's peak"
DEF_CONTENTION_SUM_PAPER = ("both processors' bandwidth summed, each measured while the other's noise ran; which "
                            "operations the text sums is not stated (its 17% of 450 plus 65% of 4000 GB/s, "
                            "2676.5, are both writes)")
DEF_CONTENTION_SUM_RUN = "the writer's bandwidth plus its noise reader's, recorded in the same window"
DEF_SOCKET_READ_MLC = "Intel MLC, a socket's DRAM bandwidth with all its cores (MLC mode not named; '~')"
DEF_SOCKET_READ_RUN = "mempath bw read kernel, all cores of a socket on its local memory"
DEF_FIG4 = ("back-to-back Hopper cudaMemset iterations from which managed memory's runtime is below "
            "system-allocated memory's (full write)")
DEF_TABLE1 = "the GPU's characteristic as its maker or runtime states it"
DEF_NETWORK = "node-to-node bandwidth over the network, every process of the node at once"
DEF_LLM_PAPER = ("peak memory of the pluggable allocator's small (< 1 MB, cudaMallocAsync) and large "
                 "(numa_alloc_onnode) allocations over Hugging Face's load of the model and generate of 100 "
                 "tokens (PyTorch 2.2.0)")
DEF_LLM_RUN = ("peak memory of mempath's pluggable allocator's small and large allocations, random weights "
               "built in place, decode steps replayed from a CUDA graph")


def memcpy_definition(src_alloc: str, dst_alloc: str) -> str:
    """A copy engine's cudaMemcpy (or cudaMemcpyAsync) of ``src_alloc`` into ``dst_alloc``
    memory, buffer size / time."""
    return f"copy-engine cudaMemcpy, {src_alloc} -> {dst_alloc}, size / time"


def gemm_definition(dtype: str) -> str:
    return f"{dtype.upper()} dense matrix multiply, TFLOP/s (a peak or a measured best)"


NOT_NAMED = "host memory of an allocator not named"
BARE_METAL = "bare metal"
# The paper's nodes: a quad GH200 of CSCS Alps (GH200 of 96 GB HBM3, 120 GB LPDDR5X).
ALPS = ("GH200",)


def _alps(link: str = NA, definition: str = UNSTATED, direction: str = NA,
          hardware: tuple[str, ...] = ALPS) -> Facts:
    return Facts(hardware, link, definition, direction, BARE_METAL)


PAPER = "Fusco et al. (alps-gh200-data-movement-paper.txt)"
DUAL_BLOG = "What 2x GH200 delivers (dual-gh200-workstation-blog.txt)"
DATACRUNCH = "DataCrunch, MEMCPY Analysis from Grace Hopper GH200 (gh200-memcpy-article.txt)"
THROUGHPUT_ARTICLE = "Benchmarking GPUs: Measuring Throughput between CPU and GPU (cpu-gpu-throughput-article.txt)"
# The dual GH200 workstation: a path within one superchip holds for any GH200 of that
# HBM and LPDDR module, one across the two superchips for a dual GH200 node only.
DUAL_HBM = ("GH200 96GB HBM3",)
DUAL_LPDDR = ("Grace + LPDDR5X 480 GB module",)
DUAL_C2C = ("GH200 96GB HBM3 + LPDDR5X 480 GB module",)
DUAL_ACROSS = ("dual GH200 + GH200 96GB HBM3 + LPDDR5X 480 GB module",)
H100_DATASHEET = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (tensor-core figures printed "
                  "'with sparsity', 'specifications 1/2 lower without sparsity'), as transcribed at "
                  "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html")


def _table1_column(column: str, gpu: str, facts: Facts, sms: int, memory_gb: int,
                   bandwidth_tbs: float) -> tuple[Published, ...]:
    """A GPU's column of Table I: the table asks every GPU the same three rows."""
    source = f"{ALPS_PAPER}, Table I"
    return (Published(f"table1.{column}.sms", f"{gpu}: streaming multiprocessors", sms, "SMs", source, facts),
            Published(f"table1.{column}.memory", f"{gpu}: GPU memory size", memory_gb, "GB", source, facts),
            Published(f"table1.{column}.bandwidth", f"{gpu}: GPU memory bandwidth", bandwidth_tbs, "TB/s",
                      source, facts))


def _printed(source: str, facts: Facts, *rows: tuple[str, str, float, str]) -> tuple[Published, ...]:
    """Values that one place of a source prints with the same facts, each row (key, quantity,
    value, unit)."""
    return tuple(Published(key, quantity, value, unit, source, facts) for key, quantity, value, unit in rows)


def _dual_gh200(facts: Facts, *rows: tuple[str, str, float, str]) -> tuple[Published, ...]:
    """Cells of the dual GH200 workstation's TL;DR table that are one quantity (a path and its
    mirror on the other superchip), each row (key, quantity, GB/s, the cell's paths)."""
    return tuple(Published(key, quantity, value, "GB/s", f"{DUAL_BLOG}, TL;DR table ({cell})", facts)
                 for key, quantity, value, cell in rows)


VALUES: tuple[Published, ...] = (
    # --- mpi_bandwidth (Fig. 14), nccl_by_size (Fig. 18), nccl_by_nodes (Fig. 19): analysis/figures/scaleout.py
    # Figs. 18 and 19 print no value in the text (only their sizes, kept in scaleout.py).
    Published("fig14.bi.node_max", "node to other nodes, bidirectional, maximum achievable "
              "(4 Slingshot 11 ports of 200 Gb/s per node)", 100.0, "GB/s",
              f"{ALPS_PAPER}, Sec. II: \"a maximum achievable bidirectional bandwidth of 100 GB/s to "
              "other nodes\"",
              facts=Facts(("quad GH200",), "4 x Slingshot 11, 200 Gb/s each", DEF_NETWORK,
                          "one direction (4 x 200 Gb/s = 100 GB/s; the text calls it bidirectional)", BARE_METAL)),
    Published("fig14.uni.port", "one GH200's network port (one MPI process uses one interface, "
              "Sec. III-F)", 200.0, "Gb/s",
              f"{ALPS_PAPER}, Sec. II: \"Each GH200 is connected to a switch through a 200 Gb/s "
              "ethernet port\"",
              facts=Facts(("quad GH200",), "1 x Slingshot 11, 200 Gb/s", DEF_NETWORK, "one direction", BARE_METAL)),
    # --- end of Figs. 14, 18, 19
    # --- Table I (hardware.py), Fig. 4 (unified_memory.py), Table III (gemm.py), Fig. 17 (llm.py) ---
    # Table I prints four GPU columns: GH200 with 96 GB HBM3, GH200 with 144 GB HBM3e, H100 SXM,
    # H100 PCIe (SMs 132 | 132 | 114: the GH200 variants share one cell).
    *_table1_column("gh200_hbm3", "GH200 (96 GB HBM3)",
                    _alps(definition=DEF_TABLE1, hardware=("GH200 96GB HBM3",)), 132, 96, 4.0),
    *_table1_column("gh200_hbm3e", "GH200 (144 GB HBM3e)",
                    _alps(definition=DEF_TABLE1, hardware=("GH200 144GB HBM3e",)), 132, 144, 4.9),
    *_table1_column("h100_sxm", "H100 SXM", Facts(("H100 SXM",), NA, DEF_TABLE1), 132, 80, 3.35),
    *_table1_column("h100_pcie", "H100 PCIe", Facts(("H100 PCIe",), NA, DEF_TABLE1), 114, 80, 2.0),
    # The text beside Table I, about the GH200's Hopper the paper measured.
    *_printed(f"{ALPS_PAPER}, sec. II-A3", _alps(definition=DEF_TABLE1, hardware=("GH200 96GB HBM3",)),
              ("table1.gh200_hbm3.l2", "GH200 Hopper: L2 cache shared by all SMs", 52, "MB"),
              ("table1.gh200_hbm3.l1_per_sm", "GH200 Hopper: private L1 cache per SM", 256, "KB"),
              ("table1.gh200_hbm3.threads_per_sm", "GH200 Hopper: concurrent threads per SM", 2048, "threads"),
              ("table1.gh200_hbm3.threads", "GH200 Hopper: concurrent threads in all", 270336, "threads")),
    # Fig. 4: the burst length from which managed memory beats system-allocated memory.
    Published("fig4.managed_faster.iterations",
              "back-to-back Hopper iterations from which managed memory's runtime is faster than "
              "system-allocated memory's", 128, "iterations", f"{ALPS_PAPER}, sec. II-C, text on Fig. 4",
              facts=_alps(definition=DEF_FIG4)),
    # Table III: dense peaks of the H100 SXM the paper holds its GEMM against.
    *(Published(f"table3.{dtype}.tflops", f"H100 SXM {peak}", value, "TFLOP/s", f"{ALPS_PAPER}, Table III",
                Facts(("H100 SXM", "GH200"), NA, gemm_definition(dtype)))
      for dtype, peak, value in (("fp16", "FP16 tensor-core peak", 989), ("tf32", "TF32 tensor-core peak", 494),
                                 ("fp32", "FP32 peak (no tensor core)", 67), ("fp64", "FP64 tensor-core peak", 67))),
    *(Published(f"table3.datasheet.{peak}.tflops", f"H100 SXM {quantity}", value, "TFLOP/s", H100_DATASHEET,
                Facts(("H100 SXM",), NA, definition))
      for peak, quantity, value, definition in (
          ("fp16_sparse", "FP16 tensor core, with sparsity", 1979, "FP16 tensor-core peak with sparsity, TFLOP/s"),
          ("tf32_sparse", "TF32 tensor core, with sparsity", 989, "TF32 tensor-core peak with sparsity, TFLOP/s"),
          ("fp32", "FP32", 67, gemm_definition("fp32")),
          ("fp64_tensor", "FP64 tensor core", 67, gemm_definition("fp64")),
          ("fp64", "FP64 (no tensor core)", 34, "FP64 peak without tensor cores, TFLOP/s"))),
    # Fig. 17's section prints the peak memory of its allocator (small: < 1 MB allocations).
    *_printed(f"{ALPS_PAPER}, sec. IV-B", _alps(definition=DEF_LLM_PAPER),
              ("fig17.llama-2-7b.peak_small", "Llama-2 7B fp16 decode: peak of small (< 1 MB) allocations", 133, "MB"),
              ("fig17.llama-2-7b.peak_large", "Llama-2 7B fp16 decode: peak of large allocations", 27, "GB"),
              ("fig17.llama-2-13b.peak_small", "Llama-2 13B fp16 decode: peak of small (< 1 MB) allocations", 168, "MB"),
              ("fig17.llama-2-13b.peak_large", "Llama-2 13B fp16 decode: peak of large allocations", 52, "GB")),
    # --- end of Table I, Fig. 4, Table III, Fig. 17 ---
    # --- Figs. 5, 7, 9, 10 and Table II: bandwidth of processor x memory, under contention,
    # copies, cudaMemcpy between allocators (analysis/figures/fig07_read_write.py,
    # fig07_contention.py, copies.py). ---
    # The paper prints Fig. 7's ratios in sec. III-C; Figs. 5, 9 and 10 print no number
    # (sec. III-A's 250 and 450 GB/s are theoretical copy peaks, not measurements).
    *(Published(key, quantity, value, "%", f"{PAPER}, sec. III-C (Fig. 7)", _alps("c2c", DEF_BW_PCT, direction))
      for key, quantity, value, direction in (
          ("fig7.hopper.read.local_lpddr.pct", "Hopper read of local LPDDR, % of the path's peak", 93.0, "read"),
          ("fig7.hopper.write.local_lpddr.pct", "Hopper write of local LPDDR, % of the path's peak", 84.0, "write"),
          ("fig7.grace.read.local_hbm.pct", "Grace read of local HBM, % of the path's peak", 53.0, "read"),
          ("fig7.grace.write.local_hbm.pct", "Grace write of local HBM, % of the path's peak", 64.0, "write"))),
    Published("fig7.hopper.any.peer_lpddr.max_pct",
              "Hopper read or write of peer LPDDR (C2C and NVLink), % of the path's peak: at most",
              60.0, "%", f"{PAPER}, sec. III-C (Fig. 7: 'never go above 60%')",
              facts=_alps("nvlink+c2c", DEF_BW_PCT, "read or write")),
    Published("fig7.contention.grace.write.local_hbm.pct",
              "Grace write of local HBM while Hopper reads local LPDDR, % of the path's peak",
              17.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)",
              facts=_alps("c2c", DEF_CONTENTION_PCT, "write")),
    Published("fig7.contention.hopper.write.local_hbm.pct",
              "Hopper write of local HBM while Grace reads it, % of the path's peak",
              65.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)",
              facts=_alps("local", DEF_CONTENTION_PCT, "write")),
    Published("fig7.contention.sum.write.local_hbm.gbps",
              "Hopper write of local HBM + Grace reading it at once, summed",
              2682.8, "GB/s", f"{PAPER}, sec. III-C (Fig. 7, with noise: 'Summing the bandwidth of both PUs')",
              facts=_alps("local", DEF_CONTENTION_SUM_PAPER, "write")),
    Published("fig7.contention.sum.write.local_hbm.pct",
              "Hopper write of local HBM + Grace reading it at once, summed, % of the HBM's peak",
              67.0, "%", f"{PAPER}, sec. III-C (Fig. 7, with noise)",
              facts=_alps("local", DEF_CONTENTION_SUM_PAPER, "write")),
    # The dual GH200 workstation's 16 paths (its TL;DR table). Gx = GPU x (H), Lx = the
    # LPDDR of Grace x, the GPU's host node; copies are NVBandwidth's copy-engine memcpy
    # of host buffers bound with numactl (pinned, cudaMallocHost), the rest STREAM,
    # BabelStream or a staged copy (kept for the record: not a bw or cudaMemcpy quantity).
    *_dual_gh200(Facts(DUAL_HBM, "local", "BabelStream Triad", NA, BARE_METAL),
                 ("dual_gh200.h0_h0.triad", "GPU0 local HBM, BabelStream Triad", 3728.0, "H0 -> H0"),
                 ("dual_gh200.h1_h1.triad", "GPU1 local HBM, BabelStream Triad", 3724.0, "H1 -> H1")),
    *_dual_gh200(Facts(DUAL_LPDDR, "local", "STREAM Triad at the best thread count", NA, BARE_METAL),
                 ("dual_gh200.l0_l0.stream_triad", "Grace0 local LPDDR, STREAM Triad at the best thread count",
                  348.0, "L0 -> L0"),
                 ("dual_gh200.l1_l1.stream_triad", "Grace1 local LPDDR, STREAM Triad at the best thread count",
                  348.0, "L1 -> L1")),
    *_dual_gh200(Facts(DUAL_C2C, "c2c", memcpy_definition("pinned", "device"), "host to device", BARE_METAL),
                 ("dual_gh200.l0_h0.h2d",
                  "cudaMemcpy pinned local LPDDR -> device memory (GPU0 from Grace0's LPDDR)",
                  377.0, "L0 -> H0, local C2C, H2D copy"),
                 ("dual_gh200.l1_h1.h2d",
                  "cudaMemcpy pinned local LPDDR -> device memory (GPU1 from Grace1's LPDDR)",
                  380.0, "L1 -> H1, local C2C, H2D copy")),
    *_dual_gh200(Facts(DUAL_C2C, "c2c", memcpy_definition("device", "pinned"), "device to host", BARE_METAL),
                 ("dual_gh200.h0_l0.d2h",
                  "cudaMemcpy device memory -> pinned local LPDDR (GPU0 to Grace0's LPDDR)",
                  297.0, "H0 -> L0, local C2C, D2H copy"),
                 ("dual_gh200.h1_l1.d2h",
                  "cudaMemcpy device memory -> pinned local LPDDR (GPU1 to Grace1's LPDDR)",
                  298.0, "H1 -> L1, local C2C, D2H copy")),
    *_dual_gh200(Facts(DUAL_ACROSS, "c2c+interconnect", memcpy_definition("pinned", "device"), "host to device",
                       BARE_METAL),
                 ("dual_gh200.l0_h1.h2d",
                  "cudaMemcpy pinned peer LPDDR -> device memory (GPU1 from Grace0's LPDDR)",
                  133.0, "L0 -> H1, remote socket"),
                 ("dual_gh200.l1_h0.h2d",
                  "cudaMemcpy pinned peer LPDDR -> device memory (GPU0 from Grace1's LPDDR)",
                  133.0, "L1 -> H0, remote socket")),
    *_dual_gh200(Facts(DUAL_ACROSS, "c2c+interconnect", memcpy_definition("device", "pinned"), "device to host",
                       BARE_METAL),
                 ("dual_gh200.h0_l1.d2h",
                  "cudaMemcpy device memory -> pinned peer LPDDR (GPU0 to Grace1's LPDDR)",
                  132.0, "H0 -> L1, remote socket"),
                 ("dual_gh200.h1_l0.d2h",
                  "cudaMemcpy device memory -> pinned peer LPDDR (GPU1 to Grace0's LPDDR)",
                  133.0, "H1 -> L0, remote socket")),
    *_dual_gh200(Facts(DUAL_ACROSS, "interconnect", "STREAM with the other Grace's cores", NA, BARE_METAL),
                 ("dual_gh200.l0_l1.stream", "Grace1's cores on Grace0's LPDDR, STREAM (inter-Grace)",
                  119.0, "L0 -> L1"),
                 ("dual_gh200.l1_l0.stream", "Grace0's cores on Grace1's LPDDR, STREAM (inter-Grace)",
                  112.0, "L1 -> L0")),
    *_dual_gh200(Facts(DUAL_ACROSS, "c2c+interconnect", "sustained copy staged through host memory",
                       "one direction", BARE_METAL),
                 ("dual_gh200.h0_h1.staged", "GPU0 HBM -> GPU1 HBM, sustained copy staged through host memory",
                  58.0, "H0 -> H1"),
                 ("dual_gh200.h1_h0.staged", "GPU1 HBM -> GPU0 HBM, sustained copy staged through host memory",
                  57.0, "H1 -> H0")),
    # DataCrunch's Table 1: cudaMemcpyAsync of 500 MiB host -> device; the article does not
    # name the host allocator (compared with pinned: an asynchronous copy needs pinned
    # memory, and the H200 row is beyond what pageable copies reach over PCIe). The
    # round trip adds a device -> host copy; its rate's definition is not given (record only).
    Published("datacrunch.gh200.h2d", "cudaMemcpyAsync local LPDDR -> device memory, 500 MiB (GH200)",
              135.0, "GiB/s", f"{DATACRUNCH}, Table 1 (GH200, Host->Device)",
              facts=Facts(("GH200",), "c2c", memcpy_definition(NOT_NAMED, "device"), "host to device")),
    Published("datacrunch.gh200.round_trip", "cudaMemcpyAsync host -> device -> host, 500 MiB (GH200)",
              65.0, "GiB/s", f"{DATACRUNCH}, Table 1 (GH200, Round-trip)",
              facts=Facts(("GH200",), "c2c", "host -> device -> host round trip, rate not defined", NA)),
    Published("datacrunch.h200.h2d", "cudaMemcpyAsync local DDR -> device memory, 500 MiB (x86 + H200)",
              57.0, "GiB/s", f"{DATACRUNCH}, Table 1 (H200, Host->Device)",
              facts=Facts(("H200",), UNSTATED, memcpy_definition(NOT_NAMED, "device"), "host to device")),
    Published("datacrunch.h200.round_trip", "cudaMemcpyAsync host -> device -> host, 500 MiB (x86 + H200)",
              41.0, "GiB/s", f"{DATACRUNCH}, Table 1 (H200, Round-trip)",
              facts=Facts(("H200",), UNSTATED, "host -> device -> host round trip, rate not defined", NA)),
    # The throughput article: an NVIDIA A10 on PCIe Gen4 x16 of a two-socket x86 server.
    Published("cpu_gpu_article.a10.h2d.nvbandwidth_ce", "copy-engine memcpy pinned local DDR -> device memory "
              "(nvbandwidth host_to_device_memcpy_ce, x86 + A10 PCIe Gen4)",
              25.17, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (nvbandwidth SUM host_to_device_memcpy_ce)",
              facts=Facts(("A10",), "pcie gen4 x16", memcpy_definition("pinned", "device"), "host to device",
                          BARE_METAL)),
    Published("cpu_gpu_article.a10.h2d.nvbandwidth_sm", "SM-copy memcpy pinned local DDR -> device memory "
              "(nvbandwidth host_to_device_memcpy_sm, x86 + A10 PCIe Gen4)",
              25.25, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (nvbandwidth SUM host_to_device_memcpy_sm)",
              facts=Facts(("A10",), "pcie gen4 x16", "SM-copy kernel of pinned memory into device memory",
                          "host to device", BARE_METAL)),
    Published("cpu_gpu_article.a10.h2d.local", "cudaMemcpyAsync pinned local DDR -> device memory "
              "(Bandwidth_Check, x86 + A10 PCIe Gen4)",
              25.149124, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (first of 10 printed runs)",
              facts=Facts(("A10",), "pcie gen4 x16", memcpy_definition("pinned", "device"), "host to device",
                          BARE_METAL)),
    Published("cpu_gpu_article.a10.h2d.remote", "cudaMemcpyAsync pinned peer DDR (other socket) -> device "
              "memory (Bandwidth_Check, x86 + A10 PCIe Gen4)",
              25.131380, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Measuring Remote Memory Throughput' (first of 10 printed runs)",
              facts=Facts(("A10",), "pcie gen4 x16+interconnect", memcpy_definition("pinned", "device"),
                          "host to device", BARE_METAL)),
    Published("cpu_gpu_article.x86.cpu.read.local_ddr", "CPU socket read of local DDR, all cores (Intel MLC, '~')",
              300.0, "GB/s", f"{THROUGHPUT_ARTICLE}, 'Running the Benchmark' (sanity checks: 'DRAM per socket is ~300GB/s')",
              facts=Facts(("x86 socket of 8 x DDR5-4800, CPU model not named",), "local", DEF_SOCKET_READ_MLC,
                          UNSTATED, BARE_METAL)),
    # --- end of Figs. 5, 7, 9, 10 and Table II ---
)


def of(prefix: str) -> list[Published]:
    """The published values whose key starts with ``prefix``, in the order above."""
    return [value for value in VALUES if value.key.startswith(prefix)]
