"""`python -m analysis compare` and the nightly path (slurm/nightly.sh) on files written
from row dicts: the statistics, what counts as moved, regressed or improved, bad input."""
from __future__ import annotations

import math
import re
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, REPO, analysis_cli
from h5fixtures import case, topology, write_run

from analysis.compare.runs import mann_whitney

RNG = np.random.default_rng(7)


def bw_run(path: Path, medians: dict[str, float], spread: float = 0.002, reps: int = 10,
           status: dict[str, str] | None = None) -> Path:
    """One /bw run: a read case per memory name in `medians`, `reps` samples around each."""
    cases, samples = [], []
    for i, (mem, med) in enumerate(medians.items()):
        st = (status or {}).get(mem, "ok")
        cases.append(case(mem=mem, median_GBps=med, status=st, reason="" if st == "ok" else "timed out"))
        if st == "ok":
            for rep, v in enumerate(med * (1 + spread * RNG.standard_normal(reps))):
                samples.append({**{k: cases[-1].get(k, "") for k in ("op", "pu", "pu_kind", "mem", "dst_mem", "alloc",
                                                                     "dst_alloc", "kernel", "noise")},
                                **{k: cases[-1].get(k, -1) for k in ("threads", "size_bytes", "bytes")},
                                "case_id": i, "rep": rep, "bandwidth_GBps": v, "time_s": 1 / v})
    return write_run(path, cases, samples, topology=topology("gh200_single"))


def compare(*args: str) -> subprocess.CompletedProcess:
    return analysis_cli("compare", *args)


def test_mann_whitney_is_exact_at_small_n() -> None:
    # Separated samples, one side of at most 8: U = 0 and p = 2 / C(n1 + n2, n1), the two
    # arrangements as extreme as this one among all equally likely ones (3 vs 3: 0.1, where
    # the normal approximation would say 0.081).
    for n1, n2 in ((3, 3), (4, 6), (5, 5), (3, 8), (8, 30)):
        u, p = mann_whitney(np.arange(n1, dtype=float), np.arange(n1, n1 + n2, dtype=float))
        assert u == 0 and p == pytest.approx(2 / math.comb(n1 + n2, n1), rel=1e-9), (n1, n2)


def test_mann_whitney_is_tie_and_continuity_corrected_otherwise() -> None:
    # Ties: x = 1,2,2 ; y = 2,3,4: ranks 1, 3, 3 | 3, 5, 6 -> U = 7 - 6 = 1; tie term 3^3-3 = 24.
    u, p = mann_whitney(np.array([1.0, 2, 2]), np.array([2.0, 3, 4]))
    var = 9 / 12 * (7 - 24 / 30)
    assert u == 1 and p == pytest.approx(math.erfc((3.5 - 0.5) / math.sqrt(var) / math.sqrt(2)), rel=1e-12)
    # Both sides over 8: x = 0..9, y = 20..29, U = 0, sigma^2 = 100 * 21 / 12 = 175.
    u, p = mann_whitney(np.arange(10.0), np.arange(20.0, 30.0))
    assert u == 0 and p == pytest.approx(math.erfc((50 - 0.5) / math.sqrt(175) / math.sqrt(2)), rel=1e-12)
    assert mann_whitney(np.full(5, 2.0), np.full(5, 2.0))[1] == 1.0  # all tied: no evidence
    assert mann_whitney(np.full(12, 2.0), np.full(12, 2.0))[1] == 1.0


def test_five_against_five_reaches_alpha_only_when_the_samples_separate(tmp_path: Path) -> None:
    """The exact test: 5 against 5 can reach p < 0.01 (2/252), so the test decides there, not
    the median alone: a 10 % drop with every sample lower moves, one with overlap does not."""
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0}, spread=0.002, reps=5)
    run = bw_run(tmp_path / "run.h5", {"numa0": 405.0}, spread=0.002, reps=5)
    proc = compare(str(base), str(run))
    assert proc.returncode == 1 and "p=7.9e-03" in proc.stderr, proc.stdout + proc.stderr
    import h5py
    with h5py.File(run, "r+") as f:  # one RUN sample above all of BASE: U = 1, p = 4/252 = 0.016
        values = f["bw/samples/bandwidth_GBps"][()]
        values[0] = 495.0
        f["bw/samples/bandwidth_GBps"][...] = values
    proc = compare(str(base), str(run))
    assert proc.returncode == 0 and "1 cases compared, 0 moved" in proc.stdout, proc.stdout + proc.stderr


