"""Issue 11 (fleet acceptance): the fleet table, the simulator and the fleet analysis.

Each test guards a class of the issue: wrong component naming, synthetic data taken for
real, a fault not found or a healthy node flagged, bad input (corrupt file, duplicate host,
missing node) hiding the rest of the fleet."""
from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import pandas as pd
import pytest

from analysis.__main__ import main
from tests.fleetsim.__main__ import main as fleetsim
from tests.fleetsim.sim import simulate
from analysis.fleet.table import COLUMNS, Topo, component, fleet_rows
from analysis.results.io import load_run
from conftest import figure_suffixes

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
    assert code == 1  # a failed and a missing node (issue 21: exit 1, the rest analysed)
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
    assert code == 1  # the broken file's node is failed (issue 21), the rest analysed
    assert len(nodes) == 21 and nodes.loc["broken", "verdict"] == "failed"
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
    assert fleetsim(["--nodes", "3", "--faults", "hbm:x", "-o", str(tmp_path / "s")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_fast_reader_gives_the_same_table_as_load_run(fleet):
    """The fleet reads only some columns (speed); it must not change the table."""
    from analysis.fleet.table import fleet_columns, load_cases_run
    sim, _ = fleet
    path = sorted(sim.glob("*.h5"))[0]
    fast = pd.DataFrame(fleet_columns(load_cases_run(path)))
    pd.testing.assert_frame_equal(fast[list(COLUMNS)], fleet_rows(load_run(path)),
                                  check_dtype=False)


def test_bw_and_memcpy_rows_of_the_file_layout(tmp_path):
    """Components of bw and memcpy cases as the C++ writer lays them out (h5fixtures)."""
    from h5fixtures import case, memcpy_case, write_run
    topo = json.loads((DATA / "topology_gh200_quad.json").read_text())
    path = write_run(tmp_path / "r.h5", [
        case(op="read", pu="gpu1", mem="gpu2", alloc="device", via="nvlink", pu_kind="gpu",
             kernel="grid", threads=270336, status="ok", median_GBps=120.0),
        case(op="read", pu="gpu0", mem="numa0", alloc="system", via="c2c", pu_kind="gpu",
             kernel="grid", threads=270336, status="failed", median_GBps=float("nan"))],
        topology=topo, memcpy=[memcpy_case(gpu=3, gpus="3", host_numa=3, via="c2c")])
    table = fleet_rows(load_run(path)).set_index("family")
    assert list(table.loc["bw", "component"]) == ["link:nvlink:gpu1-gpu2", "link:c2c:gpu0"]
    assert "threads=-1" in table.loc["bw", "path"].iloc[0]
    assert table.loc["memcpy", "component"] == "link:c2c:gpu3"
    assert table.loc["bw", "node_kind"].iloc[0] == "aarch64/4s/4xNVIDIA GH200 120GB"


def test_verdicts_failed_missing_and_reference_floor(fleet, tmp_path):
    """A node with every case failed is 'failed', an expected node without a file
    'missing', and a value under its --reference floor is flagged even when the whole
    fleet is as slow (the robust z cannot see a fleet-wide loss)."""
    sim, truth = fleet
    failed = [f for f in truth["faults"] if f["kind"] == "failed"]
    expect = tmp_path / "nodes.txt"
    expect.write_text("# all of them\n" + "\n".join(truth["nodes"]) + "\n")
    path = "bw read pu=gpu0 mem=gpu0 alloc=device kernel=grid threads=-1 size=1073741824"
    reference = tmp_path / "floors.json"
    reference.write_text(json.dumps({"aarch64/4s/4xNVIDIA GH200 120GB": {path: 1e6}}))
    code, out, nodes = _run_fleet(tmp_path, sim, "--expect-nodes", expect, "--reference", reference)
    assert code == 1
    verdicts = {f["detail"]: nodes.loc[f["node"], "verdict"] for f in failed}
    assert verdicts == {"no file": "missing", "every case failed": "failed"}
    flagged = json.loads((out / "flagged.json").read_text())
    below = {r["node"] for r in flagged if r["path"] == path and r["verdict"] != "failed"}
    assert len(below) == len(nodes[nodes["verdict"].isin(["healthy", "degraded"])])
    assert all("below the reference" in r["reason"] for r in flagged if r["path"] == path
               and r["node"] not in {f["node"] for f in truth["faults"]})


def test_duplicate_host_keeps_the_newest_run(fleet, tmp_path):
    sim, _ = fleet
    first = sorted(sim.glob("*.h5"))[0]
    newer = tmp_path / "newer.h5"
    newer.write_bytes(first.read_bytes())
    with h5py.File(newer, "r+") as handle:
        handle.attrs["start_time"] = "2026-11-25T02:00:00Z"
        handle["bw/cases/status"][0] = "failed"
    code, out, nodes = _run_fleet(tmp_path, newer, *sorted(sim.glob("*.h5"))[:10])
    assert code == 1 and len(nodes) == 10  # its failed case makes it failed (issue 21)
    assert nodes.loc[first.stem, "verdict"] == "failed"
    assert nodes.loc[first.stem, "ok"] == nodes.loc[first.stem, "cases"] - 1


@pytest.mark.parametrize(("text", "what"), [("[1]", "must be JSON"), ("{", "cannot read")])
def test_bad_reference_is_one_line_exit_2(fleet, tmp_path, capsys, text, what):
    sim, _ = fleet
    reference = tmp_path / "floors.json"
    reference.write_text(text)
    assert main(["fleet", str(sim), "-o", str(tmp_path / "r"), "--reference", str(reference)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0]


def test_simulator_refuses_a_folder_with_files(fleet, capsys):
    """Old node files in DIR would silently join the next fleet."""
    sim, _ = fleet
    assert fleetsim(["--nodes", "2", "-o", str(sim)]) == 2
    assert "not an empty folder" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["-k", "0"], ["--min-change", "5"]])
def test_bad_thresholds_are_one_line_exit_2(fleet, tmp_path, capsys, option):
    """--min-change 5 (meant as 5 %) would silently flag nothing."""
    sim, _ = fleet
    assert main(["fleet", str(sim), "-o", str(tmp_path / "r"), *option]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_faults_on_an_x86_node_lower_its_values(tmp_path):
    """x86 host memory has no model capacity: a lost channel must lower the socket's
    values, not replace the unknown capacity by Grace's (which raised them); a C2C fault
    on a PCIe node is bad input."""
    truth = simulate(2, "x86_h100", "channel:1@0.2", tmp_path / "s", seed=1)
    bad = truth["faults"][0]["node"]
    good = next(n for n in truth["nodes"] if n != bad)
    rows = {n: fleet_rows(load_run(tmp_path / "s" / f"{n}.h5")).set_index("path")["value"]
            for n in (bad, good)}
    local = [p for p in rows[bad].index if p.startswith("bw read pu=cpu0 mem=numa0")]
    assert local and all(rows[bad][p] < 0.85 * rows[good][p] for p in local)
    assert fleetsim(["--nodes", "2", "--fixture", "x86_h100", "--faults", "c2c:1",
                 "-o", str(tmp_path / "c")]) == 2


@pytest.mark.skipif(not __import__("os").environ.get("MEMPATH_BIN"), reason="needs MEMPATH_BIN")
def test_simulator_reads_a_fixture_through_the_binary(tmp_path):
    truth = simulate(2, "x86_2s_4gpu", "hbm:1", tmp_path / "s", seed=1)
    table = fleet_rows(load_run(tmp_path / "s" / f"{truth['nodes'][0]}.h5"))
    assert table["node_kind"].iloc[0].startswith("x86_64/2s/4x") and table["synthetic"].all()


def test_files_of_one_host_with_different_cases_are_merged(fleet, tmp_path, capsys):
    """A node's checks may write one file each (bw.h5, memcpy.h5): not duplicates."""
    sim, _ = fleet
    first = sorted(sim.glob("*.h5"))[0]
    for name, drop in (("bw_part.h5", ("memcpy", "chase", "pingpong")), ("rest.h5", ("bw",))):
        part = tmp_path / name
        part.write_bytes(first.read_bytes())
        with h5py.File(part, "r+") as handle:
            for group in drop:
                del handle[group]
    code, _, nodes = _run_fleet(tmp_path, tmp_path / "bw_part.h5", tmp_path / "rest.h5",
                                *sorted(sim.glob("*.h5"))[1:10])
    assert code == 1  # nid000010's cases all failed (the fixture's 'failed' fault)
    assert "appears again" not in capsys.readouterr().err
    assert nodes.loc[first.stem, "cases"] == len(fleet_rows(load_run(first)))


@pytest.mark.parametrize(("pu", "mem", "via", "alloc", "expected"), [
    ("gpu2", "gpu2", "local", "device", "gpu2 HBM read"),
    ("cpu0", "numa0", "local", "numa", "cpu0 LPDDR read"),
    ("gpu0", "numa0", "c2c", "pinned", "gpu0 read of numa0 (LPDDR, pinned) over gpu0's C2C"),
    ("gpu0", "numa12", "nvlink", "numa", "gpu0 read of numa12 (HBM) over NVLink gpu0-gpu1"),
    ("cpu0", "numa1", "interconnect", "numa",
     "cpu0 read of numa1 (LPDDR) over socket link cpu0-cpu1"),
])
def test_paths_in_words(pu, mem, via, alloc, expected):
    """The reason an admin reads names the processor, the memory kind and the operation,
    not the path text (issue 11: "gpu2 HBM read 3,310 GB/s = fleet median -14 %")."""
    from analysis.fleet.table import words
    topo = _topo()
    row = {"op": "read", "pu": pu, "mem": mem, "dst_mem": "", "alloc": alloc, "via": via}
    assert words("bw", row, topo, component(topo, pu, mem, via)) == expected


def test_reason_in_words_and_path_in_its_own_column(fleet, tmp_path):
    sim, truth = fleet
    code, out, nodes = _run_fleet(tmp_path, sim)
    hbm = next(f for f in truth["faults"] if f["kind"] == "hbm")
    reason = nodes.loc[hbm["node"], "reason"]
    assert re.fullmatch(rf"{hbm['component']} HBM (as numa\d+ )?read \d{{1,3}}(,\d{{3}})* GB/s = fleet median "
                        r"\u2212\d+ %", reason), reason
    assert nodes.loc[hbm["node"], "path"].startswith(f"bw read pu={hbm['component']} ")
    flagged = json.loads((out / "flagged.json").read_text())
    row = next(r for r in flagged if r["node"] == hbm["node"] and r["reason"] == reason)
    assert row["path"].startswith("bw read ") and "pu=" not in row["reason"]


def test_a_node_that_lost_a_numa_node_is_compared_with_its_kind(tmp_path):
    """A lost NUMA node leaves a 3-socket topology: the node must be judged as the
    4-socket kind it should be and named degraded for what it lacks, not be a healthy
    fleet of one."""
    truth = simulate(12, "gh200_quad", "numa:1", tmp_path / "sim", seed=5)
    fault = truth["faults"][0]
    numa = "numa" + fault["component"][3:]
    lost = fleet_rows(load_run(tmp_path / "sim" / f"{fault['node']}.h5"))
    assert "/3s/" in lost["node_kind"].iloc[0]
    code, out, nodes = _run_fleet(tmp_path, tmp_path / "sim")
    assert code == 0 and nodes["node_kind"].nunique() == 1
    assert nodes.loc[fault["node"], "verdict"] == "degraded"
    assert nodes.loc[fault["node"], "reason"] == f"{numa}, {fault['component']} missing"
    assert (nodes.drop(index=fault["node"])["verdict"] == "healthy").all()
    flagged = json.loads((out / "flagged.json").read_text())
    assert any(r["node"] == fault["node"] and r["component"] == numa for r in flagged)


def test_a_kind_with_parts_of_its_own_is_not_folded_into_another(tmp_path):
    """expected_kinds folds only a kind whose parts are a subset of the common kind's."""
    from analysis.fleet.verdicts import expected_kinds
    table = pd.DataFrame({"node": ["a", "b", "c", "d"],
                          "node_kind": ["x/2s/0xnone", "x/2s/0xnone", "x/2s/0xnone", "x/1s/0xnone"],
                          "path": ["bw read pu=cpu0 mem=numa0", "bw read pu=cpu0 mem=numa0",
                                   "bw read pu=cpu0 mem=numa0", "bw read pu=cpu5 mem=numa5"]})
    folded, lacking = expected_kinds(table)
    assert folded["node_kind"].tolist() == table["node_kind"].tolist() and lacking == {}


@pytest.mark.parametrize("lost, kind", [("gpu1", "x/1s/1xH200"), ("gpu0", "x/1s/0xnone")])
def test_a_node_that_lost_a_gpu_is_named_in_a_fleet_of_two(lost, kind):
    """Issue 38's fenced node: two nodes, one with a GPU fewer (or none left: the one-GPU
    machine's fence) are a tie of two kinds; the node with the fewer parts is the one
    lacking them, whatever order the kinds come in."""
    from analysis.fleet.verdicts import expected_kinds
    whole = ["bw read pu=cpu0 mem=numa0", "bw read pu=gpu0 mem=gpu0", "bw read pu=gpu1 mem=gpu1"]
    left = [p for p in whole if lost not in p and (lost != "gpu0" or "gpu" not in p)]
    for first in ("a", "b"):
        rows = ([("a", "x/1s/2xH200" if lost == "gpu1" else "x/1s/1xH200", p) for p in
                 (whole if lost == "gpu1" else whole[:2])] + [("b", kind, p) for p in left])
        if first == "b":
            rows.reverse()
        table = pd.DataFrame(rows, columns=["node", "node_kind", "path"])
        folded, lacking = expected_kinds(table)
        assert folded.groupby("node")["node_kind"].first()["b"] == folded.groupby("node")["node_kind"].first()["a"]
        assert lacking == {"b": [lost]}, (first, lacking)


def test_a_cpu_node_of_another_architecture_is_not_taken_for_a_gpu_node_without_gpus():
    from analysis.fleet.verdicts import expected_kinds
    table = pd.DataFrame({"node": ["a", "b"], "node_kind": ["x86_64/1s/1xH200", "aarch64/1s/0xnone"],
                          "path": ["bw read pu=gpu0 mem=gpu0", "bw read pu=cpu0 mem=numa0"]})
    folded, lacking = expected_kinds(table)
    assert folded["node_kind"].tolist() == table["node_kind"].tolist() and lacking == {}


def _scored(degraded: int, healthy: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A scored fleet table of one path: node bN is -N/10 % off, hN on the median."""
    names = [f"b{i:03d}" for i in range(degraded)] + [f"h{i:03d}" for i in range(healthy)]
    deviation = [-(i + 1) / 1000 for i in range(degraded)] + [0.0] * healthy
    table = pd.DataFrame({"node": names, "path": "p", "higher_is_better": True,
                          "deviation": deviation,
                          "flag": ["outlier"] * degraded + [""] * healthy})
    nodes = pd.DataFrame({"node": names,
                          "verdict": ["degraded"] * degraded + ["healthy"] * healthy})
    return table, nodes


def test_heatmap_keeps_the_worst_degraded_nodes_and_counts_the_rest(tmp_path):
    """Hundreds of degraded nodes must not make the heatmap unreadable: the worst
    HEATMAP_NODES rows, a line for the others, and the figure sized to its rows."""
    import matplotlib.image
    from analysis.fleet.outputs import HEATMAP_NODES, _heatmap, heatmap_rows
    table, nodes = _scored(150, 20)
    rows, hidden = heatmap_rows(table, nodes)
    assert len(rows) == HEATMAP_NODES and hidden == 150 - HEATMAP_NODES
    assert rows[0] == "b149" and rows[-1] == f"b{150 - HEATMAP_NODES:03d}"  # worst first
    assert heatmap_rows(*_scored(3, 100))[0][:3] == ["b002", "b001", "b000"]
    assert len(heatmap_rows(*_scored(3, 100))[0]) == HEATMAP_NODES
    from analysis.fleet.outputs import HEATMAP_ROW_IN
    from analysis.render.style import DPI, PAGE_IN
    heights = {}
    for count in (HEATMAP_NODES, 10):
        out = tmp_path / str(count)
        out.mkdir()
        files = _heatmap(out, *_scored(count, 0))  # through render.style.save: its check passed
        assert [f.name for f in files] == [f"heatmap{suffix}" for suffix in figure_suffixes()]
        assert all(f.is_file() for f in files)
        image = matplotlib.image.imread(files[0])
        assert image.shape[1] == round(DPI * PAGE_IN)  # page width, whatever the rows
        heights[count] = image.shape[0]
    # Each row keeps its 7 pt node name: the figure grows by one row's height per node.
    assert abs(heights[HEATMAP_NODES] - heights[10] - DPI * HEATMAP_ROW_IN * (HEATMAP_NODES - 10)) <= 2


def test_heatmap_shows_failed_first_then_degraded_then_suspect_before_healthy():
    """A failed node (its problems replace its flags) and a suspect one (flagged, not
    confirmed) belong on the operators' heatmap too, by severity."""
    from analysis.fleet.outputs import heatmap_rows
    table, nodes = _scored(3, 5)
    nodes.loc[nodes["node"] == "b000", "verdict"] = "failed"
    nodes.loc[nodes["node"] == "b001", "verdict"] = "suspect"
    table.loc[table["node"] == "b000", "flag"] = ""
    rows, hidden = heatmap_rows(table, nodes)
    assert rows[:3] == ["b000", "b002", "b001"] and hidden == 0
    assert set(rows[3:]) == {f"h{i:03d}" for i in range(5)}


def test_hbm_read_as_its_numa_node_is_told_apart_from_device_memory():
    from analysis.fleet.table import words
    topo = _topo()
    row = {"op": "read", "pu": "gpu0", "mem": "numa4", "dst_mem": "", "alloc": "numa",
           "via": "local"}
    assert words("bw", row, topo, "gpu0") == "gpu0 HBM as numa4 read"
