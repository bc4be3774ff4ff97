"""The CI's two-node Slurm cluster (slurm/ci/cluster.sh) really has two nodes, and an MPI
job through PMIx spans both.

Marked `slurm`: skipped unless MEMPATH_SLURM_CLUSTER=1, which CI sets after
`slurm/ci/cluster.sh start`; by hand:

    slurm/ci/cluster.sh start
    MEMPATH_SLURM_CLUSTER=1 .venv/bin/python -m pytest tests/python/test_slurm_cluster.py
    slurm/ci/cluster.sh stop
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "slurm" / "ci" / "cluster.sh"

pytestmark = pytest.mark.slurm

HELLO = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, len, sum = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank=%d size=%d host=%s sum=%d\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
"""


def on_cluster(*cmd: str, timeout: int = 60) -> str:
    """CMD run beside node n1 (cluster.sh exec); its stdout, failing on a non-zero exit."""
    out = subprocess.run([str(CLUSTER), "exec", *cmd], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, f"{' '.join(cmd)}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out.stdout


def test_srun_runs_on_two_hosts() -> None:
    hosts = on_cluster("srun", "-N2", "hostname").split()
    assert len(hosts) == 2 and set(hosts) == {"n1", "n2"}, hosts


def test_mpi_job_spans_two_hosts(tmp_path: Path) -> None:
    mpicc = shutil.which("mpicc")
    assert mpicc, "mpicc missing (slurm/ci/cluster.sh start installs libopenmpi-dev)"
    (tmp_path / "hello.c").write_text(HELLO)
    subprocess.run([mpicc, "-o", str(tmp_path / "hello"), str(tmp_path / "hello.c")],
                   check=True, timeout=60)
    out = on_cluster("srun", "-N2", "--ntasks-per-node=1", "--mpi=pmix", str(tmp_path / "hello"))
    ranks = dict(line.split()[0:3:2] for line in out.splitlines() if line.startswith("rank="))
    assert sorted(ranks) == ["rank=0", "rank=1"], out
    assert sorted(ranks.values()) == ["host=n1", "host=n2"], out
    # One job of two ranks (not two singletons), which talked: 0 + 1 on both.
    assert out.count("size=2") == 2 and out.count("sum=1") == 2, out


def test_mempath_mpi_bw_between_the_two_nodes(tmp_path: Path) -> None:
    """mempath-mpi across n1 and n2: a real two-node job (not the split of one host)."""
    import h5py

    out = tmp_path / "bw.h5"
    text = on_cluster("srun", "-N2", "--ntasks-per-node=1", "--mpi=pmix", str(REPO / "build" / "mempath-mpi"),
                      "bw", "--max-size", "64KiB", "--reps", "2", "--output", str(out), timeout=300)
    lines = [l for l in text.splitlines() if l.startswith("MEMPATH mpi_bw ")]
    assert len(lines) == 2 * 17 and all("status=ok" in l for l in lines), text
    with h5py.File(out) as f:
        assert sorted(f["mpi_bw/ranks/host"].asstr()[()]) == ["n1", "n2"]
        assert set(f["mpi_bw/cases/same_host"][()]) == {0}
        # Two nodes by name, one kernel: the file says its bandwidth is not a network's.
        assert (f.attrs["mpi_nodes"], f.attrs["mpi_machines"]) == (2, 1)


def test_reframe_runs_the_mpi_checks_through_slurm(tmp_path: Path) -> None:
    """ReFrame's Slurm backend (site_configs/ci.py) runs the scale-out checks with srun
    across both nodes; ReFrame exits 0 even when a check file fails to load, so the test
    counts the cases that ran and passed. The installed mempath-mpi (`mempath_bin`, as a
    uenv's): ReFrame's CMake build of the fixture is test_reframe.py's local run, and a
    third build of mempath here was the longest wait of CI's last pass."""
    binary = vet_binary()
    assert (binary.parent / "mempath-mpi").is_file(), "mempath-mpi not built beside mempath"
    prefix = tmp_path / "rfm"
    text = on_cluster("env", f"PATH={REPO / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
                      "reframe", "-C", str(REPO / "site_configs" / "ci.py"), "-c", str(REPO / "reframe_checks" / "scaleout.py"),
                      "-r", "--exec-policy=serial", "--tag", "scaleout", "-x", "MempathMpiBandwidth%ranks_per_node=4",
                      "-S", f"MempathBuild.mempath_bin={binary}",
                      "-S", "MempathMpiBandwidth.max_size=64KiB", "--prefix", str(prefix), timeout=1200)
    # The build fixture (the installed binary), MempathMpiBandwidth with 1 and 2 ranks per
    # node, MempathInventory.
    assert "Ran 4/4 test case(s) from 4 check(s) (0 failure(s)" in text, text[-4000:]
    import h5py

    inventory = next(prefix.glob("output/ci/cpu/builtin/MempathInventory*/inventory.h5"))
    with h5py.File(inventory) as f:
        assert sorted(set(f["inventory/ranks/host"].asstr()[()])) == ["n1", "n2"]
    for ppn in (1, 2):
        bw = next(prefix.glob(f"output/ci/cpu/builtin/MempathMpiBandwidth_{ppn}*/mpi_bw.h5"), None) or \
            next(p for p in prefix.glob("output/ci/cpu/builtin/MempathMpiBandwidth*/mpi_bw.h5")
                 if h5py.File(p)["mpi_bw/cases/ppn"][0] == ppn)
        with h5py.File(bw) as f:
            assert set(f["mpi_bw/cases/ppn"][()]) == {ppn}
            assert set(f["mpi_bw/ranks/host"].asstr()[()]) == {"n1", "n2"}


# ---- fleet vetting (issue 11): the preset on both nodes, through ReFrame and sbatch ----

#: The vetting preset at sizes that run in seconds (timings here are functional only).
VET_TINY = {"VET_SIZE": "8MiB", "VET_IN_CACHE": "1", "VET_CHASE_SIZE": "1MiB", "VET_REPS": "2",
            "VET_ROUND_TRIPS": "200", "VET_TIMEOUT": "60"}


def vet_binary() -> Path:
    """The mempath the vetting tests run on the nodes: the CPU-only build where there is one."""
    import os

    for env, default in (("MEMPATH_CPU_ONLY_BIN", REPO / "build-cpu" / "mempath"),
                         ("MEMPATH_BIN", REPO / "build" / "mempath")):
        path = Path(os.environ.get(env, default))
        if path.is_file():
            return path
    pytest.fail("no mempath binary (build/mempath or build-cpu/mempath): build it first")


def vetted_hosts(files: list[Path]) -> list[str]:
    """The `host` root attribute of each file (what names the node in the fleet report)."""
    import h5py

    hosts = []
    for path in files:
        with h5py.File(path) as f:
            hosts.append(str(f.attrs["host"]))
    return sorted(hosts)


def test_reframe_distributes_the_vetting_check_to_both_nodes(tmp_path: Path) -> None:
    """`--distribute=all` (ReFrame's own per-node copies) runs the preset on n1 and n2; the
    build fixture only copies the already built binary, so the run stays short."""
    import sys

    src = tmp_path / "prebuilt_src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(prebuilt_mempath NONE)\n"
        f"file(COPY {vet_binary()} DESTINATION ${{CMAKE_BINARY_DIR}})\n")
    tiny = ["-S", "MempathVetting.size=8MiB", "-S", "MempathVetting.in_cache=true",
            "-S", "MempathVetting.chase_size=1MiB", "-S", "MempathVetting.reps=2",
            "-S", "MempathVetting.round_trips=200", "-S", "MempathVetting.case_timeout=60"]
    prefix = tmp_path / "rfm"
    text = on_cluster("env", f"PATH={Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
                      "reframe", "-C", str(REPO / "site_configs" / "ci.py"),
                      "-c", str(REPO / "reframe_checks" / "vetting.py"), "--tag", "vetting",
                      "--distribute=all", "-r", "--exec-policy=serial", *tiny,
                      "-S", f"MempathBuild.sourcesdir={src}", "--prefix", str(prefix), timeout=300)
    # The build fixture and one MempathVetting per node.
    assert "Ran 3/3 test case(s) from 3 check(s) (0 failure(s)" in text, text[-4000:]
    for host in ("n1", "n2"):
        kept = list(prefix.glob(f"output/ci/cpu/builtin/*/vetting/{host}/*.h5"))
        assert sorted(p.name for p in kept) == ["bw.h5", "chase.h5", "pingpong.h5"], text[-4000:]
        assert vetted_hosts(kept) == [host] * 3


