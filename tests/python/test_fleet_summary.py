"""Issue 21 item 5: a node's fleet summary (analysis/fleet/summary.py) stands for its files
only while they are unchanged, and the fleet reads the same table from it as from them."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.fleet import load, summary
from tests.fleetsim.sim import simulate
from analysis.results import workers


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """12 nodes in the preset's layout, with a broken, a partial and a missing file, each
    node summarised as vet_node.sh does; and the same fleet without summaries."""
    root = tmp_path_factory.mktemp("summaries")
    plain = root / "plain"
    simulate(12, "gh200_quad", "hbm:1,truncated:1,partial:1,nofile:1,failed:2", plain, seed=5,
             layout="preset", noise="h100", jobs=1)
    summarised = root / "summarised"
    shutil.copytree(plain, summarised)
    for node in sorted(p for p in summarised.iterdir() if p.is_dir()):
        if any(node.rglob("*.h5")):
            load.write_summary(node)
    return plain, summarised


def _table(folder: Path, night: str | None = None) -> tuple[pd.DataFrame, list[str], list[str]]:
    rejected: list[str] = []
    notes: list[str] = []
    table = load.load_fleet([folder], rejected, notes, night=night, jobs=1)
    table[load.FILE] = table[load.FILE].astype(str).str.replace(str(folder), "DIR", regex=False)
    rejected = [r.replace(str(folder), "DIR") for r in rejected]
    return table, rejected, notes


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                  check_categorical=False)


@pytest.mark.parametrize("night", [None, "2026-12-01"])
def test_the_summaries_give_the_files_table(fleet, night):
    plain, summarised = fleet
    from_files, rejected_files, _ = _table(plain, night)
    from_summaries, rejected_summaries, notes = _table(summarised, night)
    assert notes == []  # every summary was used
    _same(from_files, from_summaries)
    assert rejected_files and sorted(rejected_summaries) == sorted(rejected_files)


def test_a_node_is_read_as_one_unit(fleet):
    _, summarised = fleet
    units = load.result_units([summarised])
    folders = [u for u in units if isinstance(u, load.NodeFolder)]
    assert folders and all(len(u.files) > 1 for u in folders)
    assert not [u for u in units if isinstance(u, Path) and u.parent in {f.folder for f in folders}]


def _copy(fleet, tmp_path) -> tuple[Path, Path]:
    plain, summarised = fleet
    copy = tmp_path / "fleet"
    shutil.copytree(summarised, copy)
    return plain, copy


def _first_node(folder: Path) -> Path:
    return next(p.parent for p in sorted(folder.glob(f"*/{summary.NAME}")))


@pytest.mark.parametrize("damage, why", [
    ("touch", "changed since"),
    ("grow", "changed since"),
    ("remove", "changed since"),
    ("garbage", "cannot be used"),
    ("codes", "cannot be used"),
    ("digest", "another version"),
    ("link", "not a regular file"),
])
def test_a_summary_that_does_not_stand_for_the_files_is_said_and_the_files_read(
        fleet, tmp_path, damage, why):
    plain, copy = _copy(fleet, tmp_path)
    node = _first_node(copy)
    target = node / summary.NAME
    if damage == "touch":
        os.utime(node / "bw.h5", ns=(1, 1))
    elif damage == "grow":
        with open(node / "pingpong.h5", "ab") as handle:
            handle.write(b"\0")
    elif damage == "remove":
        (node / "chase.h5").unlink()
    elif damage == "garbage":
        target.write_text("{not json")
    elif damage in ("codes", "digest"):
        document = json.loads(target.read_text())
        if damage == "codes":
            document["columns"]["status"]["codes"][0] = 10**6
        else:
            document["digest"] = "0" * 16
        target.write_text(json.dumps(document))
    else:
        elsewhere = tmp_path / "elsewhere.json"
        target.rename(elsewhere)
        target.symlink_to(elsewhere)
    table, _, notes = _table(copy)
    assert len(notes) == 1 and notes[0].startswith(str(target)) and why in notes[0], notes
    assert "read the node's files" in notes[0]
    if damage in ("garbage", "codes", "digest", "link", "touch"):
        _same(table, _table(plain)[0])  # the files, as without a summary
    else:
        assert table[load.FILE].str.contains(node.name).any()


def test_a_broken_file_is_read_again_and_its_node_is_failed(fleet, tmp_path):
    """The truncated file of the simulated fault: named by the fleet as without summaries."""
    plain, copy = _copy(fleet, tmp_path)
    truth = json.loads((plain / "truth.json").read_text())
    broken = {f["node"] for f in truth["faults"] if f["kind"] in ("truncated", "partial")}
    for report, runs in (("a", plain), ("b", copy)):
        assert main(["fleet", str(runs), "-o", str(tmp_path / report)]) == 1
    nodes = {r: pd.read_csv(tmp_path / r / "nodes.csv").set_index("node") for r in "ab"}
    assert (nodes["a"].loc[sorted(broken), "verdict"] == "failed").all()
    pd.testing.assert_series_equal(nodes["a"]["verdict"], nodes["b"]["verdict"])
    assert nodes["a"]["reason"].str.replace(str(plain), "").equals(
        nodes["b"]["reason"].str.replace(str(copy), ""))


def test_fleet_summary_of_a_folder_without_results_is_one_line_exit_2(tmp_path, capsys):
    assert main(["fleet-summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no .h5 result file" in err[0]


def test_the_summary_is_written_atomically_through_no_planted_link(fleet, tmp_path):
    _, copy = _copy(fleet, tmp_path)
    node = _first_node(copy)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (node / summary.NAME).unlink()
    (node / summary.NAME).symlink_to(victim)
    load.write_summary(node)
    assert victim.read_text() == "keep"
    assert not (node / summary.NAME).is_symlink()
    assert not [p for p in node.iterdir() if p.name.startswith(f".{summary.NAME}")]


def test_a_file_that_crashes_its_reader_is_named_and_the_rest_read(fleet, tmp_path, monkeypatch):
    """HDF5 itself can crash on a damaged file (tests/fuzz finds such files): the reading
    process dies, and the fleet reads every other file and names that one."""
    import faulthandler
    import signal

    from analysis.fleet import table
    plain, _ = fleet
    files = load.first_pass_files([plain])
    victim = files[len(files) // 2]
    real = table.load_cases_run

    def crashing(path):
        if Path(path) == victim:
            faulthandler.disable()  # pytest's would print the dead process's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path)

    monkeypatch.setattr(load, "load_cases_run", crashing)  # the reading processes are forks
    monkeypatch.setattr(workers, "CHUNK_FILES", 16)
    rejected: list[str] = []
    broken: list = []
    table_ = load.load_fleet([plain], rejected, [], jobs=2, broken=broken)
    assert [line for line in rejected if "HDF5 library crashed" in line] == [
        f"{victim}: the HDF5 library crashed reading it; the file is damaged, give an intact "
        "mempath result file"]
    assert victim in [path for path, _ in broken]
    monkeypatch.setattr(load, "load_cases_run", real)
    whole = load.load_fleet([plain], [], [], jobs=2)
    assert len(table_) == len(whole) - (whole[load.FILE] == str(victim)).sum()
