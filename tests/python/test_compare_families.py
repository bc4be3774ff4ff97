"""Issue 22, compare as the nightly gate: every family a result file can hold is compared on
its headline metric (a halved atomics Mop/s, STREAM, GEMM, LLM, NCCL, MPI figure is a
regression), and a baseline written before columns were added (0.1.x: no `placed`, ...)
matches the same data written today."""
from __future__ import annotations

import contextlib
import io
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from conftest import DATA
from h5fixtures import case, memcpy_case, table, topology, write_run

from analysis.__main__ import main
from analysis.compare.families import FAMILIES

# /atomics tables as src/apps/atomics_command.cpp writes them (kCaseColumns, kSampleColumns).
ATOMICS_CASES: dict[str, type] = {
    "case_id": int, "pu": str, "mem": str, "alloc": str, "via": str, "scope": str, "counters": int,
    "threads": int, "ops_per_thread": int, "ops": int, "status": str, "reason": str, "reps": int,
    "median_Mops": float, "min_Mops": float, "max_Mops": float, "median_time_s": float,
    "verified": int, "host_native_atomics": int, "placement": str,
}
ATOMICS_SAMPLES: dict[str, type] = {"case_id": int, "rep": int, "time_s": float, "Mops": float}


def _atomics(path: Path) -> Path:
    rng = np.random.default_rng(3)
    cases, samples = [], []
    for mem, alloc, via in (("gpu0", "device", "local"), ("numa0", "pinned", "c2c"), ("numa0", "managed", "c2c"),
                            ("gpu1", "device", "nvlink")):
        for scope in ("device", "system"):
            ops = 270336 * 64
            values = (800.0 if via == "local" else 120.0) * (1 + 0.003 * rng.standard_normal(10))
            i = len(cases)
            cases.append({"case_id": i, "pu": "gpu0", "mem": mem, "alloc": alloc, "via": via, "scope": scope,
                          "counters": 8448, "threads": 270336, "ops_per_thread": 64, "ops": ops, "status": "ok",
                          "reason": "", "reps": 10, "median_Mops": float(np.median(values)),
                          "min_Mops": float(values.min()), "max_Mops": float(values.max()),
                          "median_time_s": ops / float(np.median(values)) / 1e6, "verified": 1,
                          "host_native_atomics": int(via == "c2c"), "placement": mem})
            samples += [{"case_id": i, "rep": r, "time_s": ops / v / 1e6, "Mops": v} for r, v in enumerate(values)]
    return write_run(path, [], topology=topology("gh200_quad"), bw=False,
                     extra={"atomics/cases": table(ATOMICS_CASES, cases),
                            "atomics/samples": table(ATOMICS_SAMPLES, samples)})


def _bw(path: Path) -> Path:
    rng = np.random.default_rng(5)
    rows = [case(mem=m, median_GBps=g) for m, g in (("numa0", 450.0), ("numa1", 120.0))] + \
        [case(mem="gpu0", pu="gpu0", alloc="device", status="skipped", reason="no GPU")]
    samples = []
    for i, row in enumerate(rows):
        if row["status"] == "ok":
            for rep, v in enumerate(row["median_GBps"] * (1 + 0.002 * rng.standard_normal(10))):
                samples.append({**{k: row.get(k, "") for k in ("op", "pu", "pu_kind", "mem", "dst_mem", "alloc",
                                                               "dst_alloc", "kernel", "noise")},
                                "threads": row["threads"], "size_bytes": row["size_bytes"], "bytes": row["bytes"],
                                "case_id": i, "rep": rep, "bandwidth_GBps": v, "time_s": 1 / v})
    return write_run(path, rows, samples, topology=topology("gh200_single"))


def _memcpy(path: Path) -> Path:
    return write_run(path, [], topology=topology("gh200_single"), bw=False,
                     memcpy=[memcpy_case(direction="h2d"), memcpy_case(direction="d2h"),
                             memcpy_case(direction="h2d", alloc="system", engine="sm", status="skipped",
                                         reason="no HMM")])


def _copy(name: str) -> Callable[[Path], Path]:
    def made(path: Path) -> Path:
        shutil.copy(DATA / name, path)
        return path
    return made


def _tlb(path: Path) -> Path:
    """mempath tlb's tables are chase's under its own group: a chase run, renamed."""
    shutil.copy(DATA / "h100_chase_cpu.h5", path)
    with h5py.File(path, "r+") as f:
        f.move("chase", "tlb")
    return path


def _mpi(path: Path) -> Path:
    import synth_scaleout
    return synth_scaleout.write_mpi(path, topology("gh200_quad"))


#: A file holding each family (the committed ones are 0.1.0 files of real runs).
SOURCES: dict[str, Callable[[Path], Path]] = {
    "bw": _bw, "memcpy": _memcpy, "um": _copy("h100_um.h5"), "allocmatrix": _copy("h100_allocmatrix.h5"),
    "chase": _copy("h100_chase_cpu.h5"), "tlb": _tlb, "pingpong": _copy("h100_pingpong.h5"), "atomics": _atomics,
    "stream": _copy("h100_stream_cpu.h5"), "gemm": _copy("h100_gemm.h5"), "llm": _copy("h100_llm.h5"),
    "mpi_bw": _mpi, "nccl": _copy("h200x2_nccl.h5"),
}


