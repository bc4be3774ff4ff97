"""The transfer part of the report (/memcpy): sweeps with saturation, latency, the path
table with its derived rules, the LLM placement table, --active-bytes. Synthetic
schema-v1 files written by h5fixtures; a dual GH200 cut from the quad GH200 topology."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from matplotlib.figure import Figure

from analysis.render import style
from analysis.render.items import Context
from analysis.report import transfer_figures

from analysis.results import transfers
from analysis.errors import InputError
from analysis.results.io import RunSet, load_runs
from analysis.report.placement import parse_active_bytes
from analysis.report.write import write_report
from conftest import analysis_cli, assert_pdf, assert_png, figure_suffixes
from h5fixtures import case, memcpy_case, topology, write_run

MiB, GiB = 1 << 20, 1 << 30
SKIP = "system memory cannot be queued behind a spin kernel"


def sweep_figure(runs: RunSet, out: Path) -> Figure:
    """The report's transfer sweep of ``runs`` drawn through its item into ``out``: the figure saved."""
    seen: list[Figure] = []
    real = style.save
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "save", lambda fig, folder, stem, **kw: seen.append(fig) or real(fig, folder, stem, **kw))
        drawn = transfer_figures.sweep(Context.of(runs, out))
    assert [f.name for f in drawn.files] == [f"transfer_sweep{suffix}" for suffix in (*figure_suffixes(), ".csv")]
    return seen[0]


def dual_gh200() -> dict[str, Any]:
    """Two superchips of the quad GH200 node: cpu0/cpu1, gpu0/gpu1 (HBM numa4, numa12)."""
    quad = topology("gh200_quad")
    keep = {"cpu0", "cpu1", "gpu0", "gpu1", "numa0", "numa1", "numa4", "numa12"}
    dual = json.loads(json.dumps(quad))
    dual["host"] = "dual_gh200"
    dual["processors"] = [p for p in quad["processors"] if p["name"] in keep]
    dual["memories"] = [m for m in quad["memories"] if m["name"] in keep]
    dual["paths"] = [p for p in quad["paths"] if p["pu"] in keep and p["mem"] in keep]
    return dual


def seed_memcpy(local: float = 377.0, remote: float = 133.0, d2h: float = 297.0
                ) -> list[dict[str, Any]]:
    """The dual-GH200 seed's numbers: gpu0 <- numa0 377, gpu0 -> numa0 297, the other
    socket 133 either way; bidir with numa0; GPU -> GPU staged through host 58."""
    rows = []
    for gpu, near, far in ((0, 0, 1), (1, 1, 0)):
        for numa, h2d, back in ((near, local, d2h), (far, remote, remote)):
            via = "c2c" if numa == near else "c2c+interconnect"
            rows += [memcpy_case(gpu=gpu, host_numa=numa, cpu_numa=numa, via=via,
                                 median_GBps=h2d),
                     memcpy_case(gpu=gpu, host_numa=numa, cpu_numa=numa, via=via,
                                 direction="d2h", median_GBps=back)]
        rows.append(memcpy_case(gpu=gpu, host_numa=near, cpu_numa=near, direction="bidir",
                                median_GBps=500.0, h2d_median_GBps=260.0,
                                d2h_median_GBps=240.0))
    rows.append(memcpy_case(gpu=1, dst_gpu=0, host_numa=0, cpu_numa=0, direction="d2d",
                            engine="staged", via="c2c+interconnect>numa0>c2c",
                            chunk_bytes=16 * MiB, median_GBps=58.0, fwd_median_GBps=58.0))
    rows.append(memcpy_case(gpu=0, dst_gpu=1, host_numa=-1, direction="d2d", engine="ce",
                            alloc="device", via="none", status="skipped",
                            reason="no peer access from GPU 0 to GPU 1",
                            median_GBps=float("nan")))
    rows.append(memcpy_case(gpu=1, host_numa=0, cpu_numa=0, direction="bidir",
                            alloc="system", status="skipped", reason=SKIP,
                            median_GBps=float("nan")))
    return rows


def seed_bw(hbm: float = 3700.0) -> list[dict[str, Any]]:
    return [case(pu="gpu0", mem="gpu0", alloc="device", threads=270336, median_GBps=hbm),
            case(pu="gpu1", mem="numa12", via="local", threads=270336, median_GBps=3650.0)]


def write_dual(path: Path, **kwargs: Any) -> Path:
    memcpy = kwargs.pop("memcpy", None)
    return write_run(path, kwargs.pop("bw_cases", seed_bw()), topology=dual_gh200(),
                     memcpy=seed_memcpy() if memcpy is None else memcpy, **kwargs)


