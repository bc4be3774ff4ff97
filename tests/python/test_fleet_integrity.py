"""Issue 21 item 3: a node is never healthier than its files (analysis/fleet/integrity.py).

Each test is a node that `analysis fleet` called healthy before: a file it could not read,
a file or cases its plan or its kind says it should have, a failed case in a fleet too
small for the fleet median to see it, an impossible value; and the same in
`fleet-history append`. The files come from the simulator (tests/fleetsim/sim.py), split
into the vetting preset's layout (OUTDIR/<host>/<family>.h5) where a test needs it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from analysis.__main__ import main
from tests.fleetsim.sim import simulate

FAMILIES = ("bw", "memcpy", "chase", "pingpong")
DATA = Path(__file__).resolve().parent / "data"


def _sim(tmp_path: Path, nodes: int, seed: int = 1, faults: str = "") -> Path:
    out = tmp_path / "sim"
    simulate(nodes, "gh200_quad", faults, out, seed=seed)
    (out / "truth.json").unlink()
    return out


def _layout(tmp_path: Path, nodes: int, seed: int = 1) -> Path:
    """The vetting layout: OUTDIR/<host>/{bw,memcpy,chase,pingpong}.h5, one family each."""
    sim = _sim(tmp_path, nodes, seed)
    out = tmp_path / "vetting"
    for source in sorted(sim.glob("*.h5")):
        (out / source.stem).mkdir(parents=True)
        for family in FAMILIES:
            part = out / source.stem / f"{family}.h5"
            shutil.copyfile(source, part)
            with h5py.File(part, "r+") as handle:
                for other in FAMILIES:
                    if other != family:
                        del handle[other]
    shutil.rmtree(sim)
    return out


def _fleet(tmp_path: Path, *runs: Path) -> tuple[int, Path, pd.DataFrame]:
    out = tmp_path / "report"
    code = main(["fleet", *map(str, runs), "-o", str(out)])
    return code, out, pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")


def _cases(path: Path, family: str) -> int:
    with h5py.File(path, "r") as handle:
        return len(handle[f"{family}/cases/status"])


def _set(path: Path, family: str, column: str, row: int, value) -> None:
    with h5py.File(path, "r+") as handle:
        handle[f"{family}/cases/{column}"][row] = value


def _keep_rows(path: Path, family: str, count: int) -> None:
    """A run killed after ``count`` cases: the cases table cut short."""
    with h5py.File(path, "r+") as handle:
        group = handle[f"{family}/cases"]
        for name in list(group):
            data, dtype = group[name][:count], group[name].dtype
            del group[name]
            group.create_dataset(name, data=data, dtype=dtype)


def _healthy(nodes: pd.DataFrame, but: set[str]) -> None:
    others = nodes.drop(index=list(but))
    assert (others["verdict"] == "healthy").all(), others[others["verdict"] != "healthy"]


def test_an_unreadable_file_fails_its_node(tmp_path, capsys):
    """A truncated bw.h5, a copy/ file that is not HDF5, a file of another schema and a
    simulator file that is not HDF5: each node failed with the file and the error; the
    node's other files and the other nodes still analysed."""
    from h5fixtures import case, topology, write_run
    out = _layout(tmp_path, 6)
    bw = out / "nid000002" / "bw.h5"
    bw.write_bytes(bw.read_bytes()[:4000])
    (out / "nid000003" / "copy").mkdir()
    (out / "nid000003" / "copy" / "cpu0.h5").write_bytes(b"not hdf5")
    write_run(out / "nid000004" / "chase_gpu.h5", [case()], topology=topology("gh200_quad"),
              schema_version=99)
    lone = tmp_path / "flat"
    lone.mkdir()
    (lone / "nid000099.h5").write_bytes(b"\x89HDF\r\n\x1a\n truncated")
    code, out_dir, nodes = _fleet(tmp_path, out, lone)
    err = capsys.readouterr().err
    assert code == 1
    assert nodes.loc["nid000002", "reason"].startswith("bw.h5: not an HDF5 file")
    assert nodes.loc["nid000002", "ok"] > 0  # its other files were read
    assert nodes.loc["nid000003", "reason"].startswith("copy/cpu0.h5: not an HDF5 file")
    assert nodes.loc["nid000004", "reason"].startswith("chase_gpu.h5: ")
    assert nodes.loc["nid000099", "reason"].startswith("nid000099.h5: ")
    assert set(nodes.index[nodes["verdict"] == "failed"]) == {
        "nid000002", "nid000003", "nid000004", "nid000099"}
    _healthy(nodes, {"nid000002", "nid000003", "nid000004", "nid000099"})
    assert "analysis: error: 4 node(s) failed, 0 missing of 7" in err
    assert sum("bw.h5" in line for line in err.splitlines()) == 1
    flagged = json.loads((out_dir / "flagged.json").read_text())
    row = next(r for r in flagged if r["node"] == "nid000002")
    assert row["component"] == "file" and row["verdict"] == "failed"


