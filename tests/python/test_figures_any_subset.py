"""Issue 38, item 4: every figure legible at any size of data. A figure sized for a full
data set failed the legibility check (analysis/render/style.py) on a small one: the README's
first command on a one-GPU node (a legend taller than its plot), a report over one bandwidth
and one transfer file (a colour bar's labels overlapping, out of the command as a traceback),
4 of 24 reports and papers over random subsets of two real runs.

So here hypothesis draws subsets of the recorded real runs (docs/results/raw, tests/python/
data): some of one run's files, each keeping some of its cases (and their samples), from one
case to the whole set, and runs `analysis report` and `analysis paper` on them in process:
each must exit 0, with no traceback and no errors.log. A figure the data cannot fill sizes
itself to what it holds (style.fit mends what the layout leaves) or says in one line why it
is not drawn. The fleet likewise, over nodes made of such subsets of several recorded runs.

MEMPATH_FIGURE_EXAMPLES sets the examples of each property (default 5; 20 in CI's pass,
MEMPATH_CI_TESTS=1), MEMPATH_FIGURE_SEED the seed (default 38: the same examples on every
run, so a failure in CI reproduces; another seed tries others). Figures are checked as
style.save checks them, but no PNG or PDF is rendered (as tests/fuzz/fuzz_attributes.py).
Each failure found is replayed below as its smallest input (REPRODUCERS), and the two seen
on the one-H200 node from its recorded files, rendered whole."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings, strategies as st

from analysis import outfiles
from analysis.__main__ import main as analysis_main
from analysis.errors import ERRORS_LOG
from analysis.render import style
from analysis.results.h5writer import Column, column, write_result
import report_reading
from conftest import CI_TIER, DATA, REPO, assert_pdf

RAW = REPO / "docs" / "results" / "raw"
CENTRE = RAW / "2026-11-28-centre-h200x1"
THIRD = RAW / "2026-11-29-centre-h200x1"


def _run(folder: Path, pattern: str = "*.h5") -> tuple[Path, list[Path]]:
    return folder, sorted(folder.rglob(pattern))


#: The recorded real runs: name -> (their folder, their result files). The paper sets measured
#: on lent nodes, the committed real files of tests/python/data (an H100 node's, a two-H200
#: node's), and a centre's runs on one H200 (issue 38, docs/results/2026-11-28-centre-h200.md):
#: the README's first command, the acceptance on two Slurm nodes sharing it, the node
#: characterisation, the two-node paper steps and the vetting of both nodes; then (2026-11-29)
#: the paper set of one H200 through Slurm, the acceptance on both nodes to its end (MPI and
#: inventory included), a paper set cut by its --time and the vetting of a node that failed;
#: the README's first command on one H200 with its conditions, and on a CPU VM (2026-12-06);
#: `mempath llm` on one H100, placements and offload sweeps, three ways (2026-12-07).
RUNS: dict[str, tuple[Path, list[Path]]] = {
    "h200": _run(RAW / "2026-11-26-paper-h200"),
    "quad-h200": _run(RAW / "2026-11-26-paper-quad-h200"),
    "h200x2-1127": _run(RAW / "2026-11-27-paper-h200x2"),
    "h200x2-1128": _run(RAW / "2026-11-28-paper-h200x2"),
    "h200x4": _run(RAW / "2026-11-28-paper-h200x4"),
    "h100": (DATA, sorted(DATA.glob("h100_*.h5"))),
    "h200x2-data": (DATA, sorted(DATA.glob("h200x2_*.h5"))),
    "centre-readme": _run(CENTRE / "readme"),
    "centre-acceptance": _run(CENTRE / "acceptance"),
    "centre-characterise": _run(CENTRE / "characterise"),
    "centre-paper": _run(CENTRE / "paper"),
    "centre-vetting": _run(CENTRE / "vet" / "vetting"),
    "h200x1-slurm": _run(RAW / "2026-11-29-paper-h200x1"),
    "centre-acceptance-all": _run(THIRD / "acceptance"),
    "centre-paper-cut": _run(THIRD / "fault-time" / "set"),
    "centre-node-failed": _run(THIRD / "fault-node" / "vetting"),
    "centre-readme-conditions": _run(THIRD / "readme-07ffa6f"),
    "cpu-vm-suite": _run(RAW / "2026-12-06-cpu-vm-suite"),
    "h100-llm-offload": _run(RAW / "2026-12-07-llm-offload-h100" / "call2"),
}
EXAMPLES = int(os.environ.get("MEMPATH_FIGURE_EXAMPLES") or (20 if CI_TIER else 5))
SEED = int(os.environ.get("MEMPATH_FIGURE_SEED") or 38)
#: No shrinking: each example is a report and a paper (seconds); a failure is printed whole
#: (its files and rows), and REPRODUCERS keeps the smallest one found by hand.
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=(HealthCheck.too_slow, HealthCheck.data_too_large))

#: A subset of a run: file (its path in the run's folder) -> family -> the rows of its
#: /FAMILY/cases kept (None: all).
Subset = Mapping[str, Mapping[str, Sequence[int] | None]]


# ---- the subsets -------------------------------------------------------------------------------

def case_counts(path: Path) -> dict[str, int]:
    """Rows of each /FAMILY/cases table of a result file."""
    with h5py.File(path, "r") as handle:
        return {family: len(handle[family]["cases"]["case_id"]) for family in handle
                if isinstance(handle[family], h5py.Group) and "cases" in handle[family]}


COUNTS = {path: case_counts(path) for _, paths in RUNS.values() for path in paths}


def _columns(group: h5py.Group, rows: np.ndarray) -> list[Column]:
    """The columns of a table, the rows kept, each with its kind and units."""
    out = []
    for name, dataset in group.items():
        values = dataset[:][rows]
        text = values.dtype.kind == "O"
        if text:
            values = np.array([v.decode() if isinstance(v, bytes) else v for v in values], dtype=object)
        out.append(column(name, values, str if text else None)._replace(units=dataset.attrs.get("units", "")))
    return out


def write_subset(source: Path, dest: Path, keep: Mapping[str, Sequence[int] | None],
                 attrs: Mapping[str, Any] | None = None) -> Path:
    """``source`` copied to ``dest`` with only the rows ``keep`` names of each /FAMILY/cases
    (None: all) and the /FAMILY/samples rows of their case_id; its other tables and root
    attributes as they were (``attrs``: some replaced), written by the analysis' writer
    (h5writer: a file as valid to the readers as the binary's)."""
    tables: dict[str, list[Column]] = {}
    with h5py.File(source, "r") as handle:
        for family, rows in keep.items():
            if rows is None:
                continue
            cases = handle[family]["cases"]
            kept = np.array(sorted(rows), dtype=int)
            tables[f"{family}/cases"] = _columns(cases, kept)
            if "samples" in handle[family]:
                samples = handle[family]["samples"]
                wanted = np.isin(samples["case_id"][:], cases["case_id"][:][kept])
                tables[f"{family}/samples"] = _columns(samples, np.flatnonzero(wanted))
    shutil.copyfile(source, dest)
    if tables or attrs:
        write_result(dest, dict(attrs or {}), tables, update=True, sync=False)
    return dest


def write_run(run: str, subset: Subset, folder: Path, prefix: str | None = None) -> list[Path]:
    """The files of ``subset`` of the recorded ``run`` in ``folder``, at their paths in the
    run's folder, with the plan.json of a vetting node whose files they are (what the fleet
    holds them against); ``prefix``: each node renamed PREFIX-HOST (its host attribute and
    the topology's), so that runs recorded on one host stand for nodes of their own."""
    root = RUNS[run][0]
    written = []
    for name, keep in subset.items():
        dest = folder / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        written.append(write_subset(root / name, dest, keep, _renamed(root / name, prefix) if prefix else None))
    for plan in root.rglob("plan.json"):
        where = plan.parent.relative_to(root)
        if any(Path(name).is_relative_to(where) for name in subset):
            shutil.copyfile(plan, folder / where / plan.name)
    return written


def _renamed(path: Path, prefix: str) -> dict[str, str]:
    """The root attributes that name a file's node, as PREFIX-HOST."""
    with h5py.File(path, "r") as handle:
        host, topology = f"{prefix}-{handle.attrs['host']}", json.loads(handle.attrs["topology"])
    return {"host": host, "topology": json.dumps({**topology, "host": host})}


@st.composite
def rows_of(draw: st.DrawFn, count: int) -> list[int] | None:
    """All rows of a table (None), a few, or any number of them."""
    how = draw(st.sampled_from(("all", "few", "any")))
    if how == "all":
        return None
    if how == "few":
        return sorted(draw(st.sets(st.integers(0, count - 1), min_size=1, max_size=min(count, 3))))
    kept = draw(st.integers(1, count))
    return sorted(draw(st.randoms(use_true_random=False)).sample(range(count), kept))


@st.composite
def subsets(draw: st.DrawFn, run: str) -> dict[str, dict[str, list[int] | None]]:
    """Some files of ``run`` (one to all), each with some rows of each cases table."""
    root, paths = RUNS[run]
    files = draw(st.lists(st.sampled_from(paths), min_size=1, max_size=len(paths), unique=True))
    return {path.relative_to(root).as_posix(): {family: draw(rows_of(count)) for family, count in COUNTS[path].items()}
            for path in sorted(files)}


@st.composite
def one_run(draw: st.DrawFn) -> tuple[str, dict[str, dict[str, list[int] | None]]]:
    """A recorded run and a subset of it."""
    run = draw(st.sampled_from(sorted(RUNS)))
    return run, draw(subsets(run))


# ---- the commands ------------------------------------------------------------------------------

@contextlib.contextmanager
def figures_checked_not_rendered() -> Iterator[list[str]]:
    """outfiles.save_figure without the file: style.save still checks (and fits) each
    figure, but the PNG and PDF, most of a report's time, are not rendered. The stems
    saved."""
    saved: list[str] = []

    def record(fig: Any, path: Path, **options: Any) -> Path:
        saved.append(Path(path).stem)
        return Path(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outfiles, "save_figure", record)
        yield saved


def call(*argv: str | Path) -> tuple[int | None, str, str]:
    """(exit status, stdout, stderr) of ``python -m analysis ARGV`` in this process; an
    exception out of the command is in stderr, with its traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code: int | None = analysis_main([str(a) for a in argv])
        except SystemExit as error:  # argparse's
            code = error.code if isinstance(error.code, int) else 2
        except Exception:  # noqa: BLE001 - the finding: a traceback out of the command
            code = None
            traceback.print_exc(file=err)
    style.plt.close("all")  # a figure that raised before save() closed it
    return code, out.getvalue(), err.getvalue()


def assert_drawn(command: str, files: Sequence[Path], out: Path, what: object) -> str:
    """``command`` over ``files`` exits 0, nothing on stderr, no errors.log; its stdout."""
    code, stdout, stderr = call(command, *files, "-o", out)
    log = out / ERRORS_LOG
    trace = log.read_text() if log.exists() else ""
    assert code == 0 and not stderr and not trace, (
        f"`analysis {command}` of {json.dumps(what)}: exit {code}\n{stderr}\n{trace}")
    return stdout


def _fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("subset", numbered=True)


@SETTINGS
@seed(SEED)
@given(one_run())
def test_report_and_paper_of_any_subset_of_a_real_run(tmp_path_factory: pytest.TempPathFactory,
                                                      drawn: tuple[str, dict]) -> None:
    run, subset = drawn
    folder = _fresh(tmp_path_factory)
    files = write_run(run, subset, folder / "in")
    with figures_checked_not_rendered():
        for command in ("report", "paper"):
            assert_drawn(command, files, folder / command, {"run": run, "subset": subset})
    # and it reads as a person wrote it (issue 47): no repeat, no raw error, no empty table
    found = report_reading.faults((folder / "report" / "index.md").read_text())
    assert not found, f"the report of {json.dumps({'run': run, 'subset': subset})}: {found}"


@st.composite
def fleets(draw: st.DrawFn) -> dict[str, tuple[str, dict]]:
    """The recorded vetting of two nodes (n1, n2), some of their files and cases; or nodes
    made of subsets of recorded runs (1 to 4, named nid00000N-HOST), of one kind or not."""
    if draw(st.booleans()):
        return {"": ("centre-vetting", draw(subsets("centre-vetting")))}
    runs = draw(st.lists(st.sampled_from(sorted(RUNS)), min_size=1, max_size=4))
    return {f"nid{i + 1:06d}": (run, draw(subsets(run))) for i, run in enumerate(runs)}


#: The fleet's one error line where it judged every node it read: some failed (a node none of
#: whose kept cases ran, or without a file the others of its kind have) or missing.
FLEET_VERDICT = re.compile(r"analysis: error: \d+ node\(s\) failed, \d+ missing of \d+; why in ")


@SETTINGS
@seed(SEED)
@given(fleets())
def test_fleet_of_any_subsets_of_real_runs(tmp_path_factory: pytest.TempPathFactory, nodes: dict) -> None:
    """Exit 0, or 1 with the verdict's one line (a subset may drop every case that ran, or a
    file the node's peers have: the fleet fails that node, rightly); nothing else on stderr
    but the fleet's notes."""
    folder = _fresh(tmp_path_factory)
    for prefix, (run, subset) in nodes.items():
        write_run(run, subset, folder / "in" / (prefix or run), prefix)
    with figures_checked_not_rendered():
        code, _, stderr = call("fleet", folder / "in", "-o", folder / "fleet")
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("analysis: error:")]
    assert code in (0, 1) and (code == 1) == bool(errors) and all(map(FLEET_VERDICT.match, errors)) \
        and all(line.startswith("analysis: ") for line in lines), (
        f"`analysis fleet` of {json.dumps(nodes)}: exit {code}\n{stderr}")