def test_identical_runs_move_nothing(tmp_path: Path) -> None:
    base = bw_run(tmp_path / "a.h5", {"numa0": 450.0, "numa1": 120.0})
    proc = compare(str(base), str(base))
    assert proc.returncode == 0, proc.stderr
    assert "2 cases compared, 0 moved" in proc.stdout and proc.stderr == ""


def test_a_slower_case_is_the_one_regression(tmp_path: Path) -> None:
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0, "numa1": 120.0})
    run = bw_run(tmp_path / "run.h5", {"numa0": 405.0, "numa1": 120.0})
    proc = compare(str(base), str(run), "--output", str(tmp_path / "cmp"))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("REGRESSION bw ") and "mem=numa0" in lines[0], proc.stderr
    assert "-10.0 %" in lines[0] or "-9." in lines[0] or "-10." in lines[0]
    assert (tmp_path / "cmp" / "compare.csv").read_text().count("regressed") == 1


def test_a_change_inside_the_noise_is_not_flagged(tmp_path: Path) -> None:
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0}, spread=0.08)
    run = bw_run(tmp_path / "run.h5", {"numa0": 430.0}, spread=0.08)
    proc = compare(str(base), str(run))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lower_latency_is_an_improvement(tmp_path: Path) -> None:
    data = DATA / "h100_chase_cpu.h5"
    import h5py
    faster = tmp_path / "faster.h5"
    faster.write_bytes(data.read_bytes())
    with h5py.File(faster, "r+") as f:
        f["chase/samples/ns_per_access"][...] = f["chase/samples/ns_per_access"][()] * 0.8
    proc = compare(str(data), str(faster))
    assert proc.returncode == 0, proc.stderr
    assert "improved" in proc.stdout and "regressed" not in proc.stdout


def test_ok_then_failed_and_missing_cases_are_regressions(tmp_path: Path) -> None:
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0, "numa1": 120.0, "numa4": 330.0})
    run = bw_run(tmp_path / "run.h5", {"numa0": 450.0, "numa1": 120.0}, status={"numa1": "failed"})
    proc = compare(str(base), str(run))
    assert proc.returncode == 1
    text = proc.stderr
    assert "mem=numa1" in text and "was ok, now failed: timed out" in text
    assert "mem=numa4" in text and "absent from RUN" in text


