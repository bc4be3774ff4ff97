"""analysis/results/families.py reads src/core/families.def (tests/cpp/test_families.cpp
checks it reads it as C++ does): every family has its metric, and the required columns
are what the readers ask for."""
from __future__ import annotations

import pytest

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


def test_an_unknown_table_names_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="no table 'bw/case' in families.def; valid: bw/cases, bw/samples"):
        families.columns("bw/case")