def compare(*args: str | Path) -> SimpleNamespace:
    """``python -m analysis compare ARGS`` in this process (a subprocess a call costs
    seconds of imports): its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["compare", *map(str, args)])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def compared(stdout: str) -> int:
    match = re.search(r"^# Comparison: (\d+) cases compared, (\d+) moved", stdout, re.M)
    assert match, stdout
    return int(match.group(1))


def test_every_family_has_a_source_here() -> None:
    assert set(SOURCES) == set(FAMILIES), "a family added to compare needs a file in SOURCES"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_worse_headline_figure_is_a_regression_in_every_family(tmp_path: Path, family: str) -> None:
    """A quarter of the Mop/s, bus bandwidth, TFLOP/s ..., four times the latency: the
    family's cases are REGRESSION lines (a quarter: the committed unified memory file has
    an eviction case whose noise bound is 64 %; two GEMM cases of the committed file tie
    within their 5 samples, where the tie-corrected test cannot reach p < 0.01)."""
    spec = FAMILIES[family]
    base = SOURCES[family](tmp_path / "base.h5")
    same = compare(base, base)
    assert same.returncode == 0, same.stdout + same.stderr
    cases = compared(same.stdout)
    assert cases >= 1 and "0 moved" in same.stdout and same.stderr == ""
    worse = tmp_path / "worse.h5"
    shutil.copy(base, worse)
    with h5py.File(worse, "r+") as f:
        column = f[f"{family}/{spec.table}/{spec.metric}"]
        column[...] = column[()] * (0.25 if spec.higher_is_better else 4.0)
    proc = compare(base, worse)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert all(line.startswith(f"REGRESSION {family} ") for line in lines), proc.stderr
    assert cases - 2 <= len(lines) <= cases and "| improved |" not in proc.stdout, proc.stdout
    assert all("(-75.0 %" in line or "(+300.0 %" in line for line in lines), proc.stderr
    better = compare(worse, base)  # the way back is an improvement, never a regression
    assert better.returncode == 0 and better.stdout.count("| improved |") == len(lines), better.stdout + better.stderr


def test_atomics_mops_halved_is_a_regression(tmp_path: Path) -> None:
    """The issue's case: HEAD compared no atomics at all (exit 2, nothing comparable)."""
    base = _atomics(tmp_path / "base.h5")
    halved = tmp_path / "halved.h5"
    shutil.copy(base, halved)
    with h5py.File(halved, "r+") as f:
        f["atomics/samples/Mops"][...] = f["atomics/samples/Mops"][()] / 2
    proc = compare(base, halved)
    assert proc.returncode == 1 and compared(proc.stdout) == 8, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 8 and all(re.match(r"REGRESSION atomics .*Mop/s \(-50\.0 %", line) for line in lines), lines


# ---- baselines of earlier versions --------------------------------------------------------

def _strings(values: list[str]) -> np.ndarray:
    return np.array(values, dtype=h5py.string_dtype())


def _ran(group: h5py.Group) -> np.ndarray:
    return np.array([s == b"ok" for s in group["status"][()]])


def _placed(group: h5py.Group) -> np.ndarray:
    return np.where(_ran(group), 1, -1)


def _same(name: str) -> Callable[[h5py.Group], np.ndarray]:
    return lambda group: group[name][()]


