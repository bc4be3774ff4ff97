"""A node's check of itself between jobs (slurm/healthcheck.sh, analysis/fleet/health.py).

The script runs as Slurm would run it, with stand-ins for what a test machine lacks: an
`scontrol` that logs each call (its arguments unit-separated, so that a reason is seen as one
argument) and prints the node's one-line record from HC_GRES, HC_NODE_STATE and HC_REASON;
an `squeue` of no jobs; the fake NVML for the GPU's conditions (CUDA sees no GPU:
CUDA_VISIBLE_DEVICES is empty). The checks that prove the measurement run the built binary
(64 MiB buffers, MEMPATH_HC_SIZE, but for the healthy node's check at mempath's default);
those about what the script does with a verdict (a drain, a resume, a reference) replay a file
that binary wrote (REPLAY), so that a figure is the same at each check and nothing waits on
a measurement; the deadline has a `mempath` that hangs and ignores SIGTERM.
"""
from __future__ import annotations

import csv
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.fleet import health
from analysis.fleet.table import fleet_columns, load_cases_run

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "slurm" / "healthcheck.sh"
READINGS = REPO / "tests" / "fake_nvml" / "readings"
FAKE_NVML = REPO / "build" / "tests" / "libmempath_fake_nvml.so"
NODE = "n1"  # the Slurm name; a run file names its host (the reference's key, as the history's)
UNIT = "\x1f"

SCONTROL = r"""#!/usr/bin/env bash
(IFS=$'\x1f'; printf '%s\n' "$*") >>"$HC_CALLS"
if [[ $1 == show ]]; then
  line="NodeName=${*: -1} Arch=x86_64 Gres=${HC_GRES:-(null)} State=${HC_NODE_STATE:-IDLE} ThreadsPerCore=1"
  [[ -n ${HC_REASON:-} ]] && line+=" Reason=$HC_REASON [root@2026-12-07T00:00:00]"
  printf '%s\n' "$line"
fi
exit 0
"""
SQUEUE = "#!/usr/bin/env bash\nexit 0\n"  # no other job on the node
#: A mempath that measures nothing: its bw --output is the recorded file HC_REPLAY; memcpy
#: says what the built binary says on this GPU-less node; with HC_BROKEN, a broken install
#: (exit 3, that line).
REPLAY = r"""#!/usr/bin/env bash
echo "$*" >>"$HC_RAN"
[[ -n ${HC_BROKEN:-} ]] && { echo "mempath: error: $HC_BROKEN" >&2; exit 3; }
if [[ $1 == memcpy ]]; then
  echo "mempath: error: this node has no CUDA GPU; valid: 'mempath memcpy' on a node with one" >&2
  exit 2
fi
while (($#)); do [[ $1 == --output ]] && cp -- "$HC_REPLAY" "$2"; shift; done
exit 0
"""
#: A hung GPU call: never returns, ignores SIGTERM, and has a child of its own.
HANG = r"""#!/usr/bin/env bash
trap '' TERM
echo $$ >>"$HC_PIDS"
sleep 600 &
echo $! >>"$HC_PIDS"
wait
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


class Check:
    """healthcheck.sh of node NODE with its state, fakes and logs below ``root``."""

    def __init__(self, root: Path, binary: Path) -> None:
        if not FAKE_NVML.exists():
            pytest.fail(f"{FAKE_NVML} does not exist: build the tests first (tests/run_tests.sh does)")
        self.root = root
        self.state = root / "state"
        fake = root / "fake"
        fake.mkdir(parents=True)
        scontrol = _script(fake / "scontrol", SCONTROL)
        _script(fake / "squeue", SQUEUE)
        self.replay = _script(fake / "mempath-replay", REPLAY)
        self.hang = _script(fake / "mempath-hang", HANG)
        self.calls_log, self.ran_log, self.pids_log = fake / "calls", fake / "ran", fake / "pids"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM", "MEMPATH_HC_", "HC_", "XDG_"))}
        env.update(PATH=f"{fake}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                   SLURMD_NODENAME=NODE, MEMPATH=str(binary), MEMPATH_HC_PYTHON=sys.executable,
                   MEMPATH_HC_SCONTROL=str(scontrol), MEMPATH_HC_STATE=str(self.state),
                   MEMPATH_HC_CONFIG="/dev/null", MEMPATH_HC_KINDS="none",
                   MEMPATH_NVML_LIBRARY=str(FAKE_NVML), MEMPATH_FAKE_NVML=str(READINGS / "h200_healthy.txt"),
                   CUDA_VISIBLE_DEVICES="", HC_CALLS=str(self.calls_log), HC_RAN=str(self.ran_log),
                   HC_PIDS=str(self.pids_log), MEMPATH_HC_SIZE="64MiB", MEMPATH_HC_IN_CACHE="1")
        self.env = env

    def __call__(self, *args: str, nvml: str | None = None, gres: str | None = None,
                 node_state: str | None = None, reason: str | None = None, timeout: float = 120,
                 **env: str) -> subprocess.CompletedProcess:
        run_env = dict(self.env, **env)
        for key, value in (("HC_GRES", gres), ("HC_NODE_STATE", node_state), ("HC_REASON", reason)):
            if value is not None:
                run_env[key] = value
        if nvml:
            run_env["MEMPATH_FAKE_NVML"] = str(READINGS / nvml)
        return subprocess.run([str(SCRIPT), *args], env=run_env, capture_output=True, text=True,
                              timeout=timeout, cwd=self.root)

    def replaying(self, h5: Path) -> dict[str, str]:
        """The environment of a check whose mempath writes ``h5`` again."""
        return {"MEMPATH": str(self.replay), "HC_REPLAY": str(h5)}

    def calls(self) -> list[list[str]]:
        if not self.calls_log.exists():
            return []
        return [line.split(UNIT) for line in self.calls_log.read_text().splitlines()]

    def updates(self) -> list[list[str]]:
        return [call for call in self.calls() if call[0] == "update"]

    def rows(self) -> list[dict[str, str]]:
        log = self.state / "health-log.csv"
        if not log.exists():
            return []
        with log.open(newline="") as handle:
            return list(csv.DictReader(handle))


def said(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def drain_reason(check: Check) -> str:
    """The reason of the check's one drain: `scontrol update nodename=N state=drain reason=R`."""
    updates = check.updates()
    assert len(updates) == 1, updates
    assert updates[0][:3] == ["update", f"nodename={NODE}", "state=drain"] and len(updates[0]) == 4, updates
    assert updates[0][3].startswith("reason=mempath: "), updates
    return updates[0][3][len("reason="):]


