"""`mempath gemm`: bad input here; on a GPU (marked `gpu`) verified GEMMs against the peak
model, operands in host memory slower than in HBM, and the documented columns."""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run, summaries

CASE_COLUMNS = {"case_id", "gpu", "dtype", "m", "n", "k", "a_mem", "a_alloc", "b_mem", "b_alloc", "c_mem", "via",
                "status", "reason", "reps", "median_TFLOPs", "best_TFLOPs", "min_TFLOPs", "peak_TFLOPs",
                "fraction_of_peak", "operand_bytes", "flops", "placement", "placed", "verified", "cublas_version",
                "calls_per_rep"}


def test_a_cpu_only_build_says_gemm_needs_cuda(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    proc = run(mempath_cpu_bin, "gemm", "--output", str(tmp_path / "g.h5"), check_rc=2)
    assert proc.stderr.strip() == "mempath: error: this mempath build has no CUDA support: gemm needs a CUDA build"


@pytest.mark.parametrize("args", [["--dtype", "fp8"], ["--size", "0"], ["--size", "1024", "--matrix-bytes", "1GiB"],
                                  ["--matrix-bytes", "1KiB"], ["--gpu", "99"]])
def test_bad_input_is_one_line(mempath_bin: Path, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "keep.h5"
    out.write_bytes(b"earlier results")
    proc = run(mempath_bin, "gemm", "--output", str(out), *args, check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mempath: error: ") and "valid" in lines[0], proc.stderr
    assert out.read_bytes() == b"earlier results"


@pytest.mark.gpu
def test_gemm_on_device_memory_is_verified_and_below_the_peak(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.h5"
    lines = summaries(run(mempath_bin, "gemm", "--size", "8192", "--output", str(out)).stdout, "gemm")
    assert {l["dtype"] for l in lines} == {"fp16", "tf32", "fp32", "fp64"}
    assert all(l["status"] == "ok" for l in lines), lines
    for l in lines:
        assert 0.2 < float(l["fraction_of_peak"]) < 1.05, l
    tf = {l["dtype"]: float(l["median_TFLOPs"]) for l in lines}
    assert tf["fp16"] > tf["tf32"] > tf["fp32"]  # tensor cores, then TF32 tensor cores, then FP32 cores
    with h5py.File(out) as f:
        cases = f["gemm/cases"]
        assert set(cases) == CASE_COLUMNS
        assert (cases["verified"][()] == 1).all() and (cases["cublas_version"][()] > 0).all()
        assert (cases["placed"][()] == 1).all()  # the operands stayed in the GPU's memory
        samples = f["gemm/samples"]
        np.testing.assert_allclose(samples["tflops"][()], 2 * 8192.0**3 / samples["time_s"][()] / 1e12)


@pytest.mark.gpu
def test_a_small_gemm_in_hbm_is_timed_over_several_calls(mempath_bin: Path, tmp_path: Path) -> None:
    """A 1024 fp16 GEMM takes microseconds, about an empty launch: one call per timed interval
    failed the timing guard (the full tag's MempathGemmPlacement on an H100, issue 19)."""
    out = tmp_path / "small.h5"
    lines = summaries(run(mempath_bin, "gemm", "--size", "1024", "--dtype", "fp16", "--output", str(out)).stdout, "gemm")
    assert [l["status"] for l in lines] == ["ok"], lines
    with h5py.File(out) as f:
        assert int(f["gemm/cases/calls_per_rep"][0]) > 1
        assert int(f["gemm/cases/verified"][0]) == 1


@pytest.mark.gpu
def test_operands_in_pinned_host_memory_are_slower(mempath_bin: Path, tmp_path: Path) -> None:
    dev = summaries(run(mempath_bin, "gemm", "--dtype", "fp16", "--size", "8192", "--output", str(tmp_path / "d.h5")).stdout, "gemm")
    host = summaries(run(mempath_bin, "gemm", "--dtype", "fp16", "--size", "8192", "--mem", "numa0", "--alloc", "pinned",
                         "--reps", "3", "--output", str(tmp_path / "h.h5")).stdout, "gemm")
    assert dev[0]["status"] == "ok" and host[0]["status"] == "ok", (dev, host)
    assert float(host[0]["median_TFLOPs"]) < float(dev[0]["median_TFLOPs"]) / 2
