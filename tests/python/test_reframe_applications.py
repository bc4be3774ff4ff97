"""ReFrame application checks (applications.py): their performance variables (one per
class of path, issue 13) from summary lines as the binary prints them (H100, 2026-11-22,
with `via`) and from the plans of a quad GH200, where they are listed with which tags,
and their command lines."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from conftest import planned_summary_lines
from test_reframe import CHECKS, QUAD_GH200, generic_variant, listed, reframe

import applications
import mempath_summary

ALLOCS = ("system", "numa", "pinned", "registered", "managed", "device")

STREAM_LINES = [  # CPU sweeps (cpu0 best at 2 threads), a remote node, a GPU case, as mempath stream prints them
    'pu=cpu0 mem=numa0 alloc=numa via=local threads=1 kernel=triad size=268435456 status=ok best_GBps=19.68 median_GBps=19.62',
    'pu=cpu0 mem=numa0 alloc=numa via=local threads=2 kernel=triad size=268435456 status=ok best_GBps=24.20 median_GBps=24.12',
    'pu=cpu0 mem=numa0 alloc=numa via=local threads=2 kernel=copy size=268435456 status=ok best_GBps=22.10 median_GBps=22.00',
    'pu=cpu0 mem=numa0 alloc=numa via=local threads=2 kernel=scale size=268435456 status=ok best_GBps=21.00 median_GBps=20.90',
    'pu=cpu0 mem=numa0 alloc=numa via=local threads=2 kernel=dot size=268435456 status=ok best_GBps=1.00 median_GBps=0.90',
    'pu=cpu1 mem=numa1 alloc=numa via=local threads=2 kernel=triad size=268435456 status=ok best_GBps=23.50 median_GBps=23.40',
    'pu=cpu0 mem=numa1 alloc=numa via=interconnect threads=2 kernel=triad size=268435456 status=ok best_GBps=11.30 median_GBps=11.20',
    'pu=gpu0 mem=gpu0 alloc=device via=local threads=134217728 kernel=triad size=1073741824 status=ok best_GBps=3057.63 median_GBps=3053.22',
    'pu=gpu0 mem=numa0 alloc=numa via=c2c threads=-1 kernel=triad size=1073741824 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
GEMM_LINES = [
    'gpu=0 dtype=fp16 n=8192 mem=gpu0 alloc=device via=local status=ok median_TFLOPs=884.51 best_TFLOPs=898.43 fraction_of_peak=0.826',
    'gpu=1 dtype=fp16 n=8192 mem=gpu1 alloc=device via=local status=ok median_TFLOPs=870.00 best_TFLOPs=880.00 fraction_of_peak=0.813',
    'gpu=0 dtype=fp16 n=1024 mem=gpu0 alloc=device via=local status=failed reason="timed kernel (27.5 us) is within 10x of an empty launch (38.1 us); raise --size"',
    'gpu=0 dtype=fp16 n=1024 mem=gpu1 alloc=device via=nvlink status=ok median_TFLOPs=640.00 best_TFLOPs=650.00 fraction_of_peak=0.598',
    'gpu=0 dtype=fp16 n=8192 mem=gpu1 alloc=device via=nvlink status=ok median_TFLOPs=600.00 best_TFLOPs=610.00 fraction_of_peak=0.561',
    'gpu=0 dtype=fp16 n=8192 mem=numa0 alloc=pinned via=c2c status=ok median_TFLOPs=5.62 best_TFLOPs=5.70 fraction_of_peak=0.005',
    'gpu=0 dtype=fp16 n=8192 mem=numa0 alloc=registered via=c2c status=ok median_TFLOPs=5.40 best_TFLOPs=5.50 fraction_of_peak=0.005',
    'gpu=0 dtype=fp64 n=8192 mem=numa0 alloc=numa via=c2c status=ok median_TFLOPs=3.10 best_TFLOPs=3.20 fraction_of_peak=0.046',
]


def summary(bench: str, lines: list[str]) -> list[mempath_summary.SummaryLine]:
    """`lines` (the fields of summary lines) as the one parser reads `MEMPATH bench ...`."""
    return mempath_summary.parse_lines(f'MEMPATH {bench} {line}' for line in lines)


def test_stream_classes_report_copy_and_triad_of_their_slowest_path_at_its_best_thread_count() -> None:
    """cpu0's triad counts at 2 threads (24.20, not 19.68 at 1), the class takes cpu1's
    23.50; scale and dot stay in stream.h5; a skipped case gives no class."""
    values = applications.MempathStream.metric.values(summary('stream', STREAM_LINES))
    assert values == {"copy_GBps_cpu_numa_local_numa_min": (22.10, "GB/s"),
                      "triad_GBps_cpu_numa_local_numa_min": (23.50, "GB/s"),
                      "triad_GBps_cpu_numa_interconnect_numa_min": (11.30, "GB/s"),
                      "triad_GBps_gpu_gpu_local_device_min": (3057.63, "GB/s")}


@pytest.mark.parametrize("alloc", ALLOCS)
def test_stream_sweep_checks_share_the_stream_classes(alloc: str) -> None:
    check = applications.MempathStreamSweep
    assert check.metric == applications.MempathStream.metric
    values = check.metric.values(summary('stream', [l.replace("alloc=numa", f"alloc={alloc}")
                                                    for l in STREAM_LINES if "alloc=numa" in l]))
    assert values == {f"copy_GBps_cpu_numa_local_{alloc}_min": (22.10, "GB/s"),
                      f"triad_GBps_cpu_numa_local_{alloc}_min": (23.50, "GB/s"),
                      f"triad_GBps_cpu_numa_interconnect_{alloc}_min": (11.30, "GB/s")}


def test_gemm_classes_take_the_largest_order_and_allocator_classes() -> None:
    """gpu1's HBM over NVLink counts at n=8192 (600, not the better 640 at 1024); pinned and
    registered are one class (`pagelocked`), numa is `pageable`; the slowest GPU wins."""
    values = applications.MempathGemm.metric.values(summary('gemm', GEMM_LINES))
    assert values == {"tflops_fp16_gpu_local_device_min": (870.00, "TFLOP/s"),
                      "tflops_fp16_gpu_nvlink_device_min": (600.00, "TFLOP/s"),
                      "tflops_fp16_numa_c2c_pagelocked_min": (5.40, "TFLOP/s"),
                      "tflops_fp64_numa_c2c_pageable_min": (3.10, "TFLOP/s")}
    assert applications.MempathGemmPlacement.metric == applications.MempathGemm.metric


def test_gemm_classes_leave_out_pairs_of_placements() -> None:
    """`--ab independent` lines (issue 20: `mem` is A's, `b_mem` B's) are no path of one
    placement: a slow pair must not become the `gpu local device` class's minimum. Lines
    that say B shares A's placement count, as do older lines without `b_mem`."""
    pairs = [
        'gpu=0 dtype=fp16 n=8192 mem=gpu0 alloc=device via=local b_mem=numa0 b_alloc=pinned b_via=c2c status=ok median_TFLOPs=9.00',
        'gpu=0 dtype=fp16 n=8192 mem=gpu0 alloc=device via=local b_mem=gpu0 b_alloc=managed b_via=local status=ok median_TFLOPs=1.00',
        'gpu=1 dtype=fp16 n=8192 mem=gpu1 alloc=device via=local b_mem=gpu1 b_alloc=device b_via=local status=ok median_TFLOPs=860.00',
    ]
    values = applications.MempathGemm.metric.values(summary('gemm', GEMM_LINES + pairs))
    assert values["tflops_fp16_gpu_local_device_min"] == (860.00, "TFLOP/s")
    assert values == {**applications.MempathGemm.metric.values(summary('gemm', GEMM_LINES)),
                      "tflops_fp16_gpu_local_device_min": (860.00, "TFLOP/s")}


