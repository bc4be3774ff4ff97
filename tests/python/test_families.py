"""analysis/results/families.py reads src/core/families.def (tests/cpp/test_families.cpp
checks it reads it as C++ does); until compare, the fleet and the report take their family
facts from it, their own copies must agree with it."""
from __future__ import annotations

import pytest

from analysis.compare.families import FAMILIES as COMPARE
from analysis.fleet.table import FAMILIES as FLEET
from analysis.results import families
from analysis.results.cases import CASE_COLUMNS
from analysis.results.schema import REQUIRED


def test_every_family_has_cases_and_its_metric_table() -> None:
    for name, family in families.FAMILIES.items():
        assert f"{name}/cases" in families.TABLES
        assert family.metric in [c.name for c in families.columns(f"{name}/{family.metric_table}")]


def test_required_columns_are_what_the_readers_ask_for() -> None:
    assert set(families.required("bw/cases")) == set(CASE_COLUMNS)
    assert REQUIRED["um/cases"] == ("case_id", "experiment", "alloc", "gpu", "mem", "size_bytes", "status",
                                    "reason", "verified")
    # Families whose readers need no column (memcpy, atomics, mpi_bw, nccl) are not listed.
    assert set(REQUIRED) == {"bw/cases", "um/cases", "allocmatrix/cases", "chase/cases", "pingpong/cases",
                             "stream/cases", "gemm/cases", "llm/cases"}


def test_compare_and_the_fleet_agree_with_the_table() -> None:
    assert list(COMPARE) == list(families.FAMILIES)
    for name, c in COMPARE.items():
        f = families.FAMILIES[name]
        assert (c.what, c.metric, c.unit, c.higher_is_better, c.table) == \
               (f.what, f.metric, f.unit, f.higher_is_better, f.metric_table)
    assert {n: (f.cases_metric, f.higher_is_better) for n, f in families.FAMILIES.items() if f.cases_metric} == FLEET


def test_an_unknown_table_names_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="no table 'bw/case' in families.def; valid: bw/cases, bw/samples"):
        families.columns("bw/case")
