"""The analysis package on synthetic schema-v1 files (h5fixtures) and its command line."""
from __future__ import annotations

import json
import math
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from analysis.results.cases import mark_placement, memory_aliases
from analysis.errors import InputError
from analysis.results.io import RunFileError, load_run, load_runs, load_table
from analysis.model.peaks import PeakModel, hbm_gbps, load_overrides, pcie_gbps
from analysis.render import style
from analysis.report.write import write_report
from conftest import analysis_cli, assert_pdf, assert_png, figure_suffixes
from h5fixtures import case, topology, write_run

SKIP_REASON = "GPU 0 cannot access pageable memory (no ATS/HMM)"
FAIL_REASON = "verification failed: 3 words differ"

# A GH200 run: the values the report must pick are commented.
GH200_CASES = [
    case(pu="cpu0", mem="numa0", threads=36, median_GBps=450.0),   # more, but not all threads
    case(pu="cpu0", mem="numa0", threads=72, alloc="system", median_GBps=280.0),
    case(pu="cpu0", mem="numa0", threads=72, median_GBps=307.2),   # read cpu0 numa0: 307.2 (80% of 384)
    case(pu="cpu0", mem="numa0", threads=72, median_GBps=490.0, noise="gpu0:numa0"),
    case(pu="cpu0", mem="numa0", threads=72, median_GBps=900.0, cache_resident=1),
    case(pu="cpu0", mem="numa0", threads=1, median_GBps=60.0),
    case(op="write", pu="cpu0", mem="numa0", threads=72, median_GBps=300.0),  # 78% of 384
    case(op="write", pu="cpu0", mem="numa0", threads=8, median_GBps=120.0),
    case(pu="cpu0", mem="gpu0", alloc="managed", via="c2c", threads=72, status="failed",
         reason=FAIL_REASON),
    case(pu="gpu0", mem="numa1", via="local", threads=270336, median_GBps=3600.0),  # 90%
    case(pu="gpu0", mem="numa1", via="local", kernel="block", threads=1024, median_GBps=3650.0),
    # ^ faster, but not the grid kernel
    case(pu="gpu0", mem="gpu0", alloc="device", threads=270336, median_GBps=3720.0),  # 93%
    case(pu="gpu0", mem="numa0", via="c2c", alloc="system", status="skipped", reason=SKIP_REASON),
    case(pu="gpu0", mem="numa0", via="c2c", alloc="numa", status="skipped", reason=SKIP_REASON),
    case(op="copy", pu="cpu0", mem="numa0", dst_mem="numa1", via="c2c", threads=72,
         median_GBps=200.0),
    case(op="copy", pu="cpu0", mem="numa0", dst_mem="numa0", threads=72, median_GBps=250.0),
    case(op="copy", pu="gpu0", mem="gpu0", dst_mem="numa0", via="c2c", alloc="device",
         median_GBps=400.0),
    case(op="copy", pu="gpu0", mem="numa0", dst_mem="gpu0", via="c2c", alloc="system",
         status="skipped", reason=SKIP_REASON),
]


def report_files() -> list[str]:
    """The files of the GH200 run's report, each figure as this run writes figures."""
    return ["path_matrix.md", "path_matrix.csv", "summary.md", "index.md", "index.html",
            *(f"{stem}{suffix}" for stem in ("thread_scaling", "copy_heatmap", "path_heatmap")
              for suffix in (*figure_suffixes(), ".csv"))]


def matrix_cells(markdown: str, op: str) -> dict[tuple[str, str], str]:
    """(pu, mem) -> cell text of the first `### op` table of path_matrix.md."""
    section = markdown.split(f"### {op}\n", 1)[1].split("###", 1)[0]
    from analysis.render.tables import parse_row  # escapes undone, as the page reads them
    rows = [parse_row(line) for line in section.splitlines() if line.startswith("|")]
    mems = [m.strip() for m in rows[0][1:]]
    return {(r[0].strip(), mem): cell.strip() for r in rows[2:] for mem, cell in zip(mems, r[1:])}


@pytest.fixture
def gh200_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "gh200.h5", GH200_CASES, topology=topology("gh200_single"))


# --- io -----------------------------------------------------------------------------------

