"""One placement rule (results.cases.drawn_under, issue #31 item 2): where a buffer is
drawn is asked once, and the report (mark_placement), the paper's bandwidth figures
(Fig. 7, relocated) and its latency figures (Fig. 11, chase_points) get the same answer."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from analysis.figures.latency import chase_points
from analysis.results.cases import (UNKNOWN_PLACEMENTS, drawn_under, mark_placement, one_memory, relocated,
                                    same_memory)
from h5fixtures import topology

GH200 = topology("gh200_single")  # numa0 LPDDR, numa1 the HBM of gpu0
# The rule's cases, the same file tests/cpp/test_allocators.cpp checks C++ drawn_under with.
CASES = Path(__file__).resolve().parents[1] / "fixtures" / "placement_cases.txt"


def placement_cases() -> list[tuple[str, ...]]:
    rows = [line.split() for line in CASES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert rows and all(len(row) == 5 for row in rows), "placement_cases.txt: five columns a line"
    return [tuple("" if field == "''" else field for field in row) for row in rows]


@pytest.mark.parametrize("name, mem, alloc, placement, where", placement_cases())
def test_a_buffer_is_drawn_where_its_pages_were(name: str, mem: str, alloc: str, placement: str, where: str) -> None:
    drawn, why = drawn_under(topology(name), mem, alloc, placement)
    assert drawn == where and bool(why) == (not where)


@pytest.mark.parametrize("name, mem, alloc, placement, where",
                         [c for c in placement_cases() if c[1] != "interleave" and c[3] not in UNKNOWN_PLACEMENTS])
def test_one_memory_reads_a_recorded_placement_as_drawn_under_does(name: str, mem: str, alloc: str,
                                                                   placement: str, where: str) -> None:
    """Table II's reading of where pages were (one_memory) and the drawing rule agree on
    what a recorded placement says (only the rule makes an unknown one the named memory)."""
    one = one_memory(topology(name), placement)
    assert (one is None) == (where == "")
    assert one is None or same_memory(topology(name), one, where)


def test_the_host_of_old_managed_files_names_no_memory() -> None:
    """Files from before managed placement was read from the page tables say ``host`` (the
    last prefetch's side): Table II counts it unknown, not a move to a memory."""
    assert one_memory(GH200, "host") is None and one_memory(GH200, "numa1") == "numa1"
    assert one_memory(GH200, float("nan")) is None and one_memory(GH200, " gpu0 ") == "gpu0"


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_a_placement_pandas_left_missing_is_one_not_recorded(missing: object) -> None:
    assert drawn_under(GH200, "numa0", "system", missing) == ("numa0", "")
    assert drawn_under(GH200, "numa0", "managed", missing)[0] == ""


def test_a_case_97_percent_on_numa0_is_drawn_in_no_figure_and_stands_for_no_path() -> None:
    """The issue's case: Fig. 7 drew it (a 0.9 share), Fig. 11 dropped it."""
    split = "numa0:0.97,numa1:0.03"
    bw = pd.DataFrame([{"host": "n", "op": "read", "pu": "cpu0", "mem": "numa0", "dst_mem": "", "alloc": "system",
                        "status": "ok", "median_GBps": 400.0, "placement": split, "dst_placement": ""}])
    assert relocated(bw, {"n": GH200})[0].empty                            # Fig. 7
    assert not mark_placement(bw, {"n": GH200})["placed"].iloc[0]          # the report
    chase = pd.DataFrame([{"host": "n", "pu": "cpu0", "mem": "numa0", "alloc": "numa", "status": "ok",
                           "pattern": "random", "size_bytes": 1 << 30, "median_ns": 120.0, "placement": split,
                           "huge_pages": 0, "run": "r"}])
    ctx = SimpleNamespace(table=lambda name: chase, topologies={"n": GH200}, runs_of=lambda frame: ["r"])
    points, notes, _ = chase_points(ctx)                                   # Fig. 11
    assert points.empty and "mixed placement" in notes[0]
