"""`mempath um`: unified-memory behaviour. GPU cases are marked `gpu`."""
from __future__ import annotations

import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run

UM_SUMMARY = "MEMPATH um "


def test_um_needs_cuda(mempath_cpu_bin: Path) -> None:
    proc = run(mempath_cpu_bin, "um", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "no CUDA support" in proc.stderr


@pytest.mark.parametrize("args,hint", [(["--exp", "bounce"], "valid: interleave"),
                                       (["--iters", "3"], "power of two"),
                                       (["--alloc", "device,magic"], "valid: system, managed"),
                                       (["--gpu", "9"], "unknown GPU '9'; valid --gpu: gpu0")])
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
        # Where the copies left a managed destination, not where the data check's CPU reads
        # pulled it: a copy faster than any host link did not land in host memory.
        cases = f["allocmatrix/cases"]
        for alloc, where, gbps in zip(cases["dst_alloc"].asstr()[()], cases["dst_placement"].asstr()[()],
                                      cases["median_GBps"][()]):
            assert not (alloc == "managed" and gbps > 200 and where.startswith("numa")), (where, gbps)


@pytest.mark.gpu
def test_allocmatrix_bad_memory(mempath_bin: Path) -> None:
    proc = run(mempath_bin, "allocmatrix", "--mem", "numa99", check_rc=2)
    assert "valid: numa" in proc.stderr and proc.stderr.count("\n") == 1


# --- the first placement of interleave (the paper's Fig. 4) -----------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def um_plan(binary: Path, fixture: str, *args: str) -> list[dict[str, str]]:
    out = run(binary, "um", *args, "--from", str(FIXTURES / fixture)).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("PLAN um "):
            rows.append(dict(kv.split("=", 1) for kv in shlex.split(line[len("PLAN um "):])))
    return rows


@pytest.mark.parametrize("fixture,gpu,host,hbm", [("gh200_single", "0", "numa0", "numa1"),
                                                  ("gh200_quad", "0", "numa0", "numa4"),
                                                  ("gh200_quad", "2", "numa2", "numa20")])
def test_interleave_sweeps_the_first_placement_on_gh200(mempath_cpu_bin: Path, fixture: str, gpu: str,
                                                        host: str, hbm: str) -> None:
    rows = um_plan(mempath_cpu_bin, fixture, "--exp", "interleave", "--mem", "sweep", "--gpu", gpu)
    series = {(r["alloc"], r["mem"], r["first_touch"]) for r in rows}
    # System memory first placed on DDR and on HBM (mbind'ed: HBM has no CPUs), managed
    # memory first touched by the CPU (DDR) and by the GPU (HBM).
    assert series == {("system", host, "cpu"), ("system", hbm, "cpu"),
                      ("managed", host, "cpu"), ("managed", f"gpu{gpu}", "gpu")}
    assert all(r["status"] == "planned" for r in rows), rows


def test_interleave_on_x86_skips_system_memory_with_the_reason(mempath_cpu_bin: Path) -> None:
    rows = um_plan(mempath_cpu_bin, "x86_h100", "--exp", "interleave", "--mem", "sweep")
    by = {(r["alloc"], r["mem"]): r for r in rows}
    assert set(by) == {("system", "numa0"), ("managed", "numa0"), ("managed", "gpu0")}
    assert by[("system", "numa0")]["status"] == "skipped" and "ATS" in by[("system", "numa0")]["reason"]
    assert by[("managed", "gpu0")]["status"] == "planned"


def test_an_explicit_mem_list_keeps_every_combination_and_says_why_one_cannot_run(mempath_cpu_bin: Path) -> None:
    rows = um_plan(mempath_cpu_bin, "gh200_quad", "--exp", "interleave,evict", "--mem", "numa0,numa4,gpu0")
    assert all((r["status"] == "skipped") == bool(r.get("reason")) for r in rows)
    by = {(r["exp"], r["alloc"], r["mem"]): r["status"] for r in rows}
    assert by[("interleave", "system", "numa4")] == "planned"
    assert by[("interleave", "managed", "numa4")] == "skipped"   # managed is first touched by CPUs: no HBM node
    assert by[("evict", "pinned", "numa4")] == "skipped"         # pinned memory is host memory
    assert ("evict", "pinned", "gpu0") not in by and ("interleave", "system", "gpu0") not in by  # no such memory


def test_the_default_um_plan_is_one_host_node(mempath_cpu_bin: Path) -> None:
    rows = um_plan(mempath_cpu_bin, "gh200_quad")
    assert len(rows) == 8
    assert {r["mem"] for r in rows if r["alloc"] != "device"} == {"numa0"}
    assert [r["mem"] for r in rows if r["alloc"] == "device"] == ["gpu0"]


@pytest.mark.parametrize("mem,hint", [("numa99", "valid: numa0"), ("gpu1", "valid: numa0"),
                                      ("sweep,numa0", "valid:")])
def test_um_bad_mem(mempath_cpu_bin: Path, mem: str, hint: str) -> None:
    proc = run(mempath_cpu_bin, "um", "--mem", mem, "--from", str(FIXTURES / "gh200_quad"), check_rc=2)
    assert proc.stderr.count("\n") == 1 and hint in proc.stderr


@pytest.mark.gpu
def test_interleave_records_each_first_placement_and_the_step_time(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "inter.h5"
    proc = run(mempath_bin, "um", "--exp", "interleave", "--mem", "sweep", "--size", "64MiB", "--reps", "2",
               "--iters", "4", "--output", str(out))
    lines = [l for l in proc.stdout.splitlines() if l.startswith(UM_SUMMARY)]
    assert any("alloc=managed" in l and "first_touch=gpu" in l and "status=ok" in l for l in lines), lines
    assert any("alloc=managed" in l and "first_touch=cpu" in l and "status=ok" in l for l in lines), lines
    with h5py.File(out) as f:
        s = {k: f["um/samples"][k][()] for k in f["um/samples"]}
        c = {k: f["um/cases"][k][()] for k in f["um/cases"]}
    for case_id, mem, status in zip(c["case_id"], c["mem"].astype(str), c["status"].astype(str)):
        if status != "ok":
            continue
        mine = s["case_id"] == case_id
        first = set(s["first_placement"][mine].astype(str))
        assert len(first) == 1 and first != {""}, first  # measured once, after the first touch
        (where,) = first
        if mem.startswith("numa"):  # first touch on a NUMA node: its pages are there
            assert where == mem, (mem, where)
        gpu = mine & (s["phase"] == b"gpu_memset")
        cpu = mine & (s["phase"] != b"gpu_memset")
        assert set(s["iterations"][gpu]) == {1, 2, 4}
        # The step as the application sees it holds its CPU phase and its GPU burst.
        assert (s["app_time_s"][gpu] >= 0.99 * (s["time_s"][gpu] + s["time_s"][cpu])).all()
        assert np.isnan(s["app_time_s"][cpu]).all()
        assert all(p for p in s["placement"][gpu].astype(str))  # where the pages were after each burst