def sweep(direction: str = "h2d", saturation: int = 8 * MiB, top: float = 53.0,
          recorded: bool = True) -> list[dict[str, Any]]:
    """4 KiB .. 1 GiB, bandwidth rising until 8 MiB, flat after."""
    sizes = [4096 << i for i in range(19)]                     # 4 KiB .. 1 GiB
    rows = []
    for size in sizes:
        gbps = top if size >= saturation else top * size / saturation * 0.9
        rows.append(memcpy_case(direction=direction, size_bytes=size, sweep=1, via="pcie",
                                median_GBps=gbps,
                                saturation_bytes=saturation if recorded else -1))
    return rows


def path_rows(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "path_table.csv", keep_default_na=False,
                       na_values=[""]).fillna({"comment": ""})


def rules_of(out: Path) -> str:
    return (out / "path_table.md").read_text().split("### Deployment rules", 1)[1]


# --- size sweeps and latency --------------------------------------------------------------

@pytest.mark.parametrize("recorded", [True, False])
def test_sweep_figure_marks_the_saturation_size(tmp_path: Path, recorded: bool) -> None:
    path = write_run(tmp_path / "sweep.h5", [], topology=topology("x86_h100"), bw=False,
                     memcpy=sweep(recorded=recorded) + sweep("d2h", 2 * MiB, 55.0, recorded))
    runs = load_runs([path])
    cases, why = transfers.load(runs)
    assert why == ""
    (tmp_path / "figure").mkdir()
    fig = sweep_figure(runs, tmp_path / "figure")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["gpu0 h2d", "gpu0 d2h"]
    for ax, size, label in zip(axes, (8 * MiB, 2 * MiB), ("sat. 8 MiB", "sat. 2 MiB")):
        lines = [line for line in ax.lines if str(line.get_gid()).startswith("saturation:")]
        assert len(lines) == 1 and list(lines[0].get_xdata()) == [size, size]
        assert label in [text.get_text() for text in ax.texts]
        assert ax.get_xscale() == "log"
    report = write_report(runs, tmp_path / "out")
    assert_png(tmp_path / "out" / "transfer_sweep.png")
    assert_pdf(tmp_path / "out" / "transfer_sweep.pdf")
    md = (tmp_path / "out" / "transfers.md").read_text()
    assert "| gpu0 | h2d | ce | pinned | numa0 | 8 MiB | 53.0 | 53.0 | 1 GiB |" in md
    assert "| gpu0 | d2h | ce | pinned | numa0 | 2 MiB | 55.0 | 55.0 | 1 GiB |" in md
    assert "transfer latency not drawn: no measured `mempath memcpy --latency` case" \
        in report.missing
    rules = rules_of(tmp_path / "out")
    assert "h2d needs 8 MiB per copy to reach 95% of 53.0 GB/s" in rules
    assert "d2h needs 2 MiB per copy" in rules


def test_latency_table_and_figure(tmp_path: Path) -> None:
    rows = [memcpy_case(direction=d, size_bytes=s, via="pcie", median_us=m, p99_us=p)
            for d, base in (("h2d", 6.0), ("d2h", 7.0))
            for s, m, p in ((4, base, base + 4), (1024, base + 1, base + 6), (MiB, 27.0, 44.0))]
    path = write_run(tmp_path / "lat.h5", [], topology=topology("x86_h100"), bw=False,
                     memcpy=rows)
    write_report(load_runs([path]), tmp_path / "out")
    assert_png(tmp_path / "out" / "transfer_latency.png")
    md = (tmp_path / "out" / "transfers.md").read_text()
    assert "| size | h2d median µs | h2d p99 µs | d2h median µs | d2h p99 µs |" in md
    assert "| 4 B | 6.00 | 10.00 | 7.00 | 11.00 |" in md
    assert "| 1 MiB | 27.00 | 44.00 | 27.00 | 44.00 |" in md
    assert "a 4 B copy + synchronise costs h2d 6.0 µs median, 10.0 µs p99; d2h 7.0 µs" \
        in rules_of(tmp_path / "out")


# --- path table ---------------------------------------------------------------------------

