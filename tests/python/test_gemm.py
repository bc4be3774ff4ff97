"""`mempath gemm`: bad input here, and plans of A and B placed together or apart (the
paper's Figure 15, issue 20) on topology fixtures; on a GPU (marked `gpu`) verified GEMMs
against the peak model, operands in host memory slower than in HBM, A and B apart, and the
documented columns."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import REPO, run, summaries

FIXTURES = REPO / "tests" / "fixtures"
CASE_COLUMNS = {"case_id", "gpu", "dtype", "m", "n", "k", "a_mem", "a_alloc", "b_mem", "b_alloc", "c_mem", "c_alloc",
                "via", "b_via", "status", "reason", "reps", "median_TFLOPs", "best_TFLOPs", "min_TFLOPs", "peak_TFLOPs",
                "fraction_of_peak", "operand_bytes", "flops", "placement", "b_placement", "placed", "verified",
                "cublas_version", "calls_per_rep"}


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
        assert set(cases) == CASE_COLUMNS | {"case_s"}  # case_s: every family's, the driver's
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


# ---- A and B placed apart: plans on topology fixtures (no GPU needed) ---------------------

def plan(binary: Path, fixture: str, *args: str) -> tuple[list[dict[str, str]], dict[str, str], str]:
    """The PLAN lines of `mempath gemm ARGS --from FIXTURE` as dicts (with status, reason),
    the EXPECT line's fields, and stderr."""
    proc = run(binary, "gemm", *args, "--from", str(FIXTURES / fixture))
    *lines, expect = proc.stdout.splitlines()
    rows = []
    for line in lines:
        assert line.startswith("PLAN gemm "), line
        row = {k: ("" if v == "-" else v) for k, v in (t.split("=", 1) for t in shlex.split(line[10:]))}
        rows.append({"reason": "", **row})
    assert expect.startswith("EXPECT gemm "), expect
    return rows, dict(t.split("=", 1) for t in expect.split()[2:]), proc.stderr


def placement(row: dict[str, str], side: str) -> tuple[str, str]:
    return (row["mem"], row["alloc"]) if side == "a" else (row["b_mem"], row["b_alloc"])


@pytest.mark.parametrize("fixture, placements, readable", [("gh200_quad", 48, 36), ("gh200_single", 12, 9),
                                                           ("x86_h100", 7, 5)])
def test_independent_pairs_are_every_placement_of_a_times_every_one_of_b(
        mempath_cpu_bin: Path, fixture: str, placements: int, readable: int) -> None:
    shared, _, _ = plan(mempath_cpu_bin, fixture, "--all", "--dtype", "fp16", "--size", "1024")
    pairs, expect, _ = plan(mempath_cpu_bin, fixture, "--all", "--ab", "independent", "--dtype", "fp16", "--size", "1024")
    assert len(shared) == placements and sum(r["status"] == "planned" for r in shared) == readable
    # Shared placements: B is A's (today's default, unchanged).
    assert all(placement(r, "a") == placement(r, "b") and r["via"] == r["b_via"] for r in shared)
    singles = [placement(r, "a") for r in shared]
    assert [(placement(r, "a"), placement(r, "b")) for r in pairs] == [(a, b) for a in singles for b in singles]
    assert int(expect["cases"]) == placements ** 2 and int(expect["planned"]) == readable ** 2
    runs = {placement(r, "a") for r in shared if r["status"] == "planned"}
    reason = {placement(r, "a"): r["reason"] for r in shared}
    for r in pairs:
        a, b = placement(r, "a"), placement(r, "b")
        assert (r["c_mem"], r["c_alloc"]) == ("gpu0", "device")
        assert (r["status"] == "planned") == (a in runs and b in runs), r
        if a == b:
            assert r["reason"] == reason[a]  # the shared placement's own words, as before
        elif r["status"] == "planned":
            assert r["reason"] == ""
        elif b in runs:
            assert r["reason"] == "A: " + reason[a]
        elif a in runs:
            assert r["reason"] == "B: " + reason[b]
        else:
            assert r["reason"].startswith("A")
            assert reason[a] in r["reason"] and reason[b] in r["reason"]


