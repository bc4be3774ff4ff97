"""The paper's scale-out figures (analysis/figures/scaleout.py): Fig. 14 (mpi_bandwidth),
Fig. 18 (nccl_by_size), Fig. 19 (nccl_by_nodes) from the synthetic quad-GH200 runs
(synth_scaleout.py), from the real H200 NCCL run, and from hand-made files whose values
are known."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.image
import pandas as pd
import pytest

import synth_scaleout
from analysis.render.items import registry
from analysis.figures.published import VALUES, of
from analysis.paper.write import Paper, write_paper
from analysis.render import style
from analysis.render.style import DPI, PAGE_IN, check
from analysis.results.h5writer import write_result
from analysis.results.io import load_runs
from conftest import DATA, REPO, assert_pdf, assert_png, figure_suffixes
from h5fixtures import table, topology

KEYS = ("mpi_bandwidth", "nccl_by_size", "nccl_by_nodes")


class Drawing:
    """What one figure showed: its legend entries, titles, axis labels and lines."""

    def __init__(self, fig: Any) -> None:
        self.legend = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        self.legend_titles = [legend.get_title().get_text() for legend in fig.legends]
        axes = [ax for ax in fig.axes if ax.get_visible()]
        self.titles = [ax.get_title() for ax in axes]
        self.labels = [ax.get_xlabel() for ax in axes] + [ax.get_ylabel() for ax in axes]
        self.lines = [{(ax.get_title(), ax.get_ylabel(), line.get_label()): list(zip(line.get_xdata(), line.get_ydata()))
                       for line in ax.get_lines()} for ax in axes]
        check(fig)  # the style's rules, once more on what was drawn

    def line(self, title_part: str, ylabel_part: str, label_part: str) -> list[tuple[float, float]]:
        found = [xy for panel in self.lines for (title, ylabel, label), xy in panel.items()
                 if title_part in title and ylabel_part in ylabel and label_part in label]
        assert len(found) == 1, (title_part, ylabel_part, label_part, [k for p in self.lines for k in p])
        return found[0]


def draw(runs: Sequence[Path], out: Path, keys: Sequence[str] = KEYS) -> tuple[Paper, dict[str, Drawing]]:
    """write_paper over ``runs`` with each figure captured before it is saved."""
    seen: dict[str, Drawing] = {}
    original = style.save

    def capture(fig: Any, folder: Path, stem: str, **kwargs: Any) -> list[Path]:
        seen[stem] = Drawing(fig)
        return original(fig, folder, stem, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "save", capture)
        paper = write_paper(load_runs(runs), out, only=keys)
    return paper, seen


def assert_figure(out: Path, key: str) -> None:
    png = out / f"{key}.png"
    assert_png(png)
    assert_pdf(png.with_suffix(".pdf"))
    width_px = matplotlib.image.imread(png).shape[1]
    assert width_px <= PAGE_IN * DPI + 1, (key, width_px)


# ---- the synthetic quad-GH200 set --------------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Paper, dict[str, Drawing]]:
    folder = tmp_path_factory.mktemp("synth")
    files = synth_scaleout.write(folder / "runs", topology("gh200_quad"))
    out = folder / "paper"
    paper, seen = draw(files, out)
    return out, paper, seen


def test_synthetic_files_are_marked_and_follow_the_writers(synthetic: tuple[Path, Paper, dict[str, Drawing]],
                                                           tmp_path: Path) -> None:
    files = synth_scaleout.write(tmp_path, topology("gh200_quad"))
    runs = load_runs(files)
    assert [r.attrs["synthetic"] for r in runs.runs] == [1, 1]
    assert set(runs.tables) == {"mpi_bw/cases", "mpi_bw/samples", "mpi_bw/ranks", "nccl/cases"}
    schema = (REPO / "docs" / "schema.md").read_text()
    for name in ("mpi_bw/cases", "mpi_bw/samples", "mpi_bw/ranks", "nccl/cases"):
        for col in runs.table(name).columns.drop(["run", "host"]):
            # documented today, or one of the columns --split and the new placements add
            assert f"`{col}`" in schema or col in ("split", "node_bytes", "mem", "via", "rank_bytes"), (name, col)
    nccl = runs.table("nccl/cases")
    factor = [synth_scaleout.busbw_factor(c, n) for c, n in zip(nccl["collective"], nccl["ranks"])]
    assert (abs(nccl["busbw_GBps"] - nccl["algbw_GBps"] * factor) < 1e-9).all()
    assert (abs(nccl["algbw_GBps"] - nccl["size_bytes"] / (nccl["time_us"] * 1e-6) / 1e9) < 1e-9).all()


@pytest.mark.parametrize("key", KEYS)
def test_every_figure_renders_from_the_synthetic_quad_run(synthetic: tuple[Path, Paper, dict[str, Drawing]],
                                                          key: str) -> None:
    out, paper, seen = synthetic
    drawn = paper.drawn[key]
    assert drawn.files == [out / f"{key}{suffix}" for suffix in (*figure_suffixes(), ".csv")], drawn.why_not
    assert drawn.runs and drawn.notes
    assert_figure(out, key)
    assert key in seen


def test_mpi_figure_lines_per_processes_per_node_on_the_nodes_bytes(
        synthetic: tuple[Path, Paper, dict[str, Drawing]]) -> None:
    _, paper, seen = synthetic
    fig = seen["mpi_bandwidth"]
    assert fig.titles == ["unidirectional", "bidirectional"]
    assert fig.legend == ["1 process per node", "2 processes per node", "4 processes per node"]
    assert fig.legend_titles == ["buffers in local LPDDR (numa0-3), numa"]   # the memory by its role
    assert any("split" in label for label in fig.labels)
    line = dict(fig.line("bidirectional", "", "4 processes"))
    assert min(line) == 1 << 10 and max(line) == 1 << 30           # the node's bytes, not a rank's
    assert math.isclose(line[1 << 30], synth_scaleout.mpi_gbps("bi", 4, 1 << 30), rel_tol=1e-9)
    # device buffers (GPU memory) are left out, and the caption says so
    assert "device" in paper.drawn["mpi_bandwidth"].why_not


def test_nccl_by_size_names_placements_by_memory_role_with_algbw_and_busbw(
        synthetic: tuple[Path, Paper, dict[str, Drawing]]) -> None:
    _, paper, seen = synthetic
    fig = seen["nccl_by_size"]
    assert fig.legend == ["local HBM (numa4), cudaMalloc", "local HBM (numa4), system-allocated",
                          "local LPDDR (numa0), system-allocated", "peer HBM (numa12), cudaMalloc",
                          "peer LPDDR (numa1), system-allocated"]
    assert [t for t in fig.titles if t] == ["all-reduce, n = 4 GPUs on 1 node", "all-gather, n = 4 GPUs on 1 node"]
    ylabels = " ".join(fig.labels)
    assert "= buffer / time" in ylabels and "2(n\u22121)/n" in ylabels and "\u00d7 (n\u22121)/n" in ylabels
    algbw = dict(fig.line("all-reduce", "algbw", "local HBM (numa4), cudaMalloc"))
    busbw = dict(fig.line("", "algbw \u00d7 2(n", "local HBM (numa4), cudaMalloc"))
    size = 4 << 30
    want = size / (synth_scaleout.nccl_time_us("allreduce", "device", 1, size) * 1e-6) / 1e9
    assert math.isclose(algbw[size], want, rel_tol=1e-9)
    assert math.isclose(busbw[size], want * 1.5, rel_tol=1e-9)   # 2(n-1)/n, n = 4
    assert not any(n for n in paper.drawn["nccl_by_size"].why_not.split(";") if n.strip())
    assert any("system-allocated HBM / cudaMalloc" in n for n in paper.drawn["nccl_by_size"].notes)


def test_nccl_by_nodes_at_the_papers_sizes(synthetic: tuple[Path, Paper, dict[str, Drawing]]) -> None:
    _, paper, seen = synthetic
    fig = seen["nccl_by_nodes"]
    assert [t for t in fig.titles if t] == ["all-reduce, 4 GiB buffer", "all-gather, 16 MiB per process"]
    line = dict(fig.line("all-gather", "algbw", "peer LPDDR (numa1)"))
    assert sorted(line) == [1, 2, 4, 8]
    size = (16 << 20) * 32
    want = size / (synth_scaleout.nccl_time_us("allgather", "peer-host", 8, size) * 1e-6) / 1e9
    assert math.isclose(line[8], want, rel_tol=1e-9)
    assert any("Log y axis" in n for n in paper.drawn["nccl_by_nodes"].notes)


def test_comparisons_of_the_synthetic_run(synthetic: tuple[Path, Paper, dict[str, Drawing]]) -> None:
    _, paper, _ = synthetic
    rows = {c.unit: c for c in paper.drawn["mpi_bandwidth"].comparisons}
    assert math.isclose(rows["GB/s"].run, synth_scaleout.mpi_gbps("bi", 4, 1 << 30), rel_tol=1e-9)
    assert math.isclose(rows["Gb/s"].run, 8 * synth_scaleout.mpi_gbps("uni", 1, 1 << 30), rel_tol=1e-9)
    assert rows["GB/s"].published == 100.0 and rows["Gb/s"].published == 200.0
    assert not paper.drawn["nccl_by_size"].comparisons and not paper.drawn["nccl_by_nodes"].comparisons


# ---- real files ------------------------------------------------------------------------------------

def test_real_h200_nccl_run(tmp_path: Path) -> None:
    paper, seen = draw([DATA / "h200x2_nccl.h5"], tmp_path)
    assert_figure(tmp_path, "nccl_by_size")
    # An old file: no mem column; the memories are derived from the topology, named by role.
    assert seen["nccl_by_size"].legend == ["device memory (gpu0), cudaMalloc", "local DDR (numa0), cudaMallocHost",
                                           "peer device memory (gpu1), cudaMalloc"]
    line = dict(seen["nccl_by_size"].line("all-reduce", "algbw", "device memory (gpu0)"))
    assert math.isclose(line[1 << 30], 330.668612, rel_tol=1e-6)   # the file's algbw_GBps at 1 GiB
    assert "only runs on 2 nodes" in paper.drawn["nccl_by_nodes"].why_not
    assert not paper.drawn["nccl_by_nodes"].files
    assert "no run holds /mpi_bw/cases" in paper.drawn["mpi_bandwidth"].why_not
    assert "mempath-mpi bw --split" in paper.drawn["mpi_bandwidth"].why_not


def test_real_single_node_files_draw_no_scaleout_figure(tmp_path: Path) -> None:
    paper, seen = draw([DATA / "h100_gemm.h5"], tmp_path)
    assert not seen
    for key in KEYS:
        assert "no run holds" in paper.drawn[key].why_not, key


# ---- hand-made files with known values ---------------------------------------------------------------

def _mpi_row(mode: str, ppn: int, size: int, gbps: float, **extra: Any) -> dict[str, Any]:
    return {"mode": mode, "alloc": "numa", "mem": "numa", "ppn": ppn, "pairs": ppn, "size_bytes": size,
            "window": 64, "windows": 2, "status": "ok", "reason": "", "reps": 5, "median_GBps": gbps,
            "min_GBps": gbps, "max_GBps": gbps, "same_host": 0, "verified": 1, "split": 1,
            "node_bytes": size * ppn, **extra}


def _mpi_file(path: Path, rows: Sequence[Mapping[str, Any]], old: bool = False,
              root: Mapping[str, Any] | None = None) -> Path:
    columns = dict(synth_scaleout.MPI_CASES)
    if old:  # written before --split: no split, no node_bytes
        columns.pop("split"), columns.pop("node_bytes")
    rows = [{"case_id": i, **r} for i, r in enumerate(rows)]
    attrs = {"host": "nid000001", "topology": (DATA / "topology_gh200_quad.json").read_text(),
             "command_line": "mempath-mpi bw", "git_revision": "test", **(root or {})}
    return write_result(path, attrs, {"mpi_bw/cases": table(columns, rows)})


def test_mpi_comparison_is_the_median_of_runs_at_the_largest_size(tmp_path: Path) -> None:
    a = _mpi_file(tmp_path / "a.h5", [_mpi_row("bi", 4, 1 << 20, 50.0), _mpi_row("bi", 4, 1 << 28, 100.0),
                                      _mpi_row("uni", 1, 1 << 28, 20.0)])
    b = _mpi_file(tmp_path / "b.h5", [_mpi_row("bi", 4, 1 << 28, 140.0), _mpi_row("uni", 1, 1 << 28, 22.0)])
    c = _mpi_file(tmp_path / "c.h5", [_mpi_row("bi", 4, 1 << 28, 120.0)])
    paper, _ = draw([a, b, c], tmp_path / "out", ("mpi_bandwidth",))
    rows = {c.unit: c for c in paper.drawn["mpi_bandwidth"].comparisons}
    assert rows["GB/s"].run == 120.0 and math.isclose(rows["GB/s"].ratio, 1.2)
    assert rows["Gb/s"].run == 21.0 * 8
    assert set(paper.drawn["mpi_bandwidth"].runs) == {"a", "b", "c"}


def test_mpi_old_files_without_split_are_drawn_at_the_nodes_bytes(tmp_path: Path) -> None:
    run = _mpi_file(tmp_path / "old.h5", [_mpi_row("uni", 4, 1 << 20, 80.0), _mpi_row("uni", 4, 1 << 10, 5.0)],
                    old=True)
    paper, seen = draw([run], tmp_path / "out", ("mpi_bandwidth",))
    assert dict(seen["mpi_bandwidth"].line("unidirectional", "", "4 processes")) == {4 << 10: 5.0, 4 << 20: 80.0}
    assert any("without --split" in n for n in paper.drawn["mpi_bandwidth"].notes)


def test_mpi_draws_local_ddr_only(tmp_path: Path) -> None:
    run = _mpi_file(tmp_path / "r.h5", [
        _mpi_row("uni", 1, 1 << 20, 20.0), _mpi_row("uni", 1, 1 << 21, 21.0),
        _mpi_row("uni", 1, 1 << 20, 99.0, alloc="managed"),          # pages anywhere: not drawn
        _mpi_row("uni", 1, 1 << 20, 98.0, alloc="device", mem="gpu"),
        _mpi_row("uni", 2, 1 << 20, 0.0, status="skipped", reason="no second rank", median_GBps=math.nan)])
    paper, seen = draw([run], tmp_path / "out", ("mpi_bandwidth",))
    assert dict(seen["mpi_bandwidth"].line("unidirectional", "", "1 process")) == {1 << 20: 20.0, 1 << 21: 21.0}
    assert seen["mpi_bandwidth"].legend == ["1 process per node"]
    why = paper.drawn["mpi_bandwidth"].why_not
    assert "device (GPU memory), managed (pages with no recorded placement)" in why
    assert "uni 2 skipped: no second rank" in why


def test_mpi_nodes_of_one_machine_are_a_functional_figure(tmp_path: Path) -> None:
    rows = [_mpi_row("uni", 1, 1 << 20, 20.0), _mpi_row("uni", 1, 1 << 21, 21.0)]
    one = _mpi_file(tmp_path / "one.h5", rows, root={"mpi_ranks": 2, "mpi_nodes": 2, "mpi_machines": 1})
    two = _mpi_file(tmp_path / "two.h5", rows, root={"mpi_ranks": 2, "mpi_nodes": 2, "mpi_machines": 2})
    old = _mpi_file(tmp_path / "old.h5", rows, root={"mpi_ranks": 2, "mpi_nodes": 2})   # before mpi_machines
    unknown = _mpi_file(tmp_path / "unknown.h5", rows, root={"mpi_ranks": 2, "mpi_nodes": 2, "mpi_machines": 0})
    paper, seen = draw([one, two, old, unknown], tmp_path / "out", ("mpi_bandwidth",))
    said = [n for n in paper.drawn["mpi_bandwidth"].notes if "one machine" in n]
    assert said == ["one: ranks on 2 nodes of one machine (one kernel boot id): functional, not a network's "
                    "bandwidth."]
    for run in (two, old, unknown):
        paper, _ = draw([run], tmp_path / f"out_{run.stem}", ("mpi_bandwidth",))
        assert paper.drawn["mpi_bandwidth"].files and not any("one machine" in n for n in paper.drawn["mpi_bandwidth"].notes)
    # the source data: a row per point drawn, under its panel and series
    source = pd.read_csv(tmp_path / "out" / "mpi_bandwidth.csv")
    points = sum(len(xy) for panel in seen["mpi_bandwidth"].lines for xy in panel.values())
    assert len(source) == points == 2
    assert list(source["panel"]) == ["unidirectional"] * 2 and list(source["node_bytes"]) == [1 << 20, 1 << 21]
    assert list(source["GBps"]) == [20.0, 21.0]


def test_mpi_same_host_runs_are_not_node_to_node(tmp_path: Path) -> None:
    run = _mpi_file(tmp_path / "r.h5", [_mpi_row("uni", 1, 1 << 20, 9.0, same_host=1)])
    paper, seen = draw([run], tmp_path / "out", ("mpi_bandwidth",))
    assert not seen and "same_host=1" in paper.drawn["mpi_bandwidth"].why_not


def _nccl_file(path: Path, rows: Sequence[Mapping[str, Any]], topo: str = "gh200_quad") -> Path:
    columns = {k: v for k, v in synth_scaleout.NCCL_CASES.items() if k not in ("mem", "via", "rank_bytes")}
    full = []
    for i, r in enumerate(rows):
        n = r["ranks"]
        algbw = r["algbw_GBps"]
        full.append({"case_id": i, "alloc": {"device": "device", "peer": "device"}.get(r["placement"], "numa"),
                     "iters": 20, "status": "ok", "reason": "", "verified": 1,
                     "time_us": r["size_bytes"] / (algbw * 1e3) if algbw == algbw else math.nan,
                     "busbw_GBps": algbw * synth_scaleout.busbw_factor(r["collective"], n), **r})
    attrs = {"host": "nid000001", "topology": (DATA / f"topology_{topo}.json").read_text(),
             "command_line": "mempath-mpi nccl", "git_revision": "test"}
    return write_result(path, attrs, {"nccl/cases": table(columns, full)})


def test_nccl_old_columns_on_gh200_and_a_skipped_placement(tmp_path: Path) -> None:
    rows = [{"collective": "allreduce", "placement": p, "ranks": 4, "nodes": 1, "size_bytes": s, "algbw_GBps": g}
            for p, g in (("device", 200.0), ("hbm-system", 198.0)) for s in (1 << 20, 1 << 30)]
    rows.append({"collective": "allreduce", "placement": "peer-host", "ranks": 4, "nodes": 1, "size_bytes": 1 << 20,
                 "algbw_GBps": math.nan, "status": "skipped", "reason": "no ATS here"})
    paper, seen = draw([_nccl_file(tmp_path / "n.h5", rows)], tmp_path / "out", ("nccl_by_size",))
    assert seen["nccl_by_size"].legend == ["local HBM (numa4), cudaMalloc", "local HBM (numa4), system-allocated"]
    drawn = paper.drawn["nccl_by_size"]
    assert "peer-host skipped: no ATS here" in drawn.why_not
    assert "all-reduce at 1 GiB: system-allocated HBM / cudaMalloc = 0.99 (the paper found them the same)." in drawn.notes


def test_nccl_by_size_takes_the_fewest_nodes_with_a_sweep(tmp_path: Path) -> None:
    # one node: the paper's sizes only (one size per collective); two nodes: a sweep
    rows = [{"collective": "allreduce", "placement": "device", "ranks": 4, "nodes": 1, "size_bytes": 4 << 30,
             "algbw_GBps": 200.0}]
    rows += [{"collective": "allreduce", "placement": "device", "ranks": 8, "nodes": 2, "size_bytes": s,
              "algbw_GBps": g} for s, g in ((1 << 20, 5.0), (1 << 30, 11.0))]
    paper, seen = draw([_nccl_file(tmp_path / "n.h5", rows)], tmp_path / "out", ("nccl_by_size",))
    assert dict(seen["nccl_by_size"].line("all-reduce, n = 8 GPUs on 2 nodes", "algbw", "local HBM")) == \
        {1 << 20: 5.0, 1 << 30: 11.0}
    assert "No single-node sweep: drawn from the fewest nodes with one (2)." in paper.drawn["nccl_by_size"].notes
    only = _nccl_file(tmp_path / "p.h5", rows[:1])
    paper, seen = draw([only], tmp_path / "out2", ("nccl_by_size",))
    assert not seen and "no collective at two sizes or more" in paper.drawn["nccl_by_size"].why_not


def test_nccl_by_nodes_falls_back_to_a_size_every_node_count_has(tmp_path: Path) -> None:
    rows = [{"collective": "allreduce", "placement": "device", "ranks": 4 * n, "nodes": n, "size_bytes": s,
             "algbw_GBps": 10.0 * n + s / (1 << 30)} for n in (1, 2) for s in (1 << 29, 1 << 30)]
    rows += [{"collective": "allreduce", "placement": "device", "ranks": 4, "nodes": 1, "size_bytes": 4 << 30,
              "algbw_GBps": 99.0}]   # the paper's 4 GiB, on one node only
    paper, seen = draw([_nccl_file(tmp_path / "n.h5", rows)], tmp_path / "out", ("nccl_by_nodes",))
    assert dict(seen["nccl_by_nodes"].line("all-reduce", "algbw", "local HBM")) == {1: 11.0, 2: 21.0}
    assert any("paper's 4 GiB buffer was not measured at every node count; drawn at 1 GiB" in n
               for n in paper.drawn["nccl_by_nodes"].notes)
    assert any("all-gather: no size" in n for n in paper.drawn["nccl_by_nodes"].notes)


# ---- registry and published values -----------------------------------------------------------------

def test_registered_items_and_their_tables_are_documented() -> None:
    items = {i.key: i for i in registry("analysis.figures")}
    assert [(items[k].ref, items[k].kind) for k in KEYS] == [("Fig. 14", "figure"), ("Fig. 18", "figure"),
                                                             ("Fig. 19", "figure")]
    schema = (REPO / "docs" / "schema.md").read_text()
    for key in KEYS:
        assert all(f"/{t}" in schema for t in items[key].tables)


def test_published_values_of_these_figures_name_their_source() -> None:
    mine = of("fig14.")
    assert {p.key for p in mine} == {"fig14.bi.node_max", "fig14.uni.port"}
    assert len({p.key for p in VALUES}) == len(VALUES)
    paper = REPO / "shared" / "references" / "alps-gh200-data-movement-paper.txt"  # where a checkout has it
    for p in mine:
        assert "Sec. II" in p.source and p.value > 0
        quoted = p.source.split('"')[1]
        if paper.exists():  # the printed words are in the paper's text
            assert quoted in paper.read_text(), quoted
