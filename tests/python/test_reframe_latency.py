"""ReFrame latency and scale-out checks: their performance variables from real summary
lines (H100 and two H200, 2026-11-22), their references, and where they are listed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from test_reframe import listed

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "reframe_checks"))

import latency  # noqa: E402
import mempath_summary  # noqa: E402
import references  # noqa: E402
import scaleout  # noqa: E402

CHASE_LINES = [
    'pu=gpu0 cpu=-1 mem=gpu0 alloc=device pattern=random size=33554432 line=64 locality=33554432 huge=0 status=ok median_ns=250.95 min_ns=239.96 median_cycles=496.8',
    'pu=gpu0 cpu=-1 mem=gpu0 alloc=device pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=347.04 min_ns=346.44 median_cycles=687.1',
    'pu=cpu0 cpu=0 mem=numa0 alloc=numa pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=ok median_ns=198.87 min_ns=193.61',
    'pu=gpu0 cpu=-1 mem=numa0 alloc=numa pattern=random size=1073741824 line=64 locality=1073741824 huge=0 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
PINGPONG_LINES = [
    'a=cpu0 b=gpu0 a_cpu=0 b_cpu=-1 mem=numa0 alloc=pinned status=ok median_ns=3039.3 mean_ns=3114.6 p99_ns=4080.4 round_trips=10000',
    'a=cpu0 b=cpu0 a_cpu=0 b_cpu=1 mem=gpu0 alloc=device status=skipped reason="cudaMalloc memory is not mapped for CPU access"',
    'a=gpu0 b=gpu0 a_cpu=-1 b_cpu=-1 mem=numa0 alloc=pinned status=failed reason="timed out"',
]
NCCL_LINES = [
    'coll=allreduce placement=device ranks=2 nodes=1 size=536870912 status=ok time_us=1697.03 algbw_GBps=316.36 busbw_GBps=316.36',
    'coll=allreduce placement=device ranks=2 nodes=1 size=1073741824 status=ok time_us=3249.55 algbw_GBps=330.43 busbw_GBps=330.43',
    'coll=allgather placement=host ranks=2 nodes=1 size=1073741824 status=ok time_us=23810.66 algbw_GBps=45.10 busbw_GBps=22.55',
]


def fields(lines: list[str]) -> list[dict[str, str]]:
    return [mempath_summary.parse_fields(line) for line in lines]


def test_chase_variable_per_path_at_the_largest_size() -> None:
    values = latency.MempathChase.perf_values(latency.MempathChase, fields(CHASE_LINES))
    assert values == {"latency_ns_gpu0_gpu0": (347.04, "ns"), "latency_ns_cpu0_numa0": (198.87, "ns")}


def test_sweep_variables_name_allocator_and_pattern() -> None:
    values = latency.MempathChaseSweep.perf_values(latency.MempathChaseSweep, fields(CHASE_LINES))
    assert values["latency_ns_gpu0_gpu0_device_random"] == (347.04, "ns")


def test_pingpong_variables_skip_what_did_not_run() -> None:
    values = latency.MempathPingPong.perf_values(latency.MempathPingPong, fields(PINGPONG_LINES))
    assert values == {"rtt_ns_cpu0_gpu0_numa0_pinned": (3039.3, "ns")}


def test_latency_references_are_upper_bounds_on_alps_only() -> None:
    refs = references.resolve_latency(["latency_ns_gpu0_gpu0", "latency_ns_cpu1_numa1", "latency_ns_cpu0_numa12"])
    assert set(refs) == {"alps:gh200"}
    ref = refs["alps:gh200"]["latency_ns_gpu0_gpu0"]
    assert ref[0] == 344 and ref[1] is None and ref[2] > 0 and ref[3] == "ns"
    assert refs["alps:gh200"]["latency_ns_cpu1_numa1"][0] == 170
    assert "latency_ns_cpu0_numa12" not in refs["alps:gh200"]  # remote HBM: no published seed
    assert references.resolve_latency(["latency_ns_gpu0_gpu0"].copy()) and not references.resolve_latency(["x"])


def test_nccl_variables_at_the_largest_size() -> None:
    values = scaleout.largest_ok(fields(NCCL_LINES), ("coll", "placement"), "busbw_GBps")
    assert values == {"allreduce_device": 330.43, "allgather_host": 22.55}


def test_nccl_tests_reference_for_two_alps_nodes() -> None:
    assert references.resolve_nccl(2, 4) == {"alps:gh200": {"busbw": (150.0, -0.2, None, "GB/s")}}
    assert references.resolve_nccl(1, 2) == {}


@pytest.mark.parametrize("text,busbw", [(
    "  1073741824     268435456     float     sum      -1   3282.55  327.11  327.11       0   3268.95  328.47  328.47       0\n",
    327.11)])
def test_nccl_tests_row_pattern_reads_out_of_place_busbw(text: str, busbw: float) -> None:
    import re
    m = re.search(scaleout.NCCL_TESTS_ROW, text, re.MULTILINE)
    assert m and int(m[1]) == 1 << 30 and float(m[2]) == busbw


def test_where_the_checks_are_listed() -> None:
    alps = set(listed("alps.py", "--system", "alps:gh200"))
    assert {"MempathChase", "MempathChaseSweep", "MempathPingPong", "MempathPingPongFull"} <= alps
    ci = set(listed("ci.py", "--system", "ci"))
    assert {"MempathChase", "MempathInventory"} <= ci and "MempathPingPong" not in ci
    assert any(name.startswith("MempathMpiBandwidth") for name in ci)
    assert not {"MempathNccl", "NcclTestsAllReduce"} & ci  # no GPUs on the CI nodes