def test_without_ats_a_pair_with_pageable_memory_is_skipped_naming_the_operand(mempath_cpu_bin: Path) -> None:
    rows, _, _ = plan(mempath_cpu_bin, "x86_h100", "--all", "--ab", "independent", "--dtype", "fp16", "--size", "1024")
    one = {(r["mem"], r["alloc"], r["b_mem"], r["b_alloc"]): r for r in rows}
    device_system = one[("gpu0", "device", "numa0", "system")]
    assert device_system["status"] == "skipped"
    assert device_system["reason"] == "B: GPU 0 cannot access pageable memory (no ATS/HMM)"
    assert one[("numa0", "numa", "gpu0", "device")]["reason"].startswith("A: ")
    assert one[("numa0", "system", "numa0", "numa")]["reason"] == "A and B: GPU 0 cannot access pageable memory (no ATS/HMM)"
    assert one[("gpu0", "device", "numa0", "pinned")]["status"] == "planned"
    assert one[("numa0", "pinned", "gpu0", "device")]["status"] == "planned"


def test_a_quad_gh200_plans_the_papers_figure_15(mempath_cpu_bin: Path) -> None:
    """4 GB matrices, every data type, every pair of the paper's allocators: 12 placements
    (8 NUMA nodes by numa_alloc_onnode, 4 GPUs by cudaMalloc), 144 pairs per data type."""
    rows, expect, _ = plan(mempath_cpu_bin, "gh200_quad", "--all", "--ab", "independent", "--alloc", "numa,device",
                           "--matrix-bytes", "4GiB")
    assert len(rows) == 144 * 4 and all(r["status"] == "planned" for r in rows)
    assert {r["dtype"]: int(r["n"]) for r in rows} == {"fp16": 46336, "tf32": 32768, "fp32": 32768, "fp64": 23168}
    assert {(r["mem"], r["b_mem"]) for r in rows} >= {("gpu0", "numa0"), ("numa0", "gpu0"), ("numa4", "gpu1")}
    via = {(r["mem"], r["alloc"]): r["via"] for r in rows}
    assert via[("numa0", "numa")] == "c2c" and via[("gpu1", "device")] == "nvlink" and via[("gpu0", "device")] == "local"
    shared, shared_expect, _ = plan(mempath_cpu_bin, "gh200_quad", "--all", "--alloc", "numa,device",
                                    "--matrix-bytes", "4GiB")
    assert len(shared) == 12 * 4
    assert float(expect["expected_s"]) > 5 * float(shared_expect["expected_s"])


def test_the_sweep_stops_at_8192_where_an_operand_is_read_over_a_link(mempath_cpu_bin: Path) -> None:
    """Issue 39: Fig. 16 needs the sizes before a placement's TFLOP/s flatten; an operand read
    in place over a link (host memory, a peer's) is flat from 4096-8192 on, so the sweep stops
    there; operands in (or migrating to) the GPU's memory sweep to 32768. A size asked for by
    name is planned whatever the placement."""
    rows, expect, _ = plan(mempath_cpu_bin, "gh200_quad", "--all", "--dtype", "fp16",
                           "--mem", "local-host,local-hbm,peer-host,peer-hbm")
    largest: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["via"], r["alloc"])
        largest[key] = max(largest.get(key, 0), int(r["n"]))
    assert largest[("local", "device")] == largest[("local", "numa")] == 32768
    assert largest[("c2c", "managed")] == largest[("nvlink", "managed")] == 32768
    assert largest[("c2c", "numa")] == largest[("c2c", "pinned")] == largest[("nvlink", "device")] == 8192
    assert largest[("nvlink+c2c", "numa")] == 8192
    assert min(int(r["n"]) for r in rows) == 1024
    named, _, _ = plan(mempath_cpu_bin, "gh200_quad", "--mem", "numa0", "--alloc", "pinned", "--size", "16384,32768",
                       "--dtype", "fp16")
    assert [int(r["n"]) for r in named] == [16384, 32768]
    # The full suite's placement check (MempathGemmPlacement): well under the hour it took to 32768.
    _, full, _ = plan(mempath_cpu_bin, "gh200_quad", "--all", "--dtype", "fp16,fp64",
                      "--mem", "local-host,local-hbm,peer-host,peer-hbm")
    assert float(full["expected_s"]) < 15 * 60


