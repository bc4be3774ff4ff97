"""Issue #12, bad input: `python -m analysis report|compare` never shows a traceback. Each
unusable input is one `analysis: error:` line on stderr naming the file or column and what is
valid, exit 2; good files beside bad ones are still analysed; samples that are NaN or infinite
never pass as ok; "0 cases compared" is never exit 0; a report into an existing folder removes
the previous report's files it does not write again, and nothing else."""
from __future__ import annotations

import os
from functools import partial
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import DATA, analysis_cli, assert_pdf
from h5fixtures import case, topology, write_run

#: Output as bytes: the file names in it need not be UTF-8.
cli = partial(analysis_cli, text=False)

def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    lines = proc.stderr.decode("utf-8").strip().splitlines()
    assert all(line.startswith("analysis: error: ") for line in lines), lines
    assert "Traceback" not in proc.stderr.decode()
    return lines


def good_run(path: Path) -> Path:
    return write_run(path, [case(), case(mem="numa1", median_GBps=200.0)],
                     topology=topology("gh200_single"))


def edited(src: Path, path: Path, edit) -> Path:
    shutil.copy(src, path)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def non_utf8(tmp: Path) -> Path:
    path = Path(os.fsdecode(os.fsencode(tmp) + b"/run-\xff.h5"))
    good_run(Path(os.fsdecode(os.fsencode(tmp) + b"/tmp-good.h5"))).rename(path)
    return path


def negative(tmp: Path) -> Path:
    def edit(f: h5py.File) -> None:
        f["bw/samples/time_s"][0] = -1.0
    return edited(good_run(tmp / "src.h5"), tmp / "negative.h5", edit)


def no_metric(tmp: Path) -> Path:
    def edit(f: h5py.File) -> None:
        del f["bw/samples/bandwidth_GBps"]
    return edited(good_run(tmp / "src.h5"), tmp / "nometric.h5", edit)


def no_status(tmp: Path) -> Path:
    def edit(f: h5py.File) -> None:
        del f["bw/cases/status"]
    return edited(good_run(tmp / "src.h5"), tmp / "nostatus.h5", edit)