def _plan(folder: Path, files: dict[str, int]) -> None:
    (folder / "plan.json").write_text(json.dumps({"schema": 1, "host": folder.name,
                                                  "files": files}))


def test_files_are_held_against_the_nodes_plan(tmp_path, capsys):
    """plan.json: a planned file absent and a file with fewer cases than planned (a killed
    run) fail the node; a node that matches its plan stays healthy."""
    out = _layout(tmp_path, 5)
    counts = {f"{family}.h5": _cases(out / "nid000001" / f"{family}.h5", family)
              for family in FAMILIES}
    for node in sorted(out.iterdir()):
        _plan(node, counts)
    _plan(out / "nid000002", {**counts, "copy/cpu0.h5": 8})
    _keep_rows(out / "nid000003" / "bw.h5", "bw", 10)
    (out / "nid000005" / "plan.json").write_text("{")  # unreadable: a note, held against its kind
    code, _, nodes = _fleet(tmp_path, out)
    assert code == 1
    assert nodes.loc["nid000002", "reason"] == "copy/cpu0.h5 missing: 8 cases planned"
    assert nodes.loc["nid000003", "reason"] == f"bw.h5: 10 of {counts['bw.h5']} planned cases"
    _healthy(nodes, {"nid000002", "nid000003"})
    assert "nid000005/plan.json: not a usable plan" in capsys.readouterr().err


def test_a_plan_of_a_node_without_files_fails_it(tmp_path):
    """Every command died before writing: only plan.json is there."""
    out = _layout(tmp_path, 3)
    (out / "nid000009").mkdir()
    _plan(out / "nid000009", {"bw.h5": 112})
    code, _, nodes = _fleet(tmp_path, out)
    assert code == 1 and nodes.loc["nid000009", "reason"] == "bw.h5 missing: 112 cases planned"


def test_without_a_plan_a_node_is_held_against_its_kind(tmp_path):
    """No plan.json (old runs, simulator output): a file, a family or cases that most
    nodes of its kind have fail the node that lacks them."""
    out = _layout(tmp_path, 5)
    for family in ("bw", "memcpy"):
        (out / "nid000002" / f"{family}.h5").unlink()
    _keep_rows(out / "nid000003" / "chase.h5", "chase", 2)
    code, _, nodes = _fleet(tmp_path, out)
    assert code == 1
    reasons = nodes.loc["nid000002", "reason"]
    assert reasons.startswith("no bw cases (most nodes of its kind have them)"), reasons
    assert nodes.loc["nid000003", "reason"].startswith("chase: 2 of the ")
    _healthy(nodes, {"nid000002", "nid000003"})
    sim = _sim(tmp_path / "one", 4)  # one file a node: the family
    with h5py.File(sim / "nid000004.h5", "r+") as handle:
        del handle["memcpy"]
    code, out_dir, nodes = _fleet(tmp_path / "one", sim)
    assert code == 1 and nodes.loc["nid000004", "reason"].startswith("no memcpy cases")
    _healthy(nodes, {"nid000004"})


