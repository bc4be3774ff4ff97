"""`mempath bw --noise` (contention, the paper's Fig. 7) and the GPU grid sweep (`--threads
sweep` on a GPU, Fig. 10): the noise reader's bytes and window, `--noise partner` planned on
the GH200 and x86 snapshots, the sweep's plan, bad input. GPU paths are marked `gpu`."""
from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run, summaries

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLAN = re.compile(r"^PLAN bw (.*)$")
#: A quad GH200's superchips: GPU -> (its Grace, its HBM node).
QUAD = {"gpu0": ("cpu0", "numa4"), "gpu1": ("cpu1", "numa12"), "gpu2": ("cpu2", "numa20"), "gpu3": ("cpu3", "numa28")}


def plan(binary: Path, fixture: str, *args: str) -> list[dict[str, str]]:
    """The PLAN lines of `bw ARGS --from FIXTURE`, as dicts."""
    out = run(binary, "bw", *args, "--from", str(FIXTURES / fixture)).stdout
    return [dict(kv.split("=", 1) for kv in shlex.split(m.group(1)))
            for m in map(PLAN.match, out.splitlines()) if m]


def cases(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path) as f:
        return {k: f["bw/cases"][k][()] for k in f["bw/cases"]}


def llc_bytes(binary: Path) -> int:
    topo = json.loads(run(binary, "topo", "--json").stdout)
    return next(p["cache_bytes"] for p in topo["processors"] if p["name"] == "cpu0")


def cpu0_cores(binary: Path) -> int:
    topo = json.loads(run(binary, "topo", "--json").stdout)
    return next(p["cores"] for p in topo["processors"] if p["name"] == "cpu0")


def guard_size(binary: Path) -> str:
    """The smallest buffer the cache guard allows on cpu0, in MiB."""
    return f"{max(64, -(-4 * llc_bytes(binary) // (1 << 20)))}MiB"


# --- the reader counts what it reads (this machine's CPU) -----------------------------

