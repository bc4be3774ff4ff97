"""Latency and scale-out report parts: from files the binaries wrote on the device
(2026-11-22; docs/results/2026-11-22-latency.md, docs/results/2026-11-22-scaleout.md;
h100_pingpong.h5 keeps the first 500 round trips of each case of the H100 run), and from
synthetic files whose /chase and /pingpong tables follow docs/schema.md column by column,
so that every number shown can be checked against its input."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.render import style
from analysis.report import latency

from analysis.report import scaleout
from analysis.render.items import Context
from analysis.results.io import RunSet, load_runs
from conftest import DATA, figure_suffixes
from analysis.report.write import write_report
from h5fixtures import case, table, topology, write_run

CHASE = [DATA / "h100_chase_cpu.h5", DATA / "h100_chase_gpu.h5", DATA / "h200x2_chase_peer.h5"]
PINGPONG = DATA / "h100_pingpong.h5"
NCCL = DATA / "h200x2_nccl.h5"


@pytest.fixture(scope="module")
def real_part(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunSet, Any]:
    """The latency part of the real chase and ping-pong runs, drawn once for the tests that read it."""
    runs = load_runs([*CHASE, PINGPONG])
    return runs, latency.write(Context.of(runs, tmp_path_factory.mktemp("latency")))


def test_every_latency_figure_from_real_runs(real_part: tuple[RunSet, Any]) -> None:
    _, part = real_part
    stems = {p.stem for p in part.files}
    assert stems == {"latency_by_size", "chase_prefetch", "pingpong", "pingpong_distribution"}
    assert all(p.stat().st_size > 10_000 for p in part.files if p.suffix != ".csv")
    # every figure's source data (the report's own too: faceted writes each one's)
    assert {p.name for p in part.files if p.suffix == ".csv"} == {f"{s}.csv" for s in stems}
    assert not part.missing


def test_latency_table_shows_the_measured_medians_and_skip_reasons(real_part: tuple[RunSet, Any]) -> None:
    runs, part = real_part
    text = "\n".join(part.lines)
    chase = runs.table("chase/cases")
    gpu_1g = chase[(chase.pu == "gpu0") & (chase.size_bytes == 1 << 30) & (chase.pattern == "random")]
    assert f"{float(gpu_1g.median_ns.iloc[0]):.1f}" in text
    assert "cudaMalloc memory is not mapped for CPU access" in text  # a skipped pair says why
    pp = runs.table("pingpong/cases")
    pinned = pp[(pp.a == "cpu0") & (pp.b == "gpu0") & (pp.alloc == "pinned")].iloc[0]
    assert f"{pinned.median_ns:.0f} | {pinned.p99_ns:.0f}" in text


def test_nccl_figure_and_table_from_a_real_run(tmp_path: Path) -> None:
    runs = load_runs([NCCL])
    part = scaleout.write(Context.of(runs, tmp_path))
    assert {p.stem for p in part.files} == {"nccl_by_size"}  # the paper's Fig. 18; one node count: no Fig. 19
    assert any("MPI node-to-node" in m and "(Fig. 14)" in m for m in part.missing)  # no bw run given
    cases = runs.table("nccl/cases")
    top = cases[(cases.size_bytes == cases.size_bytes.max()) & (cases.collective == "allreduce") &
                (cases.placement == "device")]
    assert f"| allreduce | device | 2 |" in "\n".join(part.lines)
    assert f"{float(top.busbw_GBps.iloc[0]):.1f} |" in "\n".join(part.lines)


def test_report_without_latency_or_scaleout_tables_still_works(tmp_path: Path) -> None:
    empty = RunSet(runs=[], tables={})
    assert latency.write(Context.of(empty, tmp_path)).files == []
    assert len(latency.write(Context.of(empty, tmp_path)).missing) == 4
    assert scaleout.write(Context.of(empty, tmp_path)).files == []


def test_whole_report_links_the_latency_figures(tmp_path: Path) -> None:
    write_report(load_runs([*CHASE, PINGPONG, NCCL]), tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    for stem in ("latency_by_size", "chase_prefetch", "pingpong", "pingpong_distribution", "nccl_by_size"):
        assert f"({stem}.png)" in summary and (tmp_path / f"{stem}.png").is_file()


# --- synthetic runs: the tables of docs/schema.md, written as the C++ writer does ---

CHASE_SAMPLE_COLUMNS: dict[str, type] = {
    "case_id": int, "rep": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str,
    "size_bytes": int, "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int,
    "time_s": float, "ns_per_access": float, "cycles_per_access": float,
}
CHASE_CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "pu": str, "cpu": int, "mem": str, "alloc": str, "pattern": str, "size_bytes": int,
    "line_bytes": int, "locality_bytes": int, "huge_pages": int, "accesses": int, "via": str,
    "status": str, "reason": str, "reps": int, "median_ns": float, "min_ns": float,
    "median_cycles": float, "huge_page_fraction": float, "placement": str, "verified": int,
}
CHASE_CACHE_COLUMNS: dict[str, type] = {"pu": str, "level": str, "bytes": int, "source": str}
PINGPONG_SAMPLE_COLUMNS: dict[str, type] = {"case_id": int, "index": int, "rtt_ns": float}
PINGPONG_CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "a": str, "b": str, "a_cpu": int, "b_cpu": int, "mem": str, "alloc": str,
    "flag_bytes": int, "round_trips": int, "status": str, "reason": str, "median_ns": float,
    "mean_ns": float, "min_ns": float, "p05_ns": float, "p95_ns": float, "p99_ns": float,
    "max_ns": float, "placement": str, "verified": int,
}
SIZES = [1 << s for s in range(12, 27, 2)]  # 4 KiB .. 64 MiB
CPU_CACHES = [("L1d", 48 << 10), ("L2", 2 << 20), ("L3", 32 << 20)]
GPU_CACHES = [("L1", 256 << 10), ("L2", 50 << 20)]
SKIP_DEVICE = "cudaMalloc memory is not mapped for CPU access"


def chase_case(size: int, median: float, **values: Any) -> dict[str, Any]:
    """A /chase/cases row: cpu0 (core 0) chasing numa0, random, ok, unless ``values`` say otherwise."""
    row: dict[str, Any] = {"pu": "cpu0", "cpu": 0, "mem": "numa0", "alloc": "numa", "pattern": "random",
                           "size_bytes": size, "line_bytes": 64, "huge_pages": 0, "accesses": 1 << 21,
                           "via": "local", "status": "ok", "reps": 3, "median_ns": median,
                           "min_ns": 0.98 * median, "median_cycles": math.nan,
                           "huge_page_fraction": 0.0, "verified": 1}
    row.update(values)
    row.setdefault("locality_bytes", size)
    row.setdefault("placement", row["mem"] if row["status"] == "ok" else "")
    if row["status"] != "ok":
        row.update(reps=0, median_ns=math.nan, min_ns=math.nan, median_cycles=math.nan)
    return row


def pingpong_case(a: str, b: str, mem: str, alloc: str, median: float = math.nan, **values: Any) -> dict[str, Any]:
    """A /pingpong/cases row, ok with p99 = 1.2 x median and mean = 1.01 x median unless skipped."""
    ok = values.get("status", "ok") == "ok"
    row: dict[str, Any] = {"a": a, "b": b, "a_cpu": 0 if a.startswith("cpu") else -1,
                           "b_cpu": (1 if a == b else 0) if b.startswith("cpu") else -1, "mem": mem,
                           "alloc": alloc, "flag_bytes": 1, "round_trips": 200 if ok else 0, "status": "ok",
                           "median_ns": median, "mean_ns": 1.01 * median, "min_ns": 0.9 * median,
                           "p05_ns": 0.95 * median, "p95_ns": 1.1 * median, "p99_ns": 1.2 * median,
                           "max_ns": 2 * median, "placement": mem if ok else "", "verified": int(ok)}
    row.update(values)
    return row


def rtts(row: dict[str, Any]) -> np.ndarray:
    """Round trips with exactly the row's median (odd count, centred on it)."""
    return row["median_ns"] * np.linspace(0.9, 1.3, 201) / np.linspace(0.9, 1.3, 201)[100]