@pytest.mark.parametrize(("family", "value", "says"), [
    ("bw", float("nan"), "= nan (not a finite positive value)"),
    ("bw", float("inf"), "= inf (not a finite positive value)"),
    ("memcpy", 0.0, "= 0 (not a finite positive value)"),
    ("bw", 1e30, "is above 1.05x its theoretical peak"),
    ("chase", 0.1, "0.1 ns is below 0.5 ns"),
])
def test_an_impossible_value_fails_its_node(tmp_path, family, value, says):
    sim = _sim(tmp_path, 4)
    column = "median_ns" if family == "chase" else "median_GBps"
    _set(sim / "nid000003.h5", family, column, 0, value)
    code, out, nodes = _fleet(tmp_path, sim)
    assert code == 1
    reason = nodes.loc["nid000003", "reason"]
    assert reason.startswith("nid000003.h5: ") and says in reason, reason
    _healthy(nodes, {"nid000003"})
    flagged = json.loads((out / "flagged.json").read_text())
    row = next(r for r in flagged if r["node"] == "nid000003")
    assert row["component"] not in ("file", "node") and row["path"].startswith(family)


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_failed_case_fails_the_node_whatever_the_fleets_size(tmp_path, nodes):
    """In a fleet of one or two there is no majority that ran the case: one failed case,
    or half of them, must still fail the node."""
    sim = _sim(tmp_path, nodes)
    bad = sim / f"nid{nodes:06d}.h5"
    total = _cases(bad, "bw")
    rows = range(1) if nodes == 1 else range(total // 2)
    with h5py.File(bad, "r+") as handle:
        for row in rows:
            handle["bw/cases/status"][row] = "failed"
            handle["bw/cases/median_GBps"][row] = np.nan
    code, _, table = _fleet(tmp_path, sim)
    assert code == 1 and table.loc[bad.stem, "verdict"] == "failed"
    reason = table.loc[bad.stem, "reason"]
    assert reason.startswith(f"{bad.name}: ") and " failed" in reason
    if nodes == 2:
        every = sum(_cases(bad, family) for family in FAMILIES)
        assert f"({total // 2} of {every} cases of the file failed)" in reason
        _healthy(table, {bad.stem})


def test_failed_nodes_stay_out_of_the_fleet_median(tmp_path):
    """Three failed nodes whose other values are 20 % higher must not move the median the
    two healthy nodes are judged by (they would be flagged -17 %)."""
    sim = _sim(tmp_path, 5)
    for n in (1, 2, 3):
        with h5py.File(sim / f"nid{n:06d}.h5", "r+") as handle:
            values = handle["bw/cases/median_GBps"]
            values[...] = values[...] * 1.2
            handle["chase/cases/status"][0] = "failed"
    code, out, nodes = _fleet(tmp_path, sim)
    assert code == 1
    assert list(nodes["verdict"]) == ["failed"] * 3 + ["healthy"] * 2


def test_a_healthy_fleet_exits_0(tmp_path, capsys):
    code, _, nodes = _fleet(tmp_path, _layout(tmp_path, 3))
    assert code == 0 and (nodes["verdict"] == "healthy").all()
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["h100_pingpong", "h100_chase_gpu", "h100_chase_cpu",
                                  "h200x2_chase_peer"])
def test_real_runs_have_no_impossible_values(name):
    """The bounds must never fail a real measurement (the peak tables are upper bounds)."""
    from analysis.fleet.integrity import problems
    from analysis.fleet.load import load_fleet
    table = load_fleet([DATA / f"{name}.h5"], [], [])
    found = problems(table, [], {})
    assert found.empty or not found["reason"].str.contains("peak|finite|below").any(), found