def test_cpu_noise_counts_its_bytes_within_the_case(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    if cpu0_cores(mempath_cpu_bin) < 2:
        pytest.skip("one core: no core left for a CPU noise reader beside the measured thread")
    out, size = tmp_path / "noise.h5", guard_size(mempath_cpu_bin)
    proc = run(mempath_cpu_bin, "bw", "--pu", "cpu0", "--threads", "1", "--noise", "cpu0:numa0",
               "--noise-size", size, "--size", size, "--reps", "3", "--warmup", "1", "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok" and line["noise"] == "cpu0:numa0"
    assert float(line["noise_GBps"]) > 0
    c = cases(out)
    assert c["noise"][0] == b"cpu0:numa0"
    assert c["noise_size_bytes"][0] == int(size[:-3]) << 20
    assert c["noise_threads"][0] == cpu0_cores(mempath_cpu_bin) - 1  # every core the measured thread leaves
    nbytes, seconds = int(c["noise_bytes"][0]), float(c["noise_time_s"][0])
    assert nbytes > 0 and nbytes % (4096) == 0  # whole chunks of whole pages
    assert math.isclose(c["noise_GBps"][0], nbytes / seconds / 1e9, rel_tol=1e-9)
    assert f"{c['noise_GBps'][0]:.2f}" == line["noise_GBps"]
    with h5py.File(out) as f:
        timed = f["bw/samples/time_s"][()]
        assert f["bw/cases/noise_time_s"].attrs["units"] == "s"
        assert f["bw/cases/noise_GBps"].attrs["units"] == "GB/s"
        assert f["bw/cases/noise_bytes"].attrs["units"] == "bytes"
    # The window spans warm-up and timed repetitions: at least the timed ones' sum.
    assert seconds >= timed.sum()
    # One core reading host memory: far below any memory system's total.
    assert c["noise_GBps"][0] < 1000


def test_a_case_without_noise_records_none(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out, size = tmp_path / "alone.h5", guard_size(mempath_cpu_bin)
    proc = run(mempath_cpu_bin, "bw", "--threads", "1", "--size", size, "--reps", "3", "--warmup", "1",
               "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert "noise" not in line and "noise_GBps" not in line and "blocks" not in line  # a CPU line, no noise
    c = cases(out)
    assert c["noise"][0] == b"" and c["noise_bytes"][0] == 0 and c["noise_threads"][0] == -1
    assert c["noise_size_bytes"][0] == -1 and np.isnan(c["noise_time_s"][0]) and np.isnan(c["noise_GBps"][0])
    assert c["blocks"][0] == -1
    with h5py.File(out) as f:
        assert (f["bw/samples/blocks"][()] == -1).all()


# --- --noise partner, planned on snapshots ----------------------------------------------

def test_partner_noise_on_a_quad_gh200_pairs_each_superchip(mempath_cpu_bin: Path) -> None:
    rows = plan(mempath_cpu_bin, "gh200_quad", "--all", "--noise", "partner")
    assert rows
    for r in rows:
        if r["pu"] in QUAD:  # Grace noise reads its superchip's HBM
            cpu, hbm = QUAD[r["pu"]]
            assert r["noise"] == f"{cpu}:{hbm}", r
        elif r["pu"] == "cpus":  # every socket at once has no one partner
            assert r["status"] == "skipped", r
        else:  # Hopper noise reads its superchip's LPDDR
            n = r["pu"][3:]
            assert r["noise"] == f"gpu{n}:numa{n}", r
        assert (r["status"] == "skipped") == bool(r.get("reason")), r
    assert any(r["pu"] == "cpus" and r["reason"].startswith("--noise partner: cpus spans") for r in rows)
    assert sum(r["status"] == "planned" for r in rows) > 0.7 * len(rows)


def test_partner_noise_on_a_single_gh200(mempath_cpu_bin: Path) -> None:
    rows = plan(mempath_cpu_bin, "gh200_single", "--op", "read", "--pu", "gpu0", "--noise", "partner")
    assert [(r["noise"], r["status"]) for r in rows] == [("cpu0:numa1", "planned")]
    rows = plan(mempath_cpu_bin, "gh200_single", "--op", "write", "--pu", "cpu0", "--mem", "numa1",
                "--noise", "partner")
    assert [(r["noise"], r["status"]) for r in rows] == [("gpu0:numa0", "planned")]


def test_partner_noise_on_x86_skips_a_cpu_reading_device_memory(mempath_cpu_bin: Path) -> None:
    rows = plan(mempath_cpu_bin, "x86_h100", "--all", "--op", "read", "--noise", "partner")
    gpu = [r for r in rows if r["pu"] == "gpu0"]
    cpu = [r for r in rows if r["pu"] == "cpu0"]
    assert gpu and all(r["status"] == "skipped" for r in gpu)
    assert any("device memory" in r["reason"] for r in gpu)
    # The GPU reads the socket's memory as pinned/registered host memory over PCIe.
    assert cpu and all(r["noise"] == "gpu0:numa0" for r in cpu)
    assert any(r["status"] == "planned" for r in cpu)


def test_the_noise_buffer_is_set_up_once_and_is_8gib_where_it_fits(mempath_cpu_bin: Path) -> None:
    def expected(*args: str) -> float:
        out = run(mempath_cpu_bin, "bw", "--pu", "cpu0", "--threads", "sweep", *args,
                  "--from", str(FIXTURES / "gh200_quad")).stdout.splitlines()
        return float(out[-1].split("expected_s=")[1])
    alone = expected()
    default = expected("--noise", "partner") - alone        # LPDDR has far more than 16 GiB free
    four_gib = expected("--noise", "partner", "--noise-size", "4GiB") - alone
    # One buffer for the whole sweep (not one per case), and the default is 2 x 4 GiB (the
    # figures are printed to 0.1 s: sizes whose setup takes tenths tell them apart).
    assert four_gib > 0 and default == pytest.approx(2 * four_gib, rel=0.2)


# --- the GPU grid sweep's plan ------------------------------------------------------------

def test_gpu_sweep_plans_powers_of_two_blocks_then_the_full_grid(mempath_cpu_bin: Path) -> None:
    rows = plan(mempath_cpu_bin, "gh200_quad", "--pu", "gpu0", "--op", "copy", "--mem", "numa0",
                "--dst-mem", "numa4", "--threads", "sweep")
    blocks = [int(r["blocks"]) for r in rows]
    assert blocks == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, -1]  # 132 SMs x 4 blocks of 512 caps at 512
    assert [int(r["threads"]) for r in rows[:-1]] == [512 * b for b in blocks[:-1]]
    assert all(r["kernel"] == "grid" and r["status"] == "planned" for r in rows)


def test_the_default_all_plan_has_no_gpu_sweep(mempath_cpu_bin: Path) -> None:
    default = plan(mempath_cpu_bin, "gh200_single", "--all", "--pu-kind", "gpu")
    quick = plan(mempath_cpu_bin, "gh200_single", "--all", "--pu-kind", "gpu", "--threads", "all")
    swept = plan(mempath_cpu_bin, "gh200_single", "--all", "--pu-kind", "gpu", "--threads", "sweep")
    assert default == quick and not any(int(r["blocks"]) > 1 for r in default)
    points = [r for r in swept if int(r["blocks"]) > 1]
    assert points and {r["alloc"] for r in points} <= {"numa", "device"}  # the paths' default allocators
    assert {r["op"] for r in points} == {"read", "write", "copy"}  # copies sweep too (Fig. 10)
    assert len(swept) == len(default) + len([r for r in swept if r["kernel"] == "grid" and int(r["threads"]) > 0])


@pytest.mark.parametrize("args,hint", [
    (["--pu", "gpu0", "--kernel", "block", "--threads", "sweep"], "--threads sweep varies"),
    (["--pu", "gpu0", "--noise", "cpu0"], "valid: partner, or PU:MEM"),
    (["--pu", "gpu0", "--noise", "gpu0:numa0"], "shares SMs"),
    (["--pu", "gpu0", "--noise", "cpu0:numa4", "--noise-size", "1MiB"], "below 4 x the caches"),
    (["--pu", "gpu0", "--noise-size", "1GiB"], "applies with --noise"),
    (["--pu", "cpu0", "--noise", "cpu0:numa4"], "shares cores"),
])
def test_bad_contention_and_sweep_options(mempath_cpu_bin: Path, args: list[str], hint: str) -> None:
    proc = run(mempath_cpu_bin, "bw", *args, "--from", str(FIXTURES / "gh200_quad"), check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mempath: error:") and hint in lines[0], proc.stderr


# --- on a GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_noise_counts_its_bytes_while_a_cpu_reads(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_noise.h5"
    proc = run(mempath_bin, "bw", "--pu", "cpu0", "--op", "read", "--noise", "partner", "--noise-size", "2GiB",
               "--size", "2GiB", "--reps", "5", "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok", line
    c = cases(out)
    nbytes, seconds = int(c["noise_bytes"][0]), float(c["noise_time_s"][0])
    assert c["noise"][0].decode().startswith("gpu") and nbytes > 0 and nbytes % 16 == 0
    assert c["noise_threads"][0] > 0
    with h5py.File(out) as f:
        assert seconds >= f["bw/samples/time_s"][()].sum()
    # A GPU reading host memory: between a slow PCIe link and far below any HBM.
    assert 0.5 < c["noise_GBps"][0] < 1000, c["noise_GBps"][0]


@pytest.mark.gpu
def test_cpu_noise_beside_a_gpu_and_the_summed_bandwidth(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "cpu_noise.h5"
    run(mempath_bin, "bw", "--pu", "gpu0", "--op", "read", "--noise", "cpu0:numa0", "--noise-size", "2GiB",
        "--size", "2GiB", "--reps", "5", "--output", str(out))
    c = cases(out)
    assert c["status"][0] == b"ok", c["reason"][0]
    assert c["noise_bytes"][0] > 0 and c["noise_threads"][0] >= 1
    # The summed bandwidth of both processors: each part positive, the CPU's part a host
    # memory's, the GPU's its own memory's.
    assert 0.5 < c["noise_GBps"][0] < 1000 and c["median_GBps"][0] > 100
    assert c["median_GBps"][0] + c["noise_GBps"][0] > c["median_GBps"][0]


@pytest.mark.gpu
def test_gpu_grid_sweep_grows_with_the_grid(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.h5"
    proc = run(mempath_bin, "bw", "--pu", "gpu0", "--op", "copy", "--threads", "sweep", "--size", "1GiB",
               "--reps", "3", "--warmup", "1", "--output", str(out))
    lines = summaries(proc.stdout)
    assert all(s["status"] == "ok" for s in lines), [s.get("reason") for s in lines]
    blocks = [int(s["blocks"]) for s in lines]
    assert blocks[:3] == [1, 2, 4] and blocks[-1] > blocks[-2]  # the full grid last, as launched
    gbps = [float(s["median_GBps"]) for s in lines]
    c = cases(out)
    assert list(c["threads"][:-1]) == [512 * b for b in blocks[:-1]]
    # Monotone-ish: doubling the blocks never loses much, and the grid is far past one block.
    for small, large in zip(gbps[:-2], gbps[1:-1]):
        assert large > 0.8 * small, gbps
    assert gbps[-1] > 10 * gbps[0], gbps