#: The columns each family gained after 0.1.x (docs/schema.md), with values as today's
#: writers give them: a 0.1.x file plus these is the same data written today.
ADDED: dict[str, dict[str, dict[str, Callable[[h5py.Group], np.ndarray]]]] = {
    "bw": {"cases": {"placed": _placed, "blocks": lambda g: np.full(len(g["status"]), -1),
                     "noise_size_bytes": lambda g: np.full(len(g["status"]), -1),
                     "noise_threads": lambda g: np.full(len(g["status"]), -1),
                     "noise_bytes": lambda g: np.zeros(len(g["status"]), dtype=np.int64),
                     "noise_time_s": lambda g: np.full(len(g["status"]), np.nan),
                     "noise_GBps": lambda g: np.full(len(g["status"]), np.nan)},
           "samples": {"blocks": lambda g: np.full(len(g["case_id"]), -1)}},
    "memcpy": {"cases": {"dst_gpu": lambda g: np.full(len(g["status"]), -1),
                         "chunk_bytes": lambda g: np.full(len(g["status"]), -1),
                         "gpu_label": lambda g: _strings([str(v) for v in g["gpu"][()]]),
                         "fwd_median_GBps": lambda g: np.full(len(g["status"]), np.nan)}},
    "chase": {"cases": {"placed": _placed}},
    "stream": {"cases": {"placed": _placed}},
    "pingpong": {"cases": {"via": lambda g: _strings(["c2c"] * len(g["status"])), "placed": _placed}},
    "gemm": {"cases": {"c_alloc": lambda g: _strings(["device"] * len(g["status"])), "b_via": _same("via"),
                       "b_placement": _same("placement"), "placed": _placed,
                       "calls_per_rep": lambda g: np.arange(len(g["status"])) % 7 + 1}},
    "um": {"cases": {"first_touch": lambda g: _strings(["cpu"] * len(g["status"])),
                     "first_placement": lambda g: _strings(["numa0"] * len(g["status"]))},
           "samples": {"first_touch": lambda g: _strings(["cpu"] * len(g["case_id"])),
                       "app_time_s": lambda g: np.full(len(g["case_id"]), np.nan)}},
    "llm": {"cases": {"decode_mode": lambda g: _strings(["graph"] * len(g["status"])),
                      "decode_fallback": lambda g: _strings([""] * len(g["status"])),
                      "path_case": lambda g: _strings([""] * len(g["status"])),
                      "prompt": lambda g: _strings(["bos"] * len(g["status"])),
                      "torch_allocator": lambda g: _strings(["pluggable"] * len(g["status"])),
                      "peak_small_bytes": lambda g: np.arange(len(g["status"])) + 1000,
                      "peak_large_bytes": lambda g: np.arange(len(g["status"])) + 10**9}},
    "mpi_bw": {"cases": {"split": lambda g: np.zeros(len(g["status"]), dtype=np.int64),
                         "node_bytes": lambda g: g["size_bytes"][()] * g["pairs"][()]},
               "samples": {"node_bytes": lambda g: g["size_bytes"][()] * g["ppn"][()]}},
    "nccl": {"cases": {"mem": lambda g: _strings(["gpu0"] * len(g["status"])),
                       "via": lambda g: _strings(["local"] * len(g["status"])),
                       "rank_bytes": lambda g: g["size_bytes"][()] // g["ranks"][()]}},
}


def _old_and_new(tmp_path: Path, family: str) -> tuple[Path, Path]:
    """The family's data in the 0.1.x shape (without ADDED's columns) and as written today."""
    old, new = tmp_path / "old.h5", tmp_path / "new.h5"
    SOURCES[family](old)
    with h5py.File(old, "r+") as f:
        for part, columns in ADDED[family].items():
            for name in columns:
                if name in f[f"{family}/{part}"]:
                    del f[f"{family}/{part}/{name}"]
    shutil.copy(old, new)
    with h5py.File(new, "r+") as f:
        for part, columns in ADDED[family].items():
            group = f[f"{family}/{part}"]
            for name, values in columns.items():
                group[name] = values(group)
    return old, new


@pytest.mark.parametrize("family", list(ADDED))
def test_a_baseline_written_before_the_added_columns_matches_the_same_data(tmp_path: Path, family: str) -> None:
    """A 0.1.x baseline (no `placed`, no pingpong `via`, no gemm `b_via`, ...) against the
    same cases written today: every case matched and compared, nothing moved (HEAD made
    each case of the old file 'absent from RUN')."""
    old, new = _old_and_new(tmp_path, family)
    cases = compared(compare(old, old).stdout)
    assert cases >= 1
    for base, run in ((old, new), (new, old)):
        proc = compare(base, run)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert compared(proc.stdout) == cases and proc.stderr == "", proc.stdout + proc.stderr
        assert "0 moved, failed or missing" in proc.stdout


def test_an_added_column_with_a_documented_default_still_tells_cases_apart(tmp_path: Path) -> None:
    """mpi_bw files before `split` held split = 0 cases only (docs/schema.md): a --split case
    of today is another case, not the old one measured again."""
    old, new = _old_and_new(tmp_path, "mpi_bw")
    with h5py.File(new, "r+") as f:
        f["mpi_bw/cases/split"][...] = 1
    proc = compare(old, new)
    assert proc.returncode == 1 and compared(proc.stdout) == 0, proc.stdout + proc.stderr
    assert "absent from RUN" in proc.stderr and "absent from BASE" in proc.stdout


def test_a_column_left_out_that_made_cases_distinct_is_not_compared(tmp_path: Path) -> None:
    """An added column without a default is left out of the identity; where that makes two
    cases of one file one key, they are listed as not compared, never pooled."""
    from analysis.compare.families import not_identity
    old, new = _old_and_new(tmp_path, "llm")
    with h5py.File(new, "r+") as f:  # two cases that differ only in `prompt` (absent from old)
        group = f["llm/cases"]
        for name in group:
            values = group[name][()]
            outcome = name in not_identity("llm")
            if not outcome and values.dtype.kind != "f" and name != "prompt":
                values[1] = values[0]
                group[name][...] = values
        prompt = group["prompt"][()]
        prompt[1] = b"random"
        group["prompt"][...] = prompt
    proc = compare(old, new)
    assert re.search(r"\| llm \| .*\| matches several cases of one file once prompt, torch_allocator "
                     r"\(absent from some files\) are left out \|", proc.stdout), proc.stdout + proc.stderr
