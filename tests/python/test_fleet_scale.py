"""Issue 21 items 5 and 6: the fleet at scale (parallel reading, memory, grouping by
location, history input) and the operators' outputs (drain.txt, per-node pages).
No timing here: tests/perf/fleet_scale.sh measures on a quiet machine."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.fleet import history as fh
from analysis.fleet import load as fleet_load
from analysis.fleet import operators, outputs
from analysis.fleet import table as fleet_table
from analysis.fleet.location import location
from tests.fleetsim.sim import simulate
from analysis.results import workers


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """24 simulated nodes: two with a slower HBM, one without a file, one all failed."""
    out = tmp_path_factory.mktemp("fleet") / "runs"
    truth = simulate(24, "gh200_quad", "hbm:2@0.12/0.08,failed:2", out, seed=3)
    return out, truth


def _clone(files: list[Path], folder: Path, hosts: list[str]) -> list[Path]:
    """Copies of ``files`` as other hosts; the topology names its host, as a real one does."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for i, host in enumerate(hosts):
        path = folder / f"{host}.h5"
        shutil.copy(files[i % len(files)], path)
        with h5py.File(path, "r+") as handle:
            topology = json.loads(handle.attrs["topology"])
            handle.attrs["host"] = host
            handle.attrs["topology"] = json.dumps({**topology, "host": host})
        made.append(path)
    return made


def _xname(i: int) -> str:
    return f"x{1000 + i // 64}c{(i // 16) % 4}s{(i // 2) % 8}b0n{i % 2}"


# --- drain.txt ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    'gpu0\'s C2C "read" 3,310 GB/s = fleet median \u221214 %',
    "a $(rm -rf /) `reboot` \\ back ! bang\nnew line; \u00b5s \u00e9t\u00e9",
    "x" * 500,
    "word " * 100,
])
def test_a_reason_is_ascii_shell_safe_and_short(text):
    reason = operators.safe_reason(text)
    assert reason.isascii() and len(reason) <= operators.REASON_MAX
    assert not set(reason) & set("'\"\\$`!\n\r\t")
    line = f'scontrol update nodename=nid000001 state=drain reason="{reason}"'
    words = shlex.split(line)  # the shell gives scontrol exactly these five words
    assert words[:4] == ["scontrol", "update", "nodename=nid000001", "state=drain"]
    assert words[4] == f"reason={reason}" and len(words) == 5
    assert "\u2212" not in text or "-14 %" in reason


def _nodes_and_flags():
    nodes = pd.DataFrame({
        "node": ["h1", "s1", "d_small", "f1", "d_big", "m1", "d_lost", "bad name$"],
        "verdict": ["healthy", "suspect", "degraded", "failed", "degraded", "missing",
                    "degraded", "degraded"],
        "reason": ["", "noise", "gpu0 HBM read -6 %", "bw.h5: truncated", "gpu1 HBM read -30 %",
                   "no result file", "gpu2 H2D copy: failed", "x"]})
    flagged = pd.DataFrame({
        "node": ["s1", "d_small", "d_big", "d_big", "d_lost", "f1", "m1", "bad name$"],
        "path": ["p", "p", "p", "q", "r", "", "", "p"],
        "deviation": [-0.07, -0.06, -0.30, -0.08, np.nan, np.nan, np.nan, -0.5]})
    return nodes, flagged


def test_drain_list_ranks_by_severity_then_deviation_and_leaves_out_suspects():
    nodes, flagged = _nodes_and_flags()
    bad = operators.ranked(nodes, flagged)
    assert bad["node"].tolist() == ["f1", "m1", "d_lost", "bad name$", "d_big", "d_small", "s1"]
    lines = operators.drain_lines(bad, "2026-11-24")
    commands = [line for line in lines if not line.startswith("#")]
    assert [re.search(r"nodename=(\S+)", c).group(1) for c in commands] == \
        ["f1", "m1", "d_lost", "d_big", "d_small"]  # a lost case counts as -100 %
    assert all(re.fullmatch(r'scontrol update nodename=\S+ state=drain reason="[^"]+"', c)
               for c in commands)
    assert not any("s1" in c or "h1" in c for c in commands)
    assert any(line.startswith("# not drained: node name 'bad name$'") for line in lines)


# --- the whole command: drain.txt, pages, grouping ----------------------------------------

@pytest.fixture(scope="module")
def report(fleet, tmp_path_factory):
    runs, truth = fleet
    out = tmp_path_factory.mktemp("report")
    main(["fleet", str(runs), "-o", str(out), "--expect-nodes", str(_expect(runs, truth))])
    return out, truth


def _expect(runs: Path, truth: dict) -> Path:
    path = runs.parent / "expected.txt"
    path.write_text("\n".join(truth["nodes"]) + "\n")
    return path