# ---- what failed, the smallest input each time -------------------------------------------------

#: (run, subset, command, the figure that failed it and is drawn now). What each did at 035a103
#: is in its comment.
REPRODUCERS = {
    # report: section 'Applications': StyleError: legend taller (33 px) than the plots (28 px):
    # one placement of the arrays (a one-row dot plot) under a legend of the five kernels
    "gpu_stream_of_one_placement": ("h100", {"h100_stream_gpu.h5": {"stream": [29]}}, "report",
                                    "stream_gpu_placement"),
    # report: StyleError: illegible: '1000' overlaps '2000' out of the command (a traceback):
    # a log colour bar of less than two decades, its 2 and 5 labels on a short bar
    "copy_heatmap_of_two_copies": ("h200x4", {"bw_copy_scaling_gpu.h5": {"bw": [32, 43]}}, "report",
                                   "copy_heatmap"),
    # report: StyleError: 'destination memory' runs outside the figure (a traceback): two
    # panels of one cell each, narrower than their axis' name
    "copy_heatmap_of_one_cell_a_panel": ("h200", {"bw_copy_scaling_cpu.h5": {"bw": [4]}, "bw_gpu.h5": {"bw": [6]}},
                                         "report", "copy_heatmap"),
    # report: StyleError: 'GB/s (median; bytes read + writt' runs outside the figure (a
    # traceback): the colour bar's label centred under a panel pushed right by its row names
    "copy_heatmap_of_one_panel": ("h200x2-1128", {"bw_gpu.h5": {"bw": [16]}}, "report", "copy_heatmap"),
    # report: section 'Applications': 'GEMM fp64: A, B placed; C in HBM' runs outside the
    # figure: three panels of one size each, a title wider than its panel at the right
    "gemm_of_three_types_one_size_each": ("h200", {"gemm_scaling_dtype.h5": {"gemm": [1, 5, 18]}}, "report",
                                          "gemm_sweep"),
    # report: section 'Applications': '32768' overlaps '65536': sizes one octave apart on a
    # third of the page
    "gemm_of_neighbouring_sizes": ("h200x2-1128", {"gemm_scaling_dtype.h5": {"gemm": [12, 14, 19, 20, 22]}},
                                   "report", "gemm_sweep"),
    # paper: Fig. 17 failed: 'llama-2-13b fp16, 100 tokens' runs outside the figure: the right
    # panel names its own placements, which leave its title less than its width
    "llm_of_other_placements_per_model": ("h200", {"llm_7b.h5": {"llm": [0]}, "llm_13b.h5": {"llm": [0, 2]}},
                                          "paper", "llm_decode"),
    # paper: Fig. 12 failed: 'L2 60 MiB' overlaps 'gpu0': a line of two sizes ending just left
    # of the L2 cache, its name written over the cache's
    "chase_ending_before_a_cache": ("h200", {"chase_cpu.h5": {"chase": [22]}, "chase_gpu.h5": {"chase": [1, 31]}},
                                    "paper", "latency_by_size"),
    # paper: Fig. 12 failed: 'L3 300 MiB' overlaps 'numa0', the CPU's
    "chase_cpu_ending_before_its_l3": ("h200x4", {"chase_cpu.h5": {"chase": [7, 15]}}, "paper", "latency_by_size"),
    # paper: Fig. 11 failed: 'gpu0 (512 KiB / 4 MiB / 8 MiB / ' runs outside the figure: the
    # title lists the largest buffer of each memory, four of them
    # report: section 'Transfers and placement': 'µs, copy + synchronise' overlaps
    # 'small-transfer latency (cudaMemc': one panel of one size, its y label taller than it
    # (the README's first command's transfer latency, one case of 38)
    "transfer_latency_of_one_case": ("centre-readme", {"MempathTransferLatency_a40d14dc/memcpy.h5": {"memcpy": [32]}},
                                     "report", "transfer_latency"),
    "chase_of_four_largest_sizes": ("h200x4", {"chase_cpu.h5": {"chase": [95]},
                                               "chase_gpu.h5": {"chase": [11, 29, 64, 89]}}, "paper",
                                    "latency_by_memory"),
}


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_a_subset_that_failed_once_is_drawn(tmp_path: Path, name: str) -> None:
    run, subset, command, figure = REPRODUCERS[name]
    files = write_run(run, subset, tmp_path / "in")
    with figures_checked_not_rendered() as saved:
        assert_drawn(command, files, tmp_path / command, {"run": run, "subset": subset})
    assert figure in saved