def test_path_table_numbers_and_percent_of_peak(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = write_report(load_runs([write_dual(tmp_path / "dual.h5")]), out)
    assert {"path_table.md", "path_table.csv", "placement.md", "placement.csv",
            "transfers.md"} <= {p.name for p in report.files}
    rows = path_rows(out).set_index(["gpu", "kind", "memory"])
    hbm = rows.loc[(0, "hbm-read", "gpu0")]
    assert (hbm["GBps"], hbm["peak_GBps"]) == (3700.0, 4000.0)       # GH200 96GB HBM3
    assert hbm["pct_of_peak"] == pytest.approx(92.5)
    assert rows.loc[(1, "hbm-read", "gpu1"), "GBps"] == 3650.0        # numa12 = gpu1's HBM
    local = rows.loc[(0, "h2d", "numa0")]
    assert (local["GBps"], local["peak_GBps"], local["role"]) == (377.0, 450.0, "local host")
    assert local["pct_of_peak"] == pytest.approx(100 * 377 / 450)
    assert local["comment"] == "84% of the NVLink-C2C link (450 GB/s)"
    d2h = rows.loc[(0, "d2h", "numa0")]
    assert d2h["comment"] == "66% of the NVLink-C2C link (450 GB/s); 79% of h2d"
    remote = rows.loc[(0, "h2d", "numa1")]
    assert (remote["GBps"], remote["peak_GBps"], remote["role"]) == (133.0, 150.0,
                                                                     "remote host")
    # No published Grace-Grace figure for this node: the % is marked as of an assumed peak.
    assert remote["comment"] == ("limited by the socket interconnect: 89%† of its 150 GB/s, "
                                 "assumed; 35% of the local host's 377.0 GB/s")
    bidir = rows.loc[(0, "bidir", "numa0")]
    assert (bidir["GBps"], bidir["peak_GBps"]) == (500.0, 500.0)     # LPDDR bounds 2 x C2C
    assert bidir["comment"] == ("limited by numa0 memory (LPDDR5X): 100% of its 500 GB/s; "
                                "h2d 260.0 GB/s = 69% of one-way; d2h 240.0 GB/s = 81% of "
                                "one-way")
    staged = rows.loc[(0, "d2d", "gpu1")]
    assert staged["GBps"] == 58.0 and staged["how"].startswith("staged through host numa0")
    assert staged["comment"].endswith("0.2x the best host → GPU copy")
    md = (out / "path_table.md").read_text()
    assert ("| gpu0 | numa0 (local host) → gpu0 | copy engine, 1 GiB, pinned, /memcpy | "
            "377.0 | 450.0 | 84 | 84% of the NVLink-C2C link (450 GB/s) |") in md
    assert f"- gpu1: numa0 (remote host) ⇄ gpu1 (copy engine): {SKIP}" in md
    assert "- gpu1: gpu0 → gpu1 (peer copy engine): no peer access from GPU 0 to GPU 1" in md
    summary = (out / "summary.md").read_text()
    assert "[Path table and deployment rules](path_table.md)" in summary
    assert "[LLM decode placement](placement.md)" in summary


def test_rules_are_derived_from_the_numbers(tmp_path: Path) -> None:
    out = tmp_path / "a"
    write_report(load_runs([write_dual(tmp_path / "a.h5")]), out)
    rules = rules_of(out)
    assert ("**gpu0, h2d buffers**: stage them on numa0 (local host, 377.0 GB/s); numa1 gives "
            "35% (133.0 GB/s): avoid the others") in rules
    assert "put the data gpu0 reads every step (weights, KV cache) in its HBM" in rules
    assert "**gpu0, spill order**: numa0 (local host) then numa1 (remote host). Avoid " \
           "numa1 (remote host) (35% of numa0 (local host))" in rules
    assert "**gpu0, directions**: d2h reaches 79% of h2d" in rules
    assert ("**gpu0, bidirectional (numa0)**: overlapping pays only 1.33x one direction"
            in rules)
    assert "**gpu0, GPU↔GPU**: fastest is gpu1 → gpu0 (staged through host numa0) at 58.0" \
        in rules

    # The remote node made faster than the local one, HBM slower than host memory:
    # the recommendation follows.
    swapped = write_dual(tmp_path / "b.h5", memcpy=seed_memcpy(local=133.0, remote=377.0),
                         bw_cases=seed_bw(hbm=100.0))
    write_report(load_runs([swapped]), tmp_path / "b")
    rules = rules_of(tmp_path / "b")
    assert "**gpu0, h2d buffers**: stage them on numa1 (remote host, 377.0 GB/s)" in rules
    assert "reads every step (weights, KV cache) in numa1 (remote host)" in rules
    assert "spill order**: numa0 (local host) then its HBM" in rules

    # Symmetric directions and a bidirectional sum of twice one way.
    even = [memcpy_case(median_GBps=50.0, via="pcie"),
            memcpy_case(direction="d2h", median_GBps=49.0, via="pcie"),
            memcpy_case(direction="bidir", median_GBps=98.0, h2d_median_GBps=49.0,
                        d2h_median_GBps=49.0, via="pcie")]
    x86 = write_run(tmp_path / "c.h5", [], topology=topology("x86_h100"), memcpy=even)
    write_report(load_runs([x86]), tmp_path / "c")
    rules = rules_of(tmp_path / "c")
    assert "h2d and d2h are symmetric (50.0 and 49.0 GB/s)" in rules
    assert "overlap loads and offloads: together they move 98.0 GB/s, 1.96x one direction" \
        in rules
    rows = path_rows(tmp_path / "c").set_index(["kind"])
    assert rows.loc["h2d", "comment"] == "79% of PCIe gen5 x16 (63 GB/s)"


def test_allocator_and_engine_rules(tmp_path: Path) -> None:
    rows = [memcpy_case(median_GBps=53.0, via="pcie"),
            memcpy_case(alloc="system", median_GBps=20.0, via="pcie", timing="host"),
            memcpy_case(engine="sm", median_GBps=51.0, via="pcie")]
    path = write_run(tmp_path / "x.h5", [], topology=topology("x86_h100"), memcpy=rows)
    write_report(load_runs([path]), tmp_path / "out")
    rules = rules_of(tmp_path / "out")
    assert "**gpu0, h2d allocator**: pinned is fastest (53.0 GB/s at 1 GiB); system 38%: " \
           "allocate copied buffers as pinned." in rules
    assert "SM copies reach 96% of copy-engine copies (51.0 vs 53.0 GB/s): both engines " \
           "are close" in rules


def test_misplaced_host_pages_do_not_count(tmp_path: Path) -> None:
    rows = [memcpy_case(median_GBps=40.0, via="pcie"),
            memcpy_case(median_GBps=90.0, alloc="managed", placement="unknown", via="pcie")]
    path = write_run(tmp_path / "x.h5", [], topology=topology("x86_h100"), memcpy=rows)
    write_report(load_runs([path]), tmp_path / "out")
    assert list(path_rows(tmp_path / "out")["GBps"]) == [40.0]


# --- placement ----------------------------------------------------------------------------

@pytest.mark.parametrize("given, active", [(None, 21e9), ("10e9", 10e9), ("7.5GB", 7.5e9)])
def test_placement_tokens_per_second(tmp_path: Path, given: str | None, active: float) -> None:
    run = write_dual(tmp_path / "dual.h5")
    args = ["report", str(run), "-o", str(tmp_path / "out")]
    result = analysis_cli(*args, *(["--active-bytes", given] if given else []))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "placement.csv")
    assert not table.empty
    for _, row in table.iterrows():
        assert row["tokens_per_s"] == row["GBps"] * 1e9 / active
        assert row["ms_per_token"] == pytest.approx(active / (row["GBps"] * 1e9) * 1e3)
    gpu0 = table[table["gpu"] == 0].set_index(["placement", "measured_by"])
    hbm = gpu0.loc[("gpu0 HBM", "GPU kernel read (/bw)")]
    assert hbm["tokens_per_s"] == 3700.0 * 1e9 / active and hbm["vs_hbm"] == 1.0
    local = gpu0.loc[("numa0 (local host)", "copy-engine h2d stream (/memcpy)")]
    assert local["tokens_per_s"] == 377.0 * 1e9 / active
    assert local["vs_hbm"] == pytest.approx(377 / 3700)
    assert gpu0.loc[("numa1 (remote host)", "copy-engine h2d stream (/memcpy)"),
                    "GBps"] == 133.0
    staged = gpu0.loc[("gpu1 (other GPU)", "GPU-to-GPU copy (/memcpy): staged through host "
                                           "numa0")]
    assert staged["tokens_per_s"] == 58.0 * 1e9 / active
    md = (tmp_path / "out" / "placement.md").read_text()
    assert f"Active bytes per generated token: {active:,.0f}" in md
    assert f"| gpu0 | gpu0 HBM | GPU kernel read (/bw) | 3700.0 | " \
           f"{active / 3.7e12 * 1e3:.2f} | {3.7e12 / active:.2f} | 100.0% |" in md
    assert "- gpu1: another GPU (GPU↔GPU)" in md       # gpu1 never received a copy