def test_load_table_round_trips_values_strings_and_nan(tmp_path: Path) -> None:
    rows = [case(median_GBps=123.25, min_GBps=120.5, max_GBps=125.0, threads=72),
            case(pu="gpu0", mem="numa0", status="skipped", reason="no ATS/HMM: µ ünïcode")]
    path = write_run(tmp_path / "r.h5", rows, topology=topology("gh200_single"))
    cases = load_table(path, "bw/cases")
    assert len(cases) == 2
    assert list(cases["case_id"]) == [0, 1]
    assert cases["median_GBps"].iloc[0] == 123.25 and cases["min_GBps"].iloc[0] == 120.5
    assert math.isnan(cases["median_GBps"].iloc[1])
    assert list(cases["threads"]) == [72, 1] and cases["threads"].dtype == np.int64
    assert cases["reason"].iloc[1] == "no ATS/HMM: µ ünïcode"
    assert all(type(v) is str for v in cases["pu"]) and list(cases["pu"]) == ["cpu0", "gpu0"]
    assert cases["dst_mem"].iloc[0] == ""
    samples = load_table(path, "bw/samples")
    assert sorted(samples["bandwidth_GBps"]) == [120.5, 123.25, 125.0]
    assert set(samples["case_id"]) == {0}


def test_load_table_of_an_empty_table_has_its_columns(tmp_path: Path) -> None:
    path = write_run(tmp_path / "empty.h5", [], topology=topology("x86_h100"))
    cases = load_table(path, "bw/cases")
    assert cases.empty and {"op", "median_GBps", "status"} <= set(cases.columns)


def test_load_run_parses_attributes_topology_and_tables(gh200_run: Path) -> None:
    run = load_run(gh200_run)
    assert run.attrs["schema_version"] == 1 and run.attrs["cuda_runtime_version"] == 12040
    assert run.host == "gh200_single" and run.topology["arch"] == "aarch64"
    assert set(run.tables) == {"bw/cases", "bw/samples"}
    assert len(run.tables["bw/cases"]) == len(GH200_CASES)