# ---- the failures seen on a one-GPU H200 node at 035a103, from its recorded files --------------

MAX_PX = round(style.PAGE_IN * style.DPI)


def _journal_png(path: Path) -> None:
    import matplotlib.image
    assert matplotlib.image.imread(path).shape[1] in (round(style.COLUMN_IN * style.DPI), MAX_PX), path.name
    assert_pdf(path.with_suffix(".pdf"))


def test_the_readme_commands_gpu_stream_figure_is_drawn(tmp_path: Path) -> None:
    """`MEMPATH_TAG=acceptance reframe_checks/run_suite.sh` (the README's first command) on
    one H200 exited 1: section 'Applications (STREAM, GEMM, LLM)': StyleError: legend taller
    (33 px) than the plots (28 px), stream_gpu_placement. Its STREAM file alone: one
    placement of the arrays, a one-row dot plot under the kernels' legend. Drawn now, the
    plot as tall as the legend (test_centre_runs_recorded.py renders the run's whole report)."""
    files = write_run("centre-readme", {"MempathStream/stream.h5": {"stream": None}}, tmp_path / "in")
    assert_drawn("report", files, tmp_path / "report", "readme/MempathStream/stream.h5")
    _journal_png(tmp_path / "report" / "stream_gpu_placement.png")


