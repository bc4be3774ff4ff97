"""Issue 22: compare at fleet scale, for correctness (no timing here; the measurement of
10,000 nodes against 10,000 is docs/results/2026-11-26-compare-scale.md): 500 simulated
nodes against a copy of them with known changes, read by the process pool."""
from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from analysis.compare.read import read_side
from analysis.compare.runs import compare
from tests.fleetsim.sim import simulate

NODES = 500


def _edit(path: Path, table: str, edit) -> None:
    with h5py.File(path, "r+") as f:
        group = f[table]
        columns = {name: group[name][()] for name in group}
        columns = edit(columns)
        for name in list(group):
            del group[name]
        for name, values in columns.items():
            group.create_dataset(name, data=values)


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_scale")
    base = root / "base"
    simulate(NODES, "gh200_quad", "", base, seed=5, jobs=2)
    run = root / "run"
    shutil.copytree(base, run)

    def scaled(case_id: int, metric: str, factor: float):
        def edit(columns):
            hit = columns["case_id"] == case_id
            columns[metric] = np.where(hit, columns[metric] * factor, columns[metric])
            return columns
        return edit

    _edit(run / "nid000007.h5", "bw/samples", scaled(0, "bandwidth_GBps", 0.5))
    _edit(run / "nid000100.h5", "pingpong/samples", scaled(3, "rtt_ns", 2.0))

    def failed(columns):
        columns["status"] = columns["status"].astype(object)
        columns["status"][1] = b"failed"
        columns["reason"] = columns["reason"].astype(object)
        columns["reason"][1] = b"timing guard"
        return columns

    _edit(run / "nid000200.h5", "memcpy/cases", failed)
    _edit(run / "nid000400.h5", "bw/samples", lambda c: {k: v[c["case_id"] != 5] for k, v in c.items()})
    (run / "nid000300.h5").unlink()
    return base, run


def _ok_cases(path: Path) -> int:
    with h5py.File(path, "r") as f:
        return sum(int((f[f"{family}/cases/status"][()] == b"ok").sum()) for family in f
                   if f"{family}/cases" in f)


def test_five_hundred_nodes_against_five_hundred(fleets) -> None:
    base, run = fleets
    files = sorted(base.glob("*.h5"))
    assert len(files) == NODES
    base_side = read_side(files, jobs=2)
    assert len(base_side.files) == NODES and base_side.rejected == []
    # The same hosts on both sides: every case of every node is matched on its own.
    run_side = read_side(sorted(run.glob("*.h5")) + [base / "nid000300.h5"], jobs=2)
    assert len(run_side.files) == NODES and run_side.rejected == []
    out = compare(base_side, run_side)
    assert out.notes == []
    verdicts = sorted((c.family, c.verdict, c.key.split("host=")[1]) for c in out.changes)
    assert verdicts == [("bw", "regressed", "nid000007"), ("memcpy", "failed", "nid000200"),
                        ("pingpong", "regressed", "nid000100")], verdicts
    halved = next(c for c in out.changes if c.family == "bw")
    assert halved.change == pytest.approx(-0.5) and halved.p < 0.01
    doubled = next(c for c in out.changes if c.family == "pingpong")
    assert doubled.change == pytest.approx(1.0) and doubled.p < 0.01
    assert [(f, k.split("host=")[1], why) for f, k, why in out.not_compared] == \
        [("bw", "nid000400", "ok but no samples in RUN")]
    total = sum(_ok_cases(f) for f in files)
    assert out.compared == total - 2  # the failed case and the one without samples
    assert sum(out.per_family.values()) == out.compared
    assert set(out.per_family) == {"bw", "memcpy", "chase", "pingpong"}

    # Read by one process, the same outcome.
    serial = compare(read_side(files, jobs=1), run_side)
    assert [(c.key, c.verdict, c.change) for c in serial.changes] == [(c.key, c.verdict, c.change) for c in out.changes]
    assert serial.compared == out.compared and serial.not_compared == out.not_compared


def test_other_hosts_on_the_two_sides_are_said(fleets) -> None:
    """A node without its file in RUN: the hosts differ, cases are matched without the host
    (the fleet command, not compare, finds missing nodes: --expect-nodes), and that is said."""
    base, run = fleets
    names = [f"nid{i:06d}.h5" for i in range(296, 306)]
    out = compare(read_side([base / n for n in names], jobs=1),
                  read_side([run / n for n in names if (run / n).exists()], jobs=1))
    assert out.notes == ["the hosts differ, so cases are matched without the host (the samples of all hosts "
                         "of a side pooled): 1 only in BASE (nid000300)"]
    assert out.compared > 0 and all(c.verdict != "missing" for c in out.changes)