@dataclass
class Done:
    check: Check
    proc: subprocess.CompletedProcess
    run: Path  # a copy of the files the check kept (last/ or last-drain/)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory, mempath_bin: Path) -> Done:
    """One check of a healthy node, measured by the built binary at its default size, with a
    TMPDIR and a HOME of its own (empty)."""
    root = tmp_path_factory.mktemp("healthy")
    check = Check(root, mempath_bin)
    del check.env["MEMPATH_HC_SIZE"], check.env["MEMPATH_HC_IN_CACHE"]
    (root / "tmp").mkdir()
    (root / "home").mkdir()
    proc = check(TMPDIR=str(root / "tmp"), HOME=str(root / "home"))
    done = Done(check, proc, root / "run")
    if (check.state / "last").is_dir():
        shutil.copytree(check.state / "last", done.run)
    return done


@pytest.fixture(scope="module")
def ecc(tmp_path_factory: pytest.TempPathFactory, mempath_bin: Path) -> Done:
    """One health check of a node whose GPU has a row remap pending (the built binary)."""
    root = tmp_path_factory.mktemp("ecc")
    check = Check(root, mempath_bin)
    proc = check("--mode", "health", nvml="h200_ecc_pending.txt")
    done = Done(check, proc, root / "run")
    if (check.state / "last-drain").is_dir():
        shutil.copytree(check.state / "last-drain", done.run)
    return done


@pytest.fixture
def check(tmp_path: Path, mempath_bin: Path) -> Check:
    return Check(tmp_path, mempath_bin)


def recorded_row(run: Path) -> dict:
    """The fleet row of the healthy run's cpu0 read (the one figure of a GPU-less node)."""
    rows = pd.DataFrame(fleet_columns(load_cases_run(run / "bw.h5"))).to_dict("records")
    found = [r for r in rows if r["component"] == "cpu0" and r["path"].startswith("bw read ")]
    assert found, rows
    return found[0]


def reference(path: Path, node: str, key: str, median: float, mad: float = 0.0) -> Path:
    path.write_text(json.dumps({"format": health.FORMAT, "version": health.VERSION, "nodes": {
        node: {key: {"median": median, "mad": mad, "n": 5, "source": "test"}}}}))
    return path