# ---- a quad GH200: each check reports a few classes (issue 13) ----------------------------

STREAM_VAR = re.compile(r"(?P<kernel>copy|triad)_GBps_(?P<pu>cpus|cpu|gpu)_(?P<mem>numa|gpu|interleave)"
                        r"_(?P<via>[a-z0-9_]+?)_(?P<alloc>system|numa|pinned|registered|managed|device)_min")
GEMM_VAR = re.compile(r"tflops_(?P<dtype>fp16|fp64)_(?P<mem>numa|gpu)_(?P<via>[a-z0-9_]+?)"
                      r"_(?P<alloc>pageable|pagelocked|managed|device)_min")
#: (check, the command's arguments after the subcommand, the allocators its names may carry)
QUAD_CHECKS = [
    ("MempathStream", ("stream", "--all", "--threads", "all", "--alloc", "numa,device"), {"numa", "device"}),
    *((f"MempathStreamSweep %alloc={a}", ("stream", "--all", "--alloc", a), {a}) for a in ALLOCS),
    ("MempathGemm", ("gemm", "--size", "8192", "--dtype", "fp16,fp64"), {"device"}),
    ("MempathGemmPlacement", ("gemm", "--all", "--dtype", "fp16,fp64"),
     {"pageable", "pagelocked", "managed", "device"}),
]