def test_drain_file_and_a_page_for_every_node_not_healthy(report):
    out, truth = report
    nodes = pd.read_csv(out / "nodes.csv")
    bad = nodes[nodes["verdict"] != "healthy"]
    assert set(bad["verdict"]) >= {"degraded", "missing", "failed"}
    pages = {p.stem for p in (out / "nodes").glob("*.md")}
    assert pages == set(bad["node"])
    drained = re.findall(r"nodename=(\S+)", (out / "drain.txt").read_text())
    assert set(drained) == set(bad.loc[bad["verdict"].isin(operators.DRAINED), "node"])
    assert (out / "drain.txt").read_text().isascii()
    order = [nodes.set_index("node").at[n, "verdict"] for n in drained]
    assert order == sorted(order, key=operators.SEVERITY.index)


def test_a_page_shows_the_case_against_the_fleet(fleet, report):
    runs, _ = fleet
    out, truth = report
    hbm = [f for f in truth["faults"] if f["kind"] == "hbm"]
    flagged = pd.DataFrame(json.loads((out / "flagged.json").read_text()))
    for fault in hbm:
        page = (out / "nodes" / f"{fault['node']}.md").read_text()
        mine = flagged[flagged["node"] == fault["node"]]
        assert len(mine) and "## Flagged cases against the fleet" in page
        for row in mine.itertuples():
            assert f"{row.fleet_median:,.0f} GB/s" in page  # the fleet median beside the value
        assert re.search(r"\| 1 of 2\d \|", page), page  # the slowest of the fleet
    table = fleet_load.load_fleet([runs], [], [])
    # the quartiles printed are the fleet's
    worst = flagged[flagged["node"] == hbm[0]["node"]].iloc[0]
    values = table.loc[(table["path"] == worst["path"]) & (table["status"] == "ok"), "value"]
    page = (out / "nodes" / f"{hbm[0]['node']}.md").read_text()
    assert f"{np.quantile(values, 0.25):,.0f} GB/s to {np.quantile(values, 0.75):,.0f} GB/s" in page
    missing = [n for n in truth["nodes"] if not (runs / f"{n}.h5").exists()]
    assert "No result file" in (out / "nodes" / f"{missing[0]}.md").read_text()


def test_figures_only_for_the_first_worst_nodes(fleet, tmp_path, monkeypatch):
    runs, truth = fleet
    monkeypatch.setattr(operators, "NODE_FIGURES", 1)
    main(["fleet", str(runs), "-o", str(tmp_path)])
    bad = pd.read_csv(tmp_path / "nodes.csv").query("verdict == 'degraded'")["node"]
    figures = list((tmp_path / "nodes").glob("*.png"))
    assert len(bad) == 2 and len(figures) == 1
    others = [n for n in bad if n != figures[0].stem]
    assert "figures are drawn for the 1 worst nodes only" in \
        (tmp_path / "nodes" / f"{others[0]}.md").read_text()


def test_location_of_xnames_and_none_of_nids():
    assert location("x1000c3s5b0n1") == ("x1000", "x1000c3")
    assert location("nid001234") is None and location("x1000c3") is None
    rows = ["x1001c0s0b0n0", "x1000c3s1b0n0", "x1000c0s0b0n1", "x1000c3s0b0n0"]
    assert outputs.by_location(rows) == ["x1000c0s0b0n1", "x1000c3s1b0n0", "x1000c3s0b0n0",
                                         "x1001c0s0b0n0"]  # worst first within a chassis


def test_summary_groups_xnames_by_chassis_and_says_nids_have_no_location(fleet, report, tmp_path):
    runs, truth = fleet
    out, _ = report
    assert "Node names carry no location (nid names" in (out / "summary.md").read_text()
    files = sorted(runs.glob("*.h5"))
    faulty = {f["node"] for f in truth["faults"]}
    order = [f for f in files if f.stem in faulty] + [f for f in files if f.stem not in faulty]
    _clone(order, tmp_path / "x", [_xname(i) for i in range(len(order))])
    main(["fleet", str(tmp_path / "x"), "-o", str(tmp_path / "o")])
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert "## Nodes not healthy by chassis" in summary and "| x1000c0 |" in summary
    assert "carry no location" not in summary


# --- reading: parallel = serial, memory ---------------------------------------------------

def test_parallel_load_gives_the_serial_table(fleet, monkeypatch):
    runs, _ = fleet
    monkeypatch.setattr(workers, "CHUNK_FILES", 5)
    serial_notes, parallel_notes = [], []
    serial = fleet_load.load_fleet([runs], [], serial_notes, jobs=1)
    parallel = fleet_load.load_fleet([runs], [], parallel_notes, jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)
    assert serial_notes == parallel_notes