def test_placement_lists_what_was_not_measured(tmp_path: Path) -> None:
    path = write_run(tmp_path / "x.h5", [], topology=dual_gh200(), bw=False,
                     memcpy=[memcpy_case(median_GBps=300.0)])
    write_report(load_runs([path]), tmp_path / "out")
    md = (tmp_path / "out" / "placement.md").read_text()
    assert "| gpu0 | numa0 (local host) | copy-engine h2d stream (/memcpy) | 300.0 |" in md
    for missing in ("- gpu0: gpu0 HBM", "- gpu0: numa1 (remote host)",
                    "- gpu0: another GPU (GPU↔GPU)", "- gpu1: gpu1 HBM",
                    "- gpu1: numa1 (local host)"):
        assert missing in md
    table = (tmp_path / "out" / "path_table.md").read_text()
    assert "- gpu0: gpu0 reads its HBM (kernel): no GPU read in /bw" in table
    assert "**gpu0, GPU↔GPU**: not measured" in table


# --- missing data and bad input -----------------------------------------------------------

def test_report_without_memcpy_says_what_is_missing(tmp_path: Path) -> None:
    path = write_run(tmp_path / "bw.h5", seed_bw(), topology=dual_gh200())
    report = write_report(load_runs([path]), tmp_path / "out")
    names = {p.name for p in report.files}
    assert not names & {"path_table.md", "placement.md", "transfer_sweep.png", "transfers.md"}
    note = ("no /memcpy/cases table in these runs (run `mempath memcpy`): no transfer curves, "
            "latency, path table or placement table")
    assert report.notes == [note]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert f"## Transfers and placement\n\n_Not produced: {note}._" in summary
    result = analysis_cli("report", str(path), "-o", str(tmp_path / "cli"))
    assert result.returncode == 0 and f"analysis: note: {note}" in result.stdout


