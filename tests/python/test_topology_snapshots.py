"""`mempath topo --from` on a snapshot that `mempath topo --save` wrote on a real node: the
H100 loan machine (2026-11-22), as opposed to the fixtures written from documentation."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run

SAVED = Path(__file__).resolve().parents[1] / "fixtures" / "h100_loan_saved"


def test_saved_h100_snapshot_enumerates_its_paths(mempath_cpu_bin: Path) -> None:
    doc = json.loads(run(mempath_cpu_bin, "topo", "--from", str(SAVED), "--json").stdout)
    assert doc["source"] == "snapshot"
    pus = {p["name"]: p for p in doc["processors"]}
    assert set(pus) == {"cpu0", "gpu0"}
    assert pus["cpu0"]["cores"] == 16
    gpu = pus["gpu0"]
    assert gpu["sm_count"] == 132 and gpu["link"] == {"type": "pcie", "gen": 5, "width": 16}
    assert not gpu["pageable_access"]
    paths = {(p["pu"], p["mem"]): p for p in doc["paths"]}
    host = paths[("gpu0", "numa0")]
    assert host["via"] == "pcie" and {"pinned", "registered"} <= set(host["allocs"])
    reasons = {s["alloc"]: s["reason"] for s in host["skipped"]}
    assert "no ATS/HMM" in reasons["system"] and "no ATS/HMM" in reasons["numa"]
    assert paths[("gpu0", "gpu0")]["via"] == "local"


def test_saved_snapshot_plans_the_cases_the_device_ran(mempath_cpu_bin: Path) -> None:
    # The same `bw --all` plan as on the device (59 cases in docs/results/).
    header, *lines = run(mempath_cpu_bin, "list", "--from", str(SAVED)).stdout.splitlines()
    assert len(lines) == 59
    status = header.split().index("status")
    assert sum(line.split()[status] == "skipped" for line in lines) == 6


# Issue #12 (bad input): a broken snapshot is refused with exit 2 and one stderr line that
# names the file and what is valid, instead of exit 0 with an empty node.
GH200_SINGLE = SAVED.parent / "gh200_single"
NODE = "sys/devices/system/node"
BROKEN: dict[str, tuple[str, str | None, str]] = {
    # name: (file below the snapshot, new content or None to delete it, named in the error)
    "garbage cpulist": (f"{NODE}/node0/cpulist", "zero to seventy-one\n", "node0/cpulist"),
    "reversed range": (f"{NODE}/node0/cpulist", "71-0\n", "node0/cpulist"),
    "huge cpulist": (f"{NODE}/node0/cpulist", "0-99999999\n", "node0/cpulist"),
    "huge online": (f"{NODE}/online", "0-99999999\n", "node/online"),
    "cache size abc": ("sys/devices/system/cpu/cpu0/cache/index3/size", "abc\n", "index3/size"),
    "missing distance": (f"{NODE}/node1/distance", None, "node1/distance"),
    "short distance row": (f"{NODE}/node1/distance", "80 10\n", "node1/distance"),
    "garbage meminfo": (f"{NODE}/node0/meminfo", "Node 0 MemTotal: lots kB\n", "node0/meminfo"),
}


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_snapshot_exits_2_with_one_line(mempath_cpu_bin: Path, tmp_path: Path, name: str) -> None:
    file, content, named = BROKEN[name]
    snap = tmp_path / "snap"
    shutil.copytree(GH200_SINGLE, snap)
    if content is None:
        (snap / file).unlink()
    else:
        (snap / file).write_text(content)
    line = one_error_line(run(mempath_cpu_bin, "topo", "--from", str(snap), check_rc=None))
    assert named in line and "valid" in line


def test_empty_snapshot_folder_exits_2(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    line = one_error_line(run(mempath_cpu_bin, "topo", "--from", str(tmp_path), check_rc=None))
    assert str(tmp_path) in line and "mempath topo --save" in line


def test_save_with_from_is_refused_not_a_save_of_another_node(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """--save copies the live node: beside --from it would save a node other than the one
    printed, without a word (issue 33)."""
    out = tmp_path / "saved"
    line = one_error_line(run(mempath_cpu_bin, "topo", "--from", str(GH200_SINGLE), "--save", str(out),
                              check_rc=None))
    assert "--save" in line and "--from" in line and "valid" in line
    assert not out.exists()


def test_live_node_still_enumerates(mempath_cpu_bin: Path) -> None:
    doc = json.loads(run(mempath_cpu_bin, "topo", "--json").stdout)
    assert doc["source"] == "live" and doc["processors"]


def test_an_offline_hbm_node_is_planned_around_not_refused(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """A GH200 whose driver has not onlined its HBM (node1 with 0 bytes: issue 19) loads;
    its HBM node is offline and every case on it skipped with why, the GPU's own memory kept."""
    snap = tmp_path / "snap"
    shutil.copytree(GH200_SINGLE, snap)
    (snap / f"{NODE}/node1/meminfo").write_text("Node 1 MemTotal: 0 kB\nNode 1 MemFree: 0 kB\n")
    topo = json.loads(run(mempath_cpu_bin, "topo", "--from", str(snap), "--json").stdout)
    hbm = {m["name"]: m for m in topo["memories"]}["numa1"]
    assert hbm.get("offline") is True
    assert "gpu0" in {m["name"] for m in topo["memories"]}
    header, *lines = run(mempath_cpu_bin, "list", "--from", str(snap)).stdout.splitlines()
    on_hbm = [line for line in lines if " numa1 " in f" {line} "]
    assert on_hbm and all("skipped" in line and "offline" in line for line in on_hbm), on_hbm
