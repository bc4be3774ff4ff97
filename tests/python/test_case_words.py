"""A case in words, one function for the report and the fleet (analysis/model/case_words.py,
issue 50): each family's phrasing on a reference node, and the two readers saying a case
alike."""
from __future__ import annotations

import pytest

from analysis.fleet.table import Topo, component, words
from analysis.model.case_words import case_words
from analysis.results import families
from h5fixtures import topology

GH200 = topology("gh200_quad")
X86 = topology("x86_h100")


@pytest.mark.parametrize(("family", "row", "expected"), [
    ("bw", {"op": "read", "pu": "gpu0", "mem": "gpu0", "alloc": "device", "via": "local"}, "gpu0 HBM read"),
    ("bw", {"op": "write", "pu": "gpu0", "mem": "numa0", "alloc": "pinned", "via": "c2c"},
     "gpu0 write of numa0 (LPDDR, pinned)"),
    ("bw", {"op": "copy", "pu": "cpu0", "mem": "numa0", "dst_mem": "numa1", "alloc": "numa", "via": "local"},
     "cpu0 copy numa0 (LPDDR) to numa1 (LPDDR)"),
    ("chase", {"pu": "cpu0", "mem": "numa0", "alloc": "numa", "via": "local"}, "cpu0 LPDDR latency"),
    ("chase", {"pu": "gpu0", "mem": "numa4", "alloc": "numa", "via": "local"}, "gpu0 HBM as numa4 latency"),
    ("pingpong", {"a": "cpu0", "b": "gpu0", "mem": "numa0", "alloc": "pinned"}, "ping-pong cpu0-gpu0 (numa0 LPDDR)"),
    # a transfer's usual allocator and engine unsaid (the fleet's preset), the others said
    ("memcpy", {"gpu": 0, "direction": "h2d", "host_numa": 0, "alloc": "pinned", "engine": "ce", "dst_gpu": -1},
     "gpu0 H2D copy (numa0)"),
    ("memcpy", {"gpu": 1, "direction": "d2h", "host_numa": 1, "alloc": "pageable", "engine": "sm"},
     "gpu1 D2H copy (numa1, pageable, sm)"),
    ("memcpy", {"gpu": 0, "direction": "d2d", "host_numa": -1, "alloc": "device", "engine": "ce", "dst_gpu": 2},
     "gpu0 to gpu2 copy"),
    # the families.def words of the others, a missing cell as None (an older file's)
    ("stream", {"pu": "cpu0", "kernel": "triad", "mem": "numa0", "alloc": "numa"}, "cpu0 STREAM triad on numa0 (numa)"),
    ("gemm", {"gpu": 0, "dtype": "fp16", "n": 8192, "a_mem": "numa4"}, "gpu0 GEMM fp16 n=8192 (numa4)"),
    ("atomics", {"pu": "gpu0", "mem": "numa0"}, "gpu0 atomics on numa0 (None)"),
    ("tlb", {"case_id": 3, "pu": "cpu0"}, "tlb case 3"),
])
def test_each_family_in_words(family, row, expected) -> None:
    assert case_words(family, row, GH200) == expected


def test_a_path_elsewhere_names_its_links_where_the_caller_knows_them() -> None:
    row = {"op": "read", "pu": "gpu0", "mem": "numa0", "dst_mem": "", "alloc": "pinned", "via": "pcie"}
    assert case_words("bw", row, X86) == "gpu0 read of numa0 (DDR, pinned)"
    assert case_words("bw", row, X86, "gpu0's PCIe") == "gpu0 read of numa0 (DDR, pinned) over gpu0's PCIe"
    local = {**row, "mem": "gpu0", "alloc": "device", "via": "local"}
    assert case_words("bw", local, X86, "gpu0") == "gpu0 HBM read"  # its own memory: no link


def test_the_fleet_says_a_case_as_the_report_does_with_its_links() -> None:
    """fleet/table.py's words are case_words with the component's links; every family the
    fleet reads is worded by it, no family of families.def falls back but those without words."""
    topo = Topo(GH200)
    for pu, mem, via in (("gpu0", "gpu0", "local"), ("gpu0", "numa0", "c2c"), ("cpu0", "numa1", "interconnect")):
        row = {"op": "read", "pu": pu, "mem": mem, "dst_mem": "", "alloc": "numa", "via": via}
        part = component(topo, pu, mem, via)
        said = words("bw", row, topo, part)
        assert said.startswith(case_words("bw", row, GH200)) and (via == "local") == (" over " not in said)
    for name, family in families.FAMILIES.items():
        fallback = case_words(name, {"case_id": 1, "pu": "cpu0", "mem": "numa0", "alloc": "numa", "via": "local",
                                     "op": "read", "a": "cpu0", "b": "cpu0", "gpu": 0, "direction": "h2d",
                                     "host_numa": 0}, GH200) == f"{name} case 1"
        assert fallback == (not family.words and name not in ("bw", "memcpy", "chase", "pingpong")), name