# ---- the script -----------------------------------------------------------------------------

def test_a_healthy_node_passes_and_writes_only_its_state(healthy: Done) -> None:
    check, proc = healthy.check, healthy.proc
    assert proc.returncode == 0, said(proc)
    assert check.calls() == [["show", "node", "-o", NODE]]  # never an update
    rows = check.rows()
    assert [(r["node"], r["mode"], r["verdict"]) for r in rows] == [(NODE, "health", "ok")]
    assert sorted(p.name for p in check.root.iterdir()) == ["fake", "home", "run", "state", "tmp"]
    assert not list((check.root / "tmp").iterdir()) and not list((check.root / "home").iterdir())
    assert (check.state / "last" / "bw.h5").is_file() and not list(check.state.glob("run.*"))


def test_a_hardware_clock_hold_at_idle_drains(check: Check, tmp_path: Path) -> None:
    """HW slowdown active in the reading before anything ran (idle): the hardware holds the
    clocks, not work. The healthy H200's readings with that one bit added."""
    readings = tmp_path / "h200_hw_slowdown.txt"
    healthy = (READINGS / "h200_healthy.txt").read_text()
    assert "\nevent_reasons 1 " in healthy
    readings.write_text(healthy.replace("\nevent_reasons 1 ", "\nevent_reasons 9 ", 1))
    proc = check(nvml=str(readings))
    assert proc.returncode == 0, said(proc)
    assert drain_reason(check) == "mempath: gpu0's clocks held down at idle (HW slowdown)"


def test_a_pending_row_remap_drains_and_fails_a_prolog(ecc: Done, check: Check) -> None:
    assert ecc.proc.returncode == 0, said(ecc.proc)  # a health check: slurmd ignores its exit
    reason = drain_reason(ecc.check)
    assert "row remap pending" in reason and "gpu0" in reason
    assert [r["verdict"] for r in ecc.check.rows()] == ["drain"]
    assert (ecc.run / "bw.h5").is_file()
    # In a prolog the same verdict is exit 1 (Slurm drains and requeues the job).
    proc = check("--mode", "prolog", **check.replaying(ecc.run / "bw.h5"))
    assert proc.returncode == 1, said(proc)
    assert drain_reason(check) == reason
    assert [(r["mode"], r["verdict"]) for r in check.rows()] == [("prolog", "drain")]


def test_gres_of_more_gpus_than_the_node_has_drains(check: Check) -> None:
    proc = check(gres="gpu:h100:2")
    assert proc.returncode == 0, said(proc)
    # The fake NVML lists one H200 that CUDA does not see: named beside the count.
    assert drain_reason(check) == ("mempath: 2 of 2 GPUs missing (gres gpu:h100:2, CUDA sees 0; NVML also "
                                   "lists gpu0 GPU-dfae42cb-c058-76fd-fb21-0aeda91051a8)")


def test_an_unreadable_reference_is_one_note_and_no_drain(healthy: Done, check: Check) -> None:
    bad = reference(check.root / "ref.json", recorded_row(healthy.run)["node"], "x|median_GBps", 100.0)
    bad.write_text(bad.read_text().replace("100.0", '"100"'))  # a median that is a string
    proc = check(MEMPATH_HC_REFERENCE=str(bad), **check.replaying(healthy.run / "bw.h5"))
    assert proc.returncode == 0, said(proc)
    naming = [line for line in proc.stdout.splitlines() if str(bad) in line]
    assert len(naming) == 1 and "note:" in naming[0], said(proc)
    assert check.updates() == []
    assert [r["verdict"] for r in check.rows()] == ["ok"]


