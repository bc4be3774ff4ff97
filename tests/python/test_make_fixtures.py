"""The committed topology snapshots (tests/fixtures/*) are exactly what make_fixtures.py
writes: a hand edit of a fixture, or a change of the script not rerun, fails here.
h100_loan_saved is a snapshot saved on a real node, not generated: it is not compared."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from tests.fixtures import make_fixtures as MAKE  # noqa: N812  (a module of the repository root)

FIXTURES = REPO / "tests" / "fixtures"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fixture", MAKE.fixtures(), ids=lambda f: f.name)
def test_committed_fixture_equals_the_scripts_output(fixture, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MAKE, "HERE", tmp_path)  # write_fixture writes under HERE
    MAKE.write_fixture(fixture)
    made, committed = _files(tmp_path / fixture.name), _files(FIXTURES / fixture.name)
    assert made, "the script wrote nothing"
    assert sorted(made) == sorted(committed)
    assert [name for name in made if made[name] != committed[name]] == []


def test_every_generated_fixture_is_committed() -> None:
    generated = {f.name for f in MAKE.fixtures()}
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert generated <= folders and folders - generated == {"h100_loan_saved"}