def test_sbatch_vets_both_nodes_into_one_folder(tmp_path: Path) -> None:
    """slurm/vet_fleet.sbatch over a two-node allocation: one shared folder with a
    subfolder per node, then the fleet report, which names both nodes (issue 11, item 5)."""
    out = tmp_path / "vet"
    env = [f"{k}={v}" for k, v in {**VET_TINY, "MEMPATH": str(vet_binary()),
                                   "VET_REPORT": str(tmp_path / "fleet")}.items()]
    on_cluster("env", *env, "sbatch", "--wait", "-N2", f"--chdir={REPO}",
               f"--output={tmp_path / 'job-%j.out'}", str(REPO / "slurm" / "vet_fleet.sbatch"),
               str(out), timeout=300)
    files = sorted(out.glob("*/*.h5"))
    assert sorted({p.parent.name for p in files}) == ["n1", "n2"], files
    assert vetted_hosts(files) == ["n1"] * 3 + ["n2"] * 3
    nodes = (tmp_path / "fleet" / "nodes.csv").read_text()
    assert "n1" in nodes and "n2" in nodes, nodes


#: A stand-in for mempath on the nodes: the real binary, then on n2 every bw read's median
#: set to 1 MB/s in the file written, in the first pass only (`glitch`: the retest measures
#: n2 as it is) or in both (`fault`). Two nodes have no fleet median to miss (a z of 2
#: values never passes k), so a reference floor of 0.5 GB/s is what n2 misses.
SLOW_N2 = """#!/bin/sh
"{real}" "$@"
rc=$?
out=; prev=
for arg in "$@"; do [ "$prev" = --output ] && out=$arg; prev=$arg; done
case "$(hostname -s) $1 $out" in
  "n2 bw "*/retest/*) [ "{mode}" = fault ] || exit $rc ;;
  "n2 bw "*) ;;
  *) exit $rc ;;
esac
"{python}" -c 'import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    ops, median = f["bw/cases/op"].asstr()[()], f["bw/cases/median_GBps"]
    median[...] = [1e-3 if op == "read" else m for op, m in zip(ops, median[()])]' "$out" || exit 3
exit $rc
"""


