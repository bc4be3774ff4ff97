"""`mempath um`: unified-memory behaviour. GPU cases are marked `gpu`."""
from __future__ import annotations

from pathlib import Path

import h5py
import pytest

from conftest import run

UM_SUMMARY = "MEMPATH um "


def test_um_needs_cuda(mempath_cpu_bin: Path) -> None:
    proc = run(mempath_cpu_bin, "um", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "no CUDA support" in proc.stderr


@pytest.mark.parametrize("args,hint", [(["--exp", "bounce"], "valid: interleave"),
                                       (["--iters", "3"], "power of two"),
                                       (["--alloc", "device,magic"], "valid: system, managed"),
                                       (["--gpu", "9"], "does not exist")])
@pytest.mark.gpu
def test_um_bad_input(mempath_bin: Path, args: list[str], hint: str) -> None:
    proc = run(mempath_bin, "um", *args, check_rc=2)
    assert hint in proc.stderr


@pytest.mark.gpu
def test_um_experiments_run_and_record(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "um.h5"
    proc = run(mempath_bin, "um", "--size", "64MiB", "--reps", "2", "--iters", "4", "--output", str(out))
    lines = [l for l in proc.stdout.splitlines() if l.startswith(UM_SUMMARY)]
    assert len(lines) == 8  # interleave x2, inplace x3, evict x3
    assert all("status=ok" in l or "status=skipped" in l for l in lines), lines
    assert any("exp=inplace alloc=device" in l and "status=ok" in l for l in lines)
    with h5py.File(out) as f:
        states = set(f["um/samples/state"].asstr()[()])
        assert {"first", "later", "cold", "warm", "evicted"} <= states
        assert (f["um/samples/time_s"][()] > 0).all()
        ok = f["um/cases/status"][()] == b"ok"
        assert (f["um/cases/verified"][()][ok] == 1).all()


def test_allocmatrix_needs_cuda(mempath_cpu_bin: Path) -> None:
    proc = run(mempath_cpu_bin, "allocmatrix", check_rc=2)
    assert "no CUDA support" in proc.stderr


@pytest.mark.gpu
def test_allocmatrix_covers_every_pair(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.h5"
    proc = run(mempath_bin, "allocmatrix", "--size", "64MiB", "--reps", "3", "--output", str(out))
    lines = [l for l in proc.stdout.splitlines() if l.startswith("MEMPATH allocmatrix ")]
    assert len(lines) == 36 and all("status=ok" in l for l in lines), lines
    with h5py.File(out) as f:
        assert (f["allocmatrix/cases/verified"][()] == 1).all()
        assert len(f["allocmatrix/samples/rep"]) == 36 * 3


@pytest.mark.gpu
def test_allocmatrix_bad_memory(mempath_bin: Path) -> None:
    proc = run(mempath_bin, "allocmatrix", "--mem", "numa99", check_rc=2)
    assert "valid: numa" in proc.stderr and proc.stderr.count("\n") == 1