def test_load_runs_adds_run_and_host_and_keeps_same_stems_apart(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_run(tmp_path / "a" / "bw.h5", [case()], topology=topology("gh200_single"))
    second = write_run(tmp_path / "b" / "bw.h5", [case(), case()], topology=topology("x86_h100"))
    runs = load_runs([first, second])
    cases = runs.tables["bw/cases"]
    assert list(cases.columns[:2]) == ["run", "host"]
    assert list(cases["run"]) == ["a/bw", "b/bw", "b/bw"]
    assert list(cases["host"]) == ["gh200_single", "x86_h100", "x86_h100"]
    assert runs.hosts() == ["gh200_single", "x86_h100"]


def test_runs_of_one_host_name_on_different_nodes_are_kept_apart(tmp_path: Path) -> None:
    x86 = topology("x86_h100")
    resized = json.loads(json.dumps(x86))
    resized["memories"][0]["bytes"] //= 2                     # sizes differ between runs
    paths = [write_run(tmp_path / f"{i}.h5", [case()], topology=t, attrs={"host": "vm"})
             for i, t in enumerate([x86, topology("gh200_single"), resized])]
    runs = load_runs(paths)
    assert [run.node for run in runs.runs] == ["vm", "vm#2", "vm"]
    assert list(runs.tables["bw/cases"]["host"]) == ["vm", "vm#2", "vm"]


def test_load_rejects_missing_foreign_and_newer_files(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="no such file"):
        load_run(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(RunFileError, match="not an HDF5 file"):
        load_run(tmp_path / "text.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = [1, 2, 3]
    with pytest.raises(RunFileError, match="not a mempath result file"):
        load_table(tmp_path / "other.h5", "bw/cases")
    newer = write_run(tmp_path / "v2.h5", [case()], topology=topology("x86_h100"),
                      schema_version=2)
    with pytest.raises(RunFileError, match="schema_version 2 is not supported"):
        load_run(newer)


# --- peaks --------------------------------------------------------------------------------

@pytest.mark.parametrize(("gen", "width", "gbps"), [
    (5, 16, 63.0), (4, 16, 31.5), (3, 16, 15.75), (2, 8, 4.0), (1, 1, 0.25), (6, 16, 126.0)])
def test_pcie_capacity_by_generation_and_width(gen: int, width: int, gbps: float) -> None:
    assert pcie_gbps(gen, width) == pytest.approx(gbps, rel=2e-3)


def test_pcie_capacity_unknown_without_generation() -> None:
    assert pcie_gbps(0, 16) is None and pcie_gbps(5, 0) is None


@pytest.mark.parametrize(("model", "gbps"), [
    ("NVIDIA H100 80GB HBM3", 3350.0), ("NVIDIA H100 PCIe", 2000.0), ("NVIDIA H200", 4800.0),
    ("NVIDIA GH200 480GB", 4000.0), ("NVIDIA GH200 144G HBM3e", 4900.0), ("Tesla T4", None)])
def test_hbm_capacity_by_model(model: str, gbps: float | None) -> None:
    assert hbm_gbps(model) == gbps


def test_gh200_peaks() -> None:
    # A 480 GB Grace module: the data sheet's 384 GB/s LPDDR5X is below the C2C.
    model = PeakModel(topology("gh200_single"))
    peak = model.path("gpu0", "numa0")
    assert (peak.gbps, peak.source, peak.limit) == (384.0, "table", "numa0")
    assert "data sheet" in (peak.citation or "") and not peak.assumed
    assert model.path("cpu0", "numa0").gbps == 384.0          # Grace LPDDR5X, 480 GB module
    assert model.path("cpu0", "numa1").gbps == 450.0          # C2C below the HBM
    hbm = model.path("gpu0", "numa1")
    assert (hbm.gbps, hbm.limit, hbm.unknown) == (4000.0, "numa1", ())
    assert "arxiv.org/html/2408.11556" in (hbm.citation or "")


def test_x86_h100_peaks() -> None:
    model = PeakModel(topology("x86_h100"))
    hbm = model.path("gpu0", "gpu0")
    assert (hbm.gbps, hbm.source) == (3350.0, "table")
    pcie = model.path("gpu0", "numa0")
    assert pcie.gbps == pytest.approx(63.0, rel=1e-3)
    assert (pcie.source, pcie.limit, pcie.unknown) == ("discovered", "link:pcie:gpu0", ("numa0",))
    host = model.path("cpu0", "numa0")
    assert (host.gbps, host.source, host.unknown) == (None, None, ("numa0",))


def test_quad_gh200_peaks_cross_the_grace_interconnect() -> None:
    model = PeakModel(topology("gh200_quad"))
    grace = model.path("cpu0", "numa1")
    assert (grace.gbps, grace.limit) == (75.0, "link:interconnect")   # CSCS: ~75 GB/s
    assert "cscs-docs" in (grace.citation or "") and not grace.assumed
    assert model.path("cpu0", "numa12").gbps == 75.0         # interconnect+c2c
    assert model.path("cpu0", "numa0").gbps == 500.0         # 120 GB module: Alps paper
    nvlink = model.path("gpu0", "gpu1")
    assert (nvlink.gbps, nvlink.limit) == (150.0, "link:nvlink:gpu0")
    assert "3x6 P2P NVLink" in (nvlink.citation or "")
    assert model.path("gpu0", "numa4").gbps == 4000.0


def test_quad_gh200_hopper_reaches_peer_lpddr_over_nvlink_then_the_peers_c2c() -> None:
    model = PeakModel(topology("gh200_quad"))
    names = [c.name for c in model.capacities("gpu0", "numa1", "nvlink+c2c")]
    assert names == ["link:nvlink:gpu0", "link:nvlink:gpu1", "link:c2c:gpu1", "numa1"]
    peak = model.path("gpu0", "numa1", "nvlink+c2c")
    assert (peak.gbps, peak.limit) == (150.0, "link:nvlink:gpu0")
    # The C2C on the way is the peer's: a slower gpu1 C2C limits, gpu0's does not.
    slow = PeakModel(topology("gh200_quad"), {"link:c2c:gpu1": 100.0, "link:c2c:gpu0": 50.0})
    assert (slow.path("gpu0", "numa1", "nvlink+c2c").gbps, slow.path("gpu0", "numa1", "nvlink+c2c").limit) \
        == (100.0, "link:c2c:gpu1")
    # Grace to peer HBM: the interconnect, then the peer GPU's C2C.
    assert [c.name for c in model.capacities("cpu0", "numa12", "interconnect+c2c")] == \
        ["link:interconnect", "link:c2c:gpu1", "numa12"]


def test_dual_gh200_interconnect_is_assumed_and_marked() -> None:
    model = PeakModel(topology("gh200_dual"))
    peak = model.path("cpu0", "numa1")
    assert (peak.gbps, peak.limit, peak.assumed) == (150.0, "link:interconnect", True)
    assert peak.citation.startswith("assumed")
    assert not model.path("cpu0", "numa0").assumed


def test_user_peaks_override_the_model(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    path.write_text(json.dumps({"link:pcie": 50, "numa0": 300, "gpu0": 3000}))
    overrides = load_overrides(path)
    x86 = PeakModel(topology("x86_h100"), overrides)
    assert x86.path("gpu0", "numa0") == x86.path("gpu0", "numa0", "pcie")
    assert (x86.path("gpu0", "numa0").gbps, x86.path("gpu0", "numa0").source) == (50.0, "user")
    assert (x86.path("cpu0", "numa0").gbps, x86.path("cpu0", "numa0").unknown) == (300.0, ())
    gh200 = PeakModel(topology("gh200_single"), overrides)
    hbm = gh200.path("gpu0", "numa1")                      # "gpu0" is the HBM of numa1 too
    assert (hbm.gbps, hbm.source) == (3000.0, "user")


@pytest.mark.parametrize(("text", "match"), [
    ('{"link:pcei": 50}', "unknown peak key"), ('{"numa0": "fast"}', "positive number"),
    ("[1, 2]", "JSON object"), ("{", "not valid JSON")])
def test_bad_peaks_files_are_refused(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "peaks.json").write_text(text)
    with pytest.raises(InputError, match=match):
        load_overrides(tmp_path / "peaks.json")


# --- report -------------------------------------------------------------------------------

def test_report_writes_every_file_with_the_expected_medians(gh200_run: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "report"
    report = write_report(load_runs([gh200_run]), out)
    assert sorted(p.name for p in report.files) == sorted(report_files())
    for name in report_files():
        assert (out / name).stat().st_size > 0, name
    markdown = (out / "path_matrix.md").read_text()
    read = matrix_cells(markdown, "read")
    assert read[("cpu0", "numa0")] == "307.2 (80%)"
    assert read[("gpu0", "numa1")] == "3600.0 (90%)"
    assert read[("gpu0", "gpu0")] == "3720.0 (93%)"
    assert read[("cpu0", "gpu0")] == "failed [1]"      # reasons numbered in reading order
    assert read[("gpu0", "numa0")] == "skipped [2]"
    assert matrix_cells(markdown, "write")[("cpu0", "numa0")] == "300.0 (78%)"
    assert f"1. {FAIL_REASON}" in markdown and f"2. {SKIP_REASON}" in markdown

    csv = pd.read_csv(out / "path_matrix.csv").set_index(["op", "pu", "mem"])
    best = csv.loc[("read", "cpu0", "numa0")]
    assert (best["median_GBps"], best["threads"], best["alloc"]) == (307.2, 72, "numa")
    assert best["pct_of_peak"] == pytest.approx(80.0)
    c2c = csv.loc[("read", "gpu0", "numa0")]
    # A 480 GB Grace module: its LPDDR5X (384 GB/s), not the C2C, limits the path.
    assert (c2c["status"], c2c["peak_GBps"], c2c["peak_source"]) == ("skipped", 384.0, "table")
    assert csv.loc[("read", "gpu0", "numa1"), "kernel"] == "grid"
    assert "copy" not in csv.index.get_level_values("op")


def test_summary_links_figures_and_counts_cases(gh200_run: Path, tmp_path: Path) -> None:
    write_report(load_runs([gh200_run]), tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    for link in ("](path_matrix.md)", "](path_matrix.csv)", "![Thread scaling (CPU)](thread_scaling.png)",
                 "![Copy heatmap](copy_heatmap.png)", *(f"(copy_heatmap{suffix})" for suffix in figure_suffixes())):
        assert link in summary
    assert ".pdf" in figure_suffixes() or ".pdf)" not in summary  # no link to a PDF not written
    assert "| gh200_single | bw | 14 | 3 | 1 |" in summary       # ok, skipped, failed
    assert f"| bw | skipped | {SKIP_REASON} | 3 |" in summary
    assert "| gh200_single | gpu0 | numa0 | c2c | 384.0 | numa0 | table |  | Grace 480 GB LPDDR5X" in summary
    assert "abc1234" in summary and "12.4" in summary and "NVIDIA GH200 480GB" in summary
    assert "## Missing" not in summary


def heatmap_texts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Panel title -> its cell texts, of each path heatmap drawn while the test runs."""
    drawn: dict[str, list[str]] = {}
    real = style.save

    def record(fig, out, stem, **kwargs):  # type: ignore[no-untyped-def]
        drawn.update({ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes if ax.texts})
        return real(fig, out, stem, **kwargs)
    monkeypatch.setattr(style, "save", record)
    return drawn


def test_path_heatmap_of_a_gh200_run(gh200_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = heatmap_texts(monkeypatch)
    write_report(load_runs([gh200_run]), tmp_path)
    assert_png(tmp_path / "path_heatmap.png")
    assert_pdf(tmp_path / "path_heatmap.pdf")
    summary = (tmp_path / "summary.md").read_text()
    assert "## Path matrix heatmap" in summary and "(path_heatmap.png)" in summary
    # The path matrix's picks, with their % of peak; why a path did not run.
    read = drawn["read: median GB/s (% of peak)"]
    assert {"307\n80%", "3600\n90%", "3720\n93%", "failed", "skipped"} <= set(read)
    assert "300\n78%" in drawn["write: median GB/s (% of peak)"]


def test_path_heatmap_of_an_x86_fixture_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = heatmap_texts(monkeypatch)
    run = write_run(tmp_path / "x86.h5", [case(pu="cpu0", mem="numa0", threads=8, median_GBps=85.5),
                                          case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=2900.0),
                                          case(pu="gpu0", mem="numa0", via="pcie", median_GBps=24.0)],
                    topology=topology("x86_h100"))
    write_report(load_runs([run]), tmp_path / "out")
    assert_png(tmp_path / "out" / "path_heatmap.png")
    (read,) = drawn.values()  # read only: one panel
    assert any(t.startswith("85.5") for t in read) and any(t.startswith("2900") for t in read)
    assert any(t.startswith("24.0") for t in read)


def test_path_heatmap_not_drawn_without_a_measured_path(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r.h5", [case(pu="gpu0", mem="numa0", status="skipped", reason=SKIP_REASON)],
                    topology=topology("x86_h100"))
    write_report(load_runs([run]), tmp_path / "out")
    assert not (tmp_path / "out" / "path_heatmap.png").exists()
    assert "no read or write case measured a path" in (tmp_path / "out" / "summary.md").read_text()


def test_figures_are_drawn(gh200_run: Path, tmp_path: Path) -> None:
    write_report(load_runs([gh200_run]), tmp_path)
    for name in ("thread_scaling", "copy_heatmap"):
        assert_png(tmp_path / f"{name}.png")
        assert_pdf(tmp_path / f"{name}.pdf")


def test_report_of_cpu_reads_only_says_what_is_missing(tmp_path: Path) -> None:
    rows = [case(pu="cpu0", mem="numa0", kernel="avx512", threads=t, median_GBps=10.0 * t)
            for t in (1, 2, 4, 8, 16)]
    run = write_run(tmp_path / "x86.h5", rows, topology=topology("x86_h100"))
    out = tmp_path / "report"
    report = write_report(load_runs([run]), out)
    assert not (out / "copy_heatmap.png").exists()
    assert_png(out / "thread_scaling.png")
    assert matrix_cells((out / "path_matrix.md").read_text(), "read")[("cpu0", "numa0")] == "160.0"
    assert "_No write case in these runs._" in (out / "path_matrix.md").read_text()
    summary = (out / "summary.md").read_text()
    assert "copy heatmap not drawn: no copy case measured a path" in summary
    assert "no write case in these runs" in summary
    assert "| x86_h100 | cpu0 | numa0 | local | unknown |  |  | numa0 |" in summary
    assert report.missing == ["no write case in these runs", "no copy case in these runs",
                              "copy heatmap not drawn: no copy case measured a path"]


def cases_counts(summary: str) -> dict[tuple[str, str], dict[str, int]]:
    """(host, family) -> {status: cases} of summary.md's "Cases" table."""
    section = summary.split("## Cases\n\n", 1)[1].split("\n\n", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()]
    header = rows[0]
    return {(r[0], r[1]): {s: int(n) for s, n in zip(header[2:], r[2:])} for r in rows[2:]}


def test_cases_table_counts_every_family_by_status(gh200_run: Path, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parent / "data"
    files = [gh200_run, data / "h100_gemm.h5", data / "h100_stream_cpu.h5", data / "h100_pingpong.h5",
             data / "h200x2_nccl.h5"]
    expected: dict[tuple[str, str], dict[str, int]] = {}
    for run in load_runs(files).runs:   # straight from each file: its rows per status
        for name, table in run.tables.items():
            if name.endswith("/cases"):
                counts = expected.setdefault((run.node, name.split("/")[0]), {})
                for status in table["status"]:
                    counts[status] = counts.get(status, 0) + 1
    write_report(load_runs(files), tmp_path / "report")
    counts = cases_counts((tmp_path / "report" / "summary.md").read_text())
    assert {k for k in expected} >= {("gh200_single", "bw"), ("vm", "gemm"), ("vm", "stream"), ("vm", "pingpong")}
    assert {k: {s: n for s, n in v.items() if n} for k, v in counts.items()} == expected
    assert counts[("vm", "gemm")]["failed"] > 0 and counts[("vm", "gemm")]["skipped"] > 0


def cpu_only_topology() -> dict:
    """x86_h100 without its GPU: a CPU-only node."""
    topo = topology("x86_h100")
    topo["host"] = "cpubox"
    topo["processors"] = [p for p in topo["processors"] if p["kind"] != "gpu"]
    topo["memories"] = [m for m in topo["memories"] if m["kind"] != "device"]
    topo["paths"] = [p for p in topo["paths"] if not (p["pu"] + p["mem"]).count("gpu")]
    return topo


# Commands (and options) that refuse a node without a GPU, or measure nothing there.
GPU_ONLY_HINTS = ("mempath memcpy", "mempath gemm", "mempath atomics", "mempath um", "mempath allocmatrix",
                  "mempath llm", "mempath-mpi nccl", "--pu-kind gpu", "GPU case")


def test_report_of_a_cpu_only_node_suggests_no_gpu_command(tmp_path: Path) -> None:
    rows = [case(pu="cpu0", mem="numa0", kernel="avx512", threads=t, median_GBps=10.0 * t) for t in (1, 2, 4)]
    stream = Path(__file__).resolve().parent / "data" / "h100_stream_cpu.h5"
    import shutil
    cpu_stream = tmp_path / "stream.h5"     # CPU stream cases, moved onto the CPU-only node
    shutil.copy(stream, cpu_stream)
    with h5py.File(cpu_stream, "a") as f:
        f.attrs["topology"] = json.dumps(cpu_only_topology())
        f.attrs["host"] = "cpubox"
    run = write_run(tmp_path / "cpu.h5", rows, topology=cpu_only_topology())
    out = tmp_path / "report"
    report = write_report(load_runs([run, cpu_stream]), out)
    texts = [*report.notes, *report.missing] + [p.read_text() for p in out.glob("*.md")]
    for hint in GPU_ONLY_HINTS:
        assert not [t for t in texts if hint in t], hint
    assert "## Transfers and placement" not in (out / "summary.md").read_text()


def test_report_of_a_gpu_node_without_memcpy_still_suggests_it(tmp_path: Path) -> None:
    run = write_run(tmp_path / "gpu.h5", [case(pu="gpu0", mem="gpu0", alloc="device")], topology=topology("x86_h100"))
    report = write_report(load_runs([run]), tmp_path / "report")
    assert any("run `mempath memcpy`" in note for note in report.notes)


def test_report_of_skipped_cases_only(tmp_path: Path) -> None:
    rows = [case(pu="gpu0", mem="numa0", via="pcie", alloc="system", status="skipped",
                 reason=SKIP_REASON),
            case(op="copy", pu="gpu0", mem="numa0", dst_mem="gpu0", via="pcie", status="skipped",
                 reason=SKIP_REASON)]
    run = write_run(tmp_path / "skipped.h5", rows, topology=topology("x86_h100"))
    report = write_report(load_runs([run]), tmp_path / "report")
    names = {p.name for p in report.files}
    assert names == {"path_matrix.md", "path_matrix.csv", "summary.md", "index.md", "index.html"}
    markdown = (tmp_path / "report" / "path_matrix.md").read_text()
    assert matrix_cells(markdown, "read")[("gpu0", "numa0")] == "skipped [1]"
    assert f"1. {SKIP_REASON}" in markdown
    assert "| x86_h100 | bw | 0 | 2 | 0 |" in (tmp_path / "report" / "summary.md").read_text()


def test_report_of_empty_tables(tmp_path: Path) -> None:
    run = write_run(tmp_path / "empty.h5", [], topology=topology("gh200_single"))
    write_report(load_runs([run]), tmp_path / "report")
    matrix = (tmp_path / "report" / "path_matrix.md").read_text()
    assert "_No read or write case in these runs._" in matrix
    assert "_No case in these runs._" in (tmp_path / "report" / "summary.md").read_text()


def test_report_of_two_hosts_keeps_them_apart(gh200_run: Path, tmp_path: Path) -> None:
    x86 = write_run(tmp_path / "x86.h5", [case(pu="cpu0", mem="numa0", kernel="avx2",
                                               threads=16, median_GBps=77.0)],
                    topology=topology("x86_h100"))
    write_report(load_runs([gh200_run, x86]), tmp_path / "report")
    markdown = (tmp_path / "report" / "path_matrix.md").read_text()
    gh200_part, x86_part = markdown.split("## Host `x86_h100`")
    assert matrix_cells(gh200_part, "read")[("cpu0", "numa0")] == "307.2 (80%)"
    assert matrix_cells(x86_part, "read")[("cpu0", "numa0")] == "77.0"


def test_placement_decides_whether_a_case_stands_for_its_path() -> None:
    topologies = {"n": topology("gh200_single")}
    assert memory_aliases(topologies["n"]) == {"numa1": "gpu0"}
    rows = [case(mem="gpu0", alloc="managed", placement="numa1"),      # gpu0's HBM node
            case(mem="numa0", placement="numa0:0.5,numa1:0.5"),        # mixed
            case(mem="numa0", placement="unknown"),                    # not managed: trusted
            case(mem="numa0", alloc="managed", placement="unknown"),   # may have migrated
            case(op="copy", mem="numa0", dst_mem="gpu0", placement="numa0",
                 dst_placement="numa0"),                               # destination elsewhere
            case(op="copy", mem="numa0", dst_mem="numa0", dst_alloc="managed",
                 placement="numa0", dst_placement="unknown"),          # managed destination
            case(op="copy", mem="numa0", dst_mem="numa0", alloc="managed", dst_alloc="numa",
                 placement="numa0", dst_placement="unknown")]
    cases = pd.DataFrame(rows).assign(host="n")
    assert list(mark_placement(cases, topologies)["placed"]) == [True, False, True, False, False,
                                                                  False, True]


def test_the_binarys_placed_column_wins_over_the_rule_here() -> None:
    """0.2.0 files say themselves whether a case's pages stayed (`placed`); older files
    (no column, or -1: did not run) get the rule applied here."""
    topologies = {"n": topology("gh200_single")}
    rows = [case(mem="numa0", placement="numa0", placed=0),           # the binary says moved
            case(mem="numa0", alloc="managed", placement="unknown", placed=1),
            case(mem="numa0", placement="numa0", placed=-1),          # not run: the rule
            case(mem="numa0", alloc="managed", placement="unknown", placed=-1)]
    cases = pd.DataFrame(rows).assign(host="n", dst_mem="")
    assert list(mark_placement(cases, topologies)["placed"]) == [False, True, True, False]


def test_report_leaves_out_cases_whose_pages_were_elsewhere(tmp_path: Path) -> None:
    rows = [case(pu="cpu0", mem="gpu0", via="pcie", alloc="managed", threads=16,
                 placement="numa0", median_GBps=128.0),    # migrated to the host on access
            case(pu="cpu0", mem="gpu0", via="pcie", alloc="device", threads=16,
                 status="skipped", reason="cudaMalloc memory is not mapped for CPU access"),
            case(pu="gpu0", mem="numa0", via="pcie", alloc="managed", placement="unknown",
                 median_GBps=3079.0),                      # migrated to the GPU
            case(pu="gpu0", mem="numa0", via="pcie", alloc="pinned", median_GBps=51.0)]
    run = write_run(tmp_path / "h100.h5", rows, topology=topology("x86_h100"))
    write_report(load_runs([run]), tmp_path / "report")
    markdown = (tmp_path / "report" / "path_matrix.md").read_text()
    read = matrix_cells(markdown, "read")
    assert read[("cpu0", "gpu0")] == "misplaced [1,2]"
    assert read[("gpu0", "numa0")] == "51.0 (81%)"
    assert "1. managed: pages were on numa0, not gpu0" in markdown
    assert "2. cudaMalloc memory is not mapped for CPU access" in markdown
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "| bw | ok, pages elsewhere | managed: pages were on numa0, not gpu0 | 1 |" in summary
    assert "| x86_h100 | bw | 3 | 1 | 0 |" in summary


# --- command line -------------------------------------------------------------------------

def test_cli_writes_the_report(gh200_run: Path, tmp_path: Path) -> None:
    peaks = tmp_path / "peaks.json"
    peaks.write_text('{"numa0": 800}')
    result = analysis_cli("report", str(gh200_run), "-o", str(tmp_path / "out"), "--peaks", str(peaks))
    assert result.returncode == 0, result.stderr
    # exactly: a PDF written under MEMPATH_FIGURES=png is a fault too (the manifest is hidden)
    written = sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith("."))
    assert written == sorted(report_files())
    read = matrix_cells((tmp_path / "out" / "path_matrix.md").read_text(), "read")
    assert read[("cpu0", "numa0")] == "307.2 (38%)"               # the user's 800 GB/s


@pytest.mark.parametrize("kind", ["missing", "schema", "foreign", "peaks"])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path, gh200_run: Path, kind: str) -> None:
    args = {"missing": [str(tmp_path / "nope.h5")],
            "schema": [str(write_run(tmp_path / "v9.h5", [case()], topology=topology("x86_h100"),
                                     schema_version=9))],
            "foreign": [str(tmp_path / "text.h5")],
            "peaks": [str(gh200_run), "--peaks", str(tmp_path / "nope.json")]}[kind]
    (tmp_path / "text.h5").write_text("hello")
    result = analysis_cli("report", *args, "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analysis: error: "), result.stderr
    expected = {"missing": "nope.h5: no such file", "schema": "schema_version 9 is not supported",
                "foreign": "not an HDF5 file", "peaks": "cannot read the peaks file"}[kind]
    assert expected in lines[0]
    assert not (tmp_path / "out" / "summary.md").exists()


def test_index_page_escapes_names_from_the_files(tmp_path: Path) -> None:
    """Host names, reasons and command lines come from HDF5 files: the page shows them as
    text (the template autoescapes), never as markup a browser would run."""
    attack = '<script>alert("x")</script>'
    topo = {**topology("x86_h100"), "host": f"node{attack}"}
    run = write_run(tmp_path / "r.h5", [case(), case(mem="numa1", status="failed", reason=f"bad {attack}")],
                    topology=topo, attrs={"command_line": f"mempath bw --pu '{attack}'"})
    write_report(load_runs([run]), tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<script" not in page and "alert(" in page
    assert "node&lt;script&gt;" in page  # the host in the text, its heading and the runs table
    assert "<td>bad &lt;script&gt;alert(\"x\")&lt;/script&gt;</td>" in page
    # What the template prints without _inline (the title) is escaped by autoescaping alone.
    from analysis.render import html
    assert "<title>&lt;script&gt;x</title>" in html.render([f"# {attack}"], tmp_path, "<script>x")


def test_tables_take_a_dataframe_and_read_it_back() -> None:
    from analysis.render import tables
    frame = pd.DataFrame({"host": ["a|b", "c"], "GPU": [0, None], "GB/s": [tables.num(1.234), tables.num(None)]},
                         dtype=object)
    lines = tables.markdown(frame, right={2})
    # A missing cell is blank, an int stays an int (not 0.0), a pipe is escaped.
    assert lines == ["| host | GPU | GB/s |", "|---|---|---:|", "| a\\|b | 0 | 1.2 |", "| c |  |  |", ""]
    back = tables.parse(lines[:-1])
    assert list(back.columns) == ["host", "GPU", "GB/s"] and back.values.tolist() == [["a|b", "0", "1.2"],
                                                                                         ["c", "", ""]]
    # A header and rows are the same table as their DataFrame.
    assert tables.markdown(["host", "GPU", "GB/s"], [["a|b", 0, "1.2"], ["c", None, ""]], right={2}) == lines