@pytest.mark.parametrize(("mode", "verdict", "retest"), [("glitch", "suspect", "not confirmed"),
                                                         ("fault", "degraded", "confirmed")])
def test_sbatch_retests_the_flagged_node(tmp_path: Path, mode: str, verdict: str,
                                         retest: str) -> None:
    """Issue 21, confirm before condemning, end to end on two nodes: the first report's
    retest.json names n2 alone, the job's second step re-runs n2's flagged case into
    OUTDIR/retest/n2/, and the final verdict of n2 follows the retest."""
    import json
    import os
    import sys

    from analysis.fleet.load import load_fleet

    # The cases' paths and the node kind are this machine's: both nodes share it.
    local = tmp_path / "local"
    subprocess.run([str(REPO / "slurm" / "vet_node.sh"), str(local)], check=True, timeout=120,
                   capture_output=True, env={**os.environ, **VET_TINY, "MEMPATH": str(vet_binary())})
    rows = load_fleet([local], [], [])
    reads = rows[(rows["family"] == "bw") & rows["path"].str.startswith("bw read ")
                 & (rows["status"] == "ok")]
    reference = tmp_path / "floors.json"
    reference.write_text(json.dumps({rows["node_kind"].iloc[0]: dict.fromkeys(reads["path"], 0.5)}))
    stand_in = tmp_path / "mempath"
    stand_in.write_text(SLOW_N2.format(real=vet_binary(), mode=mode, python=sys.executable))
    stand_in.chmod(0o755)
    out, report = tmp_path / "vet", tmp_path / "fleet"
    env = [f"{k}={v}" for k, v in {**VET_TINY, "MEMPATH": str(stand_in), "VET_REPORT": str(report),
                                   "VET_FLEET_OPTIONS": f"--reference {reference}"}.items()]
    on_cluster("env", *env, "sbatch", "--wait", "-N2", f"--chdir={REPO}",
               f"--output={tmp_path / 'job-%j.out'}", str(REPO / "slurm" / "vet_fleet.sbatch"),
               str(out), timeout=300)
    log = next(tmp_path.glob("job-*.out")).read_text()
    plan = json.loads((report / "pass1" / "retest.json").read_text())
    assert list(plan["nodes"]) == ["n2"], log
    assert sorted(e["path"] for e in plan["nodes"]["n2"]) == sorted(reads["path"]), plan
    assert sorted(p.name for p in (out / "retest").iterdir()) == ["n2"], log
    assert all((out / "retest" / "n2" / f"round{r}" / "bw.h5").is_file() for r in (1, 2, 3)), log
    assert re.search(r"first pass: .* in \d+ s", log) and \
        re.search(r"retest pass: 1 flagged node\(s\) \(n2\) .* in \d+ s", log), log
    import pandas as pd

    nodes = pd.read_csv(report / "nodes.csv", keep_default_na=False).set_index("node")
    assert nodes.loc["n2", ["verdict", "retest"]].tolist() == [verdict, retest], log
    assert nodes.loc["n1", ["verdict", "retest"]].tolist() == ["healthy", ""], log


