"""Issue 11 (fleet acceptance): the fleet table, the simulator and the fleet analysis.

Each test guards a class of the issue: wrong component naming, synthetic data taken for
real, a fault not found or a healthy node flagged, bad input (corrupt file, duplicate host,
missing node) hiding the rest of the fleet."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.fleet_sim import simulate
from analysis.fleet_table import COLUMNS, Topo, component, fleet_rows
from analysis.io import load_run

DATA = Path(__file__).resolve().parent / "data"
FAULTS = "hbm:4@0.10/0.15,c2c:3,channel:3,noisy:2,numa:2,failed:2"


def _topo() -> Topo:
    return Topo(json.loads((DATA / "topology_gh200_quad.json").read_text()))


@pytest.mark.parametrize(("pu", "mem", "via", "expected"), [
    ("gpu0", "gpu1", "nvlink", "link:nvlink:gpu0-gpu1"),
    ("gpu1", "gpu0", "nvlink", "link:nvlink:gpu0-gpu1"),
    ("gpu0", "gpu0", "local", "gpu0"),
    ("cpu0", "numa0", "local", "cpu0"),
    ("gpu0", "numa0", "c2c", "link:c2c:gpu0"),
    ("gpu0", "numa0", "pcie", "link:pcie:gpu0"),
    ("cpu0", "numa2", "interconnect", "link:interconnect:cpu0-cpu2"),
    ("gpu0", "numa1", "c2c+interconnect", "link:c2c:gpu0+link:interconnect:cpu0-cpu1"),
])
def test_component_names_the_part(pu, mem, via, expected):
    assert component(_topo(), pu, mem, via) == expected


@pytest.mark.parametrize("name", ["h100_pingpong", "h100_chase_gpu", "h100_chase_cpu",
                                  "h200x2_chase_peer"])
def test_fleet_rows_of_real_files(name):
    table = fleet_rows(load_run(DATA / f"{name}.h5"))
    assert tuple(table.columns) == COLUMNS
    assert table["node_kind"].iloc[0].startswith("x86_64/1s/")
    assert not table["synthetic"].any()
    assert table.loc[table["status"] != "ok", "value"].isna().all()
    assert table.groupby("path").size().max() == 1  # a path names one case
    assert (table["night"] == "2026-11-22").all()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet") / "sim"
    truth = simulate(60, "gh200_quad", FAULTS, out, seed=3)
    return out, truth


def test_simulator_marks_every_file_synthetic(fleet):
    out, truth = fleet
    files = sorted(out.glob("*.h5"))
    assert len(files) == 59  # one failed node left no file
    for path in files[:5]:
        with h5py.File(path, "r") as handle:
            assert handle.attrs["synthetic"] == 1 and handle.attrs["schema_version"] == 1
    table = fleet_rows(load_run(files[0]))
    assert table["synthetic"].all() and 100 <= len(table) <= 200
    assert {f["kind"] for f in truth["faults"]} == {"hbm", "c2c", "channel", "noisy", "numa", "failed"}


def _run_fleet(tmp_path, *args):
    out = tmp_path / "report"
    code = main(["fleet", *map(str, args), "-o", str(out)])
    return code, out, pd.read_csv(out / "nodes.csv").set_index("node")


def test_fleet_finds_every_fault_and_no_healthy_node(fleet, tmp_path):
    sim, truth = fleet
    expect = tmp_path / "nodes.txt"
    expect.write_text("\n".join(truth["nodes"]) + "\n")
    code, out, nodes = _run_fleet(tmp_path, sim, "--expect-nodes", expect)
    assert code == 0
    faulty = {f["node"]: f for f in truth["faults"]}
    for node, fault in faulty.items():
        wanted = {"failed": {"failed", "missing"}}.get(fault["kind"], {"degraded"})
        assert nodes.loc[node, "verdict"] in wanted, (node, fault)
    healthy = nodes.drop(index=list(faulty))
    assert (healthy["verdict"] == "healthy").all(), healthy[healthy["verdict"] != "healthy"]
    flagged = json.loads((out / "flagged.json").read_text())
    hbm = [f for f in truth["faults"] if f["kind"] == "hbm"]
    for fault in hbm:
        assert any(r["node"] == fault["node"] and r["component"] == fault["component"]
                   for r in flagged)
    assert (out / "heatmap.png").stat().st_size > 0 and (out / "summary.md").is_file()


def test_corrupt_file_and_duplicate_host_are_one_line_each(fleet, tmp_path, capsys):
    sim, _ = fleet
    files = sorted(sim.glob("*.h5"))[:20]
    broken = tmp_path / "broken.h5"
    broken.write_bytes(b"not hdf5")
    copy = tmp_path / "again.h5"
    copy.write_bytes(files[0].read_bytes())
    code, _, nodes = _run_fleet(tmp_path, *files, broken, copy)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2  # bad input, the rest analysed
    assert len(nodes) == 20
    assert sum("broken.h5" in line for line in err) == 1
    assert sum("appears again" in line for line in err) == 1


def test_two_node_kinds_are_compared_apart(tmp_path):
    quad = simulate(12, "gh200_quad", "", tmp_path / "quad", seed=1)
    single = simulate(12, "gh200_single", "hbm:1@0.15", tmp_path / "single", seed=2)
    for path in (tmp_path / "single").glob("*.h5"):  # distinct host names
        path.rename(path.with_name("s" + path.name))
    with_names = tmp_path / "single"
    for path in with_names.glob("*.h5"):
        with h5py.File(path, "r+") as handle:
            handle.attrs["host"] = "s" + handle.attrs["host"]
    code, _, nodes = _run_fleet(tmp_path, tmp_path / "quad", tmp_path / "single")
    assert code == 0 and nodes["node_kind"].nunique() == 2
    bad = nodes[nodes["verdict"] != "healthy"].index.tolist()
    assert bad == ["s" + single["faults"][0]["node"]]
    assert len(quad["nodes"]) == 12


def test_bad_fault_spec_is_one_line_exit_2(tmp_path, capsys):
    assert main(["simulate", "--nodes", "3", "--faults", "hbm:x", "-o", str(tmp_path / "s")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