def truncated(tmp: Path) -> Path:
    data = good_run(tmp / "src.h5").read_bytes()
    (tmp / "cut.h5").write_bytes(data[:len(data) // 2])
    return tmp / "cut.h5"


def not_hdf5(tmp: Path) -> Path:
    (tmp / "text.h5").write_text("not hdf5")
    return tmp / "text.h5"


BAD = {"non-UTF-8 name": (non_utf8, "run-\\xff.h5: the file name is not valid UTF-8"),
       "negative time": (negative, "column time_s of table bw/samples holds negative values"),
       "missing sample column": (no_metric, "table bw/samples lacks the column(s) bandwidth_GBps"),
       "missing status column": (no_status, "table bw/cases lacks the column(s) status"),
       "truncated": (truncated, "cut.h5: not an HDF5 file (or a truncated one)"),
       "not HDF5": (not_hdf5, "text.h5: not an HDF5 file")}


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path, command: str, kind: str) -> None:
    make, expected = BAD[kind]
    if (kind, command) == ("missing sample column", "report"):
        pytest.skip("the report reads /bw/cases, not the samples' bandwidth")
    bad = make(tmp_path)
    args = ["-o", tmp_path / "out"] if command == "report" else [bad]
    proc = cli(command, bad, *args)
    lines = error_lines(proc)
    assert proc.returncode == 2 and len(lines) == 1 and expected in lines[0], lines
    assert "valid" in lines[0] or "give" in lines[0]


def bad_files(tmp: Path) -> list[Path]:
    return [non_utf8(tmp), negative(tmp), truncated(tmp)]


def assert_each_bad_one_named(proc: subprocess.CompletedProcess) -> None:
    text = "\n".join(error_lines(proc))
    assert proc.returncode == 2 and len(text.splitlines()) == 3, text
    assert all(name in text for name in ("run-\\xff.h5", "negative.h5", "cut.h5")), text


def test_report_analyses_good_files_beside_bad_ones_and_names_each(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = cli("report", good_run(tmp_path / "good.h5"), *bad_files(tmp_path), "-o", out)
    assert_each_bad_one_named(proc)
    summary = (out / "summary.md").read_text()
    assert "`good`" in summary and "## Files not read" in summary and "cut.h5" in summary


def test_compare_analyses_good_files_beside_bad_ones_and_names_each(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "run").mkdir()
    good_run(tmp_path / "base" / "good.h5")
    good_run(tmp_path / "run" / "good.h5")
    for path in bad_files(tmp_path):
        os.rename(path, os.fsencode(tmp_path / "run") + b"/" + os.fsencode(path.name))
    proc = cli("compare", tmp_path / "base", tmp_path / "run")
    assert b"2 cases compared, 0 moved" in proc.stdout
    assert_each_bad_one_named(proc)


def test_no_usable_file_among_several_names_each(tmp_path: Path) -> None:
    proc = cli("report", negative(tmp_path), truncated(tmp_path), "-o", tmp_path / "out")
    lines = error_lines(proc)
    assert proc.returncode == 2 and len(lines) == 3 and "none of the 2 files is usable" in lines[-1]
    assert not (tmp_path / "out" / "summary.md").exists()


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_output_that_cannot_be_a_folder_is_one_line_and_exit_2(tmp_path: Path, command: str,
                                                                   where: str) -> None:
    good = good_run(tmp_path / "good.h5")
    (tmp_path / "afile").write_text("mine")
    out = tmp_path / "afile" if where == "a file" else tmp_path / "afile" / "sub"
    proc = cli("report", good, "-o", out) if command == "report" else \
        cli("compare", good, good, "--output", out)
    lines = error_lines(proc)
    assert proc.returncode == 2 and len(lines) == 1 and "afile" in lines[0] and "--output" in lines[0]
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_is_one_line_and_exit_2(tmp_path: Path) -> None:
    good = good_run(tmp_path / "good.h5")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = cli("report", good, "-o", locked)
    assert proc.returncode == 2 and len(error_lines(proc)) == 1


# ---- NaN and infinite samples are not measurements (issue #12, item 2) ----------------------

def with_samples(src: Path, path: Path, values: list[float]) -> Path:
    def edit(f: h5py.File) -> None:
        data = f["bw/samples/bandwidth_GBps"]
        data[:len(values)] = np.array(values)
    return edited(src, path, edit)


def test_a_run_whose_samples_are_all_nan_or_inf_does_not_pass(tmp_path: Path) -> None:
    good = good_run(tmp_path / "good.h5")
    broken = with_samples(good, tmp_path / "nan.h5", [np.nan, np.inf, np.nan] * 2)
    proc = cli("compare", good, broken)
    assert proc.returncode == 1, proc.stdout
    assert b"0 cases compared" in proc.stdout
    stderr = proc.stderr.decode()
    assert stderr.count("REGRESSION bw") == 2 and "3 of 3 samples in RUN are NaN or infinite" in stderr


def test_one_nan_sample_makes_the_case_invalid_not_ok(tmp_path: Path) -> None:
    good = good_run(tmp_path / "good.h5")
    proc = cli("compare", good, with_samples(good, tmp_path / "one.h5", [np.nan]),
               "--output", tmp_path / "cmp")
    assert proc.returncode == 1 and b"1 cases compared" in proc.stdout
    assert "1 of 3 samples in RUN" in proc.stderr.decode()
    assert (tmp_path / "cmp" / "compare.csv").read_text().count("invalid") == 1


def test_nothing_compared_is_exit_2_never_0(tmp_path: Path) -> None:
    # ok cases without a single sample: nothing to compare, and nothing that vanished.
    unsampled = write_run(tmp_path / "bare.h5", [case()], [], topology=topology("gh200_single"))
    proc = cli("compare", unsampled, unsampled)
    assert b"0 cases compared" in proc.stdout
    lines = error_lines(proc)
    assert proc.returncode == 2 and len(lines) == 1 and "could be compared" in lines[0]


# ---- a report into an existing folder (issue #12, item 4) -----------------------------------

def test_a_new_report_removes_its_stale_files_and_keeps_the_users(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cpu_and_copy = write_run(tmp_path / "a.h5", [case(), case(threads=72), case(op="copy", dst_mem="numa1")],
                             topology=topology("gh200_single"))  # a thread sweep: thread_scaling drawn
    assert cli("report", cpu_and_copy, "-o", out).returncode == 0
    assert (out / "copy_heatmap.png").is_file() and (out / "thread_scaling.png").is_file()
    assert_pdf(out / "thread_scaling.pdf")
    (out / "notes.md").write_text("mine")
    (out / "mine.png").write_bytes(b"png")
    gpu_read = write_run(tmp_path / "b.h5", [case(pu="gpu0", mem="numa1")],
                         topology=topology("gh200_single"))
    assert cli("report", gpu_read, "-o", out).returncode == 0
    assert not {p.name for p in out.glob("*") if p.stem in ("copy_heatmap", "thread_scaling")}
    assert (out / "notes.md").read_text() == "mine" and (out / "mine.png").read_bytes() == b"png"
    assert (out / "summary.md").is_file() and (out / "path_matrix.csv").is_file()


def test_a_doctored_manifest_cannot_delete_outside_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (out / ".mempath-report").write_text("../victim.txt\n" + str(victim) + "\n")
    assert cli("report", good_run(tmp_path / "g.h5"), "-o", out).returncode == 0
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("family,data,column", [
    ("allocmatrix", "h100_allocmatrix.h5", "dst_mem"), ("chase", "h100_chase_cpu.h5", "median_cycles"),
    ("gemm", "h100_gemm.h5", "median_TFLOPs"), ("llm", "h100_llm.h5", "weight_alloc"),
    ("stream", "h100_stream_cpu.h5", "alloc"), ("pingpong", "h100_pingpong.h5", "median_ns"),
    ("um", "h100_um.h5", "experiment")])
def test_every_family_missing_a_column_is_one_line(tmp_path: Path, family: str, data: str, column: str) -> None:
    """These sections raised KeyError/AttributeError tracebacks on a cases table without the column."""
    bad = edited(DATA / data, tmp_path / data,
                 lambda f: f[f"{family}/cases"].pop(column))
    proc = cli("report", bad, "-o", tmp_path / "out")
    assert proc.returncode == 2
    (line,) = error_lines(proc)
    assert column in line and data in line