def test_fleet_history_append_holds_the_same_rules(tmp_path, capsys):
    """A broken file is one error line, the failed nodes' rows are stored as failed with no
    value, the good nodes' as they are; exit 1."""
    from analysis.fleet import history
    out = _layout(tmp_path, 4)
    (out / "nid000002" / "bw.h5").write_bytes(b"not hdf5")
    _set(out / "nid000003" / "chase.h5", "chase", "median_ns", 0, float("nan"))
    db = tmp_path / "h.duckdb"
    assert main(["fleet-history", "append", "--db", str(db), str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert err[0].startswith("analysis: error: 2 node(s) failed, their rows stored with status failed")
    assert "nid000002/bw.h5: not an HDF5 file" in err[1]
    con = history.connect(db, read_only=True)
    rows = con.execute("SELECT node, status, value FROM fleet").df()
    con.close()
    bad = rows[rows["node"].isin(["nid000002", "nid000003"])]
    assert len(bad) and (bad["status"] == "failed").all() and bad["value"].isna().all()
    good = rows[rows["node"].isin(["nid000001", "nid000004"])]
    assert (good["status"] == "ok").all() and good["value"].notna().all()


def test_vet_node_writes_its_plan_before_measuring(tmp_path):
    """slurm/vet_node.sh: plan.json holds each file's planned (not skipped) cases, as the
    files then hold them; a plan that cannot be made is one line and the run goes on."""
    from test_vetting import HOST, binary, vet
    real = binary()
    out = vet(tmp_path / "v", real)
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "v" / HOST
    plan = json.loads((folder / "plan.json").read_text())
    assert plan["schema"] == 1 and plan["host"] == HOST
    ran = {}
    for path in folder.rglob("*.h5"):
        with h5py.File(path, "r") as handle:
            ran[str(path.relative_to(folder))] = sum(
                int((handle[f"{g}/cases/status"][:].astype(str) != "skipped").sum())
                for g in handle if "cases" in handle[g])
    assert plan["files"] == ran
    stub = tmp_path / "mempath"
    stub.write_text(f'#!/bin/sh\n[ "$1" = topo ] && [ "$2" = --save ] && exit 3\nexec {real} "$@"\n')
    stub.chmod(0o755)
    out = vet(tmp_path / "w", stub)
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stderr.splitlines() if "plan.json" in line] == [
        f"vet_node.sh: {HOST}: no plan.json ('{stub} topo --save' failed: ); measuring anyway"]
    assert (tmp_path / "w" / HOST / "bw.h5").is_file()
    assert not (tmp_path / "w" / HOST / "plan.json").exists()


def _problems_of(path: Path) -> pd.DataFrame:
    from analysis.fleet.integrity import problems
    from analysis.fleet.load import load_fleet
    return problems(load_fleet([path], [], []), [], {})


def test_the_peak_bound_never_fails_a_possible_value(tmp_path):
    """A copy counts its bytes twice (read and write): 6,000 GB/s in one GPU's HBM is
    possible for a copy, not for a read. A memcpy latency case has no bandwidth. A socket
    read over the interconnect at 95 GB/s is within what is published (75 and 100)."""
    from h5fixtures import case, memcpy_case, topology, write_run
    hbm = dict(pu="gpu0", mem="gpu0", alloc="device", via="local", kernel="grid",
               threads=270336, median_GBps=6000.0)
    path = write_run(tmp_path / "n.h5", [
        case(op="copy", dst_mem="gpu0", **hbm), case(op="read", **hbm),
        case(op="read", pu="cpu0", mem="numa1", via="interconnect", threads=72,
             median_GBps=95.0)],
        topology=topology("gh200_quad"),
        memcpy=[memcpy_case(median_us=10.0, median_GBps=float("nan"))])
    found = _problems_of(path)
    assert len(found) == 1 and found["path"].iloc[0].startswith("bw read pu=gpu0"), found
    assert "above 1.05x its theoretical peak (4,000 GB/s)" in found["reason"].iloc[0]


def test_fleet_history_option_stores_a_failed_node_as_failed(tmp_path):
    """`analysis fleet --history`: the same rows as `fleet-history append` would store."""
    from analysis.fleet import history
    sim = _sim(tmp_path, 3)
    _set(sim / "nid000002.h5", "bw", "median_GBps", 0, 1e30)
    db = tmp_path / "h.duckdb"
    assert main(["fleet", str(sim), "-o", str(tmp_path / "r"), "--history", str(db)]) == 1
    con = history.connect(db, read_only=True)
    rows = con.execute("SELECT node, status, value FROM fleet").df()
    con.close()
    bad = rows[rows["node"] == "nid000002"]
    assert len(bad) and (bad["status"] == "failed").all() and bad["value"].isna().all()
    assert (rows.loc[rows["node"] != "nid000002", "status"] == "ok").all()


def test_a_hostile_or_empty_file_fails_its_node_in_one_line(tmp_path, capsys):
    """Issue 33: a topology whose memory has no name, a processor outside the naming rules
    and a file of zero cases (a run killed before its first case) ended in a traceback or
    a node absent from the report; each is now its node failed, naming the file."""
    from h5fixtures import case, topology, write_run
    out = _layout(tmp_path, 6)
    write_run(out / "nid000002" / "extra.h5", [case()], topology={"memories": [{}]})
    write_run(out / "nid000003" / "extra.h5", [case(pu="gpuX")], topology=topology("gh200_quad"))
    lone = tmp_path / "flat"
    lone.mkdir()
    write_run(lone / "nid000099.h5", [], topology={**topology("gh200_quad"), "host": "nid000099"},
              attrs={"host": "nid000099"})
    code, _, nodes = _fleet(tmp_path, out, lone)
    assert code == 1
    assert nodes.loc["nid000002", "reason"].startswith("extra.h5: the topology attribute's memories has an entry without a name")
    assert nodes.loc["nid000003", "reason"].startswith("extra.h5: column pu of table bw/cases names 'gpuX'")
    assert nodes.loc["nid000099", "reason"].startswith("nid000099.h5: its cases tables (bw/cases) hold no case")
    assert set(nodes.index[nodes["verdict"] == "failed"]) == {"nid000002", "nid000003", "nid000099"}
    _healthy(nodes, {"nid000002", "nid000003", "nid000099"})
    assert "Traceback" not in capsys.readouterr().err