def kind(name: str) -> str:
    """`gpu3` -> `gpu`, `numa12` -> `numa`; `cpus` and `interleave` stay."""
    return re.sub(r"\d+$", "", name)


def class_minima(lines: list[mempath_summary.SummaryLine]) -> dict[str, float]:
    """The classes' values worked out by hand from `ok` lines: STREAM (copy and triad) at
    each path's best thread count, gemm at each path's largest order, then each class's
    slowest path."""
    paths: dict[tuple, tuple[float, float, str]] = {}     # path -> (rank, value, class)
    for s in lines:
        if s.status != "ok":
            continue
        via = s["via"].replace("+", "_")
        if s.bench == "stream":
            if s["kernel"] not in ("copy", "triad"):
                continue
            path, value = (s["kernel"], s["pu"], s["mem"], s["alloc"]), s.number("best_GBps")
            rank, pu, mem = value, kind(s["pu"]), kind(s["mem"])
            name = f'{s["kernel"]}_GBps_{pu}_{mem}_{via}_{s["alloc"]}_min'
        else:
            path, value = (s["gpu"], s["dtype"], s["mem"], s["alloc"]), s.number("median_TFLOPs")
            rank, mem, alloc = int(s["n"]), kind(s["mem"]), mempath_summary.ALLOC_CLASS[s["alloc"]]
            name = f'tflops_{s["dtype"]}_{mem}_{via}_{alloc}_min'
        if path not in paths or rank >= paths[path][0]:
            paths[path] = (rank, value, name)
    out: dict[str, float] = {}
    for _, value, name in paths.values():
        out[name] = min(value, out.get(name, value))
    return out


@pytest.mark.parametrize("check, command, allocs", QUAD_CHECKS, ids=[c[0] for c in QUAD_CHECKS])
def test_a_quad_gh200_application_check_reports_at_most_30_variables(
        mempath_cpu_bin: Path, check: str, command: tuple[str, ...], allocs: set[str]) -> None:
    lines = planned_summary_lines(mempath_cpu_bin, QUAD_GH200, *command)
    assert len(lines) >= 2  # MempathGemm: one order (--size 8192) of two dtypes
    parsed = mempath_summary.parse_lines(lines, command[0])
    metric = getattr(applications, check.split(" ")[0]).metric
    values = metric.values(parsed)
    assert 1 <= len(values) <= mempath_summary.MAX_PERF_VARS, sorted(values)
    pattern = STREAM_VAR if command[0] == "stream" else GEMM_VAR
    names = {name: pattern.fullmatch(name) for name in values}
    assert all(names.values()), sorted(n for n, m in names.items() if not m)
    assert {m["alloc"] for m in names.values()} == allocs
    # Each class is its slowest path (a path: STREAM's best thread count, gemm's largest order).
    assert values == {name: (value, metric.unit) for name, value in class_minima(parsed).items()}
    if command[0] == "stream":
        assert {m["kernel"] for m in names.values()} == {"copy", "triad"}
    else:
        assert {m["dtype"] for m in names.values()} == {"fp16", "fp64"}
    if check == "MempathGemm":          # operands in HBM: each GPU's own and its peers'
        assert sorted(values) == ["tflops_fp16_gpu_local_device_min", "tflops_fp64_gpu_local_device_min"]


