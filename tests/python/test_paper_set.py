"""The paper set (issue #20, item 1): one list (reframe_checks/paper_set.py) that the ReFrame
checks tagged `paper` and slurm/paper.sbatch both run; its memory roles select the same
kind of path on every reference node; its plan on a quad GH200 is complete."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.model.roles import role
from conftest import DATA, REPO, run, summaries
from test_reframe import generic_has_gpu, listed

import paper_set  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"


def commands(gpus: int, nodes: int) -> list[list[str]]:
    out = subprocess.run([sys.executable, str(REPO / "reframe_checks" / "paper_set.py"), "commands",
                          "--gpus", str(gpus), "--nodes", str(nodes), "--out", "OUT"],
                         capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def test_a_node_runs_the_steps_it_can_and_mpi_steps_get_their_ranks():
    cpu_only = commands(0, 1)
    assert {c[0] for c in cpu_only} == {s.check for s in paper_set.STEPS if s.needs == "cpu"}
    one_node = {c[0]: c for c in commands(4, 1)}
    assert "MempathPaperNccl" in one_node and one_node["MempathPaperNccl"][1] == "4"
    assert not {"MempathPaperMpiBandwidth", "MempathPaperNcclNodes"} & set(one_node)
    eight = {c[0]: c for c in commands(4, 8)}
    assert eight["MempathPaperNcclNodes"][1] == "32" and eight["MempathPaperMpiBandwidth"][1] == "32"
    for check, ranks, output, program, args in eight.values():
        assert args.endswith(f"--output OUT/{output}") and program in paper_set.PROGRAMS


def test_bad_counts_are_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, str(REPO / "reframe_checks" / "paper_set.py"), "commands",
                           "--gpus", "-1", "--out", "x"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_reframe_lists_the_paper_checks_of_this_node():
    names = listed("generic.py", "--tag", "paper")
    expected = {s.check for s in paper_set.STEPS if s.needs == "cpu" or (generic_has_gpu() and s.needs == "gpu")}
    assert set(names) == expected


def test_reframe_lists_every_paper_check_on_an_alps_node():
    names = listed("alps.py", "--system", "daint:normal", "--tag", "paper")
    assert set(names) == {s.check for s in paper_set.STEPS}


def paper_plan(mempath: Path, tmp_path: Path, snapshot: Path, nodes: int = 1,
               only: str = "") -> tuple[list[str], str]:
    """slurm/paper.sbatch's plan of a node's snapshot: its PLAN-SUM lines and PLAN-TOTAL line
    (`only`: MEMPATH_PAPER_ONLY, those steps)."""
    if not only and not (REPO / "build" / "mempath-mpi").exists():
        pytest.skip("no build/mempath-mpi (MPI not installed): the NCCL and MPI steps have no plan")
    env = {**os.environ, "MEMPATH_BIN": str(mempath), "MEMPATH_MPI_BIN": str(REPO / "build" / "mempath-mpi"),
           "MEMPATH_OUT": str(tmp_path / "o"), "MEMPATH_PAPER_PLAN": str(snapshot),
           "MEMPATH_PAPER_PLAN_NODES": str(nodes), "MEMPATH_PAPER_ONLY": only}
    proc = subprocess.run(["bash", str(REPO / "slurm" / "paper.sbatch")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "o").exists()  # a plan writes nothing
    lines = [l for l in proc.stdout.splitlines() if l.startswith("PLAN-SUM")]
    total = [l for l in proc.stdout.splitlines() if l.startswith("PLAN-TOTAL")]
    assert len(total) == 1, proc.stdout
    return lines, total[0]


def check_plan(lines: list[str], total: str, steps: list[paper_set.Step]) -> float:
    """Every step planned with the EXPECT line of its program's --from plan (mempath's, the
    LLM decode's `mempath llm` among them, and mempath-mpi's); the total is their sum.
    Returns the total's seconds."""
    assert len(lines) == len(steps), lines
    modelled = 0.0
    for step in steps:
        line = next(l for l in lines if l.split()[1] == step.check)
        assert f"EXPECT {step.family} " in line and "expected_s=" in line, line
        modelled += float(line.split("expected_s=")[1])
    fields = dict(w.split("=", 1) for w in total.split()[1:5])
    assert int(fields["steps"]) == len(steps)
    assert int(fields["modelled"]) == sum("EXPECT" in l for l in lines)
    assert float(fields["expected_s"]) == pytest.approx(modelled, abs=0.2)
    return float(fields["expected_s"])