def test_a_figure_far_below_this_nodes_reference_drains(healthy: Done, check: Check) -> None:
    row = recorded_row(healthy.run)
    key, value = f"{row['path']}|{row['metric']}", float(row["value"])
    ref = reference(check.root / "ref.json", row["node"], key, 10 * value)
    proc = check(MEMPATH_HC_REFERENCE=str(ref), **check.replaying(healthy.run / "bw.h5"))
    assert proc.returncode == 0, said(proc)
    reason = drain_reason(check)
    measured = [line for line in check.ran_log.read_text().splitlines() if line.startswith("bw ")]
    assert len(measured) == 2 and (check.state / "last-drain" / "retest").is_dir()  # retested first
    assert row["what"] in reason and health._number(value) in reason, reason
    assert "% of this node's" in reason and health._number(10 * value) in reason, reason
    assert [(r["verdict"], r["reference"]) for r in check.rows()] == [("drain", "node history")]
    # The same reference at the measured median passes.
    reference(ref, row["node"], key, value)
    proc = check(MEMPATH_HC_REFERENCE=str(ref), **check.replaying(healthy.run / "bw.h5"))
    assert proc.returncode == 0, said(proc)
    assert len(check.updates()) == 1  # the first check's drain only
    assert [r["verdict"] for r in check.rows()] == ["drain", "ok"]
    assert "100 % of this node's" in check.rows()[-1]["figures"]


def test_a_hung_mempath_drains_at_the_deadline(check: Check) -> None:
    started = time.monotonic()
    proc = check("--mode", "prolog", MEMPATH=str(check.hang), MEMPATH_HC_DEADLINE="5", timeout=60)
    took = time.monotonic() - started
    assert proc.returncode == 1, said(proc)
    assert took < 15, f"{took:.1f} s\n{said(proc)}"
    assert "deadline" in drain_reason(check)
    logged = (check.state / "health-log.csv").read_text().splitlines()
    assert f",{NODE},prolog,drain," in logged[-1] and "deadline" in logged[-1], logged
    pids = [int(p) for p in check.pids_log.read_text().split()]
    assert len(pids) == 2  # the fake and its sleep
    for _ in range(50):
        alive = [p for p in pids if _running(p)]
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, f"left running: {alive}"


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_a_check_that_could_not_measure_drains_and_logs_its_row(check: Check) -> None:
    proc = check("--mode", "epilog", MEMPATH=str(check.replay), HC_BROKEN="libcuda.so.1: cannot open")
    assert proc.returncode == 1, said(proc)
    reason = "mempath: 'mempath bw' ended with exit 3: mempath: error: libcuda.so.1: cannot open"
    assert drain_reason(check) == reason
    assert [(r["node"], r["mode"], r["verdict"], r["reason"]) for r in check.rows()] == [
        (NODE, "epilog", "drain", reason)]


def test_a_missing_binary_is_the_installs_fault_never_a_drain(check: Check, tmp_path: Path) -> None:
    """The device run of 2026-12-07 drained both nodes for a wrong MEMPATH: an install's fault."""
    proc = check(MEMPATH=str(tmp_path / "no-such-mempath"))
    assert proc.returncode == 2 and "set MEMPATH" in proc.stderr, said(proc)
    assert not check.updates() and not check.rows()


