"""ReFrame checks of `mempath um` and `mempath allocmatrix`: listed where GPUs are, and
their performance variables from real summary lines (H100, 2026-11-22) and, for the
allocator matrix (one variable per pair of allocator classes, issue 13), from the plan of
a quad GH200."""
from __future__ import annotations

from conftest import planned_summary_lines
from test_reframe import QUAD_GH200, listed

import mempath_summary
import unified_memory

UM_LINES = [
    'exp=inplace alloc=managed gpu=gpu0 mem=numa0 size=268435456 status=ok first_GBps=13.51 later_GBps=2539.91 placement=unknown',
    'exp=evict alloc=pinned gpu=gpu0 mem=numa0 size=268435456 status=ok cold_GBps=50.543 warm_GBps=50.697 evicted_GBps=50.244',
    'exp=interleave alloc=managed gpu=gpu0 mem=numa0 size=268435456 status=ok gpu_iter_us_n1=39097.6 gpu_iter_us_n256=235.7',
    'exp=evict alloc=system gpu=gpu0 mem=numa0 size=268435456 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
MATRIX_LINES = [
    'src_alloc=pinned src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=ok median_GBps=54.93 min_GBps=54.76 max_GBps=55.12 reps=10',
    'src_alloc=registered src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=ok median_GBps=51.20 min_GBps=51.00 max_GBps=51.40 reps=10',
    'src_alloc=system src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=failed reason="x"',
    'src_alloc=numa src_mem=numa0 dst_alloc=device dst_mem=gpu0 size=268435456 status=ok median_GBps=12.40 min_GBps=12.10 max_GBps=12.60 reps=10',
    'src_alloc=device src_mem=gpu0 dst_alloc=registered dst_mem=numa0 size=268435456 status=ok median_GBps=53.10 min_GBps=53.00 max_GBps=53.20 reps=10',
    'src_alloc=managed src_mem=numa0 dst_alloc=managed dst_mem=numa0 size=268435456 status=skipped reason="y"',
]
#: What a copy engine sees of an allocator (mempath_summary.ALLOC_CLASS).
ALLOC_CLASSES = ("pageable", "pagelocked", "managed", "device")


def summary(bench: str, lines: list[str]) -> list[mempath_summary.SummaryLine]:
    return mempath_summary.parse_lines(f'MEMPATH {bench} {line}' for line in lines)


def test_um_variables() -> None:
    values = unified_memory.MempathUnifiedMemory.metric.values(summary('um', UM_LINES))
    assert values["inplace_managed_first_GBps"] == (13.51, "GB/s")
    assert values["evict_pinned_evicted_GBps"] == (50.244, "GB/s")
    assert values["interleave_managed_gpu_iter_us_n256"] == (235.7, "us")
    assert not any(k.startswith("evict_system") for k in values)  # skipped: no variable


def test_allocmatrix_variables_per_pair_of_allocator_classes() -> None:
    """pinned and registered are one class (the slower, 51.20), numa is `pageable` (the
    failed system copy gives nothing); a skipped pair no class."""
    values = unified_memory.MempathAllocatorMatrix.metric.values(summary('allocmatrix', MATRIX_LINES))
    assert values == {"pagelocked_to_device_min": (51.20, "GB/s"),
                      "pageable_to_device_min": (12.40, "GB/s"),
                      "device_to_pagelocked_min": (53.10, "GB/s")}


def test_a_quad_gh200_allocator_matrix_reports_its_16_classes(mempath_cpu_bin: Path) -> None:
    """Six allocators each way (36 copies) fall into 4 x 4 classes, each its slowest pair."""
    lines = mempath_summary.parse_lines(planned_summary_lines(mempath_cpu_bin, QUAD_GH200, "allocmatrix"))
    assert len(lines) == 36
    values = unified_memory.MempathAllocatorMatrix.metric.values(lines)
    assert 1 <= len(values) <= mempath_summary.MAX_PERF_VARS
    assert sorted(values) == sorted(f"{src}_to_{dst}_min" for src in ALLOC_CLASSES for dst in ALLOC_CLASSES)
    classes = mempath_summary.ALLOC_CLASS
    for name, (value, unit) in values.items():
        members = [s.number("median_GBps") for s in lines
                   if f'{classes[s["src_alloc"]]}_to_{classes[s["dst_alloc"]]}_min' == name]
        assert (value, unit) == (min(members), "GB/s"), name
    assert len({v for v, _ in values.values()}) > 1       # made-up figures: a real choice


def test_listed_on_gpu_partitions_only() -> None:
    alps = listed("alps.py", "--system", "daint:normal")
    assert {"MempathUnifiedMemory", "MempathAllocatorMatrix"} <= set(alps)
    assert not {"MempathUnifiedMemory", "MempathAllocatorMatrix"} & set(listed("ci.py"))