def test_folders_are_compared_and_bad_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "r").mkdir()
    bw_run(tmp_path / "b" / "x.h5", {"numa0": 450.0})
    bw_run(tmp_path / "r" / "x.h5", {"numa0": 450.0})
    assert compare(str(tmp_path / "b"), str(tmp_path / "r")).returncode == 0
    for args in ([str(tmp_path / "none.h5"), str(tmp_path / "r")], [str(tmp_path / "b"), str(tmp_path / "r"), "--alpha", "2"]):
        proc = compare(*args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    proc = compare(str(junk), str(tmp_path / "r"))
    assert proc.returncode == 2 and proc.stderr.startswith("analysis: error: "), proc.stderr


# ---- slurm/nightly.sh with a stand-in ReFrame that drops prepared result files -------------

STUB = """#!/bin/bash
# Stand-in for reframe: copies $NIGHT_SRC into PREFIX/output and exits with $NIGHT_RC.
while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix=$2; shift; done
mkdir -p "$prefix/output/MempathBandwidth"
cp "$NIGHT_SRC" "$prefix/output/MempathBandwidth/bw.h5"
exit "${NIGHT_RC:-0}"
"""


def night(tmp_path: Path, src: Path, rc: int = 0, **more: str) -> subprocess.CompletedProcess:
    stub = tmp_path / "reframe"
    stub.write_text(STUB)
    stub.chmod(0o755)
    db = tmp_path / "nightly.duckdb"  # the baseline's database (issue 22): none yet, a first night
    env = {**os.environ, "MEMPATH_NIGHTLY_DIR": str(tmp_path / "nights"), "MEMPATH_REFRAME": str(stub),
           "MEMPATH_PYTHON": sys.executable, "NIGHT_SRC": str(src), "NIGHT_RC": str(rc),
           "MEMPATH_NIGHTLY_DB": str(db), "MEMPATH_NIGHTLY_FIRST": "0" if db.exists() else "1", **more}
    return subprocess.run(["bash", str(REPO / "slurm" / "nightly.sh")], capture_output=True, text=True, env=env,
                          timeout=300)


def test_nightly_keeps_the_last_good_night(tmp_path: Path) -> None:
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0, "numa1": 120.0})
    slower = bw_run(tmp_path / "slower.h5", {"numa0": 380.0, "numa1": 120.0})
    last = tmp_path / "nights" / "last-good"
    first = night(tmp_path, good)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "first reference" in first.stdout and last.is_symlink()
    assert (last / "report").is_dir()
    reference = os.readlink(last)
    bad = night(tmp_path, slower)
    assert bad.returncode == 1
    assert "REGRESSION bw" in bad.stderr and "mem=numa0" in bad.stderr
    assert os.readlink(last) == reference
    failed = night(tmp_path, good, rc=1)  # ReFrame failed a check: not a new reference
    assert failed.returncode == 1 and os.readlink(last) == reference
    again = night(tmp_path, good)
    assert again.returncode == 0, again.stderr
    assert os.readlink(last) != reference


def test_nightly_keeps_last_good_when_the_report_fails_or_nothing_is_comparable(tmp_path: Path) -> None:
    """Issue #12: a night becomes last-good only when the report succeeded and compare exited
    0 having compared a case; a failed report, all-NaN samples or nothing comparable keep it."""
    import h5py
    good = bw_run(tmp_path / "good.h5", {"numa0": 450.0, "numa1": 120.0})
    last = tmp_path / "nights" / "last-good"
    assert night(tmp_path, good).returncode == 0 and last.is_symlink()
    reference = os.readlink(last)
    no_placement = tmp_path / "noplace.h5"  # compare can use it (placement is an outcome), the report cannot
    no_placement.write_bytes(good.read_bytes())
    with h5py.File(no_placement, "r+") as f:
        del f["bw/cases/placement"]
    nan = tmp_path / "nan.h5"
    nan.write_bytes(good.read_bytes())
    with h5py.File(nan, "r+") as f:
        f["bw/samples/bandwidth_GBps"][...] = np.nan
    bare = write_run(tmp_path / "bare.h5", [case(mem="numa0"), case(mem="numa1")], [],
                     topology=topology("gh200_single"))  # ok cases without samples
    for src, says in ((no_placement, "the report failed"), (nan, "regression"), (bare, "compare exit code 2")):
        proc = night(tmp_path, src)
        assert proc.returncode == 1 and says in proc.stderr, proc.stderr
        assert os.readlink(last) == reference, src


def test_nightly_first_night_must_hold_a_valid_case(tmp_path: Path) -> None:
    """Issue #12: with no last-good yet, a night whose samples are all NaN is no reference."""
    import h5py
    nan = bw_run(tmp_path / "nan.h5", {"numa0": 450.0})
    with h5py.File(nan, "r+") as f:
        f["bw/samples/bandwidth_GBps"][...] = np.inf
    proc = night(tmp_path, nan)
    assert proc.returncode == 1 and not (tmp_path / "nights" / "last-good").exists(), proc.stderr


# ---- issue 22: nothing comparable is exit 2, and what was not compared is said ----------

def _with_samples_of_every_case(path: Path, status: str) -> Path:
    """Two cases, each with 10 samples, all of status ``status`` (a skipped case whose
    file still holds samples: a hostile or damaged file)."""
    rows = [case(mem=m, median_GBps=g) for m, g in (("numa0", 450.0), ("numa1", 120.0))]
    samples = [{"case_id": i, "rep": r, "bandwidth_GBps": row["median_GBps"] * (1 + 0.001 * r), "time_s": 1.0,
                **{k: row.get(k, "") for k in ("op", "pu", "pu_kind", "mem", "alloc", "kernel")}}
               for i, row in enumerate(rows) for r in range(10)]
    for row in rows:
        row.update(status=status, reason="not here" if status != "ok" else "")
    return write_run(path, rows, samples, topology=topology("gh200_single"))


