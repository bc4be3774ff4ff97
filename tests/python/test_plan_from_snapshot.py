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
    assert via[("cpu1", "numa4")] == "c2c+interconnect"


def test_gemm_plan_skips_pageable_operands_without_ats(mempath_cpu_bin: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = plan(mempath_cpu_bin, "gemm", "--all", "--dtype", "fp16", "--from", str(FIXTURES / "x86_h100"), cwd=tmp_path)
    system = [r for r in rows if r["alloc"] == "system"]
    assert system and all(r["status"] == "skipped" and "ATS" in r["reason"] for r in system)
    assert any(r["alloc"] == "device" and r["status"] == "planned" for r in rows)