def test_loading_hundreds_of_files_keeps_memory_low(fleet, tmp_path):
    """300 nodes whose topologies name their hosts (as real ones do): one shared parse, one
    set of case names and one str per text, not a copy of each per node."""
    runs, _ = fleet
    files = [f for f in sorted(runs.glob("*.h5"))][:4]
    _clone(files, tmp_path, [f"nid{i:06d}" for i in range(300)])
    for cache in (fleet_table._TOPOS, fleet_table._NAMES, fleet_table._TABLE_NAMES):
        cache.clear()
    tracemalloc.start()  # the table, as the reading child's answer becomes it here
    table = fleet_load.load_fleet([tmp_path], [], [], jobs=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert table["node"].nunique() == 300
    assert peak / len(table) < 1500, f"{peak / len(table):.0f} bytes a row"
    fleet_load.read_chunk(sorted(tmp_path.glob("*.h5")))  # in this process: its caches seen
    assert len(fleet_table._TOPOS) == 1


# --- fleet-history append: folders and fleet.parquet --------------------------------------

def test_history_append_takes_a_folder_and_the_fleet_table(fleet, report, tmp_path, capsys):
    runs, truth = fleet
    out, _ = report
    from_files, from_table = tmp_path / "files.duckdb", tmp_path / "table.duckdb"
    # 1: the fixture's failed node, stored as failed by both routes (issue 21)
    assert main(["fleet-history", "append", "--db", str(from_files), str(runs)]) == 1
    assert main(["fleet-history", "append", "--db", str(from_table), str(out / "fleet.parquet")]) == 1
    con_files, con_table = fh.connect(from_files, True), fh.connect(from_table, True)
    try:
        query = "SELECT * FROM fleet ORDER BY node, path"
        a, b = con_files.execute(query).df(), con_table.execute(query).df()
        spread = "SELECT * FROM fleet_spread ORDER BY path, metric"
        sa, sb = con_files.execute(spread).df(), con_table.execute(spread).df()
    finally:
        con_files.close()
        con_table.close()
    assert a["node"].nunique() == len(list(runs.glob("*.h5")))
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(sa, sb)


def test_history_append_refuses_a_broken_table_in_one_line(tmp_path, capsys):
    bad = tmp_path / "fleet.parquet"
    bad.write_text("not parquet")
    db = tmp_path / "h.duckdb"
    assert main(["fleet-history", "append", "--db", str(db), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable Parquet file" in err[0]


def test_history_append_night_is_checked_before_reading(tmp_path, capsys):
    assert main(["fleet-history", "append", "--db", str(tmp_path / "h.duckdb"), "--night",
                 "tomorrow", str(tmp_path / "nothing_here")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a date" in err[0]


def test_a_file_lacking_a_case_column_is_one_line_and_the_rest_read(fleet, tmp_path):
    """The low-level reader lists a table's columns only when one is missing: still named."""
    runs, _ = fleet
    files = sorted(runs.glob("*.h5"))[:3]
    copies = _clone(files, tmp_path, ["a1", "a2", "a3"])
    with h5py.File(copies[1], "r+") as handle:
        del handle["bw/cases/kernel"]
    rejected: list[str] = []
    table = fleet_load.load_fleet([tmp_path], rejected, [], jobs=1)
    assert sorted(table["node"].unique()) == ["a1", "a3"]
    assert len(rejected) == 1 and "a2.h5: table bw/cases lacks the column(s) kernel" in rejected[0]


def test_a_suspect_node_gets_a_page_and_no_drain_line(fleet, tmp_path):
    """Every verdict of the contract: a suspect node (its retest did not confirm it) is
    explained on its page and never drained."""
    from analysis.fleet.score import Options, score
    from analysis.fleet.verdicts import verdicts
    runs, truth = fleet
    table = score(fleet_load.load_fleet([runs], [], []), Options())
    nodes, flagged = verdicts(table, truth["nodes"])
    degraded = nodes.loc[nodes["verdict"] == "degraded", "node"].tolist()
    suspect = degraded[0]
    nodes.loc[nodes["node"] == suspect, ["verdict", "retest"]] = ["suspect", "not confirmed"]
    bad = operators.ranked(nodes, flagged)
    assert bad["verdict"].tolist() == sorted(bad["verdict"], key=operators.SEVERITY.index)
    drain = "\n".join(operators.drain_lines(bad))
    assert f"nodename={suspect} " not in drain and f"nodename={degraded[1]} " in drain
    operators.write_pages(tmp_path, table, bad, flagged)
    page = (tmp_path / "nodes" / f"{suspect}.md").read_text()
    assert "| retest | not confirmed |" in page
    assert "| drained by drain.txt | no (not confirmed by its retest) |" in page
    assert "## Flagged cases against the fleet" in page
    assert {p.stem for p in (tmp_path / "nodes").glob("*.md")} == set(bad["node"])


def test_without_fork_this_process_reads(fleet, monkeypatch):
    runs, _ = fleet
    monkeypatch.setattr(workers, "CHUNK_FILES", 5)
    monkeypatch.delattr(workers.os, "fork")
    table = fleet_load.load_fleet([runs], [], [], jobs=2)
    assert table["node"].nunique() == len(list(runs.glob("*.h5")))
