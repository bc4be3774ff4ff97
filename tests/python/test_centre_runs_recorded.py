"""The runs a centre makes, recorded through Slurm on a lent GPU machine (issue 38:
slurm/ci/cluster.sh's nodes and slurm/ci/centre_runs.sh; docs/results/2026-11-28-centre-h200.md),
rendered here as each run's own script renders them: the report of ReFrame's files (the
README's first command, the acceptance on every node), the fleet report of
vet_fleet.sbatch, the paper of paper.sbatch, the report of characterise_node.sbatch. A
regression in a reader or a figure on real GPU data fails here, on a machine without a GPU.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import report_reading
from conftest import REPO, analysis_cli

RAW = REPO / "docs" / "results" / "raw" / "2026-11-28-centre-h200x1"


def h5s(folder: Path) -> list[Path]:
    files = sorted(folder.rglob("*.h5"))
    assert files, f"no result files under {folder}"
    return files


def rendered(out: Path, *args: object) -> str:
    proc = analysis_cli(*args)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return proc.stdout + proc.stderr


#: The third device session's runs (2026-11-29, at 07ffa6f): the README's first command, the
#: acceptance on every node to its end, and the four faults.
THIRD = REPO / "docs" / "results" / "raw" / "2026-11-29-centre-h200x1"


@pytest.mark.parametrize("folder", [RAW / "readme", RAW / "acceptance", RAW / "characterise",
                                    THIRD / "readme-07ffa6f", THIRD / "acceptance"],
                         ids=lambda f: f"{f.parent.name[:10]}-{f.name}")
def test_report_of_a_recorded_run_writes_every_section(folder: Path, tmp_path: Path) -> None:
    """The README's first command on one H200 exited 1 at 035a103 from its report (a legend
    taller than its plots); here every section of each recorded run's report is written."""
    run = folder.name.split("-")[0]
    out = tmp_path / "report"
    rendered(out, "report", *h5s(folder), "-o", out)
    assert not (out / "errors.log").exists(), (out / "errors.log").read_text()
    text = (out / "index.md").read_text()
    sections = ["## Results", "## Path matrix heatmap", "## Theoretical peaks", "## Cases"]
    if run != "characterise":  # bw --all alone has no latency or applications
        sections += ["## Latency (pointer chase, ping-pong)", "## Applications (STREAM, GEMM, LLM)"]
    for section in sections:
        assert section in text, section
    if run == "acceptance":  # --distribute: every node's checks
        assert "`n1`" in text and "`n2`" in text
    # read as a person would (issue 47): each node's conditions once, in words
    assert not report_reading.faults(text)
    if folder.name == "readme-07ffa6f":  # ten files of one H200 node, recorded with their conditions
        conditions = text.split("## Conditions and causes", 1)[1].split("\n## ", 1)[0]
        assert conditions.count("### Conditions on ") == 1 and "| gpu0 | NVIDIA H200 |" in conditions
        assert "GPU conditions read through NVML 13.580.159.04 (NVIDIA driver 580.159.04)." in conditions


def test_the_recorded_acceptance_on_every_node_ran_to_its_end() -> None:
    """reframe --tag acceptance --distribute=all on the two GPU nodes: 25 of 25 checks passed,
    both copies of the MPI check among them (cut by the device call's end in both earlier tries)."""
    import json

    cases = json.loads((THIRD / "acceptance" / "reframe-report.json").read_text())["runs"][0]["testcases"]
    assert len(cases) == 25 and all(tc["result"] == "pass" for tc in cases)
    mpi = [tc for tc in cases if tc["name"].startswith("MempathMpiBandwidth")]
    # Each node's copy of the MPI check (one rank a node) runs between both nodes.
    assert len(mpi) == 2 and all(sorted(tc["job_nodelist"]) == ["n1", "n2"] for tc in mpi), mpi


def test_the_recorded_faults_kept_what_was_measured_and_named_the_node(tmp_path: Path) -> None:
    """The four faults on the GPU cluster (slurm/ci/centre_runs.sh): a node drained mid-run
    has its checks that had not started cancelled and named, and the report covers what ran;
    slurmd killed mid-run loses nothing (both nodes judged healthy); a node failing mid-run
    keeps its finished file and the fleet report names it failed; a job past its --time
    draws the figures of the steps that finished."""
    import json

    cases = json.loads((THIRD / "fault-drain" / "reframe-report.json").read_text())["runs"][0]["testcases"]
    blocked = [tc for tc in cases if tc["result"] != "pass"]
    assert blocked and all("UnavailableNodes:n2" in (tc["fail_reason"] or "") for tc in blocked[-1:])
    assert all("job blocked" in tc["fail_reason"] for tc in blocked), blocked
    report = tmp_path / "drain"
    rendered(report, "report", *h5s(THIRD / "fault-drain"), "-o", report)
    assert not (report / "errors.log").exists()
    for fault, verdicts in (("fault-slurmd", {"n1": "healthy", "n2": "healthy"}),
                            ("fault-node", {"n1": "healthy", "n2": "failed"})):
        out = tmp_path / fault
        proc = analysis_cli("fleet", THIRD / fault / "vetting", "-o", out)
        # A failed node is the fleet command's exit 1, named in one line.
        assert proc.returncode == (fault == "fault-node"), proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr
        nodes = pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")
        assert nodes["verdict"].to_dict() == verdicts, fault
    assert h5s(THIRD / "fault-node" / "vetting" / "n2")  # the failed node's finished file
    paper = tmp_path / "paper"
    said = rendered(paper, "paper", THIRD / "fault-time" / "set", "-o", paper)
    assert "12 of 21 items drawn" in said, said[-2000:]


