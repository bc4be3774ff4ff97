"""`python -m tests.fleetsim`'s numbers and date are checked before anything is planned
(issue 22): an absurd --nodes once planned for hours, a negative --seed ended in numpy's
traceback and --night 2026-02-30 was written into every file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, says", [
    (["--nodes", str(2**63)], "--nodes 9223372036854775808 is out of range; valid: 1 to 1,000,000"),
    (["--nodes", "1000001"], "--nodes 1000001 is out of range"),
    (["--nodes", "0"], "--nodes 0 is out of range"),
    (["--nodes", "2", "--seed", "-1"], "--seed -1 is negative; valid: an integer >= 0"),
    (["--nodes", "2", "--night", "2026-02-30"], "--night '2026-02-30' is not a calendar date"),
    (["--nodes", "2", "--night", "2026-2-3"], "--night '2026-2-3' is not a calendar date"),
    (["--nodes", "2", "--night", "yesterday"], "valid: YYYY-MM-DD"),
])
def test_bad_simulate_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    out = subprocess.run([sys.executable, "-m", "tests.fleetsim", *args, "-o", str(tmp_path / "sim")],
                         cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [out.stderr.strip()] and says in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "sim").exists()


def test_a_leap_day_and_the_largest_fleet_are_valid() -> None:
    from tests.fleetsim.__main__ import check_simulate_args
    check_simulate_args(1_000_000, 0, "2028-02-29")