def test_the_sbatch_plans_every_step_of_a_quad_gh200_and_their_total(mempath_cpu_bin: Path, tmp_path: Path):
    """Issue 39: every step modelled (NCCL by its ranks, the LLM by `mempath llm`'s plan) and
    a total line; the quad GH200's paper set within its 30 minutes."""
    lines, total = paper_plan(mempath_cpu_bin, tmp_path, FIXTURES / "gh200_quad")
    single = [s for s in paper_set.STEPS if s.needs in ("cpu", "gpu", "gpu-ranks")]
    seconds = check_plan(lines, total, single)
    assert "MempathPaperNccl EXPECT nccl cases=210 planned=210" in "\n".join(lines)
    assert 0 < seconds <= 30 * 60, total
    # Two nodes add Figs. 14 and 19: MPI bandwidth and NCCL across the nodes, modelled too.
    lines, total = paper_plan(mempath_cpu_bin, tmp_path, FIXTURES / "gh200_quad", nodes=2)
    check_plan(lines, total, paper_set.STEPS)
    assert "MempathPaperMpiBandwidth EXPECT mpi_bw " in "\n".join(lines)


def test_the_paper_set_on_four_h200s_is_modelled_within_15_minutes(mempath_cpu_bin: Path, tmp_path: Path):
    """Issue 39's target: the whole set on one node of four H200s (the lent node's snapshot
    beside the measured set, docs/results/2026-11-28-duration-model.md) within 15 minutes,
    every figure's step still in it."""
    snapshot = REPO / "docs" / "results" / "raw" / "2026-11-29-duration-model" / "h200x4_snap"
    lines, total = paper_plan(mempath_cpu_bin, tmp_path, snapshot)
    steps = [s for s in paper_set.STEPS if s.needs in ("cpu", "gpu", "gpu-ranks")]
    seconds = check_plan(lines, total, steps)
    assert seconds <= 15 * 60, total
    figures = {f.strip() for s in steps for f in s.figures.split(",")}
    assert {"Fig. 13", "Fig. 15", "Fig. 16", "Fig. 17", "Fig. 18"} <= figures


def test_the_llm_steps_are_mempath_steps_planned_by_mempath_llm(mempath_cpu_bin: Path, tmp_path: Path):
    """The LLM decode is `mempath llm`, planned with --from like any mempath command (no MPI
    needed): on a quad GH200 every placement of both models is planned, and every offload
    point of the 7B each way (the thesis's question, beyond the paper)."""
    llm = [s for s in paper_set.STEPS if s.family == "llm"]
    assert [s.check for s in llm] == ["MempathPaperLlm7b", "MempathPaperLlm13b", "MempathPaperLlmOffload"]
    assert all(s.program == "mempath" and s.subcommand == "llm" for s in llm)
    lines, total = paper_plan(mempath_cpu_bin, tmp_path, FIXTURES / "gh200_quad", only=",".join(s.check for s in llm))
    check_plan(lines, total, llm)
    expect = {line.split()[1]: line for line in lines}
    assert all(" EXPECT llm cases=5 planned=5 skipped=0 " in expect[s.check] for s in llm[:2]), lines
    assert " EXPECT llm cases=21 planned=21 skipped=0 " in expect["MempathPaperLlmOffload"], lines


def test_the_sbatch_runs_an_llm_step_with_the_jobs_python_as_its_referee(tmp_path: Path):
    """slurm/paper.sbatch runs the LLM steps as mempath steps, its `python` (the venv's where
    the clone has one) as `mempath llm --referee`; other steps get no referee."""
    calls = tmp_path / "calls"
    stand_in = tmp_path / "mempath"
    stand_in.write_text("#!/bin/bash\n"
                        "if [ \"$1\" = topo ]; then echo '{\"processors\": [{\"kind\": \"gpu\"}]}'; exit 0; fi\n"
                        f"echo \"$*\" >> {calls}\n")
    stand_in.chmod(0o755)
    env = {**os.environ, "MEMPATH_BIN": str(stand_in), "MEMPATH_OUT": str(tmp_path / "o"),
           "MEMPATH_PAPER_ONLY": "MempathPaperLlm7b,MempathPaperLatencyGpu"}
    env.pop("SLURM_JOB_ID", None)
    subprocess.run(["bash", str(REPO / "slurm" / "paper.sbatch")], cwd=REPO, env=env, capture_output=True,
                   text=True, timeout=300)
    python = ".venv/bin/python" if os.access(REPO / ".venv" / "bin" / "python", os.X_OK) else "python3"
    ran = calls.read_text().splitlines()
    step = paper_set.step("MempathPaperLlm7b")
    assert f"{' '.join(step.args)} --output {tmp_path / 'o' / step.output} --referee {python}" in ran, ran
    assert [c for c in ran if c.startswith("chase ")] == [
        f"{' '.join(paper_set.step('MempathPaperLatencyGpu').args)} --output {tmp_path / 'o' / 'chase_gpu.h5'}"]