def test_report_of_memcpy_with_only_skipped_cases(tmp_path: Path) -> None:
    rows = [memcpy_case(status="skipped", reason=SKIP, median_GBps=float("nan"))]
    path = write_run(tmp_path / "x.h5", [], topology=topology("x86_h100"), bw=False,
                     memcpy=rows)
    report = write_report(load_runs([path]), tmp_path / "out")
    assert "path table empty: no GPU path was measured" in report.missing
    assert "transfer sweep not drawn: no measured `mempath memcpy --sweep` group" \
        in report.missing
    table = (tmp_path / "out" / "path_table.md").read_text()
    assert "_No GPU path was measured._" in table
    assert f"- gpu0: numa0 (local host) → gpu0 (copy engine): {SKIP}" in table
    assert "_No placement was measured._" in (tmp_path / "out" / "placement.md").read_text()


def test_memcpy_table_of_another_schema_is_left_out(tmp_path: Path) -> None:
    path = write_run(tmp_path / "x.h5", seed_bw(), topology=dual_gh200())
    import h5py
    with h5py.File(path, "a") as f:
        f.create_dataset("memcpy/cases/size_bytes", data=np.array([1], dtype=np.int64))
    report = write_report(load_runs([path]), tmp_path / "out")
    assert report.notes and "lacks the columns" in report.notes[0]
    assert not (tmp_path / "out" / "path_table.md").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "21XB", ""])
def test_cli_bad_active_bytes_is_one_line_and_exit_2(tmp_path: Path, value: str) -> None:
    run = write_dual(tmp_path / "dual.h5")
    result = analysis_cli("report", str(run), "-o", str(tmp_path / "out"), f"--active-bytes={value}")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("analysis: error: --active-bytes") and "e.g. 21e9" in lines[0]
    assert not (tmp_path / "out").exists()


def test_active_bytes_units() -> None:
    assert parse_active_bytes("21e9") == 21e9
    assert parse_active_bytes("21GB") == 21e9
    assert parse_active_bytes("2GiB") == 2 * GiB
    with pytest.raises(InputError):
        parse_active_bytes("-1")


def test_gpu_to_gpu_sweep_gets_its_own_panel(tmp_path: Path) -> None:
    rows = [memcpy_case(gpu=0, dst_gpu=1, direction="d2d", engine="staged", host_numa=0,
                        via="c2c>numa0>c2c+interconnect", size_bytes=s, sweep=1,
                        median_GBps=min(58.0, s / MiB), saturation_bytes=64 * MiB)
            for s in (MiB << i for i in range(8))]
    path = write_run(tmp_path / "d2d.h5", [], topology=dual_gh200(), bw=False, memcpy=rows)
    fig = sweep_figure(load_runs([path]), tmp_path)
    ax = next(ax for ax in fig.axes if ax.get_visible())
    assert ax.get_title() == "gpu0 → gpu1 d2d"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["staged via numa0"]  # below the panels
    assert "sat. 64 MiB" in [t.get_text() for t in ax.texts]
