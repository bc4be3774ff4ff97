"""A case in words, one function for the report and the fleet (analysis/model/case_words.py,
issue 50): each family's phrasing on a reference node, and the two readers saying a case
alike."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.fleet.table import Topo, component, words
from analysis.model.case_words import case_words
from analysis.results import families
from h5fixtures import topology

GH200 = topology("gh200_quad")
X86 = topology("x86_h100")


# The cases C++ core/case_words is tested against too (tests/cpp/test_case_words.cpp).
CASES = Path(__file__).resolve().parents[1] / "fixtures" / "case_words_cases.txt"


def words_cases() -> list[tuple[str, str, dict[str, object], str]]:
    """The table's cases: topology, family, the row (digits an integer, '' empty), words."""
    out = []
    for line in CASES.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        head, said = line.split(" | ")
        name, family, *cells = head.split()
        row = {k: int(v) if re.fullmatch(r"-?\d+", v) else "" if v == "''" else v
               for k, v in (cell.split("=", 1) for cell in cells)}
        out.append((name, family, row, said))
    return out


@pytest.mark.parametrize(("name", "family", "row", "expected"), words_cases())
def test_each_case_of_the_table_in_words(name, family, row, expected) -> None:
    assert case_words(family, row, topology(name)) == expected


def test_the_table_says_a_case_of_every_family_in_the_columns_of_its_cases() -> None:
    """Every family of families.def is in the table both languages read, and a template
    names only Int and String columns of its cases table (which C++ and Python write alike)."""
    cases = words_cases()
    assert set(families.FAMILIES) <= {family for _, family, _, _ in cases}
    for name, family in families.FAMILIES.items():
        columns = {c.name: c.type for c in families.columns(f"{name}/cases")}
        for field in re.findall(r"{(\w+)}", family.words):
            assert columns.get(field) in ("Int", "String"), (name, field)


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