def test_a_report_of_one_bandwidth_and_one_transfer_file_is_drawn(tmp_path: Path) -> None:
    """`python -m analysis report` over one bandwidth and one transfer file of that run ended
    in a traceback, StyleError: illegible: '1000' overlaps '2000', raised by the copy heatmap's
    colour bar outside any section: the GPU's copies between DDR and HBM (84 to 4,000 GB/s,
    a log colour bar of under two decades, its 2 and 5 labels on a one-column bar)."""
    subset = {"MempathBandwidth_34fd316d/bw.h5": {"bw": None},
              "MempathTransferBandwidth_5f1a799b/memcpy.h5": {"memcpy": None}}
    files = write_run("centre-readme", subset, tmp_path / "in")
    assert_drawn("report", files, tmp_path / "report", subset)
    _journal_png(tmp_path / "report" / "copy_heatmap.png")
    assert (tmp_path / "report" / "transfers.md").is_file()


def test_a_report_figure_outside_the_sections_that_raises_is_one_line(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread scaling and the copy heatmap are drawn outside any section: a StyleError
    there left the command as a traceback (the colour bar's above). Now as a section's: its
    line, exit 1, its trace in errors.log, the rest of the report written."""
    from dataclasses import replace

    from analysis.render import items
    from analysis.report import sections

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise style.StyleError("illegible: '1000' overlaps '2000'")
    monkeypatch.setitem(items._ITEMS, "copy_heatmap", replace(sections.by_key("copy_heatmap"), build=broken))
    files = write_run("h200", {"bw_copy_scaling_gpu.h5": {"bw": None}}, tmp_path / "in")
    with figures_checked_not_rendered():
        code, _, stderr = call("report", *files, "-o", tmp_path / "report")
    assert code == 1 and stderr.startswith("analysis: error: copy heatmap: StyleError: illegible: '1000' "
                                           "overlaps '2000' (not written; trace in "), stderr
    assert "Traceback" in (tmp_path / "report" / ERRORS_LOG).read_text()
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "### Copy heatmap\n\n_Not drawn: it raised an error" in summary and "## Not written: errors" in summary