# ---- issue 13: a centre-style configuration (features only) runs the acceptance checks ----

#: The acceptance checks the CI partition (`+remote +mpi`, no GPU) selects, as before issue 13
#: (bandwidth's with the coverage parameter of issue 30).
CI_ACCEPTANCE = {"MempathStream", "MempathBandwidth %op=read %pu_kind=cpu %coverage=acceptance",
                 "MempathBandwidth %op=copy %pu_kind=cpu %coverage=acceptance", "MempathChase",
                 "MempathMpiBandwidth %ranks_per_node=1", "MempathInventory"}


def test_features_only_config_runs_the_acceptance_checks(tmp_path: Path) -> None:
    """site_configs/ci.py declares features only; the checks select by them, run the
    installed binary (`MempathBuild.mempath_bin`, as a uenv's would be: nothing is built)
    through Slurm, and each reports at most MAX_PERF_VARS performance variables."""
    import json
    import sys

    import mempath_summary

    binary = vet_binary()
    assert (binary.parent / "mempath-mpi").is_file(), "mempath-mpi not built beside mempath"
    small = ["-S", "MempathBandwidth.size=8MiB", "-S", "MempathBandwidth.in_cache=true",
             "-S", "MempathBandwidth.reps=2", "-S", "MempathBandwidth.quick=true",
             "-S", "MempathChase.size=1MiB", "-S", "MempathChase.reps=2",
             "-S", "MempathStream.size=8MiB", "-S", "MempathStream.reps=2",
             "-S", "MempathStream.extra_options=--in-cache",
             "-S", "MempathMpiBandwidth.max_size=64KiB"]
    prefix, report = tmp_path / "rfm", tmp_path / "report.json"
    text = on_cluster("env", f"PATH={Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
                      "reframe", "-C", str(REPO / "site_configs" / "ci.py"),
                      "-c", str(REPO / "reframe_checks"), "--tag", "acceptance",
                      "-r", "--exec-policy=serial", *small,
                      "-S", f"MempathBuild.mempath_bin={binary}", "--prefix", str(prefix),
                      "--report-file", str(report), timeout=1200)
    cases = {tc["name"]: tc for tc in json.loads(report.read_text())["runs"][0]["testcases"]}
    checks = {name: tc for name, tc in cases.items() if not name.startswith("MempathBuild")}
    assert set(checks) == CI_ACCEPTANCE, text[-4000:]
    for name, tc in checks.items():
        assert tc["result"] == "pass", (name, tc["fail_reason"])
        assert (tc["system"], tc["partition"], tc["environ"]) == ("ci", "cpu", "builtin")
        assert len(tc["perfvalues"] or {}) <= mempath_summary.MAX_PERF_VARS, (name, tc["perfvalues"])
    build = next(tc for name, tc in cases.items() if name.startswith("MempathBuild"))
    assert "cmake" not in (Path(build["outputdir"]) / "rfm_build.sh").read_text()