def test_grouped_medians_are_each_groups_sorted_median() -> None:
    """The one grouped median of compare and the fleet (analysis/robust.py): per group its
    count, start, median and values sorted within it, NaN last, for groups of any sizes."""
    from analysis.robust import grouped_medians
    rng = np.random.default_rng(7)
    for trial in range(40):
        groups = int(rng.integers(1, 30))
        group = rng.integers(0, groups, int(rng.integers(0, 200)))
        values = rng.normal(size=len(group))
        values[rng.random(len(group)) < 0.05] = np.nan
        count, start, median, ordered = grouped_medians(group, values, groups)
        for g in range(groups):
            mine = np.sort(values[group == g])  # NaN last, as in ordered
            assert count[g] == len(mine), trial
            assert np.array_equal(ordered[start[g]:start[g] + count[g]], mine, equal_nan=True), trial
            expected = np.nan if not len(mine) else (mine[(len(mine) - 1) // 2] + mine[len(mine) // 2]) / 2
            assert np.array_equal(median[g], expected, equal_nan=True), trial


def test_one_host_of_several_topologies_is_numbered_without_opening_files_again(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """Files of one host name with two topologies are two nodes (``n1``, ``n1#2``), as the
    report names them; telling them apart reads nothing more (reopening each file of a
    preset-layout fleet, 13 a node, once cost more than reading it)."""
    from h5fixtures import case, topology, write_run
    from analysis.results import h5file
    topo = {name: {**topology(name), "host": "n1"} for name in ("gh200_single", "x86_h100")}
    files = [write_run(tmp_path / "a.h5", [case()], topology=topo["gh200_single"]),
             write_run(tmp_path / "b.h5", [case()], topology=topo["x86_h100"]),
             write_run(tmp_path / "c.h5", [case()], topology=topo["gh200_single"])]
    opened = tmp_path / "opened"  # written by the reading process, a fork of this one
    real = h5file._open

    def counted(path):
        with opened.open("a") as log:
            log.write(f"{path}\n")
        return real(path)
    monkeypatch.setattr(h5file, "_open", counted)
    side = read_side(files, jobs=1)
    assert side.hosts == ["n1", "n1#2", "n1"]
    assert sorted(opened.read_text().split()) == sorted(map(str, files))
    out = compare(side, read_side(files, jobs=1))
    assert out.notes == [] and out.compared == 2  # n1 (two files pooled) and n1#2


def test_files_of_another_command_line_keep_their_own_identity_columns(tmp_path: Path) -> None:
    """Identity columns are read once per plan (binary, command line less where it wrote,
    topology less the host name): two nodes that ran another command, whose single case is
    another memory, are told apart although every other part of their plan is the same."""
    import json
    from h5fixtures import case, topology, write_run
    from test_compare import RNG

    def node(folder: Path, host: str, mem: str, gbps: float) -> None:
        row = case(mem=mem, median_GBps=gbps)
        samples = [{**{k: row.get(k, "") for k in ("op", "pu", "pu_kind", "mem", "dst_mem", "alloc", "dst_alloc",
                                                   "kernel", "noise")},
                    **{k: row.get(k, -1) for k in ("threads", "size_bytes", "bytes")},
                    "case_id": 0, "rep": r, "bandwidth_GBps": v, "time_s": 1 / v}
                   for r, v in enumerate(gbps * (1 + 0.002 * RNG.standard_normal(10)))]
        topo = {**topology("gh200_single"), "host": host}
        write_run(folder / f"{host}.h5", [row], samples, topology=json.dumps(topo),
                  attrs={"host": host, "command_line": f"mempath bw --mem {mem} --output {host}.h5"})

    for side, slow in (("base", 120.0), ("run", 60.0)):
        (tmp_path / side).mkdir()
        node(tmp_path / side, "n1", "numa0", 450.0)
        node(tmp_path / side, "n2", "numa1", slow)
    outcome = compare(read_side(sorted((tmp_path / "base").glob("*.h5"))),
                      read_side(sorted((tmp_path / "run").glob("*.h5"))))
    bad = [c.line() for c in outcome.changes if c.verdict != "improved"]
    assert len(bad) == 1 and "mem=numa1" in bad[0] and "n2" in bad[0], bad
