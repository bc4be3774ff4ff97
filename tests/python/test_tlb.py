"""`mempath tlb`, chase's preset of one load a page (docs/benchmarks.md, "A preset of a
benchmark"): its own family and defaults, chase's machinery. CPU only, any machine."""
from __future__ import annotations

from pathlib import Path

import h5py

from conftest import run, summaries


def test_tlb_sweeps_from_16_pages_with_one_load_a_page(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.h5"
    proc = run(mempath_bin, "tlb", "--pu", "cpu0", "--max-size", "1MiB", "--accesses", "100000",
               "--output", str(out))
    lines = summaries(proc.stdout, "tlb")
    assert [int(l["size"]) for l in lines] == [(64 << 10) << k for k in range(5)]
    assert all(l["line"] == "4096" and l["status"] == "ok" and l["placed"] == "1" for l in lines), lines
    assert proc.stdout.startswith("EXPECT tlb cases=5 ") and "\nELAPSED tlb cases=5 " in proc.stdout
    with h5py.File(out) as f:
        assert set(f) >= {"tlb"} and "chase" not in f
        assert (f["tlb/cases/verified"][()] == 1).all()
        assert (f["tlb/cases/line_bytes"][()] == 4096).all()
        assert len(f["tlb/samples/rep"]) == 5 * 3 and len(f["tlb/caches/level"]) > 0


def test_tlb_plans_from_a_snapshot_and_keeps_chases_options(mempath_bin: Path) -> None:
    snapshot = Path(__file__).resolve().parents[1] / "fixtures" / "x86_h100"
    proc = run(mempath_bin, "tlb", "--from", str(snapshot), "--pu", "cpu0", "--size", "64KiB,2MiB", "--line", "8192")
    plans = [l for l in proc.stdout.splitlines() if l.startswith("PLAN tlb ")]
    assert len(plans) == 2 and all("line=8192" in p for p in plans), proc.stdout
    help_text = " ".join(run(mempath_bin, "tlb", "--help").stdout.split())  # as wrapped for a terminal
    assert "default 4096: one load a page" in help_text and "default 64KiB: 16 pages" in help_text