def write_latency_run(path: Path, chase: list[dict[str, Any]] | None = None,
                      caches: list[dict[str, Any]] | None = None,
                      pingpong: list[dict[str, Any]] | None = None, **kwargs: Any) -> Path:
    """A file of `mempath chase` and/or `mempath pingpong` (no /bw), samples derived from the cases."""
    extra: dict[str, Any] = {}
    if chase is not None:
        rows = [{"case_id": i, **r} for i, r in enumerate(chase)]
        samples = [{**{k: r[k] for k in CHASE_SAMPLE_COLUMNS if k in r}, "rep": rep,
                    "ns_per_access": r["median_ns"], "cycles_per_access": r["median_cycles"],
                    "time_s": r["median_ns"] * r["accesses"] * 1e-9}
                   for r in rows if r["status"] == "ok" for rep in range(3)]
        extra["chase/cases"] = table(CHASE_CASE_COLUMNS, rows)
        extra["chase/samples"] = table(CHASE_SAMPLE_COLUMNS, samples)
        extra["chase/caches"] = table(CHASE_CACHE_COLUMNS, caches or [])
    if pingpong is not None:
        rows = [{"case_id": i, **r} for i, r in enumerate(pingpong)]
        samples = [{"case_id": r["case_id"], "index": i, "rtt_ns": v}
                   for r in rows if r["status"] == "ok" for i, v in enumerate(rtts(r))]
        extra["pingpong/cases"] = table(PINGPONG_CASE_COLUMNS, rows)
        extra["pingpong/samples"] = table(PINGPONG_SAMPLE_COLUMNS, samples)
    return write_run(path, [], topology=topology("x86_h100"), bw=False, extra=extra, **kwargs)


