"""`mempath atomics` (docs/cli.md): planning from the reference topologies, bad input,
the CPU-only build, the report section on a written file, and (GPU) real runs whose
counters are checked, including a fault the check must catch."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import h5py
import pytest

from analysis.results.io import load_runs
from analysis.report.write import write_report
from analysis.report import atomics as atomics_section
from conftest import REPO, run, summaries
from h5fixtures import table, topology, write_run

FIXTURES = REPO / "tests" / "fixtures"
# /atomics/cases as src/apps/atomics_command.cpp writes it (kCaseColumns), docs/schema.md.
CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "pu": str, "mem": str, "alloc": str, "via": str, "scope": str, "counters": int,
    "threads": int, "ops_per_thread": int, "ops": int, "status": str, "reason": str, "reps": int,
    "median_Mops": float, "min_Mops": float, "max_Mops": float, "median_time_s": float,
    "verified": int, "host_native_atomics": int, "placement": str,
}
SAMPLE_COLUMNS: dict[str, type] = {"case_id": int, "rep": int, "time_s": float, "Mops": float}


def plan(binary: Path, fixture: str, *args: str) -> list[dict[str, str]]:
    out = run(binary, "atomics", "--from", str(FIXTURES / fixture), *args).stdout
    return [dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line)) for line in out.splitlines() if line.startswith("PLAN atomics ")]


def test_default_plan_is_each_gpu_on_its_memory_and_the_host(mempath_cpu_bin: Path) -> None:
    cases = plan(mempath_cpu_bin, "x86_h100")
    assert [(c["pu"], c["mem"], c["alloc"], c["via"], c["status"]) for c in cases] == [
        ("gpu0", "numa0", "registered", "pcie", "planned"), ("gpu0", "gpu0", "device", "local", "planned")]
    assert {c["scope"] for c in cases} == {"device"}


def test_all_skips_pageable_memory_without_ats_and_runs_it_with_ats(mempath_cpu_bin: Path) -> None:
    x86 = {(c["mem"], c["alloc"]): c for c in plan(mempath_cpu_bin, "x86_h100", "--all", "--scope", "system")}
    assert x86[("numa0", "system")]["status"] == "skipped" and "ATS" in x86[("numa0", "system")]["reason"]
    assert x86[("numa0", "pinned")]["status"] == "planned"
    assert ("numa0", "device") not in x86  # cudaMalloc memory is no NUMA node: not a case at all
    assert {c["scope"] for c in x86.values()} == {"system"}
    gh = {(c["mem"], c["alloc"]): c for c in plan(mempath_cpu_bin, "gh200_single", "--all")}
    assert gh[("numa0", "system")]["status"] == "planned" and gh[("numa0", "system")]["via"] == "c2c"


def test_filters_select_gpus_memories_and_allocators(mempath_cpu_bin: Path) -> None:
    cases = plan(mempath_cpu_bin, "x86_2s_4gpu", "--pu", "gpu2", "--mem", "gpu0,numa1", "--alloc", "managed")
    assert {(c["pu"], c["mem"], c["alloc"]) for c in cases} == {("gpu2", "gpu0", "managed"), ("gpu2", "numa1", "managed")}


@pytest.mark.parametrize("args", [["--pu", "cpu0"], ["--pu", "gpu9"], ["--mem", "numa9"], ["--alloc", "malloc"],
                                  ["--scope", "global"], ["--counters", "0"], ["--ops", "0"], ["--reps", "0"],
                                  ["--warmup", "-1"], ["--bogus"]])
def test_bad_input_is_one_line_and_exit_2(mempath_cpu_bin: Path, args: list[str]) -> None:
    proc = run(mempath_cpu_bin, "atomics", "--from", str(FIXTURES / "x86_h100"), *args, check_rc=2)
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("mempath: error: ") and "valid" in proc.stderr, proc.stderr


def test_a_cpu_only_build_says_atomics_needs_cuda(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.h5"
    proc = run(mempath_cpu_bin, "atomics", "--output", str(out), check_rc=2)
    assert len(proc.stderr.strip().splitlines()) == 1 and "no CUDA support" in proc.stderr, proc.stderr
    assert not out.exists()


def test_the_command_is_in_the_usage_and_has_help(mempath_cpu_bin: Path) -> None:
    assert re.search(r"^  atomics +atomic fetch-and-add", run(mempath_cpu_bin, "--help").stdout, re.M)
    text = run(mempath_cpu_bin, "atomics", "--help").stdout
    for option in ("--pu", "--mem", "--alloc", "--all", "--scope", "--counters", "--ops", "--reps", "--warmup"):
        assert option in text, option


def atomics_case(**values) -> dict:
    row = {"pu": "gpu0", "mem": "gpu0", "alloc": "device", "via": "local", "scope": "device", "counters": 8448,
           "threads": 270336, "ops_per_thread": 64, "ops": 270336 * 64, "status": "ok", "reason": "", "reps": 3,
           "median_Mops": 123456.78, "min_Mops": 120000.0, "max_Mops": 125000.0, "median_time_s": 1.4e-4,
           "verified": 1, "host_native_atomics": 0, "placement": "gpu0"}
    return {**row, **values}


def write_atomics(path: Path, cases: list[dict]) -> Path:
    rows = [{"case_id": i, **c} for i, c in enumerate(cases)]
    samples = [{"case_id": r["case_id"], "rep": k, "time_s": r["median_time_s"], "Mops": r["median_Mops"]}
               for r in rows if r["status"] == "ok" for k in range(3)]
    return write_run(path, [], topology=topology("x86_h100"), bw=False,
                     extra={"atomics/cases": table(CASE_COLUMNS, rows), "atomics/samples": table(SAMPLE_COLUMNS, samples)})


def test_the_report_section_tables_every_case_and_flags_non_native_host_atomics(tmp_path: Path) -> None:
    path = write_atomics(tmp_path / "a.h5", [
        atomics_case(),
        atomics_case(mem="numa0", alloc="pinned", via="pcie", counters=1, median_Mops=42.5),
        atomics_case(mem="numa0", alloc="system", via="pcie", status="skipped", median_Mops=float("nan"), verified=0,
                     host_native_atomics=-1, reason="GPU 0 cannot access pageable memory (no ATS/HMM)")])
    runs = load_runs([path])
    write_report(runs, tmp_path / "out")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Atomic throughput" in summary
    assert "| gpu0 | gpu0 | device | local | device | 8448 | 123456.78 | no | yes | ok |" in summary
    assert "| gpu0 | numa0 | pinned | pcie | device | 1 | 42.50 | no | yes | ok |" in summary
    assert "| gpu0 | numa0 | system | pcie | device | 8448 |  |  | no | skipped: GPU 0 cannot access pageable memory (no ATS/HMM) |" in summary
    assert "hostNativeAtomicSupported = 0" in summary


def test_the_section_is_silent_without_atomics_and_quiet_on_native_gpus(tmp_path: Path) -> None:
    from analysis.render.items import Context
    empty = load_runs([write_run(tmp_path / "bw.h5", [], topology=topology("x86_h100"))])
    assert atomics_section.lines(empty.table("atomics/cases")) == []
    native = load_runs([write_atomics(tmp_path / "n.h5", [atomics_case(host_native_atomics=1, mem="numa0", via="c2c")])])
    part = atomics_section._section(Context(native, tmp_path, {}, {}, None, None, 0, False))
    assert not any("hostNativeAtomicSupported" in line for line in part.lines)
    assert any("| c2c |" in line and "| yes | yes | ok |" in line for line in part.lines), part.lines


# ---- on a GPU node (the lead runs these) ----------------------------------------------------

def atomics_run(binary: Path, out: Path, *args: str, check_rc: int = 0, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(binary), "atomics", "--output", str(out), *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})
    assert proc.returncode == check_rc, proc.stderr + proc.stdout
    return proc


@pytest.mark.gpu
@pytest.mark.parametrize("args", [[], ["--counters", "1"], ["--scope", "system"]], ids=["per_warp", "one", "system"])
def test_gpu_atomics_are_verified_and_positive(mempath_bin: Path, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "a.h5"
    lines = summaries(atomics_run(mempath_bin, out, "--pu", "gpu0", "--reps", "3", *args).stdout, "atomics")
    assert any(l["status"] == "ok" for l in lines) and all(l["status"] in ("ok", "skipped") for l in lines), lines
    with h5py.File(out) as f:
        cases = {k: f["atomics/cases"][k][()] for k in f["atomics/cases"]}
        assert set(cases) == set(CASE_COLUMNS) | {"case_s"}  # case_s: every family's, the driver's
        ok = cases["status"] == b"ok"
        assert (cases["verified"][ok] == 1).all() and (cases["median_Mops"][ok] > 0).all()
        assert set(cases["host_native_atomics"][ok]) <= {0, 1}
        samples = f["atomics/samples"]
        assert len(samples["case_id"]) == 3 * ok.sum()
    for l in lines:
        if l["status"] == "ok":
            assert float(l["median_Mops"]) > 0 and l["host_native_atomics"] in ("0", "1"), l


@pytest.mark.gpu
def test_one_counter_contends_more_than_one_per_warp(mempath_bin: Path, tmp_path: Path) -> None:
    spread = summaries(atomics_run(mempath_bin, tmp_path / "s.h5", "--pu", "gpu0", "--mem", "gpu0").stdout, "atomics")
    one = summaries(atomics_run(mempath_bin, tmp_path / "o.h5", "--pu", "gpu0", "--mem", "gpu0", "--counters", "1",
                                "--ops", "16").stdout, "atomics")
    assert float(one[0]["median_Mops"]) < float(spread[0]["median_Mops"]), (one, spread)


@pytest.mark.gpu
def test_an_extra_increment_fails_the_count_check(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.h5"
    proc = atomics_run(mempath_bin, out, "--pu", "gpu0", "--mem", "gpu0", "--reps", "2", check_rc=1,
                       env={"MEMPATH_TEST_EXTRA_ATOMIC": "1"})
    lines = summaries(proc.stdout, "atomics")
    assert lines[0]["status"] == "failed" and "1 of" in lines[0]["reason"], lines
    with h5py.File(out) as f:
        assert f["atomics/cases"]["verified"][0] == 0


def test_schema_documents_every_column_and_the_reframe_row_reads_its_summary_line() -> None:
    import latency
    import mempath_summary
    schema = (REPO / "docs" / "schema.md").read_text()
    part = schema[schema.index("## `/atomics/cases`"):schema.index("## `/llm/cases`")]
    for name in [*CASE_COLUMNS, *SAMPLE_COLUMNS]:
        assert f"`{name}`" in part, name
    line = next(l for l in part.splitlines() if l.startswith("MEMPATH atomics "))
    lines = mempath_summary.parse_lines([line], "atomics")
    # The class of the path (any GPU, host memory over PCIe), its slowest member.
    assert latency.MempathAtomics.metric.values(lines) == {
        "atomics_Mops_gpu_numa_pcie_pinned_device_min": (812.44, "Mop/s")}
