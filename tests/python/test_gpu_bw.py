"""GPU bandwidth through the CLI. Marked `gpu`: skipped where no NVIDIA GPU is visible;
run on the device with the same test command."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest

from conftest import run, summaries

pytestmark = pytest.mark.gpu
GPU_SMALL = ["--size", "256MiB", "--reps", "5", "--warmup", "1"]
# HBM at full speed: 1 GiB, so that a read (250 us at an H200's 4.3 TB/s) stays far above the
# timing guard's 10 empty launches (one launch measured 8.8 us on an H200 node: 256 MiB read
# in 80 us tripped it).
GPU_HBM = ["--size", "1GiB", "--reps", "5", "--warmup", "1"]


def topology(binary: Path) -> dict:
    return json.loads(run(binary, "topo", "--json").stdout)


@pytest.mark.parametrize("op", ["read", "write", "copy"])
@pytest.mark.parametrize("kernel", ["grid", "block"])
def test_gpu_device_memory(mempath_bin: Path, tmp_path: Path, op: str, kernel: str) -> None:
    out = tmp_path / "g.h5"
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--op", op, "--kernel", kernel, *GPU_HBM,
               "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok", line
    assert line["placement"] == "gpu0"
    # A full grid reads HBM far faster than any PCIe or host path could deliver.
    floor = 500 if kernel == "grid" else 5
    assert float(line["median_GBps"]) > floor
    with h5py.File(out) as f:
        assert f["bw/cases/verified"][0] == 1
        assert f["bw/cases/threads"][0] == (1024 if kernel == "block" else f["bw/cases/threads"][0])


@pytest.mark.parametrize("alloc", ["pinned", "registered", "managed"])
def test_gpu_reads_host_memory(mempath_bin: Path, alloc: str) -> None:
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--mem", "numa0", "--alloc", alloc, *GPU_SMALL)
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok", line
    assert float(line["median_GBps"]) > 1


def test_pageable_memory_follows_ats(mempath_bin: Path) -> None:
    gpu = next(p for p in topology(mempath_bin)["processors"] if p["name"] == "gpu0")
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--mem", "numa0", "--alloc", "system", *GPU_SMALL)
    (line,) = summaries(proc.stdout)
    if gpu["pageable_access"]:
        assert line["status"] == "ok"
    else:
        assert line["status"] == "skipped" and "pageable" in line["reason"]


def test_noise_reader_runs_alongside(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.h5"
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--mem", "numa0", "--alloc", "pinned",
               "--noise", "cpu0:numa0", *GPU_SMALL, "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok"
    with h5py.File(out) as f:
        assert f["bw/cases/noise"][0] == b"cpu0:numa0"



def test_gpu_reads_a_peer_gpu(mempath_bin: Path) -> None:
    gpus = [p for p in topology(mempath_bin)["processors"] if p["kind"] == "gpu"]
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--mem", "gpu1", *GPU_SMALL)
    (line,) = summaries(proc.stdout)
    if 1 in gpus[0]["peers"]:
        assert line["status"] == "ok" and line["via"] in ("nvlink", "peer"), line
        assert float(line["median_GBps"]) > 10
    else:
        assert line["status"] == "skipped" and "peer" in line["reason"]
