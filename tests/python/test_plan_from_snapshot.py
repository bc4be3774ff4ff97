"""Every planner plans from a saved snapshot (`--from DIR`, issue 12): chase, stream,
pingpong, gemm, um and allocmatrix used to measure the live node only. A plan runs nothing,
writes no file and needs no GPU (the CPU-only build plans a GH200's GPU cases)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLAN = re.compile(r"^PLAN (\w+) (.*) status=(planned|skipped)(?: reason=\"(.*)\")?$")


def plan(binary: Path, *args: str, cwd: Path) -> list[dict[str, str]]:
    proc = run(binary, *args)
    rows = []
    *lines, expect = proc.stdout.splitlines()
    assert expect.startswith(f"EXPECT {args[0]} "), expect  # the plan's modelled duration, last
    for line in lines:
        m = PLAN.match(line)
        assert m, line
        row = dict(kv.split("=", 1) for kv in m.group(2).split())
        row.update(command=m.group(1), status=m.group(3), reason=m.group(4) or "")
        rows.append(row)
    assert not list(cwd.glob("*.h5"))
    return rows


@pytest.mark.parametrize("command", [["chase", "--all"], ["stream", "--all"], ["pingpong"],
                                     ["gemm", "--all", "--dtype", "fp16"], ["um"], ["allocmatrix", "--mem", "all"]])
def test_each_planner_plans_a_quad_gh200_without_running(mempath_cpu_bin: Path, tmp_path: Path,
                                                         command: list[str], monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = plan(mempath_cpu_bin, *command, "--from", str(FIXTURES / "gh200_quad"), cwd=tmp_path)
    assert rows and {r["command"] for r in rows} == {command[0]}
    assert any(r["status"] == "planned" for r in rows)


def test_chase_plans_grace_to_hbm_over_c2c(mempath_cpu_bin: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = plan(mempath_cpu_bin, "chase", "--all", "--from", str(FIXTURES / "gh200_quad"), cwd=tmp_path)
    via = {(r["pu"], r["mem"]): r["via"] for r in rows}
    assert via[("cpu0", "numa4")] == "c2c"
    # Grace to another superchip's HBM: the Grace link, then that superchip's C2C.
    assert via[("cpu1", "numa4")] == "interconnect+c2c"


def test_gemm_plan_skips_pageable_operands_without_ats(mempath_cpu_bin: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = plan(mempath_cpu_bin, "gemm", "--all", "--dtype", "fp16", "--from", str(FIXTURES / "x86_h100"), cwd=tmp_path)
    system = [r for r in rows if r["alloc"] == "system"]
    assert system and all(r["status"] == "skipped" and "ATS" in r["reason"] for r in system)
    assert any(r["alloc"] == "device" and r["status"] == "planned" for r in rows)


# --- every PLAN line names its case (issue 19) ---------------------------------------------

#: Invocations that together reach every kind of case each planner makes.
PLANS = [["bw", "--all"], ["chase", "--all", "--alloc", "all", "--pattern", "random,sequential"],
         ["chase", "--all", "--max-size", "64KiB"], ["stream", "--all"], ["stream", "--all", "--alloc", "numa"],
         ["pingpong", "--alloc", "system,numa,pinned,registered,managed,device"], ["atomics", "--all"],
         ["gemm", "--all"], ["gemm", "--all", "--ab", "independent", "--size", "1024"], ["um"], ["allocmatrix", "--mem", "all"], ["memcpy"], ["memcpy", "--sweep"],
         ["memcpy", "--latency"], ["memcpy", "--all-gpus"], ["memcpy", "--direction", "d2d,d2d-bidir"]]
#: What tells two cases of a command apart, where it applies (memcpy: dst_gpu on GPU<->GPU).
KEYS = {"bw": {"op", "pu", "mem", "dst", "alloc", "kernel", "threads", "size", "via"},
        "chase": {"pu", "cpu", "mem", "alloc", "via", "pattern", "size", "line", "locality", "huge"},
        "stream": {"pu", "mem", "alloc", "via", "threads", "size"},
        "pingpong": {"a", "b", "a_cpu", "b_cpu", "mem", "alloc", "via"},
        "atomics": {"pu", "mem", "alloc", "via", "scope", "counters", "ops"},
        "gemm": {"gpu", "dtype", "n", "mem", "alloc", "via", "b_mem", "b_alloc", "b_via", "c_mem", "c_alloc"},
        "um": {"exp", "alloc", "gpu", "mem", "size"},
        "allocmatrix": {"gpu", "src_alloc", "src_mem", "dst_alloc", "dst_mem", "size"},
        "memcpy": {"mode", "gpu", "host_numa", "cpu_numa", "alloc", "direction", "engine", "size", "via", "timing"}}
SNAPSHOTS = sorted(p.name for p in FIXTURES.iterdir() if (p / "sys").is_dir())
#: Commands that measure GPUs only: on a node without one they stop in one line, exit 2.
GPU_COMMANDS = {"atomics", "gemm", "um", "allocmatrix", "memcpy"}


@pytest.mark.parametrize("fixture", SNAPSHOTS)
def test_no_two_plan_lines_of_a_command_are_the_same_case(mempath_cpu_bin: Path, tmp_path: Path,
                                                           fixture: str, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    gpus = "gpu " in (FIXTURES / fixture / "gpus.txt").read_text()
    for command in PLANS:
        if command[0] in GPU_COMMANDS and not gpus:  # a CPU-only node (grace_numa_fake)
            proc = run(mempath_cpu_bin, *command, "--from", str(FIXTURES / fixture), check_rc=2)
            assert len(proc.stderr.strip().splitlines()) == 1 and "GPU" in proc.stderr, proc.stderr
            continue
        rows = plan(mempath_cpu_bin, *command, "--from", str(FIXTURES / fixture), cwd=tmp_path)
        assert rows, command
        cases = [tuple((k, v) for k, v in r.items() if k not in ("status", "reason")) for r in rows]
        assert len(cases) == len(set(cases)), (command, [c for c in cases if cases.count(c) > 1][:2])
        for row in rows:
            assert KEYS[command[0]] <= set(row), (command, KEYS[command[0]] - set(row))
            if row.get("direction", "").startswith("d2d"):
                assert "dst_gpu" in row, row
            if row.get("engine") == "staged":
                assert "chunk" in row, row
        # A skipped case runs at no thread count: sweeping it only repeats the skip.
        skipped = [tuple((k, v) for k, v in c if k != "threads")
                   for c, r in zip(cases, rows) if r["status"] == "skipped"]
        assert len(skipped) == len(set(skipped)), (command, [s for s in skipped if skipped.count(s) > 1][:1])
