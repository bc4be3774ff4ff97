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

sys.path.insert(0, str(REPO / "reframe_checks"))
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


def test_the_sbatch_plans_every_mempath_step_on_a_quad_gh200(mempath_cpu_bin: Path, tmp_path: Path):
    env = {**os.environ, "MEMPATH_BIN": str(mempath_cpu_bin), "MEMPATH_OUT": str(tmp_path / "o"),
           "MEMPATH_PAPER_PLAN": str(FIXTURES / "gh200_quad")}
    proc = subprocess.run(["bash", str(REPO / "slurm" / "paper.sbatch")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stdout.splitlines() if l.startswith("PLAN-SUM")]
    single = [s for s in paper_set.STEPS if s.needs in ("cpu", "gpu", "gpu-ranks")]
    assert len(lines) == len(single)
    for step in single:
        line = next(l for l in lines if l.split()[1] == step.check)
        if step.program == "mempath":
            assert "EXPECT" in line and "expected_s=" in line, line
        else:
            assert "not modelled" in line
    assert not any((tmp_path / "o").glob("*.h5"))  # a plan writes no result


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
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: fake'; echo 'GPU 1: fake'\n")
    (fake / "mempath-mpi").write_text("#!/bin/sh\necho started\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "SLURM_"))}
    env.update(PATH=f"{fake}:{env['PATH']}", MEMPATH_BIN=str(REPO / "build" / "mempath"),
               MEMPATH_MPI_BIN=str(fake / "mempath-mpi"), MEMPATH_OUT=str(tmp_path / "o"),
               MEMPATH_PAPER_ONLY="MempathPaperNccl")
    proc = subprocess.run(["bash", str(REPO / "slurm" / "paper.sbatch")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "OMPI_ALLOW_RUN_AS_ROOT=1 set for mpirun" in proc.stdout, proc.stdout
    assert (tmp_path / "o" / "nccl.txt").read_text().count("started") == 2
