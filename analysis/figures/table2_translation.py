"""Table II's GPU translation and page size of each allocator (table2_allocators.py) on
each node of the runs: what the runs record (the system page size, root attribute
``page_size``; the transparent huge page mode, ``thp_enabled``; the share of a buffer on
huge pages, ``/chase/cases`` ``huge_page_fraction``), what the node reports (the
topology's GPU facts from the CUDA runtime: ``host_page_tables`` = ATS,
``pageable_access`` without it = HMM, ``concurrent_managed``) and, where nothing of the
runs says it, the documented value marked ``DOCUMENTED`` with its source. Nothing here is
timed: a documented value is never shown as measured."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..render.items import Context
from ..results.kinds import ALLOC_CLASS, ALLOCATORS

DOCUMENTED = "†"
PAPER_TABLE = "Fusco et al. (alps-gh200-data-movement-paper.txt), Table II"
CUDA_GUIDE = ("CUDA C++ Programming Guide, sec. 2.4 'Unified and System Memory' and 4.1 'Unified Memory' "
              "(ATS: one page table for CPU and GPU, hardware coherence; HMM: the GPU's own page table kept "
              "in step by the driver, software coherence), "
              "https://docs.nvidia.com/cuda/cuda-programming-guide/02-basics/understanding-memory.html")
PINNED_DOC = ("CUDA runtime and driver API, cudaMallocHost / cuMemAllocHost: page-locked host memory the "
              "device reaches directly through its own mapping (unified addressing); 'on systems where "
              "pageable memory access uses host page tables, cuMemAllocHost may not page-lock' it")
UVM_DOC = ("NVIDIA open-gpu-kernel-modules, kernel-open/nvidia-uvm/uvm_va_block_types.h (UVM_VA_BLOCK_SIZE "
           "2 MiB: managed memory is tracked, mapped on the GPU and migrated within 2 MiB blocks)")
SOURCES = {"paper": PAPER_TABLE, "guide": CUDA_GUIDE, "pinned": PINNED_DOC, "uvm": UVM_DOC}

# Allocators whose buffers are the process's anonymous pages, which /proc/self/smaps
# counts (AnonHugePages): the only ones a chase case's huge_page_fraction measures. They
# are the pages the host maps itself (kinds.def's api: mmap, numa_alloc_onnode, then
# registered or not); the CUDA runtime's allocations are the driver's mappings.
ANONYMOUS = tuple(name for name, row in ALLOCATORS.items() if not row["api"].startswith("cuda"))


def size_text(size: float) -> str:
    """``4 KiB``, ``64 KiB``, ``2 MiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{int(size // scale)} {unit}"
    return f"{int(size)} B"


def _thp_mode(text: str) -> str:
    """The selected mode of ``thp_enabled`` (``always [madvise] never`` -> ``madvise``)."""
    found = re.search(r"\[(\w+)\]", text or "")
    return found.group(1) if found else ""


def recorded(ctx: Context, host: str) -> dict[str, list[str]]:
    """What the runs of ``host`` record about pages: ``page_size`` (distinct values, as
    text) and ``thp`` (the selected THP modes)."""
    runs = [r for r in ctx.runs.runs if r.node == host]
    sizes = sorted({int(r.attrs.get("page_size") or 0) for r in runs} - {0})
    modes = sorted({_thp_mode(str(r.attrs.get("thp_enabled") or "")) for r in runs} - {""})
    return {"page_size": [size_text(s) for s in sizes], "thp": modes}


def huge_share(ctx: Context, host: str, alloc: str) -> str:
    """``measured: 0% on huge pages (chase, 20 buffers)``, or '' where no chase case of the
    allocator on the host recorded its share."""
    chase = ctx.table("chase/cases")
    if alloc not in ANONYMOUS or chase.empty or "huge_page_fraction" not in chase:
        return ""
    mine = chase[(chase["host"] == host) & (chase["alloc"] == alloc) & (chase["status"] == "ok")]
    shares = pd.to_numeric(mine["huge_page_fraction"], errors="coerce").dropna() if not mine.empty else mine
    if len(shares) == 0:
        return ""
    low, high = 100 * float(shares.min()), 100 * float(shares.max())
    share = f"{low:.0f}%" if math.isclose(low, high, abs_tol=0.5) else f"{low:.0f}-{high:.0f}%"
    return f"measured: {share} of the buffer on huge pages (chase, {len(shares)} buffers)"


def gpu_facts(topology: Mapping[str, Any]) -> list[tuple[str, bool, bool, bool]]:
    """(name, host_page_tables, pageable_access, concurrent_managed) of each GPU."""
    return [(str(p["name"]), bool(p.get("host_page_tables")), bool(p.get("pageable_access")),
             bool(p.get("concurrent_managed"))) for p in topology.get("processors", []) if p.get("kind") == "gpu"]


def _translation(alloc: str, ats: bool, hmm: bool, concurrent: bool) -> str:
    kind = ALLOC_CLASS.get(alloc)
    if kind == "pageable":
        if ats:
            return "ATS: the CPU's page table (node reports host_page_tables)"
        if hmm:
            return ("HMM: the GPU's page table, mirrored from the CPU's (node reports pageable_access, "
                    "no host page tables)")
        return "none: the GPU cannot reach pageable memory (node reports no pageable_access)"
    if kind == "pagelocked":
        return (f"ATS {DOCUMENTED} [paper]" if ats else
                f"GPU-MMU: the GPU's page table maps the pinned host pages {DOCUMENTED} [pinned]")
    if kind == "managed":
        if ats:
            return f"ATS in host memory, GPU-MMU in HBM {DOCUMENTED} [paper]"
        return ("GPU-MMU, pages migrate on the GPU's faults (node reports concurrent_managed) " if concurrent
                else "GPU-MMU, pages migrate to the GPU at launch (no concurrent_managed) ") + f"{DOCUMENTED} [uvm]"
    if kind == "device":
        return f"GPU-MMU: the GPU's page table {DOCUMENTED} [paper]"
    return ""


def translation(topology: Mapping[str, Any], alloc: str) -> str:
    """How the node's GPUs translate addresses of ``alloc`` memory: what the node reports,
    else the documented value, marked, with the key of its source in brackets."""
    facts = gpu_facts(topology)
    if not facts:
        return "no GPU on the node"
    texts = {name: _translation(alloc, ats, hmm, concurrent) for name, ats, hmm, concurrent in facts}
    if len(set(texts.values())) == 1:
        return next(iter(texts.values()))
    return "; ".join(f"{name}: {text}" for name, text in texts.items())


def page_size(topology: Mapping[str, Any], alloc: str, pages: Mapping[str, Sequence[str]], huge: str) -> str:
    """The page size of ``alloc`` memory on the node: the system page the runs record for
    host pages (with the THP mode and the measured huge-page share), documented values
    (marked) for the GPU's own pages."""
    system = " or ".join(pages.get("page_size", [])) or "system page (not recorded by these runs)"
    recorded_size = f"{system} (recorded: page_size)" if pages.get("page_size") else system
    thp = pages.get("thp", [])
    kind = ALLOC_CLASS.get(alloc)
    if kind == "pageable":
        text = recorded_size + (f", THP {'/'.join(thp)}" if thp else "")
        return f"{text}; {huge}" if huge else text
    if kind == "pagelocked":
        text = f"{recorded_size}, the host's pages"
        return f"{text}; {huge}" if huge else text
    ats = any(f[1] for f in gpu_facts(topology))
    if kind == "managed":
        device = f"2 MB in HBM {DOCUMENTED} [paper]" if ats else f"GPU mappings within 2 MiB blocks {DOCUMENTED} [uvm]"
        text = f"{recorded_size} in host memory; {device}"
        return f"{text}; {huge}" if huge else text
    if kind == "device":
        return f"2 MB {DOCUMENTED} [paper]"
    return ""


def columns(ctx: Context, host: str, topology: Mapping[str, Any], alloc: str) -> dict[str, str]:
    """Table II's GPU translation and page size of one allocator on one node (what the
    paper prints beside them is table2_allocators.PAPER_TABLE_II)."""
    pages = recorded(ctx, host)
    return {"GPU translation (this node)": translation(topology, alloc),
            "page size (this node)": page_size(topology, alloc, pages, huge_share(ctx, host, alloc))}


def notes() -> list[str]:
    """The caption lines: what each kind of value is, and the documented sources."""
    return [
        "GPU translation and page size: 'paper' is what Table II prints for the GH200. 'This node': "
        "'recorded' is a root attribute of the runs (page_size: sysconf(_SC_PAGESIZE); THP: "
        "/sys/kernel/mm/transparent_hugepage/enabled), 'measured' the share of a buffer on huge pages "
        "after a chase case (/proc/self/smaps), 'node reports' a GPU fact of the topology (the CUDA "
        "runtime's cudaDevAttrPageableMemoryAccessUsesHostPageTables = ATS, cudaDevAttrPageableMemoryAccess "
        f"= ATS or HMM, cudaDevAttrConcurrentManagedAccess). {DOCUMENTED} documented, not measured by these "
        "runs; the source is named in brackets: "
        + "; ".join(f"[{key}] {text}" for key, text in SOURCES.items()) + ".",
        "The paper's 2 MB GPU page is documented for the GH200's Hopper; on another GPU it is "
        "carried over, not measured.",
    ]
