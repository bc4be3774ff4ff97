"""The paper's bandwidth figures and Table II (analysis/figures/fig07_read_write.py,
fig07_contention.py, table2_allocators.py, copies.py): each
renders from a synthetic quad GH200 run (tests/python/synth_bandwidth.py) and from the real
H100 files that hold its tables, or says why not; journal widths, the style's rules, memory
roles in the labels, managed cases under the memory their pages were on, and published
values held against values computed from the data."""
from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any

import h5py
import matplotlib.image
import pytest
from conftest import DATA, assert_pdf, assert_png, figure_suffixes

import synth_bandwidth
from h5fixtures import topology
from analysis.model.peaks import ASSUMED_MARK, ASSUMED_NOTE
from analysis.figures import (copies, fig07_contention, fig07_read_write, peaks, published, table2_allocators,
                              table2_translation as translation)
from analysis.render.items import registry
from analysis.paper.write import write_paper
from analysis.render import style
from analysis.results import kinds
from analysis.results.io import load_runs

KEYS = {"read_write_bandwidth": "Fig. 7", "read_write_under_contention": "Fig. 7", "copy_bandwidth": "Fig. 9",
        "copy_scaling": "Fig. 10", "cudamemcpy_allocators": "Fig. 5", "allocation_apis": "Table II"}
FIGURES = [k for k in KEYS if k != "allocation_apis"]


