"""ReFrame application checks (applications.py): their performance variables from real
summary lines (H100, 2026-11-22), where they are listed with which tags, and their
command lines."""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from test_reframe import listed, reframe, CHECKS, CONFIGS

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "reframe_checks"))

import applications  # noqa: E402
from test_reframe_latency import summary  # noqa: E402

STREAM_LINES = [  # a CPU sweep (best at 2 threads) and a GPU case, as mempath stream prints them
    'pu=cpu0 mem=numa0 alloc=numa threads=1 kernel=triad size=268435456 status=ok best_GBps=19.68 median_GBps=19.62',
    'pu=cpu0 mem=numa0 alloc=numa threads=2 kernel=triad size=268435456 status=ok best_GBps=24.20 median_GBps=24.12',
    'pu=gpu0 mem=gpu0 alloc=device threads=134217728 kernel=triad size=1073741824 status=ok best_GBps=3057.63 median_GBps=3053.22',
    'pu=gpu0 mem=numa0 alloc=numa threads=-1 kernel=triad size=1073741824 status=skipped reason="GPU 0 cannot access pageable memory (no ATS/HMM)"',
]
GEMM_LINES = [
    'gpu=0 dtype=fp16 n=8192 mem=gpu0 alloc=device status=ok median_TFLOPs=884.51 best_TFLOPs=898.43 fraction_of_peak=0.826',
    'gpu=0 dtype=fp16 n=8192 mem=numa0 alloc=pinned status=ok median_TFLOPs=5.62 best_TFLOPs=5.70 fraction_of_peak=0.005',
    'gpu=0 dtype=fp16 n=1024 mem=gpu0 alloc=device status=failed reason="timed kernel (27.5 us) is within 10x of an empty launch (38.1 us); raise --size"',
]


def test_stream_variables_take_the_best_thread_count() -> None:
    values = applications.MempathStream.metric.values(summary('stream', STREAM_LINES))
    assert values == {"triad_GBps_cpu0_numa0_numa": (24.20, "GB/s"),
                      "triad_GBps_gpu0_gpu0_device": (3057.63, "GB/s")}


def test_gemm_variables_per_type_placement_and_size() -> None:
    values = applications.MempathGemm.metric.values(summary('gemm', GEMM_LINES))
    assert values == {"tflops_fp16_gpu0_device_n8192": (884.51, "TFLOP/s"),
                      "tflops_fp16_numa0_pinned_n8192": (5.62, "TFLOP/s")}


def test_application_checks_are_listed_with_their_tags() -> None:
    assert {"MempathStream", "MempathStreamSweep"} <= set(listed("alps.py", "--system", "daint:normal"))
    assert set(listed("generic.py", "--tag", "acceptance")) >= {"MempathStream"}
    assert "MempathStreamSweep" not in set(listed("generic.py", "--tag", "acceptance"))
    alps = set(listed("alps.py", "--system", "daint:normal"))
    assert {"MempathGemm", "MempathGemmPlacement"} <= alps
    assert not {"MempathGemm", "MempathGemmPlacement"} & set(listed("ci.py", "--system", "ci"))  # no GPUs


def test_stream_command_lines(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    out = reframe("-C", str(CONFIGS / "generic.py"), "-c", str(CHECKS / "applications.py"), "--dry-run",
                  "--prefix", str(tmp_path / "rfm"), "--report-file", str(report), "-S", "size=2GiB")
    assert out.returncode == 0, out.stdout + out.stderr
    commands = {}
    for tc in json.loads(report.read_text())["runs"][0]["testcases"]:
        if tc["name"].startswith("MempathStream"):
            script = Path(tc["stagedir"]) / "rfm_job.sh"
            line = next(l for l in script.read_text().splitlines() if "/mempath " in l)
            commands[tc["name"]] = shlex.split(line)[1:]
    assert commands == {
        "MempathStream": ["stream", "--all", "--threads", "all", "--alloc", "numa,device", "--size", "2GiB",
                          "--output", "stream.h5"],
        "MempathStreamSweep": ["stream", "--all", "--size", "2GiB", "--output", "stream.h5"],
    }
