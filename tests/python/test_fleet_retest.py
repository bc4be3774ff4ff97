"""Issue 21, "confirm before condemning": the first pass lists each flagged case with the
mempath options that re-run exactly it (retest.json); with --retest a flagged node is
degraded only where a re-measured value is flagged again against the FIRST pass's fleet,
suspect where none is. Each test guards one way this goes wrong: options that re-run
another case, a retest judged against the wrong fleet, a retest folder read as first-pass
files, a node without a retest called noise, vet_node.sh running what is not listed."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.fleet.case_paths import fields, filter_args, preset_file
from tests.fleetsim.sim import simulate

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "gh200_quad"
VET_NODE = REPO / "slurm" / "vet_node.sh"
HOST = socket.gethostname().split(".")[0]
TINY = {"VET_SIZE": "8MiB", "VET_IN_CACHE": "1", "VET_CHASE_SIZE": "1MiB", "VET_REPS": "2",
        "VET_ROUND_TRIPS": "200", "VET_TIMEOUT": "60"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("retest") / "sim"
    truth = simulate(16, "gh200_quad", "hbm:2@0.12,c2c:1,noisy:1,failed:1", out, seed=7)
    return out, truth


def _fleet(out: Path, *args) -> tuple[int, pd.DataFrame, dict]:
    code = main(["fleet", *map(str, args), "-o", str(out)])
    nodes = pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")
    return code, nodes, json.loads((out / "retest.json").read_text())


@pytest.fixture(scope="module")
def first_pass(fleet, tmp_path_factory) -> tuple[Path, int, pd.DataFrame, dict]:
    """The fleet report of the simulated fleet alone (no --retest), made once for the tests
    that read it (they only read it): its folder, and _fleet's exit code, nodes and plan."""
    out = tmp_path_factory.mktemp("first_pass") / "r"
    return (out, *_fleet(out, fleet[0]))


def _faulty(truth: dict, kind: str) -> list[str]:
    return [f["node"] for f in truth["faults"] if f["kind"] == kind]


def _binary() -> Path:
    found = os.environ.get("MEMPATH_BIN") or shutil.which("mempath")
    built = REPO / "build" / "mempath"
    path = Path(found) if found else built
    if not path.is_file():
        pytest.skip("needs MEMPATH_BIN (the mempath binary)")
    return path


def test_retest_json_lists_every_flagged_case_of_each_flagged_node(fleet, first_pass):
    _, truth = fleet
    out, code, nodes, plan = first_pass
    assert code == 1  # the fixture's failed node (issue 21: exit 1)
    assert plan["schema"] == 1 and plan["night"] == "2026-11-24"
    degraded = set(nodes.index[nodes["verdict"] == "degraded"])
    assert set(plan["nodes"]) == degraded
    assert degraded >= set(_faulty(truth, "hbm") + _faulty(truth, "c2c"))
    assert not set(plan["nodes"]) & set(_faulty(truth, "failed"))  # its files are the problem
    flagged = pd.DataFrame(json.loads((out / "flagged.json").read_text()))
    for node, entries in plan["nodes"].items():
        assert sorted(e["path"] for e in entries) == sorted(
            flagged.loc[(flagged["node"] == node) & (flagged["path"] != ""), "path"])
        for e in entries:
            assert e["family"] == e["path"].split()[0] and e["file"] == preset_file(e["path"])
            assert e["args"] == filter_args(e["path"])
    # Without a retest pass a flagged node is degraded, and says so.
    assert set(nodes.loc[list(degraded), "retest"]) == {"no retest pass"}
    assert set(nodes.loc[nodes["verdict"] == "healthy", "retest"]) == {""}


def test_an_unflagged_fleet_writes_an_empty_retest_list(tmp_path):
    sim = tmp_path / "sim"
    simulate(6, "gh200_quad", "", sim, seed=1)
    assert _fleet(tmp_path / "r", sim)[2]["nodes"] == {}


@pytest.mark.parametrize(("path", "name"), [
    ("bw read pu=gpu0 mem=gpu0 alloc=device kernel=grid threads=-1 size=1073741824", "bw.h5"),
    ("bw copy pu=cpu2 mem=numa2 alloc=numa dst=gpu1 dst_alloc=device kernel= threads=72 "
     "size=1073741824", "copy/cpu2.h5"),
    ("chase pu=gpu3 mem=numa0 alloc=numa pattern=random size=1073741824 line=64", "chase_gpu.h5"),
    ("chase pu=cpu1 mem=numa0 alloc=numa pattern=random size=1073741824 line=64", "chase.h5"),
    ("memcpy h2d gpus=1 host_numa=1 alloc=pinned engine=ce mode=bandwidth size=536870912",
     "memcpy.h5"),
    ("pingpong a=cpu0 b=gpu0 mem=numa0 alloc=numa", "pingpong.h5"),
])
def test_preset_file_of_a_path(path, name):
    assert preset_file(path) == name