def test_sbatch_paper_draws_fig14_across_the_two_nodes(tmp_path: Path) -> None:
    """`sbatch -N 2 slurm/paper.sbatch`, its MPI bandwidth step alone: Fig. 14 measured
    between n1 and n2 and drawn, its caption saying the two nodes are one machine (a
    functional figure, not a network's bandwidth). The step's own sweep, to 1 GiB on 2
    shared cores, is cut to 256 KiB through MEMPATH_MPI_BIN (about a minute)."""
    out, small = tmp_path / "paper", tmp_path / "mempath-mpi"
    small.write_text(f'#!/bin/sh\nexec "{REPO / "build" / "mempath-mpi"}" "$@" --max-size 256KiB --reps 2\n')
    small.chmod(0o755)
    env = {"MEMPATH_OUT": out, "MEMPATH_PAPER_ONLY": "MempathPaperMpiBandwidth", "SLURM_MPI_TYPE": "pmix",
           "MEMPATH_BIN": REPO / "build" / "mempath", "MEMPATH_MPI_BIN": small, "MEMPATH_PAPER_RESERVE": 60}
    on_cluster("env", *[f"{k}={v}" for k, v in env.items()], "sbatch", "--wait", "-N2", "--time=10",
               f"--chdir={REPO}", f"--output={tmp_path / 'job-%j.out'}", str(REPO / "slurm" / "paper.sbatch"),
               timeout=600)
    text = (out / "paper" / "paper.md").read_text()
    section = text.split("## Fig. 14:")[1].split("\n## ")[0]
    assert "Not drawn" not in section and (out / "paper" / "mpi_bandwidth.png").is_file(), section
    assert "one machine" in section, section


# ---- issue 49: slurm/healthcheck.sh as slurmd's HealthCheckProgram ----

def _health_cluster(tmp_path: Path, interval: int, dev: Path | None = None) -> dict[str, object]:
    """The cluster restarted with a wrapper of healthcheck.sh as its HealthCheckProgram: each
    node's check takes its environment from tmp_path/scenario-<node> (rewritten by the test
    between phases), keeps its state in tmp_path/state-<node> and its output in out-<node>."""
    import os
    import sys
    wrapper = tmp_path / "healthcheck-wrapper.sh"
    # The cluster's folder (and so its slurm.conf and, with unpacked packages, its scontrol) is
    # new at each start: read where cluster.sh records it.
    wrapper.write_text(f"""#!/bin/bash
n=$(hostname -s)
dir=$(cat /run/mempath-slurm-cluster.path)
scontrol=$dir/bin/scontrol
[ -x "$scontrol" ] || scontrol=scontrol
export SLURM_CONF=$dir/etc/slurm.conf MEMPATH_HC_SCONTROL=$scontrol MEMPATH={REPO}/build/mempath
export MEMPATH_HC_PYTHON={sys.executable} MEMPATH_HC_STATE={tmp_path}/state-$n MEMPATH_HC_CONFIG=/dev/null
export MEMPATH_HC_KINDS=none MEMPATH_HC_SIZE=16MiB MEMPATH_HC_IN_CACHE=1
set -a; [ -f {tmp_path}/scenario-$n ] && . {tmp_path}/scenario-$n; set +a
exec {REPO}/slurm/healthcheck.sh >> {tmp_path}/out-$n 2>&1
""")
    wrapper.chmod(0o755)
    env = {**os.environ, "MEMPATH_SLURM_HEALTHCHECK": str(wrapper),
           "MEMPATH_SLURM_HEALTHCHECK_INTERVAL": str(interval)}
    if dev is not None:
        env["MEMPATH_SLURM_DEV"] = str(dev)
    subprocess.run([str(CLUSTER), "start"], env=env, check=True, capture_output=True, timeout=120)
    return {"wrapper": wrapper}


def _health_rows(tmp_path: Path, node: str) -> list[dict[str, str]]:
    import csv
    log = tmp_path / f"state-{node}" / "health-log.csv"
    return list(csv.DictReader(log.open())) if log.exists() else []


def _node(field: str, node: str) -> str:
    line = on_cluster("scontrol", "show", "node", "-o", node)
    found = re.search(rf" {field}=(.*?)(?= [A-Z][A-Za-z]*=|$)", " " + line.strip())
    return found.group(1) if found else ""


def _wait(what: str, test, timeout: float, every: float = 1.0):
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = test()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"not within {timeout} s: {what}")