def test_fleet_report_of_the_recorded_vetting(tmp_path: Path) -> None:
    """vet_fleet.sbatch's fleet report over the two nodes: both judged, both healthy."""
    out = tmp_path / "fleet"
    rendered(out, "fleet", RAW / "vet" / "vetting", "-o", out)
    nodes = pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")
    assert nodes["verdict"].to_dict() == {"n1": "healthy", "n2": "healthy"}


def test_paper_of_the_recorded_two_nodes_draws_figs_14_and_19(tmp_path: Path) -> None:
    """paper.sbatch on two Slurm nodes sharing one H200: Figs. 14 and 19 drawn from GPU
    runs, each caption saying the nodes are one machine (and, for NCCL, share its GPU)."""
    out = tmp_path / "paper"
    rendered(out, "paper", RAW / "paper", "-o", out)
    text = (out / "paper.md").read_text()
    for fig, key in (("14", "mpi_bandwidth"), ("19", "nccl_by_nodes")):
        section = text.split(f"## Fig. {fig}:")[1].split("\n## ")[0]
        assert "Not drawn" not in section and (out / f"{key}.png").is_file(), section
        assert "nodes of one machine" in section, section
    assert "2 ranks sharing 1 GPU" in text.split("## Fig. 19:")[1].split("\n## ")[0]


#: The second device session's runs (2026-11-29): the fenced node and the nightly's two nights.
NIGHTS = REPO / "docs" / "results" / "raw" / "2026-11-29-centre-h200x1"


def test_fleet_report_of_the_fenced_vetting_names_the_node_one_gpu_short(tmp_path: Path) -> None:
    """vet_fleet.sbatch with n2's gres one GPU short (MEMPATH_SLURM_FENCE): n2 saw no GPU,
    left its GPU cases out and is degraded; n1 stays healthy."""
    out = tmp_path / "fleet"
    rendered(out, "fleet", NIGHTS / "vet-fenced" / "vetting", "-o", out)
    nodes = pd.read_csv(out / "nodes.csv", keep_default_na=False).set_index("node")
    assert nodes["verdict"].to_dict() == {"n1": "healthy", "n2": "degraded"}


@pytest.mark.parametrize("night", ["20261129T022936", "20261129T023226"])
def test_report_of_each_recorded_night(night: str, tmp_path: Path) -> None:
    out = tmp_path / "report"
    rendered(out, "report", *h5s(NIGHTS / "nightly" / night), "-o", out)
    assert not (out / "errors.log").exists(), (out / "errors.log").read_text()
    assert "## Applications (STREAM, GEMM, LLM)" in (out / "index.md").read_text()


def test_comparison_of_the_two_recorded_nights_as_the_nightly_makes_it(tmp_path: Path) -> None:
    """The second night against the first (slurm/nightly.sh): n2's 16-thread CPU read fell
    from 141 to 98 GB/s with nothing else busy on the host (the conditions' other processes'
    share of the cores about 1 %): a regression, exit 1, and no recorded condition named."""
    first, second = (NIGHTS / "nightly" / n for n in ("20261129T022936", "20261129T023226"))
    proc = analysis_cli("compare", first, second, "--output", tmp_path / "compare")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = next(li for li in (proc.stdout + proc.stderr).splitlines()
                if li.startswith("REGRESSION bw") and "pu=cpu0" in li and "threads=16" in li and "host=n2" in li)
    assert "141.2 -> 97.86 GB/s" in line and line.endswith("nothing in the recorded conditions explains it")


def test_conditions_of_the_recorded_nights_name_no_cause_and_the_shared_host_is_seen() -> None:
    """Issue 40 on the acceptance through Slurm: every case of both nights (real NVML and
    host readings) names no cause and nothing to drain; the fenced vetting's two nodes ran
    at once on one host, and where a case shared the cores with the other node's, the one
    cause named is that (`busy`), never a GPU or link rule."""
    from analysis.model import causes
    from analysis.results import conditions as recorded
    from analysis.results.io import load_run

    seen = {"nightly": 0, "vet-fenced": 0}
    for run in seen:
        for path in h5s(NIGHTS / run):
            run_ = load_run(path)
            cond = recorded.of_tables(run_.attrs, run_.tables, run_.topology)
            if cond is None:  # the inventory, and mempath-mpi, which read none when these ran
                assert path.stem in ("inventory", "mpi_bw"), path
                continue
            assert causes.node_conditions(cond) == [], path
            for case_id in cond.windows:
                seen[run] += 1
                named = causes.case_causes(cond, case_id, path.stem)
                if run == "nightly":
                    assert named == [], (path, case_id, named)
                else:
                    assert {c.rule for c in named} <= {"busy"}, (path, case_id, named)
    assert seen["nightly"] > 100 and seen["vet-fenced"] > 20, seen