@pytest.mark.parametrize("fixture, pu, word", [
    ("gh200_quad", "cpu0", "local"), ("gh200_quad", "gpu1", "peer-hbm"), ("gh200_quad", "cpu2", "peer-host"),
    ("gh200_dual", "gpu0", "local-hbm"), ("x86_h100", "gpu0", "local"), ("x86_h100", "cpu0", "local-host"),
])
def test_role_words_select_the_memories_of_that_role(mempath_cpu_bin: Path, fixture: str, pu: str, word: str):
    proc = run(mempath_cpu_bin, "bw", "--all", "--op", "read", "--pu", pu, "--mem", word,
               "--from", str(FIXTURES / fixture))
    mems = {line["mem"] for line in summaries(proc.stdout.replace("PLAN ", "MEMPATH "), "bw")}
    assert mems, proc.stdout
    topology = json.loads((DATA / f"topology_{fixture}.json").read_text()) \
        if (DATA / f"topology_{fixture}.json").is_file() else None
    if topology:  # the analysis names each selected memory with the same role
        wanted = {"local": ("local LPDDR", "local DDR", "local HBM", "device memory"),
                  "local-host": ("local LPDDR", "local DDR"), "local-hbm": ("local HBM", "device memory"),
                  "peer-host": ("peer LPDDR", "peer DDR"), "peer-hbm": ("peer HBM", "peer device memory")}[word]
        assert all(role(topology, pu, m) in wanted for m in mems), {m: role(topology, pu, m) for m in mems}
    if word.startswith("peer"):  # one peer superchip stands for all
        assert len({m for m in mems if m.startswith("numa")}) == 1


def test_a_role_word_in_a_copy_selects_both_ends(mempath_cpu_bin: Path):
    proc = run(mempath_cpu_bin, "bw", "--all", "--op", "copy", "--pu", "cpu0", "--mem", "local",
               "--from", str(FIXTURES / "gh200_quad"))
    pairs = {(l["mem"], l["dst"]) for l in summaries(proc.stdout.replace("PLAN ", "MEMPATH "), "bw")}
    assert pairs and all(m in ("numa0", "numa4", "gpu0") and d in ("numa0", "numa4", "gpu0") for m, d in pairs)


def test_an_unknown_memory_word_is_one_line_and_exit_2(mempath_cpu_bin: Path):
    proc = run(mempath_cpu_bin, "bw", "--all", "--mem", "far-hbm", "--from", str(FIXTURES / "gh200_quad"), check_rc=2)
    assert proc.stderr.count("\n") == 1 and "local-hbm" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mpirun"), reason="needs root and Open MPI's mpirun")
def test_the_job_as_root_without_slurm_lets_mpirun_start(tmp_path: Path):
    """Containers and lent GPU nodes run the job as root without Slurm: its MPI step must
    not die in 0 s on Open MPI's refusal of root (said in the job's own output)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # The job counts the GPUs mempath sees (`topo --json`): two, from a stand-in.
    (fake / "mempath").write_text("#!/bin/sh\necho '{\"processors\": [{\"kind\": \"gpu\"}, {\"kind\": \"gpu\"}]}'\n")
    (fake / "mempath-mpi").write_text("#!/bin/sh\necho started\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "SLURM_"))}
    env.update(PATH=f"{fake}:{env['PATH']}", MEMPATH_BIN=str(fake / "mempath"),
               MEMPATH_MPI_BIN=str(fake / "mempath-mpi"), MEMPATH_OUT=str(tmp_path / "o"),
               MEMPATH_PAPER_ONLY="MempathPaperNccl")
    proc = subprocess.run(["bash", str(REPO / "slurm" / "paper.sbatch")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "OMPI_ALLOW_RUN_AS_ROOT=1 set for mpirun" in proc.stdout, proc.stdout
    assert (tmp_path / "o" / "nccl.txt").read_text().count("started") == 2
