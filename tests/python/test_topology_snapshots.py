"""`mempath topo --from` on a snapshot that `mempath topo --save` wrote on a real node: the
H100 loan machine (2026-11-22), as opposed to the fixtures written from documentation."""
from __future__ import annotations

import json
from pathlib import Path

from test_cli_bw import run

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
    lines = run(mempath_cpu_bin, "list", "--from", str(SAVED)).stdout.splitlines()
    assert len(lines) == 59
    assert sum("skipped:" in line for line in lines) == 6