def test_operands_on_a_gpu_without_peer_access_name_the_missing_peer_access(mempath_cpu_bin: Path) -> None:
    """Dual GH200 workstation, no peer access (#33): A or B on the other GPU is skipped for
    that, not with the allocator sentence of the first allocator in the table."""
    rows, _, _ = plan(mempath_cpu_bin, "gh200_dual", "--mem", "gpu1", "--dtype", "fp16", "--size", "1024")
    assert [(r["status"], r["reason"]) for r in rows] == [("skipped", "no peer access from GPU 0 to GPU 1")]
    rows, _, _ = plan(mempath_cpu_bin, "gh200_dual", "--gpu", "1", "--a-mem", "gpu0", "--dtype", "fp16", "--size", "1024")
    assert [(r["status"], r["reason"]) for r in rows] == [("skipped", "A: no peer access from GPU 1 to GPU 0")]
    rows, _, _ = plan(mempath_cpu_bin, "gh200_dual", "--all", "--ab", "independent", "--dtype", "fp16", "--size", "1024")
    peer = [r for r in rows if "gpu1" in (r["mem"], r["b_mem"])]
    assert peer and all("no peer access from GPU 0 to GPU 1" in r["reason"] for r in peer)
    assert not any("not cudaMalloc memory" in r["reason"] for r in rows)


def test_filters_pick_each_side(mempath_cpu_bin: Path) -> None:
    rows, _, _ = plan(mempath_cpu_bin, "x86_h100", "--all", "--ab", "independent", "--a-mem", "gpu0",
                      "--b-mem", "numa0", "--b-alloc", "pinned,registered", "--dtype", "fp64", "--size", "4096")
    assert {(r["mem"], r["alloc"], r["b_mem"], r["b_alloc"]) for r in rows} == {
        ("gpu0", a, "numa0", b) for a in ("device", "managed") for b in ("pinned", "registered")}
    # --mem and --alloc filter both sides.
    rows, _, _ = plan(mempath_cpu_bin, "gh200_quad", "--all", "--ab", "independent", "--mem", "numa0,gpu0",
                      "--alloc", "numa,device", "--dtype", "fp16", "--size", "1024")
    assert {placement(r, "a") for r in rows} == {placement(r, "b") for r in rows} == {("numa0", "numa"), ("gpu0", "device")}
    assert len(rows) == 4


def test_one_pair_from_a_and_b_options(mempath_cpu_bin: Path) -> None:
    rows, _, _ = plan(mempath_cpu_bin, "x86_h100", "--a-mem", "gpu0", "--b-mem", "numa0", "--b-alloc", "pinned",
                      "--matrix-bytes", "1GiB", "--dtype", "fp16,fp64")
    assert [(r["dtype"], r["n"], r["mem"], r["alloc"], r["via"], r["b_mem"], r["b_alloc"], r["b_via"], r["status"])
            for r in rows] == [("fp16", "23168", "gpu0", "device", "local", "numa0", "pinned", "pcie", "planned"),
                               ("fp64", "11584", "gpu0", "device", "local", "numa0", "pinned", "pcie", "planned")]
    # One side given: the other keeps the default (the GPU's memory); an allocator left out
    # is the path's, as --mem alone gives it.
    rows, _, _ = plan(mempath_cpu_bin, "x86_h100", "--b-mem", "numa0", "--dtype", "fp16", "--size", "1024")
    alone, _, _ = plan(mempath_cpu_bin, "x86_h100", "--mem", "numa0", "--dtype", "fp16", "--size", "1024")
    assert placement(rows[0], "a") == ("gpu0", "device")
    assert placement(rows[0], "b") == placement(alone[0], "a") == ("numa0", "registered")
    # A default run still places both in the GPU's memory.
    rows, _, _ = plan(mempath_cpu_bin, "gh200_quad", "--dtype", "fp16", "--size", "1024")
    assert [(placement(r, "a"), placement(r, "b")) for r in rows] == [(("gpu0", "device"), ("gpu0", "device"))]