def test_healthcheck_in_slurmds_loop_drains_with_the_cause(tmp_path: Path) -> None:
    """Issue 49 on the CI cluster (CPU nodes, no reference: presence and conditions): 25 checks
    on each node without a false drain (about 100 s: slurmctld asks every few seconds) (a missing and a hostile reference file each said in one
    line); a fake NVML with a pending row remap drains its node with that cause, and a passing
    check with --resume returns it; a check whose binary hangs drains at its deadline while
    slurmd stays responsive; gres naming a GPU the node lacks drains both. Restarts the
    cluster (three times), so it runs before the GPU-view tests, which restart it too."""
    fake_nvml = REPO / "build" / "tests" / "libmempath_fake_nvml.so"
    readings = REPO / "tests" / "fake_nvml" / "readings"
    (tmp_path / "hostile.json").write_text('{"format": "mempath-health-reference", "version": 1, "nodes": [1]}')
    (tmp_path / "scenario-n1").write_text(f"MEMPATH_HC_REFERENCE={tmp_path}/missing.json\n")
    (tmp_path / "scenario-n2").write_text(f"MEMPATH_HC_REFERENCE={tmp_path}/hostile.json\n")
    _health_cluster(tmp_path, interval=2)
    # 1. healthy: 25 checks a node, none drains (the count: 50 on this cluster)
    checks = 25
    _wait(f"{checks} checks on each node",
          lambda: all(len(_health_rows(tmp_path, n)) >= checks for n in ("n1", "n2")), timeout=12 * checks, every=2)
    for node in ("n1", "n2"):
        rows = _health_rows(tmp_path, node)
        assert {r["verdict"] for r in rows} == {"ok"}, rows
        assert "DRAIN" not in _node("State", node), _node("State", node)
        out = (tmp_path / f"out-{node}").read_text()
        bad = "missing.json" if node == "n1" else "hostile.json"
        notes = [line for line in out.splitlines() if bad in line]
        assert notes and all("note:" in line and "checked without it" in line for line in notes), out[-2000:]
    # 2. a pending row remap and an uncorrectable ECC error (fake NVML) drain n2 with the cause
    (tmp_path / "scenario-n2").write_text(f"MEMPATH_NVML_LIBRARY={fake_nvml}\n"
                                          f"MEMPATH_FAKE_NVML={readings}/h200_ecc_pending.txt\n")
    _wait("n2 drained", lambda: "DRAIN" in _node("State", "n2"), timeout=60)
    reason = _node("Reason", "n2")
    assert reason.startswith("mempath:") and "row remap pending" in reason, reason
    assert "DRAIN" not in _node("State", "n1")
    # 3. healthy again with --resume: the node that mempath drained returns by itself
    (tmp_path / "scenario-n2").write_text("MEMPATH_HC_RESUME=1\n")
    _wait("n2 resumed", lambda: "DRAIN" not in _node("State", "n2"), timeout=60)
    # 4. a GPU call that never returns: drained at the check's deadline, slurmd still answers
    hang = tmp_path / "hang.sh"
    hang.write_text("#!/bin/bash\nsleep 600\n")
    hang.chmod(0o755)
    (tmp_path / "scenario-n2").write_text(f"MEMPATH={hang}\nMEMPATH_HC_DEADLINE=5\n")
    _wait("n2 drained at the deadline", lambda: "deadline" in _node("Reason", "n2"), timeout=60)
    row = _health_rows(tmp_path, "n2")[-1]
    assert row["verdict"] == "drain" and float(row["elapsed_s"]) <= 10, row
    assert "NOT_RESPONDING" not in _node("State", "n2") and "*" not in on_cluster("sinfo", "-h", "-o", "%t")
    _wait("the hung binary ended", lambda: not subprocess.run(["pgrep", "-f", str(hang)],
                                                              capture_output=True).stdout, timeout=15)
    # 5. gres names a GPU that neither node has (a fake device file): both drain saying so
    import os
    import stat
    dev = tmp_path / "dev"
    dev.mkdir()
    os.mknod(dev / "nvidia0", 0o600 | stat.S_IFCHR, os.makedev(195, 0))
    # The cluster starts only with idle nodes: the gres is hidden from the checks until it is up.
    for node in ("n1", "n2"):
        (tmp_path / f"scenario-{node}").write_text("MEMPATH_HC_GRES=\n")
    _health_cluster(tmp_path, interval=2, dev=dev)
    for node in ("n1", "n2"):
        (tmp_path / f"scenario-{node}").write_text("")
    for node in ("n1", "n2"):
        _wait(f"{node} drained for its gres", lambda: "GPUs missing" in _node("Reason", node), timeout=60)
        assert "1 of 1 GPUs missing (gres gpu:1, CUDA sees 0" in _node("Reason", node)
    subprocess.run([str(CLUSTER), "start"], check=True, capture_output=True, timeout=120)


# ---- issue 38: GPUs as gres, what each task sees (fake device files: no GPU needed) ----