def cpu_ns(size: int) -> float:
    return 1.0 + math.log2(size) * 3.7  # distinct per size, so a wrong size shows


CHASE_ROWS = (
    [chase_case(s, cpu_ns(s)) for s in SIZES]
    + [chase_case(s, 2.5, pattern="sequential") for s in SIZES]
    + [chase_case(s, 300.0 + s / (1 << 20), pu="gpu0", cpu=-1, mem="gpu0", alloc="device", via="hbm",
                  median_cycles=600.0 + s / (1 << 19)) for s in SIZES]
    + [chase_case(1 << 20, 0, mem="gpu0", alloc="device", status="skipped", reason=SKIP_DEVICE)]
)
CACHE_ROWS = ([{"pu": "cpu0", "level": lv, "bytes": b, "source": "sysfs"} for lv, b in CPU_CACHES]
              + [{"pu": "gpu0", "level": lv, "bytes": b, "source": "cuda"} for lv, b in GPU_CACHES])
PINGPONG_ROWS = [
    pingpong_case("cpu0", "cpu0", "numa0", "numa", 150.0),
    pingpong_case("cpu0", "gpu0", "numa0", "pinned", 1890.0),
    pingpong_case("gpu0", "gpu0", "gpu0", "device", 1950.0),
    pingpong_case("cpu0", "gpu0", "gpu0", "device", status="skipped", reason=SKIP_DEVICE),
    pingpong_case("cpu0", "cpu0", "gpu0", "device", status="skipped", reason=SKIP_DEVICE),
    pingpong_case("cpu0", "gpu0", "numa0", "managed", status="failed", reason="timeout after 10 s"),
]


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return write_latency_run(tmp_path / "lat.h5", CHASE_ROWS, CACHE_ROWS, PINGPONG_ROWS)


@pytest.fixture
def figures(monkeypatch) -> dict[str, Any]:
    """The figures the part draws, kept open instead of written."""
    seen: dict[str, Any] = {}
    monkeypatch.setattr(style, "save", lambda fig, out, stem, **kw: seen.update({stem: fig}) or [out / f"{stem}.png"])
    return seen


def test_synthetic_run_writes_every_figure_and_says_nothing_is_missing(synthetic: Path, tmp_path: Path) -> None:
    part = latency.write(Context.of(load_runs([synthetic]), tmp_path))
    assert sorted(p.name for p in part.files) == sorted(
        [f"{stem}{suffix}" for stem in ("latency_by_size", "chase_prefetch", "pingpong", "pingpong_distribution")
         for suffix in (*figure_suffixes(), ".csv")])   # every figure's source data
    assert all(p.is_file() and p.stat().st_size > 1000 for p in part.files if p.suffix != ".csv")
    assert part.missing == []


def test_chase_table_has_the_largest_size_with_its_median_and_cycles(synthetic: Path, tmp_path: Path,
                                                                     figures) -> None:
    lines = latency.write(Context.of(load_runs([synthetic]), tmp_path)).lines
    rows = [line for line in lines if line.startswith("| x86_h100 |") and "| random |" in line]
    top = SIZES[-1]
    assert f"| x86_h100 | cpu0 core 0 | numa0 | numa | random | 64 MiB | {cpu_ns(top):.1f} |  |" in rows
    assert f"| x86_h100 | gpu0 | gpu0 | device | random | 64 MiB | {300 + 64:.1f} | {600 + 128} |" in rows
    assert "| x86_h100 | cpu0 core 0 | numa0 | numa | sequential | 64 MiB | 2.5 |  |" in lines
    assert len(rows) == 2  # one row per path and pattern: smaller sizes and the skipped case are left out
    assert f"{cpu_ns(SIZES[-2]):.1f}" not in "\n".join(lines)


def test_pingpong_table_has_medians_p99_and_the_reasons_of_skipped_and_failed(synthetic: Path,
                                                                              tmp_path: Path, figures) -> None:
    text = "\n".join(latency.write(Context.of(load_runs([synthetic]), tmp_path)).lines)
    assert "| x86_h100 | cpu0 core 0 | gpu0 | numa0 | pinned | 1890 | 2268 | 1909 | ok |" in text
    assert "| x86_h100 | cpu0 core 0 | cpu0 core 1 | numa0 | numa | 150 | 180 | 152 | ok |" in text
    assert f"| x86_h100 | cpu0 core 0 | gpu0 | gpu0 | device |  |  |  | skipped: {SKIP_DEVICE} |" in text
    assert "| managed |  |  |  | failed: timeout after 10 s |" in text
    assert "nan" not in text