def test_the_model_charges_an_operand_read_over_a_link(mempath_cpu_bin: Path) -> None:
    def expected(*args: str) -> float:
        return float(plan(mempath_cpu_bin, "x86_h100", "--dtype", "fp16", "--size", "8192", *args)[1]["expected_s"])
    both_hbm = expected()
    one_pinned = expected("--a-mem", "gpu0", "--b-mem", "numa0", "--b-alloc", "pinned")
    both_pinned = expected("--mem", "numa0", "--alloc", "pinned")
    assert both_hbm < one_pinned < both_pinned
    assert expected("--a-mem", "numa0", "--a-alloc", "pinned") == pytest.approx(one_pinned)  # symmetric


@pytest.mark.parametrize("sizes, want", [("1001", [1000]), ("1000,1001,1007", [1000]), ("2047,64", [2040, 64]),
                                         ("65536", [65536])])
def test_sizes_round_down_to_a_multiple_of_8(mempath_cpu_bin: Path, sizes: str, want: list[int]) -> None:
    rows, _, err = plan(mempath_cpu_bin, "x86_h100", "--size", sizes, "--dtype", "fp32")
    assert [int(r["n"]) for r in rows] == want
    changed = [s for s in sizes.split(",") if int(s) % 8]
    if changed:
        assert err.startswith("mempath: note: --size rounds down to a multiple of 8")
        for s in changed:
            assert f"{s} -> {int(s) // 8 * 8}" in err
    else:
        assert err == ""