def _gpu_views(tmp_path: Path, devices: int, fence: str = "") -> dict[str, str]:
    """The cluster restarted with `devices` fake /dev/nvidiaN as its GPUs (and a fenced node);
    what CUDA_VISIBLE_DEVICES each task sees: the batch script of an exclusive two-node job,
    its step on both nodes, and a step given one GPU a node."""
    import os
    dev = tmp_path / "dev"
    dev.mkdir(parents=True)
    for n in range(devices):
        os.mknod(dev / f"nvidia{n}", 0o600 | __import__("stat").S_IFCHR, os.makedev(195, n))
    env = {**os.environ, "MEMPATH_SLURM_DEV": str(dev), "MEMPATH_SLURM_FENCE": fence}
    subprocess.run([str(CLUSTER), "start"], env=env, check=True, capture_output=True, timeout=120)
    out = tmp_path / "job.out"
    show = 'echo "$1 $(hostname) ${CUDA_VISIBLE_DEVICES-unset}"'
    gres = "" if fence else f"srun -N2 --gpus-per-node=1 sh -c '{show}' sh gres; "
    on_cluster("sbatch", "--wait", "-N2", "--exclusive", f"--output={out}", "--wrap",
               f"sh -c '{show}' sh batch; srun --ntasks-per-node=1 sh -c '{show}' sh step; {gres}", timeout=120)
    views = {}
    for line in out.read_text().split("\n"):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] in ("batch", "step", "gres"):
            views[f"{parts[0]} {parts[1]}"] = parts[2]
    return views


def test_each_node_sees_its_own_gpus_and_a_fenced_node_one_less(tmp_path: Path) -> None:
    """No cgroups: the task prolog gives each task its node's GPUs, maps Slurm's per-node
    numbers of a step's GPUs to the machine's, and hides a fenced node's last one. The device
    run of 2026-11-28 found the step of vet_fleet.sbatch on a fenced n2 seeing the batch
    script's GPUs (SLURM_JOB_GPUS it inherits); last but one in this file: it restarts the
    cluster, and the test after it too."""
    split = _gpu_views(tmp_path / "split", 4)
    assert split == {"batch n1": "0,1", "step n1": "0,1", "step n2": "2,3", "gres n1": "0", "gres n2": "2"}, split
    # Issue 42's shape: an eight-GPU machine as two nodes of four (two Alps nodes' GPUs).
    eight = _gpu_views(tmp_path / "eight", 8)
    assert eight == {"batch n1": "0,1,2,3", "step n1": "0,1,2,3", "step n2": "4,5,6,7",
                     "gres n1": "0", "gres n2": "4"}, eight
    fenced = _gpu_views(tmp_path / "fenced", 1, fence="n2")
    assert fenced == {"batch n1": "0", "step n1": "0", "step n2": ""}, fenced
    subprocess.run([str(CLUSTER), "start"], check=True, capture_output=True, timeout=120)


# ---- issue 38: the faults a cluster has, as slurm/ci/centre_runs.sh provokes them ----

def test_centre_runs_faults_end_with_their_reports(tmp_path: Path) -> None:
    """centre_runs.sh's vetting and faults on this cluster (CPU only, small sizes): a job past
    its --time is cut and still draws its figures; a node drained mid-run has its ReFrame
    checks cancelled and named; a node's slurmd killed mid-run loses nothing; a node that
    fails mid-run keeps its finished files and is named by the fleet report. Last in this
    file: the faults restart the cluster (the tests above would see it go)."""
    import os
    import sys

    import pandas as pd

    env = {**os.environ, "CENTRE_SMALL": "1", "CENTRE_PYTHON": sys.executable,
           "MEMPATH_BIN": str(REPO / "build" / "mempath"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    runs = ["vet", "fault-time", "fault-drain", "fault-slurmd", "fault-node"]
    proc = subprocess.run([str(REPO / "slurm" / "ci" / "centre_runs.sh"), str(tmp_path), *runs],
                          env=env, capture_output=True, text=True, timeout=900)
    table = pd.read_csv(tmp_path / "runs.tsv", sep="\t", keep_default_na=False)
    assert table["run"].tolist() == runs, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (table["verdict"] == "ok").all(), table.to_string()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    drain = table.set_index("run").loc["fault-drain", "note"]
    assert drain.startswith("drained n2:") and "job blocked" in drain, drain