def test_a_quad_gh200_gemm_run_of_pairs_gives_the_classes_of_its_shared_placements(mempath_cpu_bin: Path) -> None:
    """`--all --ab independent` in extra_options: the diagonal's classes, the pairs left out."""
    metric = applications.MempathGemmPlacement.metric
    pairs = mempath_summary.parse_lines(planned_summary_lines(
        mempath_cpu_bin, QUAD_GH200, "gemm", "--all", "--ab", "independent", "--dtype", "fp16,fp64", "--size", "8192"))
    diagonal = [s for s in pairs if (s["mem"], s["alloc"]) == (s["b_mem"], s["b_alloc"])]
    assert len(diagonal) < len(pairs) / 10
    assert metric.values(pairs) == {name: (value, metric.unit) for name, value in class_minima(diagonal).items()}
    shared = mempath_summary.parse_lines(planned_summary_lines(
        mempath_cpu_bin, QUAD_GH200, "gemm", "--all", "--dtype", "fp16,fp64", "--size", "8192"))
    assert set(metric.values(pairs)) == set(metric.values(shared))


# ---- listings and command lines --------------------------------------------------------------

def test_application_checks_are_listed_with_their_tags() -> None:
    alps = set(listed("alps.py", "--system", "daint:normal"))
    assert {"MempathStream", *(f"MempathStreamSweep %alloc={a}" for a in ALLOCS)} <= alps
    assert "MempathStreamSweep" not in alps          # split per allocator, no unsplit check
    acceptance = set(listed("generic.py", "--tag", "acceptance"))
    assert "MempathStream" in acceptance
    assert not {n for n in acceptance if n.startswith("MempathStreamSweep")}
    assert {"MempathGemm", "MempathGemmPlacement"} <= alps
    ci = set(listed("ci.py", "--system", "ci"))  # no GPUs: no gemm, STREAM's host allocators only
    assert not {"MempathGemm", "MempathGemmPlacement"} & ci
    assert {n for n in ci if n.startswith("MempathStream")} == {
        "MempathStream", "MempathStreamSweep %alloc=system", "MempathStreamSweep %alloc=numa"}


def test_stream_command_lines(tmp_path: Path) -> None:
    """The acceptance check's allocators in its row; each sweep check its own `--alloc`
    after the case options."""
    config = generic_variant(tmp_path / "generic_gpu.py", ["gpu", "nvgpu"])
    report = tmp_path / "report.json"
    out = reframe("-C", str(config), "-c", str(CHECKS / "applications.py"), "--dry-run",
                  "--prefix", str(tmp_path / "rfm"), "--report-file", str(report),
                  "-n", "MempathStream", "-S", "size=2GiB")
    assert out.returncode == 0, out.stdout + out.stderr
    commands = {}
    for tc in json.loads(report.read_text())["runs"][0]["testcases"]:
        if tc["name"].startswith("MempathStream"):
            script = Path(tc["stagedir"]) / "rfm_job.sh"
            line = next(l for l in script.read_text().splitlines() if "/mempath " in l)
            commands[tc["name"]] = shlex.split(line)[1:]
    assert commands == {
        "MempathStream": ["stream", "--all", "--threads", "all", "--alloc", "numa,device",
                          "--mem", "local-host,local-hbm,peer-host,peer-hbm,interleave", "--size", "2GiB",
                          "--output", "stream.h5"],
        **{f"MempathStreamSweep %alloc={a}": ["stream", "--all", "--alloc", a,
                                             "--mem", "local-host,local-hbm,peer-host,peer-hbm,interleave",
                                             "--size", "2GiB", "--output", "stream.h5"] for a in ALLOCS},
    }