def _planned(family: str, args: list[str]) -> list[dict[str, str]]:
    out = subprocess.run([str(_binary()), family, *args, "--from", str(FIXTURE)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (args, out.stderr)
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.stdout.splitlines()
            if line.startswith("PLAN ") and "status=planned" in line]


def _same(family: str, word: str, f: dict[str, str], plan: dict[str, str]) -> bool:
    """A planned case (its PLAN fields) is the case of the path (its fields)."""
    if family == "bw":
        want = {"op": word, "pu": f["pu"], "mem": f["mem"], "dst": f.get("dst") or "-",
                "alloc": f["alloc"], "threads": f["threads"], "size": f["size"]}
        if f["pu"].startswith("gpu"):
            want["kernel"] = f["kernel"]
    elif family == "memcpy":
        gpus = f["gpus"].split(",")
        want = {"direction": word, "gpu": gpus[0], "alloc": f["alloc"], "engine": f["engine"],
                "mode": f["mode"], "size": f["size"], "host_numa": f["host_numa"]}
        if len(gpus) == 2:
            want["dst_gpu"] = gpus[1]
    elif family == "chase":
        want = {k: f[k] for k in ("pu", "mem", "alloc", "pattern", "size", "line")}
    else:
        want = {k: f[k] for k in ("a", "b", "mem", "alloc")}
    return all(plan.get(k) == v for k, v in want.items())


#: Cases a filter selects beside the one wanted where mempath has no finer filter: a
#: ping-pong of two agents also pairs each with itself, a GPU pair copies both ways.
SUPERSET = {"pingpong": 3, "memcpy": 2}


def test_filter_args_plan_exactly_each_flagged_case_on_the_quad_gh200(first_pass):
    """Every flagged path of a simulated quad-GH200 fleet (its noisy node flags dozens,
    of every family) planned with its retest options against the quad-GH200 snapshot:
    exactly one planned case is that path."""
    _, _, _, plan = first_pass
    paths = sorted({e["path"] for entries in plan["nodes"].values() for e in entries})
    assert {p.split()[0] for p in paths} == {"bw", "memcpy", "chase", "pingpong"}
    for path in paths:
        family, word, f = fields(path)
        planned = _planned(family, filter_args(path))
        matches = [p for p in planned if _same(family, word, f, p)]
        assert len(matches) == 1, (path, filter_args(path), planned)
        limit = SUPERSET.get(family, 1) if family != "memcpy" or word == "d2d" else 1
        assert len(planned) <= limit, (path, planned)


def test_a_copy_to_another_memory_is_one_case(tmp_path):
    """bw --all takes no destination filter: the options must select the one copy."""
    path = ("bw copy pu=gpu0 mem=gpu0 alloc=device dst=numa1 dst_alloc=numa kernel=grid "
            "threads=-1 size=1073741824")
    planned = _planned("bw", filter_args(path))
    assert len(planned) == 1 and planned[0]["dst"] == "numa1" and planned[0]["alloc"] == "device"


def _set_host(path: Path, host: str) -> None:
    with h5py.File(path, "r+") as handle:
        handle.attrs["host"] = host


def _retest_copy(sim: Path, retest: Path, source: str, host: str) -> None:
    """A retest file of ``host`` holding the values of ``source``'s first-pass file."""
    (retest / host).mkdir(parents=True, exist_ok=True)
    target = retest / host / "bw.h5"
    shutil.copy(sim / f"{source}.h5", target)
    _set_host(target, host)


def test_retest_confirms_a_fault_and_clears_noise(fleet, tmp_path):
    sim, truth = fleet
    hbm, other_hbm = _faulty(truth, "hbm")
    c2c, noisy = _faulty(truth, "c2c")[0], _faulty(truth, "noisy")[0]
    faulty = {f["node"] for f in truth["faults"]}
    healthy = next(n for n in truth["nodes"] if n not in faulty)
    retest = tmp_path / "retest"
    _retest_copy(sim, retest, hbm, hbm)          # the same slow HBM again: confirmed
    _retest_copy(sim, retest, healthy, c2c)      # a healthy value this time: noise
    _retest_copy(sim, retest, healthy, noisy)
    # other_hbm: no retest result at all
    code, nodes, plan = _fleet(tmp_path / "r", sim, "--retest", retest)
    assert code == 1  # the fixture's failed node (issue 21: exit 1)
    assert nodes.loc[hbm, ["verdict", "retest"]].tolist() == ["degraded", "confirmed"]
    assert nodes.loc[c2c, ["verdict", "retest"]].tolist() == ["suspect", "not confirmed"]
    assert nodes.loc[noisy, ["verdict", "retest"]].tolist() == ["suspect", "not confirmed"]
    assert nodes.loc[other_hbm, ["verdict", "retest"]].tolist() == ["degraded", "not retested"]
    assert nodes.loc[healthy, ["verdict", "retest"]].tolist() == ["healthy", ""]
    assert "retest: " in nodes.loc[c2c, "reason"] and "retest: " in nodes.loc[hbm, "reason"]
    flagged = pd.DataFrame(json.loads((tmp_path / "r" / "flagged.json").read_text()))
    assert set(flagged.loc[flagged["node"] == c2c, "verdict"]) == {"suspect"}  # both reported
    assert c2c in plan["nodes"]  # the plan is the first pass's, whatever the retest said
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert "| suspect | 2 |" in summary


@pytest.mark.parametrize("slow_rounds, verdict", [(1, "suspect"), (2, "degraded"), (3, "degraded")])
def test_the_retest_judges_the_median_of_its_rounds(fleet, tmp_path, slow_rounds, verdict):
    """Three rounds (VET_RETEST_ROUNDS): one slow round of a healthy-again HBM is noise, two
    of three are the node."""
    sim, truth = fleet
    hbm = _faulty(truth, "hbm")[0]
    faulty = {f["node"] for f in truth["faults"]}
    healthy = next(n for n in truth["nodes"] if n not in faulty)
    for round_ in (1, 2, 3):
        _retest_copy(sim, tmp_path / "retest" / f"round{round_}",
                     hbm if round_ <= slow_rounds else healthy, hbm)
    _, nodes, _ = _fleet(tmp_path / "r", sim, "--retest", tmp_path / "retest")
    assert nodes.loc[hbm, "verdict"] == verdict


def test_rounds_median_takes_the_ok_rounds_and_keeps_a_case_no_round_measured():
    from analysis.fleet.retest import rounds_median
    keys = ["node", "path", "metric"]
    again = pd.DataFrame({"node": ["a"] * 5, "path": ["p", "p", "p", "q", "q"],
                          "metric": ["m"] * 5, "value": [1.0, np.nan, 3.0, np.nan, np.nan],
                          "status": ["ok", "failed", "ok", "failed", "timeout"]})
    out = rounds_median(again, keys).set_index("path")
    assert out.loc["p", "value"] == 2.0 and out.loc["p", "status"] == "ok"
    assert np.isnan(out.loc["q", "value"]) and out.loc["q", "status"] == "failed"


def test_a_retest_is_judged_against_the_first_pass_fleet(fleet, tmp_path):
    """Read as a fleet of its own, a lone slow retest value is its own median (never an
    outlier); against the first pass it is still 12 % slow."""
    sim, truth = fleet
    hbm = _faulty(truth, "hbm")[0]
    retest = tmp_path / "retest"
    _retest_copy(sim, retest, hbm, hbm)
    code, nodes, _ = _fleet(tmp_path / "r", sim, "--retest", retest)
    assert nodes.loc[hbm, "retest"] == "confirmed"


def test_a_node_partly_retested_keeps_its_verdict(fleet, first_pass, tmp_path):
    """Only one of the noisy node's many flagged cases re-measured, and healthy: the rest
    are unknown, so it is not cleared."""
    sim, truth = fleet
    noisy = _faulty(truth, "noisy")[0]
    faulty = {f["node"] for f in truth["faults"]}
    healthy = next(n for n in truth["nodes"] if n not in faulty)
    _, _, _, plan = first_pass
    assert len(plan["nodes"][noisy]) > 1
    keep = plan["nodes"][noisy][0]["path"]
    retest = tmp_path / "retest"
    _retest_copy(sim, retest, healthy, noisy)
    with h5py.File(retest / noisy / "bw.h5", "r+") as handle:  # leave one case: its status ok
        for family in ("bw", "memcpy", "chase", "pingpong"):
            if family in handle and keep.split()[0] != family:
                del handle[family]
    code, nodes, _ = _fleet(tmp_path / "r", sim, "--retest", retest)
    assert nodes.loc[noisy, ["verdict", "retest"]].tolist() == ["degraded", "not retested"]


def test_a_failed_retest_case_confirms(fleet, tmp_path):
    sim, truth = fleet
    c2c = _faulty(truth, "c2c")[0]
    faulty = {f["node"] for f in truth["faults"]}
    healthy = next(n for n in truth["nodes"] if n not in faulty)
    retest = tmp_path / "retest"
    _retest_copy(sim, retest, healthy, c2c)
    with h5py.File(retest / c2c / "bw.h5", "r+") as handle:
        status = handle["bw/cases/status"]
        status[...] = [b"failed"] * len(status)
    _, nodes, _ = _fleet(tmp_path / "r", sim, "--retest", retest)
    assert nodes.loc[c2c, ["verdict", "retest"]].tolist() == ["degraded", "confirmed"]


def test_the_first_pass_never_reads_a_retest_folder(fleet, tmp_path):
    """A healthy retest file of a faulty node inside RUNS, newer than its first pass,
    would replace the node's cases (the newest run is kept) and call it healthy."""
    sim, truth = fleet
    hbm = _faulty(truth, "hbm")[0]
    faulty = {f["node"] for f in truth["faults"]}
    healthy = next(n for n in truth["nodes"] if n not in faulty)
    runs = tmp_path / "runs"
    shutil.copytree(sim, runs)
    _retest_copy(sim, runs / "retest", healthy, hbm)
    with h5py.File(runs / "retest" / hbm / "bw.h5", "r+") as handle:
        handle.attrs["start_time"] = "2099-01-01T00:00:00Z"
    _, nodes, _ = _fleet(tmp_path / "r", runs)
    assert nodes.loc[hbm, "verdict"] == "degraded"
    _, nodes, _ = _fleet(tmp_path / "r2", runs, "--retest", runs / "retest")
    assert nodes.loc[hbm, ["verdict", "retest"]].tolist() == ["suspect", "not confirmed"]


def test_a_retest_folder_that_is_not_there_is_one_line_exit_2(fleet, tmp_path, capsys):
    sim, _ = fleet
    assert main(["fleet", str(sim), "--retest", str(tmp_path / "nope"), "-o",
                 str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such folder" in err[0]


def test_an_empty_retest_folder_retests_nothing(fleet, tmp_path, capsys):
    sim, _ = fleet
    (tmp_path / "retest").mkdir()
    code, nodes, _ = _fleet(tmp_path / "r", sim, "--retest", tmp_path / "retest")
    assert code == 1  # the fixture's failed node (issue 21: exit 1)
    assert set(nodes.loc[nodes["verdict"] == "degraded", "retest"]) == {"not retested"}
    assert "retest pass: no usable" in capsys.readouterr().err


# --- slurm/vet_node.sh in retest mode, on this machine (tiny sizes: functional only) ---

def _vet(outdir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VET_NODE), str(outdir)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **TINY, "MEMPATH": str(_binary()),
                                            **env})


def test_vet_node_retests_the_listed_cases_of_its_host(tmp_path):
    """First pass, a --reference floor this node misses (a fleet of one has no median to
    miss), retest.json naming it, the retest pass into OUTDIR/retest/<host>/, and the final
    verdict: degraded, confirmed (the floor is missed again)."""
    out = tmp_path / "vet"
    first = _vet(out)
    assert first.returncode == 0, first.stderr
    _, nodes, _ = _fleet(tmp_path / "p0", out)
    table = json.loads((tmp_path / "p0" / "flagged.json").read_text())
    assert nodes.loc[HOST, "verdict"] == "healthy" and not table
    from analysis.fleet.load import load_fleet
    rows = load_fleet([out], [], [])
    kind = rows["node_kind"].iloc[0]
    ok = rows[rows["status"] == "ok"].drop_duplicates("family")  # one case of each family
    floors = {r.path: (1e9 if r.higher_is_better else 1e-3) for r in ok.itertuples()}
    reference = tmp_path / "ref.json"
    reference.write_text(json.dumps({kind: floors}))
    _, nodes, plan = _fleet(tmp_path / "p1", out, "--reference", reference)
    assert list(plan["nodes"]) == [HOST]
    assert sorted(e["path"] for e in plan["nodes"][HOST]) == sorted(floors)
    retest_json = tmp_path / "p1" / "retest.json"

    planned = _vet(out, VET_RETEST=str(retest_json), VET_PLAN=str(FIXTURE.parent / "x86_h100"))
    assert planned.returncode == 0, planned.stderr
    assert re.findall(r"^vet_node\.sh: plan (\S+): (\d+) cases$", planned.stdout, re.M)

    again = _vet(out, VET_RETEST=str(retest_json))
    assert again.returncode == 0, again.stdout + again.stderr
    written = sorted(str(p.relative_to(out / "retest" / HOST))
                     for p in (out / "retest" / HOST).rglob("*.h5"))
    assert written == sorted(f"round{r}/{f}" for f in {e["file"] for e in plan["nodes"][HOST]}
                             for r in (1, 2, 3))
    for entry in plan["nodes"][HOST]:   # the preset's measuring options, the entry's filter
        line = next(line for line in again.stdout.splitlines()
                    if f"mempath {entry['family']} " in line
                    and line.endswith(" ".join(entry["args"])))
        assert ("--reps 2" in line) == (entry["family"] in ("bw", "memcpy"))
    code, nodes, _ = _fleet(tmp_path / "final", out, "--reference", reference,
                            "--retest", out / "retest")
    assert code == 0
    assert nodes.loc[HOST, ["verdict", "retest"]].tolist() == ["degraded", "confirmed"]
    _, nodes, _ = _fleet(tmp_path / "p2", out)   # the retest folder is not a first pass
    assert nodes.loc[HOST, "cases"] == len(rows)


def test_vet_node_does_nothing_for_a_host_not_listed(tmp_path):
    listed = tmp_path / "retest.json"
    listed.write_text(json.dumps({"schema": 1, "night": "2026-11-24", "nodes": {
        "another-node": [{"file": "bw.h5", "family": "bw", "path": "bw read", "args": []}]}}))
    out = _vet(tmp_path / "vet", VET_RETEST=str(listed))
    assert out.returncode == 0 and "nothing to retest" in out.stdout
    assert not (tmp_path / "vet").exists()


@pytest.mark.parametrize("text", ["{", '{"nodes": 3}', '{"nodes": {"%s": [{"file": 1}]}}' % HOST,
                                  '{"nodes": {"%s": [{"file": "../../x.h5", "family": "bw", '
                                  '"args": []}]}}' % HOST])
def test_vet_node_refuses_a_bad_retest_list(tmp_path, text):
    bad = tmp_path / "retest.json"
    bad.write_text(text)
    out = _vet(tmp_path / "vet", VET_RETEST=str(bad))
    assert out.returncode == 2 and "VET_RETEST" in out.stderr
    assert f"{bad}: " in out.stderr  # the reader's own line (analysis.fleet.retest_list)
    assert not (tmp_path / "vet").exists()


def test_the_one_retest_list_reader_needs_only_the_standard_library():
    """vet_node.sh and vet_fleet.sbatch read retest.json with a compute node's python3,
    the simulator with the analysis' own: one reader, importing no third-party package."""
    import sys
    code = ("import sys, analysis.fleet.retest_list; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', 'h5py'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_local_retest_run_of_the_vetting_check(tmp_path):
    """The ReFrame check with `retest`: this node's listed case re-run into
    vetting/retest/<host>/ and kept in the output folder, the check passing."""
    from test_vetting import CHECKS, CONFIGS, TINY_VARS, prebuilt_sources
    from test_reframe import reframe

    listed = tmp_path / "retest.json"
    listed.write_text(json.dumps({"schema": 1, "night": "2026-11-24", "nodes": {HOST: [
        {"file": "bw.h5", "family": "bw", "path": "bw read pu=cpu0 mem=numa0 alloc=numa",
         "args": ["--op", "read", "--pu", "cpu0", "--mem", "numa0", "--alloc", "numa",
                  "--size", "8388608"]}]}}))
    src = prebuilt_sources(tmp_path, _binary())
    report = tmp_path / "report.json"
    out = reframe("-C", str(CONFIGS / "generic.py"), "-c", str(CHECKS / "vetting.py"), "-r",
                  "--tag", "vetting", *TINY_VARS, "-S", f"MempathBuild.sourcesdir={src}",
                  "-S", f"MempathVetting.retest={listed}", "--prefix", str(tmp_path / "rfm"),
                  "--report-file", str(report), timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    case = next(tc for tc in json.loads(report.read_text())["runs"][0]["testcases"]
                if tc["name"] == "MempathVetting")
    assert case["result"] == "pass", case["fail_reason"]
    output = tmp_path / "rfm" / "output"
    assert len(list(output.glob(f"*/*/*/MempathVetting/vetting/retest/{HOST}/round*/bw.h5"))) == 3, text
    assert not list(output.glob(f"*/*/*/MempathVetting/vetting/{HOST}"))  # no first pass