class Drawing:
    """What each saved figure showed: its texts (ticks, titles, labels, annotations), its
    images' colour scales, its width."""

    def __init__(self) -> None:
        self.texts: dict[str, list[str]] = {}
        self.panels: dict[str, dict[str, list[str]]] = {}   # figure -> panel title -> x tick labels
        self.norms: dict[str, list[tuple[float, float]]] = {}
        self.width: dict[str, float] = {}

    def save(self, original: Any) -> Any:
        """A figure's supplementary pages (the other processors) are recorded as the figure's."""
        def wrapped(fig: Any, out: Path, stem: str, **kwargs: Any) -> list[Path]:
            texts = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text")) if t.get_text()]
            for ax in fig.axes:
                texts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
                texts += [ax.get_ylabel(), ax.get_xlabel(), ax.get_title()]
            key = stem.split("_supplementary")[0]
            self.texts.setdefault(key, []).extend(texts)
            self.panels.setdefault(key, {}).update(
                {ax.get_title(): [t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes})
            self.norms.setdefault(key, []).extend((im.norm.vmin, im.norm.vmax) for ax in fig.axes for im in ax.images)
            self.width[key] = max(self.width.get(key, 0.0), fig.get_size_inches()[0])
            return original(fig, out, stem, **kwargs)
        return wrapped


def draw(tmp: Path, files: list[Path], monkeypatch: pytest.MonkeyPatch | None = None,
         only: tuple[str, ...] = tuple(KEYS)) -> tuple[Any, Drawing]:
    drawing = Drawing()
    if monkeypatch is not None:
        monkeypatch.setattr(style, "save", drawing.save(style.save))
    return write_paper(load_runs(files), tmp, only=only), drawing


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def figure_rows(out: Path, key: str) -> list[dict[str, str]]:
    """The source data of a figure and of its supplementary pages."""
    return [r for path in [out / f"{key}.csv", *sorted(out.glob(f"{key}_supplementary*.csv"))] for r in rows(path)]


@pytest.fixture(scope="module")
def quad(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Drawing]:
    folder = tmp_path_factory.mktemp("quad")
    files = synth_bandwidth.write(folder / "runs", topology("gh200_quad"))
    patch = pytest.MonkeyPatch()
    try:
        return draw(folder / "paper", files, patch)
    finally:
        patch.undo()


def comparison(paper: Any, key: str, pub_key: str) -> Any:
    pub = next(p for p in published.VALUES if p.key == pub_key)
    found = [c for c in paper.drawn[key].comparisons if c.source == pub.source and c.quantity.startswith(pub.quantity)]
    assert len(found) == 1, (pub_key, [c.quantity for c in paper.drawn[key].comparisons])
    return found[0]


def test_items_registered_with_the_papers_numbers() -> None:
    items = {i.key: i for i in registry("analysis.figures")}
    for key, ref in KEYS.items():
        assert items[key].ref == ref
    assert items["allocation_apis"].kind == "table"
    order = [i.key for i in registry("analysis.figures") if i.key in KEYS]
    assert order.index("allocation_apis") < order.index("cudamemcpy_allocators") < \
        order.index("read_write_bandwidth") < order.index("copy_bandwidth") < order.index("copy_scaling")


def test_synthetic_files_are_marked_synthetic(tmp_path: Path) -> None:
    runs = load_runs(synth_bandwidth.write(tmp_path, topology("gh200_quad")))
    assert [r.attrs["synthetic"] for r in runs.runs] == [1, 1]
    cases = runs.table("bw/cases")
    assert {"noise_GBps", "noise_bytes", "noise_seconds", "blocks", "placed"} <= set(cases.columns)
    assert set(runs.table("allocmatrix/cases")["src_alloc"]) == set(synth_bandwidth.ALLOCATORS)


def test_every_item_renders_from_the_quad_run(quad: tuple[Any, Drawing]) -> None:
    paper, drawing = quad
    for key in KEYS:
        drawn = paper.drawn[key]
        assert drawn.files and not drawn.why_not, (key, drawn.why_not)
        assert drawn.runs
    for key in FIGURES:
        png = paper.out / f"{key}.png"
        assert_png(png)
        assert_pdf(png.with_suffix(".pdf"))
        height, width = matplotlib.image.imread(png).shape[:2]
        assert width <= round(style.PAGE_IN * style.DPI), (key, width)
        assert drawing.width[key] <= style.PAGE_IN
    assert "| allocator |" in (paper.out / "allocation_apis.md").read_text()


def test_the_style_check_refuses_what_the_figures_avoid(quad: tuple[Any, Drawing]) -> None:
    """The rules save() enforces hold for these figures (they were saved), and a panel
    with a 6 pt label is refused (the check is live)."""
    fig, axes = style.panels(1, width=style.COLUMN_IN)
    axes[0].bar([0], [1.0])
    axes[0].set_xticks([0], ["local LPDDR (numa0)"], fontsize=6)
    with pytest.raises(style.StyleError):
        style.check(fig)


def test_labels_name_memory_roles_with_their_numa_ids(quad: tuple[Any, Drawing]) -> None:
    paper, drawing = quad
    texts = drawing.texts["read_write_bandwidth"]
    assert "local LPDDR\n(numa0)" in texts and "local HBM\n(numa4)" in texts
    assert "peer LPDDR\n(numa1,2,3)" in texts and "peer HBM\n(numa12,20,28)" in texts
    assert "peer LPDDR\n(numa0,2,3)" in texts  # cpu1's and gpu1's peers
    fig7 = figure_rows(paper.out, "read_write_bandwidth")
    assert {r["label"] for r in fig7 if r["pu"] == "gpu2" and r["mem"] == "numa0"} == {"peer LPDDR (numa0)"}
    copies_texts = drawing.texts["copy_bandwidth"]
    assert {"local LPDDR", "local HBM", "peer LPDDR", "peer HBM"} <= set(copies_texts)
    assert any("local numa0,4" in t for t in copies_texts)
    assert "local LPDDR\n(numa0)" not in drawing.texts["cudamemcpy_allocators"]
    # a buffer on the panel's host node is named by its allocator alone (the title names the node)
    assert "pinned" in drawing.texts["cudamemcpy_allocators"]
    assert any(t.endswith("host buffers asked on\nlocal LPDDR (numa0)") for t in drawing.texts["cudamemcpy_allocators"])
    assert "local LPDDR -> local HBM" in drawing.texts["copy_scaling"]


def test_managed_cases_are_drawn_under_the_memory_their_pages_were_on(quad: tuple[Any, Drawing]) -> None:
    paper, drawing = quad
    fig7 = figure_rows(paper.out, "read_write_bandwidth")
    # cpu1's managed buffer on gpu1 ended in numa1: it is a local LPDDR case, none is gpu1's
    moved = [r for r in fig7 if r["pu"] == "cpu1" and r["op"] == "read" and r["mem"] == "numa1"]
    assert [(r["alloc"], r["asked_mem"]) for r in moved] == [("managed", "gpu1")]
    assert not [r for r in fig7 if r["pu"] == "cpu1" and r["mem"] == "gpu1"]
    cpu1 = drawing.panels["read_write_bandwidth"]["cpu1 (Grace)"]
    assert "local LPDDR\n(numa1)" in cpu1 and "device memory\n(gpu1)" not in cpu1
    assert "device memory\n(gpu0)" in drawing.panels["read_write_bandwidth"]["cpu0 (Grace)"]
    # gpu0's managed numa0 buffer moved into its HBM: the LPDDR bar is the numa allocator's
    lpddr = next(r for r in fig7 if r["pu"] == "gpu0" and r["op"] == "read" and r["mem"] == "numa0")
    assert lpddr["alloc"] == "numa" and float(lpddr["median_GBps"]) == pytest.approx(450 * 0.93)
    hbm = next(r for r in fig7 if r["pu"] == "gpu0" and r["op"] == "read" and r["mem"] == "numa4")
    assert (hbm["alloc"], hbm["asked_mem"]) == ("managed", "numa0")
    # Fig. 5: a managed source the copies pulled into HBM is an HBM row
    fig5 = figure_rows(paper.out, "cudamemcpy_allocators")
    pulled = [r for r in fig5 if r["src_alloc"] == "managed" and r["dst_alloc"] == "device" and r["node"] == "numa0"]
    assert [r["src_at"] for r in pulled] == ["numa4"]
    assert "managed: local HBM (numa4)" in drawing.texts["cudamemcpy_allocators"]


def test_contention_cases_stay_out_of_the_alone_figure(quad: tuple[Any, Drawing]) -> None:
    paper, _ = quad
    fig7 = figure_rows(paper.out, "read_write_bandwidth")
    alone = next(r for r in fig7 if r["pu"] == "gpu0" and r["op"] == "write" and r["mem"] == "numa4")
    # the best allocator alone: managed pages pulled into the HBM (synth_bandwidth: x 1.005)
    assert float(alone["median_GBps"]) == pytest.approx(4000 * 0.93 * 1.005)
    noisy = figure_rows(paper.out, "read_write_under_contention")
    case = next(r for r in noisy if r["pu"] == "gpu0" and r["op"] == "write" and r["mem"] == "numa4")
    assert case["noise"] == "cpu0:numa4"
    assert float(case["median_GBps"]) == pytest.approx(2600.0)
    assert float(case["sum_GBps"]) == pytest.approx(2682.8, rel=1e-6)
    assert float(case["alone_GBps"]) == pytest.approx(4000 * 0.93 * 1.005)
    assert case["same_memory"] == "True" and float(case["sum_pct"]) == pytest.approx(67.07, abs=0.01)


def test_fig7_comparisons_are_computed_from_the_data(quad: tuple[Any, Drawing]) -> None:
    paper, _ = quad
    factors = [1 - 0.01 * i for i in range(4)]   # synth_bandwidth.superchip_factor of gpu0..3
    expect = {
        "fig7.hopper.read.local_lpddr.pct": statistics.median(93.0 * f for f in factors),
        "fig7.hopper.write.local_lpddr.pct": statistics.median(84.0 * f for f in factors),
        "fig7.grace.read.local_hbm.pct": statistics.median(53.0 * f for f in factors),
        "fig7.hopper.any.peer_lpddr.max_pct": 55.0,   # gpu0's read over NVLink + C2C
    }
    for key, value in expect.items():
        found = comparison(paper, "read_write_bandwidth", key)
        assert found.run == pytest.approx(value), key
        assert found.ratio == pytest.approx(value / found.published)
    noise = {
        "fig7.contention.hopper.write.local_hbm.pct": statistics.median(65.0 * f for f in factors),
        "fig7.contention.grace.write.local_hbm.pct": statistics.median(17.0 * f for f in factors),
        "fig7.contention.sum.write.local_hbm.gbps": statistics.median(2682.8 * f for f in factors),
        "fig7.contention.sum.write.local_hbm.pct": statistics.median(2682.8 * f / 40 for f in factors),
    }
    for key, value in noise.items():
        assert comparison(paper, "read_write_under_contention", key).run == pytest.approx(value, rel=1e-6), key


def test_cudamemcpy_comparisons_and_not_measured_rows(quad: tuple[Any, Drawing]) -> None:
    paper, _ = quad
    local = comparison(paper, "cudamemcpy_allocators", "dual_gh200.l0_h0.h2d")
    assert local.run == pytest.approx(450 * 0.84)        # pinned numa0 -> gpu0 over C2C, synthetic
    assert "gpu0 copies pinned on local LPDDR (numa0)" in local.quantity
    peer = comparison(paper, "cudamemcpy_allocators", "dual_gh200.h0_l1.d2h")
    assert peer.run == pytest.approx(150 * 0.66)         # gpu0 -> pinned numa1 (NVLink + C2C, 150 GB/s)
    assert math.isnan(comparison(paper, "cudamemcpy_allocators", "dual_gh200.l1_h1.h2d").run)  # gpu1 not run
    gib = comparison(paper, "cudamemcpy_allocators", "datacrunch.gh200.h2d")
    assert gib.unit == "GiB/s" and gib.run == pytest.approx(450 * 0.84 * 1e9 / 2**30)
    keys = {c.source for c in paper.drawn["cudamemcpy_allocators"].comparisons}
    assert not any("throughput" in k.lower() for k in keys)   # the x86 article is not a GH200 quantity


def test_copy_throughput_is_size_over_time_on_one_colour_scale(quad: tuple[Any, Drawing]) -> None:
    paper, drawing = quad
    fig9 = figure_rows(paper.out, "copy_bandwidth")
    for r in fig9:
        assert float(r["throughput_GBps"]) == pytest.approx(float(r["median_GBps"]) / 2)
    cell = next(r for r in fig9 if r["pu"] == "cpu0" and r["mem"] == "numa0" and r["dst_mem"] == "numa0")
    assert float(cell["throughput_GBps"]) == pytest.approx(1 / (1 / 400 + 1 / 300))
    assert len(set(drawing.norms["copy_bandwidth"])) == 1 and len(drawing.norms["copy_bandwidth"]) == 8
    assert any("buffer size / time" in t for t in drawing.texts["copy_bandwidth"])
    assert len(set(drawing.norms["cudamemcpy_allocators"])) == 1
    # a GPU's device memory is its HBM node in the copy matrices
    assert not [r for r in fig9 if r["mem"].startswith("gpu") or r["dst_mem"].startswith("gpu")]


def test_copy_scaling_sweeps_threads_and_grid_sizes(quad: tuple[Any, Drawing]) -> None:
    paper, drawing = quad
    points = figure_rows(paper.out, "copy_scaling")
    cpu = [r for r in points if r["pu"] == "cpu0" and r["mem"] == "numa0" and r["dst_mem"] == "numa0"]
    assert [int(r["threads"]) for r in cpu] == [1, 2, 4, 8, 16, 32, 64, 72]
    assert float(cpu[-1]["throughput_GBps"]) == pytest.approx(1 / (1 / 400 + 1 / 300))
    gpu = [r for r in points if r["pu"] == "gpu0" and r["mem"] == "numa4" and r["dst_mem"] == "numa4"]
    assert [int(r["blocks"]) for r in gpu][:3] == [1, 2, 4] and len(gpu) >= 10
    assert {r["pu"] for r in points} == {"cpu0", "gpu0"}
    assert any(t.startswith("GPU threads launched") for t in drawing.texts["copy_scaling"])


def test_table_ii_says_what_is_measured_and_what_is_documented(quad: tuple[Any, Drawing]) -> None:
    paper, _ = quad
    table = {r["allocator"]: r for r in rows(paper.out / "allocation_apis.csv")}
    assert table["device"]["API"] == "cudaMalloc" and table["device"]["placement (paper)"] == "HBM"
    assert table["device"]["CPU access (measured)"].startswith("no: ")
    assert table["pinned"]["GPU access (measured)"].startswith("yes: LPDDR")
    managed = table["managed"]["pages after first touch and access (measured)"]
    assert "device memory -> local LPDDR after a CPU's bw read" in managed
    assert "local LPDDR -> local HBM after a GPU's bw read" in managed
    assert any("Documented" in n and "Measured" in n for n in paper.drawn["allocation_apis"].notes)


def test_table_ii_translation_and_page_size_recorded_reported_or_documented(quad: tuple[Any, Drawing]) -> None:
    """Table II's GPU translation and page size (#32): the paper's values beside this node's,
    the system page as the runs record it (page_size), ATS as the node reports it, the
    GPU's own 2 MB pages stated as documented (marked, with the source), never as measured."""
    paper, _ = quad
    table = {r["allocator"]: r for r in rows(paper.out / "allocation_apis.csv")}
    assert table["device"]["GPU translation (paper)"] == "GPU-MMU" and table["device"]["page size (paper)"] == "2 MB"
    assert table["system"]["GPU translation (paper)"] == "ATS" and table["system"]["page size (paper)"] == "system"
    assert table["managed"]["page size (paper)"] == "system (DDR), 2 MB (HBM)"
    # the synthetic runs record page_size 65536 (h5fixtures), the quad's GPUs report ATS
    assert table["system"]["page size (this node)"].startswith("64 KiB (recorded: page_size)")
    assert table["system"]["GPU translation (this node)"].startswith("ATS: the CPU's page table (node reports")
    assert table["device"]["page size (this node)"] == f"2 MB {translation.DOCUMENTED} [paper]"
    for alloc, row in table.items():
        for column in ("GPU translation (this node)", "page size (this node)"):
            if "[" in row[column]:   # a documented value: marked, its source named in the caption
                assert translation.DOCUMENTED in row[column] and "measured" not in row[column].split("[")[0], row
    caption = " ".join(paper.drawn["allocation_apis"].notes)
    assert translation.PAPER_TABLE in caption and "[uvm]" in caption and "documented, not measured" in caption


def test_table_ii_lists_kinds_def_allocators_and_the_papers_row_once() -> None:
    """Table II's allocators and their APIs are kinds.def's rows (listed in ALLOC_ORDER; no
    hand copy to drift when an allocator is added); the paper's cells for each are one table."""
    assert tuple(table2_allocators.API) == tuple(kinds.ALLOCATORS)
    for name, row in kinds.ALLOCATORS.items():
        assert table2_allocators.API[name].replace(" + ", "+").startswith(row["api"]), name
    assert set(table2_allocators.PAPER_TABLE_II) == set(kinds.ALLOC_ORDER)


def test_table_ii_on_an_x86_node_without_ats(tmp_path: Path) -> None:
    """An x86 H100 node without ATS/HMM: system memory is out of the GPU's reach (as the
    node reports), pinned memory is mapped by the GPU's page table (documented), a run
    that records no page_size says so instead of borrowing the paper's 64 KB."""
    files = synth_bandwidth.write(tmp_path / "runs", topology("x86_h100"))
    for path in files:
        with h5py.File(path, "r+") as handle:
            del handle.attrs["page_size"]
    draw(tmp_path / "paper", files, only=("allocation_apis",))
    table = {r["allocator"]: r for r in rows(tmp_path / "paper" / "allocation_apis.csv")}
    assert table["numa"]["GPU translation (this node)"].startswith("none: the GPU cannot reach pageable memory")
    assert table["pinned"]["GPU translation (this node)"].startswith("GPU-MMU") and \
        table["pinned"]["GPU translation (this node)"].endswith(f"{translation.DOCUMENTED} [pinned]")
    assert table["pinned"]["GPU translation (paper)"] == "ATS"   # the paper's GH200, beside it
    assert "not recorded" in table["numa"]["page size (this node)"]
    assert "64 KiB" not in table["numa"]["page size (this node)"]
    assert table["managed"]["GPU translation (this node)"].endswith(f"{translation.DOCUMENTED} [uvm]")


def test_fig3_drawn_with_its_copies_beside_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fig. 3 as the paper draws it (#32): each memory's read/write peak and the copies
    between the memories, at page width, legible (style.save checks), its cells in a CSV,
    the table kept beside it; the copy peaks are the paper's (sec. III-A: Hopper's DDR-to-DDR
    250 GB/s, DDR-to-HBM 450)."""
    files = synth_bandwidth.write(tmp_path / "runs", topology("gh200_quad"))
    paper, drawing = draw(tmp_path / "paper", files, monkeypatch, only=("theoretical_peaks", "theoretical_peaks_figure"))
    fig3 = paper.drawn["theoretical_peaks_figure"]
    assert [p.name for p in fig3.files] == [f"theoretical_peaks_figure{suffix}"
                                            for suffix in (*figure_suffixes(), ".csv")]
    assert drawing.width["theoretical_peaks_figure"] == style.PAGE_IN and not fig3.why_not
    assert (tmp_path / "paper" / "theoretical_peaks.md").exists() and paper.drawn["theoretical_peaks"].table
    assert (tmp_path / "paper" / "paper.md").read_text().count("## Fig. 3:") == 2
    cells = {(r["processor"], r["operation"], r["memory"], r["destination"]): float(r["peak_GBps"])
             for r in rows(tmp_path / "paper" / "theoretical_peaks_figure.csv")}
    lpddr, hbm, peer = "local LPDDR (numa0)", "local HBM (numa4)", "peer LPDDR (numa1)"
    assert cells[("gpu0", "copy", lpddr, lpddr)] == 250          # one LPDDR read and written: half of 500
    assert cells[("gpu0", "copy", lpddr, hbm)] == 450            # C2C, once each way
    assert cells[("gpu0", "read or write", hbm, "")] == 4000
    assert cells[("gpu0", "copy", peer, lpddr)] == 150           # the slower leg: NVLink to the peer
    assert cells[("cpu0", "copy", hbm, hbm)] == 450              # C2C both ways, HBM's half (2000) is above it
    assert {"cpu0", "gpu0"} == {k[0] for k in cells}
    assert not any("device memory" in k[2] for k in cells)       # gpu0's HBM drawn once, as numa4
    assert peaks.COPY_RULE in fig3.notes
    texts = drawing.texts["theoretical_peaks_figure"]
    assert "250" in texts and "copy to local HBM" in texts and "read or write" in texts


def test_fig3_on_an_x86_node_marks_what_is_unknown(tmp_path: Path) -> None:
    """x86 socket memory has no published figure: its own cells say so ('?'), and a copy
    through it bounds only the known parts, as the caption says."""
    files = synth_bandwidth.write(tmp_path / "runs", topology("x86_h100"))
    paper, _ = draw(tmp_path / "paper", files, only=("theoretical_peaks_figure",))
    fig3 = paper.drawn["theoretical_peaks_figure"]
    assert fig3.files, fig3.why_not
    cells = {(r["processor"], r["operation"], r["memory"], r["destination"]): r
             for r in rows(tmp_path / "paper" / "theoretical_peaks_figure.csv")}
    ddr = next(k for k in cells if k[0] == "cpu0" and k[1] == "read or write" and "DDR" in k[2])
    assert cells[ddr]["peak_GBps"] == "" and cells[ddr]["unknown_parts"] == "True"
    h2d = next(r for k, r in cells.items() if k[0] == "gpu0" and k[1] == "copy" and "DDR" in k[2]
               and "device memory" in k[3])
    assert float(h2d["peak_GBps"]) == pytest.approx(63.0, abs=0.1)   # PCIe gen 5 x16, the DDR unknown
    assert any("bounds only the known parts" in n for n in fig3.notes)


def test_noise_bandwidth_not_recorded(tmp_path: Path) -> None:
    files = synth_bandwidth.write(tmp_path / "runs", topology("gh200_single"), noise_bandwidth=False)
    paper, _ = draw(tmp_path / "paper", files, only=("read_write_under_contention",))
    drawn = paper.drawn["read_write_under_contention"]
    assert drawn.files
    assert any("was not recorded" in n for n in drawn.notes)
    runs = {c.quantity.split(" [")[0]: c.run for c in drawn.comparisons}
    assert math.isnan(runs["Hopper write of local HBM + Grace reading it at once, summed"])
    assert runs["Hopper write of local HBM while Grace reads it, % of the path's peak"] == pytest.approx(65.0)


def test_assumed_peaks_are_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dual GH200 workstation's Grace-Grace link has no published figure: a % of a
    peak it limits carries the mark and the note."""
    files = synth_bandwidth.write(tmp_path / "runs", topology("gh200_dual"))
    paper, drawing = draw(tmp_path / "paper", files, monkeypatch, only=("read_write_bandwidth",))
    fig7 = figure_rows(paper.out, "read_write_bandwidth")
    assumed = [r for r in fig7 if r["assumed"] == "True"]
    assert assumed and all(r["mem"] in ("numa1", "numa10", "gpu1", "numa0", "numa2", "gpu0") for r in assumed)
    assert any(t.strip().endswith(ASSUMED_MARK) for t in drawing.texts["read_write_bandwidth"])
    assert ASSUMED_NOTE in paper.drawn["read_write_bandwidth"].notes
    # the dual node's Hopper reaches peer LPDDR without NVLink: no row for the paper's NVLink bound
    assert not [c for c in paper.drawn["read_write_bandwidth"].comparisons if "at most" in c.quantity]


def test_x86_runs_meet_only_x86_published_values(tmp_path: Path) -> None:
    files = synth_bandwidth.write(tmp_path / "runs", topology("x86_h100"))
    paper, _ = draw(tmp_path / "paper", files)
    sources = [c.source for k in KEYS for c in paper.drawn[k].comparisons]
    assert sources and not any(published.PAPER in s or published.DUAL_BLOG in s for s in sources)
    assert not any("Remote" in s for s in sources)   # one NUMA node: no peer DDR to copy from
    mlc = comparison(paper, "read_write_bandwidth", "cpu_gpu_article.x86.cpu.read.local_ddr")
    assert mlc.run == pytest.approx(100 * 0.80)         # the model's fallback peak: x86 DDR is unknown
    assert "no GPU grid sweep" in " ".join(paper.drawn["copy_scaling"].notes)
    assert paper.drawn["read_write_under_contention"].files   # cpu0 under gpu0's reads; gpu0 has no partner


def test_real_h100_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/python/data has allocmatrix and um files of the H100 box, no bw file: Fig. 5
    and Table II draw, the bw figures say which table and command they need."""
    files = [DATA / "h100_allocmatrix.h5", DATA / "h100_um.h5"]
    paper, drawing = draw(tmp_path, files, monkeypatch)
    for key in ("read_write_bandwidth", "read_write_under_contention", "copy_bandwidth", "copy_scaling"):
        why = paper.drawn[key].why_not
        assert not paper.drawn[key].files and "/bw/cases" in why and "mempath bw" in why, (key, why)
    fig5 = paper.drawn["cudamemcpy_allocators"]
    assert fig5.files and fig5.runs == ["h100_allocmatrix"]
    texts = drawing.texts["cudamemcpy_allocators"]
    assert "managed (placement unknown)" in texts and "device" in texts
    measured = load_runs([DATA / "h100_allocmatrix.h5"]).table("allocmatrix/cases")
    pinned = measured[(measured["src_alloc"] == "pinned") & (measured["dst_alloc"] == "device")]
    ce = comparison(paper, "cudamemcpy_allocators", "cpu_gpu_article.a10.h2d.nvbandwidth_ce")
    assert ce.run == pytest.approx(float(pinned["median_GBps"].iloc[0]))
    table = {r["allocator"]: r for r in rows(tmp_path / "allocation_apis.csv")}
    assert "unknown after a GPU's cudaMemcpy source" in table["managed"]["pages after first touch and access (measured)"]
    assert table["pinned"]["GPU access (measured)"].startswith("not measured")


def test_published_values_name_their_sources() -> None:
    assert [p.key for p in published.of("fig7.")][:2] == ["fig7.hopper.read.local_lpddr.pct",
                                                          "fig7.hopper.write.local_lpddr.pct"]
    assert len(published.of("dual_gh200.")) == 16
    assert len({p.key for p in published.VALUES}) == len(published.VALUES)
    for pub in published.VALUES:
        # a reference text by its file, or the paper by its address (model.peaks.ALPS_PAPER)
        assert (".txt" in pub.source or "https://" in pub.source) and pub.unit and pub.value > 0, pub.key
    assert next(p for p in published.VALUES if p.key == "fig7.contention.sum.write.local_hbm.gbps").value == 2682.8
    # every value a figure compares is one the module lists
    specs = (set(fig07_read_write.FIG7_ALONE) | set(fig07_contention.FIG7_NOISE) | set(fig07_read_write.X86_ALONE)
             | set(copies.MEMCPY_SPECS))
    assert specs <= {p.key for p in published.VALUES}


# -- published values held against this run: comparison or context (#32) ---------------

def _held(tmp: Path, monkeypatch: pytest.MonkeyPatch, files: list[Path], keys: tuple[str, ...]) -> dict[str, Any]:
    """The Held rows of ``keys`` by published key (the figures drawn without the style's
    check: these tests are about the rows, not the drawing)."""
    monkeypatch.setattr(style, "check", lambda *args, **kwargs: None)
    paper = write_paper(load_runs(files), tmp, only=keys)
    return {c.key: c for k in keys for c in paper.drawn[k].comparisons}


def test_paper_values_are_compared_on_a_quad_gh200_and_unlike_ones_are_context(quad: tuple[Any, Drawing]) -> None:
    paper, _ = quad  # the quad run's items drawn once above: the rows _held would draw again
    held = {c.key: c for k in ("read_write_bandwidth", "read_write_under_contention", "cudamemcpy_allocators")
            for c in paper.drawn[k].comparisons}
    for key in ("fig7.hopper.read.local_lpddr.pct", "fig7.grace.write.local_hbm.pct",
                "fig7.hopper.any.peer_lpddr.max_pct", "fig7.contention.hopper.write.local_hbm.pct"):
        assert held[key].comparable, (key, held[key].differs)
    # the paper's sum is of both writes (17% x 450 + 65% x 4000), the run's of a write and its reader
    assert [d.split(":")[0] for d in held["fig7.contention.sum.write.local_hbm.gbps"].differs] == ["definition"]
    # the dual workstation's 480 GB LPDDR module is not the quad's; its cross-socket path is not the quad's
    assert [d.split(":")[0] for d in held["dual_gh200.l0_h0.h2d"].differs] == ["hardware"]
    assert {d.split(":")[0] for d in held["dual_gh200.l1_h0.h2d"].differs} == {"hardware", "link"}
    # DataCrunch does not name its host allocator: no pinned copy is its quantity
    assert [d.split(":")[0] for d in held["datacrunch.gh200.h2d"].differs] == ["definition"]


def test_dual_gh200_blog_copies_are_compared_on_a_dual_gh200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = synth_bandwidth.write(tmp_path / "runs", topology("gh200_dual"))
    held = _held(tmp_path / "paper", monkeypatch, files, ("cudamemcpy_allocators",))
    assert held["dual_gh200.l0_h0.h2d"].comparable, held["dual_gh200.l0_h0.h2d"].differs
    assert held["dual_gh200.h0_l0.d2h"].comparable


def test_an_a10_on_pcie_gen4_is_context_for_an_h100_on_gen5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real H100 node's pinned copy beside the throughput article's A10: shown apart,
    without a ratio, saying the GPU and the PCIe generation differ (the old table gave 2.2)."""
    held = _held(tmp_path / "paper", monkeypatch, [DATA / "h100_allocmatrix.h5"], ("cudamemcpy_allocators",))
    a10 = held["cpu_gpu_article.a10.h2d.nvbandwidth_ce"]
    assert not a10.comparable
    assert a10.differs[0].startswith("hardware: A10 there, H100 SXM here") and "pcie gen4 x16 there" in a10.differs[1]
    text = (tmp_path / "paper" / "paper.md").read_text().split("## Published values against this run")[1]
    compared, context = text.split("### Context")
    assert "A10" not in compared and "A10" in context
    assert "No published value is the same quantity" in compared