def test_matrix_bytes_gives_the_largest_multiple_of_8_that_fits(mempath_cpu_bin: Path) -> None:
    rows, _, _ = plan(mempath_cpu_bin, "x86_h100", "--matrix-bytes", "4GiB")
    size = {"fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
    for r in rows:
        n, b = int(r["n"]), size[r["dtype"]]
        assert n % 8 == 0 and n * n * b <= 4 << 30 < (n + 8) ** 2 * b, r


@pytest.mark.parametrize("args, names", [
    (["--ab", "independent"], "--ab"),
    (["--all", "--ab", "both"], "--ab 'both'"),
    (["--mem", "gpu0", "--a-mem", "numa0"], "--a-mem"),
    (["--alloc", "device", "--b-alloc", "pinned"], "--b-alloc"),
    (["--all", "--b-mem", "numa0"], "--ab independent"),
    (["--all", "--ab", "independent", "--a-alloc", "bogus"], "--a-alloc 'bogus'"),
    (["--all", "--ab", "independent", "--b-mem", "numa7"], "numa7"),
    (["--all", "--ab", "independent", "--a-mem", "gpu0", "--a-alloc", "pinned"], "--a-mem/--a-alloc"),
    (["--size", "63"], "--size '63'"),
    (["--matrix-bytes", "4KiB", "--dtype", "fp64"], "--matrix-bytes 4KiB"),
])
def test_bad_placement_options_are_one_line(mempath_cpu_bin: Path, args: list[str], names: str) -> None:
    proc = run(mempath_cpu_bin, "gemm", *args, "--from", str(FIXTURES / "x86_h100"), check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mempath: error: "), proc.stderr
    assert names in lines[0] and "valid" in lines[0], lines[0]
    assert "PLAN" not in proc.stdout


# ---- on a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
def test_a_in_hbm_and_b_in_pinned_host_memory_is_verified_placed_and_slower(mempath_bin: Path, tmp_path: Path) -> None:
    """The paper's off-diagonal: one operand read over the link (PCIe here, C2C on a GH200)
    already costs the GPU most of its rate; the placement columns say where both were."""
    hbm = summaries(run(mempath_bin, "gemm", "--dtype", "fp16", "--size", "8192", "--reps", "3",
                        "--output", str(tmp_path / "d.h5")).stdout, "gemm")
    out = tmp_path / "ab.h5"
    apart = summaries(run(mempath_bin, "gemm", "--dtype", "fp16", "--size", "8192", "--reps", "3", "--a-mem", "gpu0",
                          "--b-mem", "numa0", "--b-alloc", "pinned", "--output", str(out)).stdout, "gemm")
    assert hbm[0]["status"] == "ok" and apart[0]["status"] == "ok", (hbm, apart)
    line = apart[0]
    assert (line["mem"], line["alloc"], line["b_mem"], line["b_alloc"]) == ("gpu0", "device", "numa0", "pinned")
    assert (line["c_mem"], line["c_alloc"], line["placement"], line["b_placement"]) == ("gpu0", "device", "gpu0", "numa0")
    assert line["placed"] == "1" and line["verified"] == "1"
    assert float(line["median_TFLOPs"]) < float(hbm[0]["median_TFLOPs"]) / 2
    with h5py.File(out) as f:
        cases = f["gemm/cases"]
        assert set(cases) == CASE_COLUMNS | {"case_s"}
        row = {c: cases[c][0] for c in ("a_mem", "a_alloc", "b_mem", "b_alloc", "c_mem", "c_alloc", "via", "b_via",
                                        "placement", "b_placement")}
        assert {k: v.decode() if isinstance(v, bytes) else str(v) for k, v in row.items()} == {
            "a_mem": "gpu0", "a_alloc": "device", "b_mem": "numa0", "b_alloc": "pinned", "c_mem": "gpu0",
            "c_alloc": "device", "via": "local", "b_via": line["b_via"], "placement": "gpu0", "b_placement": "numa0"}
        assert int(cases["m"][0]) == int(cases["n"][0]) == int(cases["k"][0]) == 8192
        assert int(cases["verified"][0]) == 1 and int(cases["placed"][0]) == 1


@pytest.mark.gpu
def test_all_independent_runs_every_readable_pair_and_prints_the_matrix(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "pairs.h5"
    proc = run(mempath_bin, "gemm", "--all", "--ab", "independent", "--dtype", "fp16", "--size", "2048", "--reps", "2",
               "--warmup", "1", "--output", str(out))
    lines = summaries(proc.stdout, "gemm")
    singles = {(l["mem"], l["alloc"]) for l in lines}
    assert len(lines) == len(singles) ** 2 and len(singles) >= 2
    assert any(l["mem"] != l["b_mem"] for l in lines)
    for l in lines:
        if l["status"] == "skipped":
            assert re.match(r"(A|B|A and B): ", l["reason"]) or l["mem"] == l["b_mem"] and l["alloc"] == l["b_alloc"], l
        else:
            assert l["status"] == "ok" and l["verified"] == "1", l
    ran = [l for l in lines if l["status"] == "ok"]
    assert ran and all(l["c_mem"] == "gpu0" and l["c_alloc"] == "device" for l in ran)
    # Device memory stays where it was put; placement columns are filled for both operands.
    for l in ran:
        assert l["placement"] and l["b_placement"], l
        if l["alloc"] == "device":  # on the GPU A was asked on: gpu0, or a peer (a node of 2+ GPUs)
            assert l["placement"] == l["mem"], l
        if l["b_alloc"] == "device":
            assert l["b_placement"] == l["b_mem"], l
        if l["b_alloc"] == "pinned":
            assert l["b_placement"].startswith("numa"), l
    assert "gemm fp16: median TFLOP/s at the largest n, A's memory/allocator (row) x B's (column)" in proc.stdout
    with h5py.File(out) as f:
        assert len(f["gemm/cases/case_id"]) == len(lines)


def test_a_gpu_that_does_not_exist_names_the_nodes_gpus(mempath_cpu_bin: Path) -> None:
    """--gpu takes N or gpuN: its error lists the node's GPUs as memcpy's does (issue 40: one
    wording; it was the integer range), never its CPUs."""
    proc = run(mempath_cpu_bin, "gemm", "--gpu", "9", "--from", str(FIXTURES / "gh200_quad"), check_rc=None)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].endswith("unknown GPU '9'; valid --gpu: gpu0, gpu1, gpu2, gpu3") and "cpu0" not in lines[0], lines[0]
