"""analysis/results/families.py reads src/core/families.def (tests/cpp/test_families.cpp
checks it reads it as C++ does): every family has its metric, and the required columns
are what the readers ask for."""
from __future__ import annotations

import re
from pathlib import Path

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


def test_a_preset_shares_its_sources_tables_in_one_row(tmp_path: Path) -> None:
    """tlb's tables are chase's (one SHARES row, none of its columns required); a row that
    names a family with no tables above it is refused in one line."""
    for table in ("cases", "samples", "caches"):
        chase, tlb = families.columns(f"chase/{table}"), families.columns(f"tlb/{table}")
        assert tlb == tuple(c._replace(required=False) for c in chase)
    assert families.TABLES.index("tlb/cases") == families.TABLES.index("chase/caches") + 1
    assert 'MEMPATH_COLUMN("tlb/' not in families.FAMILIES_DEF.read_text()
    bad = tmp_path / "families.def"
    bad.write_text('MEMPATH_SHARES("tlb", "chase", 1)\nMEMPATH_COLUMN("chase/cases", "case_id", Int, "", 1, "key", "")\n')
    with pytest.raises(ValueError, match="tlb shares the tables of 'chase', which has none above the row"):
        families.load(bad)


def test_each_familys_words_name_columns_of_its_cases_table() -> None:
    """A FAMILY row's words are a template of its cases columns (model/case_words.py): a
    misspelt column would print "None" in every report."""
    for name, family in families.FAMILIES.items():
        named = set(re.findall(r"\{(\w+)\}", family.words))
        assert named <= {c.name for c in families.columns(f"{name}/cases")}, name
        assert family.words.count("{") == len(re.findall(r"\{\w+\}", family.words)), name
