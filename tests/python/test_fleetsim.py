"""The fleet simulator is a tool of the repository (tests/fleetsim), apart from the product
(issue 41): the analysis never imports it nor reads the repository's tests/, and where the
simulator plans a node's reads it takes the allocator the binary's own plan picks."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from analysis.errors import InputError
from conftest import REPO
from tests.fleetsim import reads
from tests.fleetsim.sim import load_topology, plan

#: Top-level names the product may never import: repository tools and test helpers.
NOT_SHIPPED = {"tests", "conftest", "h5fixtures"}


def test_the_analysis_imports_no_repository_tool_and_reads_no_tests_folder() -> None:
    found = []
    for path in sorted((REPO / "analysis").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            found += [f"{path.relative_to(REPO)}: imports {n}" for n in names if n.split(".")[0] in NOT_SHIPPED]
            if isinstance(node, ast.Constant) and node.value == "tests":  # REPO / "tests" / ...
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: a path into tests/")
    assert found == []


FIXTURES = sorted(p.stem.removeprefix("reads_") for p in (REPO / "tests" / "fleetsim" / "data").glob("reads_*.json"))


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_committed_reads_are_the_binarys_plan(mempath_bin: Path, fixture: str) -> None:
    """`--layout node` takes each read's allocator from the binary's `--from` plan (its
    default, src/core/bw_plan.cpp) and never chooses one itself; the answers committed for
    the saved topologies are what the binary answers now (else: python -m tests.fleetsim.reads)."""
    topology = load_topology(fixture)
    committed = reads.load(fixture, topology)
    assert committed == reads.ask(fixture, topology, str(mempath_bin))
    cases = [c for c in plan(topology, committed).cases if c.family == "bw"]
    assert len(cases) == len(reads.read_paths(topology)) > 0
    assert all(c.columns["alloc"] == committed[f"{c.pu} {c.mem}"] for c in cases)


def test_a_fixture_without_committed_reads_is_one_clear_error(monkeypatch) -> None:
    monkeypatch.delenv("MEMPATH_BIN", raising=False)
    with pytest.raises(InputError, match="no planned reads for fixture 'x86_2s_4gpu'; valid: gh200"):
        reads.load("x86_2s_4gpu", {})