def test_all_skipped_is_nothing_comparable_and_exit_2(tmp_path: Path) -> None:
    """HEAD compared the samples of skipped cases and exited 0."""
    base = _with_samples_of_every_case(tmp_path / "base.h5", "skipped")
    run = _with_samples_of_every_case(tmp_path / "run.h5", "skipped")
    proc = compare(str(base), str(run))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analysis: error: nothing comparable"), proc.stderr
    assert "2 skipped in BASE" in lines[0]
    assert "0 cases compared" in proc.stdout and "2 not compared" in proc.stdout
    assert proc.stdout.count("skipped in BASE (not here), skipped in RUN") == 2, proc.stdout
    ok = _with_samples_of_every_case(tmp_path / "ok.h5", "ok")
    for a, b in ((ok, run), (base, ok)):  # ok on one side only: a regression, or nothing to compare
        proc = compare(str(a), str(b))
        assert proc.returncode == (1 if a == ok else 2), proc.stdout + proc.stderr


def test_an_ok_case_without_samples_is_not_compared_and_said(tmp_path: Path) -> None:
    """HEAD left it out silently: '1 cases compared, 0 moved', exit 0, numa1 unnamed."""
    import h5py
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0, "numa1": 120.0})
    run = tmp_path / "run.h5"
    run.write_bytes(base.read_bytes())
    with h5py.File(run, "r+") as f:  # numa1's samples are gone, the case still says ok
        group = f["bw/samples"]
        keep = group["case_id"][()] == 0
        for name in list(group):
            values = group[name][()][keep]
            del group[name]
            group[name] = values
    proc = compare(str(base), str(run), "--output", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 cases compared, 0 moved, failed or missing, 1 not compared" in proc.stdout, proc.stdout
    assert re.search(r"\| bw \| .*mem=numa1 .*\| ok but no samples in RUN \|", proc.stdout), proc.stdout
    csv = (tmp_path / "out" / "compare.csv").read_text()
    assert "not compared,ok but no samples in RUN" in csv and "mem=numa1" in csv
    both = tmp_path / "both.h5"  # no case has samples on either side: nothing comparable
    both.write_bytes(run.read_bytes())
    with h5py.File(both, "r+") as f:
        del f["bw/samples"]
    proc = compare(str(both), str(both))
    assert proc.returncode == 2 and "nothing comparable" in proc.stderr, proc.stdout + proc.stderr
    assert "2 ok but no samples in BASE and RUN" in proc.stderr, proc.stderr


def test_a_case_that_appeared_or_was_failed_in_base_is_listed(tmp_path: Path) -> None:
    base = bw_run(tmp_path / "base.h5", {"numa0": 450.0, "numa1": 120.0}, status={"numa1": "failed"})
    run = bw_run(tmp_path / "run.h5", {"numa0": 450.0, "numa1": 120.0, "numa4": 330.0})
    proc = compare(str(base), str(run))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"mem=numa1 .*\| failed in BASE \(timed out\), ok in RUN \|", proc.stdout), proc.stdout
    assert re.search(r"mem=numa4 .*\| absent from BASE \(ok in RUN\) \|", proc.stdout), proc.stdout


def test_a_family_compare_does_not_know_is_said(tmp_path: Path) -> None:
    from h5fixtures import table as columns
    extra = {"future/cases": columns({"case_id": int, "status": str, "reason": str}, [{"case_id": 0, "status": "ok"}])}
    rows = [case(mem="numa0", median_GBps=450.0)]
    base = write_run(tmp_path / "base.h5", rows, topology=topology("gh200_single"), extra=extra)
    proc = compare(str(base), str(base))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "table future/cases: compare knows no such family" in proc.stdout, proc.stdout