def test_prefetch_figure_pairs_random_and_sequential_of_one_path_only(synthetic: Path, tmp_path: Path,
                                                                      figures) -> None:
    latency.chase_prefetch(Context.of(load_runs([synthetic]), tmp_path))
    axes = [ax for ax in figures["chase_prefetch"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["cpu0 core 0"]  # no gpu0: chased in one order only
    lines = {line.get_label(): line for line in axes[0].lines}
    assert set(lines) == {"local DDR, random", "local DDR, sequential"}
    assert np.allclose(lines["local DDR, sequential"].get_ydata(), 2.5)
    looks = [(line.get_color(), line.get_marker(), line.get_linestyle()) for line in lines.values()]
    assert looks[0][0] != looks[1][0] and looks[0][2] != looks[1][2]  # told apart in greyscale too


def test_pingpong_distribution_one_ecdf_per_ok_case_with_median_and_p99(synthetic: Path, tmp_path: Path,
                                                                        figures) -> None:
    latency.pingpong_distribution(Context.of(load_runs([synthetic]), tmp_path))
    ax = figures["pingpong_distribution"].axes[0]
    curves = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
    assert set(curves) == {"cpu0<->cpu0 numa0/numa", "cpu0<->gpu0 numa0/pinned", "gpu0<->gpu0 gpu0/device"}
    assert curves["cpu0<->gpu0 numa0/pinned"].get_ydata()[-1] == 1.0
    assert np.isclose(np.median(curves["cpu0<->gpu0 numa0/pinned"].get_xdata()), 1890.0)
    marks = {(x, y) for line in ax.lines if line.get_label().startswith("_")
             for x, y in zip(line.get_xdata(), line.get_ydata())}
    assert (1890.0, 0.5) in marks and (1890.0 * 1.2, 0.99) in marks  # the case's median and p99
    assert ax.get_xscale() == "log"


def test_several_runs_figures_take_the_median_and_tables_name_the_run(tmp_path: Path, figures) -> None:
    paths = [write_latency_run(tmp_path / f"r{i}.h5", [chase_case(s, ns) for s in SIZES[-2:]], CACHE_ROWS[:3],
                               [pingpong_case("cpu0", "gpu0", "numa0", "pinned", ns * 10)])
             for i, ns in ((1, 100.0), (2, 120.0))]
    runs = load_runs(paths)
    part = latency.write(Context.of(runs, tmp_path))
    axes = [ax for ax in figures["latency_by_size"].axes if ax.get_title()]  # the paper's Fig. 12
    assert len(axes) == 1 and np.allclose(axes[0].lines[0].get_ydata(), 110.0)
    text = "\n".join(part.lines)
    assert "| run | host | processor |" in text and "| run | host | a | b |" in text
    assert "| r1 | x86_h100 | cpu0 core 0 | numa0 | numa | random | 64 MiB | 100.0 |" in text
    assert "| r2 | x86_h100 | cpu0 core 0 | numa0 | numa | random | 64 MiB | 120.0 |" in text
    labels = {line.get_label() for line in figures["pingpong_distribution"].axes[0].lines}
    assert "cpu0<->gpu0 numa0/pinned (2 runs)" in labels  # one ECDF of both runs' samples


def test_report_of_a_run_without_latency_tables_has_no_latency_part(tmp_path: Path) -> None:
    bw = write_run(tmp_path / "bw.h5", [case()], topology=topology("x86_h100"))
    report = write_report(load_runs([bw]), tmp_path / "report")
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "Latency" not in summary and "chase" not in summary and "ping-pong" not in summary.lower()
    assert not any(p.stem.startswith(("chase", "pingpong")) for p in report.files)
    assert not list((tmp_path / "report").glob("pingpong*")) and not list((tmp_path / "report").glob("chase*"))


def test_report_of_only_skipped_pingpong_cases_lists_them_and_says_why_no_figure(tmp_path: Path) -> None:
    skipped = [r for r in PINGPONG_ROWS if r["status"] == "skipped"]
    run = write_latency_run(tmp_path / "skip.h5", chase=[], pingpong=skipped)
    report = write_report(load_runs([run]), tmp_path / "report")
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "## Latency" in summary and f"skipped: {SKIP_DEVICE}" in summary
    assert not (tmp_path / "report" / "pingpong.png").exists()
    assert any(m.startswith("Ping-pong round trip between processors, by memory of the flag (CAS) (Fig. 13) not "
                            "drawn: no ping-pong case finished") for m in report.missing)
    assert "- Memory access latency against buffer size, caches marked (pointer chase) (Fig. 12) not drawn: " \
        "no run holds /chase/cases or /chase/caches" in summary
