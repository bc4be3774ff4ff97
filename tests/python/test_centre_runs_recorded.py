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


@pytest.mark.parametrize("run", ["readme", "acceptance", "characterise"])
def test_report_of_a_recorded_run_writes_every_section(run: str, tmp_path: Path) -> None:
    """The README's first command on one H200 exited 1 at 035a103 from its report (a legend
    taller than its plots); here every section of each recorded run's report is written."""
    out = tmp_path / "report"
    rendered(out, "report", *h5s(RAW / run), "-o", out)
    assert not (out / "errors.log").exists(), (out / "errors.log").read_text()
    text = (out / "index.md").read_text()
    sections = ["## Results", "## Path matrix heatmap", "## Theoretical peaks", "## Cases"]
    if run != "characterise":  # bw --all alone has no latency or applications
        sections += ["## Latency (pointer chase, ping-pong)", "## Applications (STREAM, GEMM, LLM)"]
    for section in sections:
        assert section in text, section
    if run == "acceptance":  # --distribute: every node's checks
        assert "`n1`" in text and "`n2`" in text


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
