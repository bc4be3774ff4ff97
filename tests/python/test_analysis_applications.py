"""The report's application part and its index page, on real result files (H100,
2026-11-22: `mempath stream` CPU sweep and GPU placement, `mempath gemm --all`)."""
from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import DATA, analysis_cli, assert_pdf

RUNS = [DATA / "h100_stream_cpu.h5", DATA / "h100_stream_gpu.h5", DATA / "h100_gemm.h5", DATA / "h100_llm.h5",
        DATA / "h100_chase_gpu.h5"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    proc = analysis_cli("report", *RUNS, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_application_figures_are_drawn(report: Path) -> None:
    for stem in ("stream_threads", "stream_gpu_placement", "gemm_sweep", "llm_placement"):
        assert (report / f"{stem}.png").stat().st_size > 10_000
        assert_pdf(report / f"{stem}.pdf")


def test_stream_table_names_the_best_thread_count(report: Path) -> None:
    with h5py.File(DATA / "h100_stream_cpu.h5") as f:
        c = f["stream/cases"]
        triad = c["kernel"].asstr()[()] == "triad"
        best = int(c["threads"][()][triad][np.argmax(c["best_GBps"][()][triad])])
        assert set(c["best_threads"][()]) == {best}  # what mempath recorded is the argmax too
    text = (report / "summary.md").read_text()
    row = next(l for l in text.splitlines() if l.startswith("| vm | cpu0 | numa0 | numa |"))
    assert row.rstrip(" |").endswith(str(best))


def test_gemm_table_fraction_is_median_over_peak(report: Path) -> None:
    text = (report / "summary.md").read_text()
    rows = [l for l in text.splitlines() if re.match(r"\| vm \| fp(16|64) \| \d+ \|", l)]
    assert rows
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        median, peak, fraction = float(cells[4]), float(cells[5]), float(cells[6])
        assert fraction == pytest.approx(median / peak, abs=0.002), row
    assert any("numa0 `pinned`" in r for r in rows)


def test_index_page_embeds_every_figure_and_links_its_sections(report: Path) -> None:
    md = (report / "index.md").read_text()
    page = (report / "index.html").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)
    assert len(images) >= 4
    assert page.count('src="data:image/png;base64,') == len(images)
    assert "http://" not in page and "https://" not in page and "<script" not in page
    ids = set(re.findall(r'<h\d id="([^"]+)"', page))
    anchors = re.findall(r"\]\(#([^)]+)\)", md)
    assert anchors and set(anchors) <= ids
    assert "<table>" in page and "<code>" in page


def test_llm_table_has_the_bound_and_the_skipped_placements(report: Path) -> None:
    with h5py.File(DATA / "h100_llm.h5") as f:
        c = f["llm/cases"]
        ok = c["status"].asstr()[()] == "ok"
        np.testing.assert_allclose(c["bound_tokens_per_s"][()][ok],
                                   c["path_GBps"][()][ok] * 1e9 / c["weight_bytes"][()][ok])
    text = (report / "summary.md").read_text()
    rows = [l for l in text.splitlines() if l.startswith("| vm | llama-3.2-1b |")]
    assert len(rows) == 2 and all(r.rstrip(" |").endswith("yes") for r in rows)
    assert "one host NUMA node: no remote host memory" in text and "one GPU: no peer memory" in text