def test_a_python_without_the_analysis_is_the_installs_fault_never_a_drain(check: Check, tmp_path: Path) -> None:
    """The device run of 2026-12-07 (call 3): slurmd's bare environment gave a Python without numpy."""
    python = _script(tmp_path / "python", "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                     "echo \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n")
    proc = check(MEMPATH_HC_PYTHON=str(python))
    assert proc.returncode == 2, said(proc)
    assert "No module named 'numpy'; the node is left as it is" in proc.stderr, said(proc)
    assert not check.updates() and not check.rows()


@pytest.mark.parametrize("fails, reason, resumed", [
    (False, "mempath: gpu0 HBM read 2,900 GB/s, 71 % of this node's 4,100", True),
    (False, "bad fan", False),
    (True, "bad fan", False),
], ids=["pass-drained-by-mempath", "pass-drained-by-someone", "fail-drained-by-someone"])
def test_resume_only_what_mempath_drained(healthy: Done, ecc: Done, check: Check, fails: bool, reason: str,
                                          resumed: bool) -> None:
    replayed = (ecc if fails else healthy).run / "bw.h5"
    proc = check("--resume", node_state="IDLE+DRAIN", reason=reason, **check.replaying(replayed))
    assert proc.returncode == 0, said(proc)
    assert [r["verdict"] for r in check.rows()] == ["drain" if fails else "ok"]
    assert check.updates() == ([["update", f"nodename={NODE}", "state=resume"]] if resumed else []), said(proc)


@pytest.mark.parametrize("node_state", ["ALLOCATED", "MIXED"])
def test_a_health_check_beside_a_job_measures_nothing(check: Check, node_state: str) -> None:
    proc = check(node_state=node_state, MEMPATH=str(check.replay), HC_REPLAY="/nonexistent")
    assert proc.returncode == 0, said(proc)
    assert "nothing measured" in proc.stdout
    assert not check.ran_log.exists()
    assert not (check.state / "health-log.csv").exists()
    assert not list(check.state.glob("run.*")) and not (check.state / "last").exists()
    assert check.updates() == []


def test_a_check_while_another_holds_the_lock_measures_nothing(check: Check) -> None:
    check.state.mkdir()
    with open(check.state / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = check(MEMPATH=str(check.replay), HC_REPLAY="/nonexistent")
    assert proc.returncode == 0, said(proc)
    assert "another check runs" in proc.stdout and "nothing measured" in proc.stdout
    assert not check.ran_log.exists() and check.calls() == [] and check.rows() == []


@pytest.mark.parametrize("args, env, valid", [
    (["--mode", "bogus"], {}, "valid: health, prolog, epilog"),
    ([], {"MEMPATH_HC_DEADLINE": "abc"}, "valid: whole seconds > 0"),
    ([], {"MEMPATH_HC_REPS": "0"}, "valid: 1 to 99"),
])
def test_bad_input_is_one_line_and_exit_2(check: Check, args: list[str], env: dict[str, str],
                                          valid: str) -> None:
    proc = check(*args, MEMPATH=str(check.replay), **env)
    assert proc.returncode == 2, said(proc)
    assert len(proc.stderr.splitlines()) == 1 and valid in proc.stderr, said(proc)
    assert proc.stdout == ""
    assert check.calls() == [] and not check.state.exists()


# ---- the verdict ----------------------------------------------------------------------------

def _hostile(path: Path, node: str, key: str) -> dict[str, bytes | None]:
    good = {"median": 100.0, "mad": 1.0, "n": 5, "source": "test"}

    def wrapped(entry: object) -> bytes:
        return json.dumps({"format": health.FORMAT, "version": health.VERSION,
                           "nodes": {node: {key: entry}}}).encode()
    return {
        "missing": None,
        "empty": b"",
        "not JSON": b"median: 100\n",
        "not UTF-8": b"\xff\xfe{\x00",
        "another format": json.dumps({"format": "mempath-fleet-floors", "version": 1, "nodes": {}}).encode(),
        "median a string": wrapped({**good, "median": "100"}),
        "negative median": wrapped({**good, "median": -100.0}),
        "nested garbage": wrapped({**good, "median": {"median": [100.0, {"n": None}]}}),
        "nested too deep": b"[" * 100_000,
    }


HOSTILE = list(_hostile(Path(), "", ""))


@pytest.mark.parametrize("name", HOSTILE)
def test_judge_checks_without_an_unreadable_reference(healthy: Done, ecc: Done, tmp_path: Path, name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """One note naming the file; the node's presence and conditions are judged all the same."""
    row = recorded_row(healthy.run)
    ref = tmp_path / "ref.json"
    content = _hostile(ref, row["node"], f"{row['path']}|{row['metric']}")[name]
    if content is not None:
        ref.write_bytes(content)
    for run, gres, verdict in ((healthy.run, [], "HEALTH ok"),
                               (healthy.run, ["--gres-gpus", "1"], "HEALTH drain mempath: 1 of 1 GPUs missing"),
                               (ecc.run, [], "HEALTH drain mempath: ")):
        code = main(["healthcheck", "judge", str(run), "--node", NODE, "--kinds", "none",
                     "--reference", str(ref), *gres])
        out = capsys.readouterr().out
        naming = [line for line in out.splitlines() if str(ref) in line]
        assert len(naming) == 1 and naming[0].startswith(f"healthcheck: {NODE}: note: "), out
        assert out.splitlines()[-1].startswith(verdict) and code == (verdict != "HEALTH ok"), out
        if run == ecc.run:
            assert "row remap pending" in out.splitlines()[-1]


#: _gres's failure where CUDA lost half of eight GPUs that NVML still lists: 254 characters.
LONG_FIRST = ("4 of 8 GPUs missing (gres gpu:h100:8, CUDA sees 4; NVML also lists "
              + ", ".join(f"gpu{g} GPU-dfae42cb-c058-76fd-fb21-0aeda91051a{g}" for g in (4, 5, 6, 7)) + ")")


@pytest.mark.parametrize("failures", [
    [f"gpu{i} HBM read failed" for i in range(3)],
    [f"gpu{i} HBM read 2,900 GB/s, 71 % of this node's 4,100" for i in range(30)],
    [LONG_FIRST, "gpu0 has a row remap pending (until the GPU is reset)"],
], ids=["all-fit", "many", "a-long-first"])
def test_the_drain_reason_is_cut_with_a_count(failures: list[str]) -> None:
    """Within REASON_CHARS; what is cut ends "+N more", N the failures not begun."""
    text = health.Verdict(NODE, failures=failures).reason()
    assert text.startswith("mempath: ") and "\n" not in text
    assert len(text) <= health.REASON_CHARS, (len(text), text)
    body, joined = text[len("mempath: "):], "; ".join(failures)
    if len(joined) + len("mempath: ") <= health.REASON_CHARS - 12:
        assert body == joined
        return
    cut = re.fullmatch(r"(.+); \+([0-9]+) more", body)
    assert cut and joined.startswith(cut[1]), text
    begun = sum(1 for k in range(len(failures)) if len("; ".join(failures[:k])) < len(cut[1]))
    assert int(cut[2]) == len(failures) - begun > 0, text


def test_kind_reference_generalises_gpu_paths_only(healthy: Done, tmp_path: Path) -> None:
    """Per GPU model, a path of one GPU alone (any GPU, any NUMA node); never a CPU's."""
    from h5fixtures import case, topology, write_run
    topo = topology("gh200_quad")
    model = "NVIDIA GH200 120GB"
    cases = [case(median_GBps=300.0),                                                   # cpu0 of numa0
             case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=3000.0),
             case(pu="gpu1", mem="gpu1", alloc="device", median_GBps=3100.0),
             case(pu="gpu1", mem="numa12", alloc="numa", median_GBps=2900.0),           # gpu1's HBM node
             case(pu="cpu0", mem="numa4", alloc="numa", median_GBps=400.0)]             # a CPU reads gpu0's HBM
    runs = []
    for host in ("nid1", "nid2"):
        (tmp_path / host).mkdir()
        write_run(tmp_path / host / "bw.h5", cases, topology={**topo, "host": host})
        runs.append(tmp_path / host)
    out = tmp_path / "kinds.json"
    assert main(["healthcheck", "kind-reference", *map(str, runs), "-o", str(out)]) == 0
    kinds = health.load_reference(out)
    assert set(kinds) == {model}
    figures = {key.split(" size=")[0]: (e["median"], e["n"]) for key, e in kinds[model].items()}
    assert figures == {"bw read pu=gpu* mem=gpu* alloc=device kernel=grid threads=-1": (3050.0, 4),
                       "bw read pu=gpu* mem=numa* alloc=numa kernel=grid threads=-1": (2900.0, 2)}
    # A run of CPUs alone (this node's check) gives no kind figure at all.
    assert main(["healthcheck", "kind-reference", str(healthy.run), str(healthy.run), "-o", str(out)]) == 0
    assert health.load_reference(out) == {}


def test_reference_from_the_fleet_history(healthy: Done, tmp_path: Path) -> None:
    """Three nights of the check's files: the node's figure with n = 3; a figure of two nights
    (a second file in the first two nights only) is left out (MIN_NIGHTS)."""
    pytest.importorskip("duckdb")
    from h5fixtures import case, topology, write_run
    assert health.MIN_NIGHTS == 3
    row = recorded_row(healthy.run)
    db = tmp_path / "history.duckdb"
    for night in (1, 2, 3):
        folder = tmp_path / f"night{night}"
        shutil.copytree(healthy.run, folder)
        if night < 3:
            write_run(folder / "extra.h5", [case(op="write", median_GBps=50.0)],
                      topology={**topology("x86_h100"), "host": row["node"]})
        assert main(["fleet-history", "append", "--db", str(db), "--night", f"2026-12-0{night}", str(folder)]) == 0
    out = tmp_path / "reference.json"
    proc = subprocess.run([sys.executable, "-m", "analysis", "healthcheck", "reference", "--db", str(db),
                           "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    nodes = health.load_reference(out)
    assert set(nodes) == {row["node"]}
    key = f"{row['path']}|{row['metric']}"
    assert set(nodes[row["node"]]) == {key}  # the write of two nights left out
    assert nodes[row["node"]][key]["n"] == 3
    assert nodes[row["node"]][key]["median"] == pytest.approx(float(row["value"]))
