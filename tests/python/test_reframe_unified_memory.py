"""ReFrame checks of `mempath um` and `mempath allocmatrix`: listed where GPUs are, and
their performance variables from real summary lines (H100, 2026-11-22)."""
from __future__ import annotations

import sys
from pathlib import Path

from test_reframe import listed

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "reframe_checks"))

import mempath_summary  # noqa: E402
import unified_memory  # noqa: E402

UM_LINES = [
    'exp=inplace alloc=managed gpu=gpu0 mem=numa0 size=268435456 status=ok first_GBps=13.51 later_GBps=2539.91 placement=unknown',
    'exp=evict alloc=pinned gpu=gpu0 mem=numa0 size=268435456 status=ok cold_GBps=50.543 warm_GBps=50.697 evicted_GBps=50.244',
    'exp=interleave alloc=managed gpu=gpu0 mem=numa0 size=268435456 status=ok gpu_iter_us_n1=39097.6 gpu_iter_us_n256=235.7',
    'exp=evict alloc=system gpu=gpu0 mem=numa0 size=268435456 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
MATRIX_LINES = [
    'src_alloc=pinned src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=ok median_GBps=54.93 min_GBps=54.76 max_GBps=55.12 reps=10',
    'src_alloc=system src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=failed reason="x"',
]


def summary(bench: str, lines: list[str]) -> list[mempath_summary.SummaryLine]:
    return mempath_summary.parse_lines(f'MEMPATH {bench} {line}' for line in lines)


def test_um_variables() -> None:
    values = unified_memory.MempathUnifiedMemory.metric.values(summary('um', UM_LINES))
    assert values["inplace_managed_first_GBps"] == (13.51, "GB/s")
    assert values["evict_pinned_evicted_GBps"] == (50.244, "GB/s")
    assert values["interleave_managed_gpu_iter_us_n256"] == (235.7, "us")
    assert not any(k.startswith("evict_system") for k in values)  # skipped: no variable


def test_allocmatrix_variables() -> None:
    values = unified_memory.MempathAllocatorMatrix.metric.values(summary('allocmatrix', MATRIX_LINES))
    assert values == {"pinned_to_device": (54.93, "GB/s")}


def test_listed_on_gpu_partitions_only() -> None:
    alps = listed("alps.py", "--system", "daint:normal")
    assert {"MempathUnifiedMemory", "MempathAllocatorMatrix"} <= set(alps)
    assert not {"MempathUnifiedMemory", "MempathAllocatorMatrix"} & set(listed("ci.py"))
