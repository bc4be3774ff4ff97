"""Issue #32, "What the tests draw is what the command makes": the synthetic paper set
(synth_paper_set.py) is generated from reframe_checks/paper_set.py's steps, so its files
have exactly the cases the real commands write (mempath's own --from plan, `mempath llm`'s
too; the arguments of the mempath-mpi steps), and a step whose arguments change changes the
set."""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from pathlib import Path

import h5py
import pytest

import synth_paper_set as sps
from analysis.results.io import load_table
from conftest import REPO

STEPS = {s.check: s for s in sps.steps()}
TABLE = {"bw": "bw/cases", "allocmatrix": "allocmatrix/cases", "um": "um/cases", "chase": "chase/cases",
         "pingpong": "pingpong/cases", "gemm": "gemm/cases", "llm": "llm/cases"}
#: The columns a PLAN line names, per subcommand: (plan key, table column).
KEYS = {"bw": (("op", "op"), ("pu", "pu"), ("mem", "mem"), ("dst", "dst_mem"), ("alloc", "alloc"),
               ("threads", "threads"), ("via", "via"), ("size", "size_bytes")),
        "allocmatrix": (("src_alloc", "src_alloc"), ("src_mem", "src_mem"), ("dst_alloc", "dst_alloc"),
                        ("dst_mem", "dst_mem"), ("size", "size_bytes")),
        "um": (("alloc", "alloc"), ("gpu", "gpu"), ("mem", "mem"), ("first_touch", "first_touch"),
               ("size", "size_bytes")),
        "chase": (("pu", "pu"), ("mem", "mem"), ("alloc", "alloc"), ("via", "via")),
        "pingpong": (("a", "a"), ("b", "b"), ("mem", "mem"), ("alloc", "alloc"), ("a_cpu", "a_cpu"),
                     ("b_cpu", "b_cpu")),
        "gemm": (("dtype", "dtype"), ("n", "n"), ("mem", "a_mem"), ("alloc", "a_alloc"), ("b_mem", "b_mem"),
                 ("b_alloc", "b_alloc"), ("via", "via"), ("b_via", "b_via")),
        # `default` is PyTorch's own allocator: its weight_alloc is `pytorch`, not the plan's.
        "llm": (("model", "model"), ("dtype", "dtype"), ("placement", "placement"), ("mem", "weight_mem"),
                ("kv_mem", "kv_mem"))}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic quad-GH200 paper set, made once for this file's tests."""
    folder = tmp_path_factory.mktemp("paper_set")
    sps.write(folder)
    return folder


def _plan_of(step) -> list[dict[str, str]]:
    return sps.plan(step.args)


def _text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_one_file_per_step_named_as_the_sbatch_writes_it(synthetic: Path):
    assert {p.name for p in synthetic.glob("*.h5")} == {s.output for s in STEPS.values()}
    for step in STEPS.values():
        with h5py.File(synthetic / step.output) as f:
            assert int(f.attrs["synthetic"]) == 1
            command = f.attrs["command_line"]
            command = command.decode() if isinstance(command, bytes) else command
            assert " ".join(step.args[1:] if step.program == "mempath-mpi" else step.args) in command, step.check


@pytest.mark.parametrize("check", [c for c, s in STEPS.items() if s.program == "mempath"])
def test_a_mempath_steps_file_has_exactly_the_cases_of_its_plan(synthetic: Path, check: str):
    step = STEPS[check]
    planned = _plan_of(step)
    cases = load_table(synthetic / step.output, TABLE[step.subcommand])
    keys = KEYS[step.subcommand]
    # A GPU's threads (threads=-1) are the launch's, decided at run time: its grid sweep's
    # points are compared by their blocks below.
    gpu_threads = lambda key, pu: "-" if pu.startswith("gpu") and key == "threads" else None  # noqa: E731
    want = Counter(tuple(gpu_threads(k, p.get("pu", "")) or p[k] for k, _ in keys) for p in planned)
    if step.subcommand == "chase":   # each sweep line is its sizes' cases
        sweeps = {p["pu"]: len(sps.chase_sweep(p["pu"])) for p in planned}
        want = Counter({k: n * sweeps[k[0]] for k, n in want.items()})
    got = Counter(tuple(gpu_threads(k, str(row.get("pu", ""))) or (_text(row[c]) if row[c] == row[c] else "")
                        for k, c in keys) for row in cases.to_dict("records"))
    assert got == want
    if step.subcommand == "bw":
        points = Counter(int(p["blocks"]) for p in planned if int(p.get("blocks") or -1) > 0)
        rows = Counter(int(b) for b in cases["blocks"])
        assert all(rows[b] >= n for b, n in points.items()), (points, rows)
    # Skipped by the plan: skipped with the plan's reason; planned: measured (unless it does not fit).
    skipped = {tuple(gpu_threads(k, p.get("pu", "")) or p[k] for k, _ in keys): p["reason"] for p in planned if p["status"] == "skipped"}
    for row in cases.to_dict("records"):
        key = tuple(gpu_threads(k, str(row.get("pu", ""))) or (_text(row[c]) if row[c] == row[c] else "")
                    for k, c in keys)
        if key in skipped:
            assert row["status"] == "skipped" and row["reason"] == skipped[key]
        elif row["status"] != "ok":
            assert step.subcommand == "gemm" and "not fit on" in row["reason"], row


def _arg(step, name: str) -> str:
    return step.args[step.args.index(name) + 1]


def test_fig15_file_has_the_steps_dtypes_and_matrix_bytes(synthetic: Path):
    step = STEPS["MempathPaperGemmPlacement"]
    cases = load_table(synthetic / step.output, "gemm/cases")
    matrix = 512 << 20
    assert _arg(step, "--matrix-bytes") == "512MiB"
    element = {"fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
    want = {(d, int(math.isqrt(matrix // element[d])) // 8 * 8) for d in _arg(step, "--dtype").split(",")}
    assert set(zip(cases["dtype"], cases["n"])) == want


def test_llm_and_nccl_cases_come_from_the_steps_arguments(synthetic: Path):
    for check in ("MempathPaperLlm7b", "MempathPaperLlm13b"):
        step = STEPS[check]
        cases = load_table(synthetic / step.output, "llm/cases")
        assert list(cases["placement"]) == _arg(step, "--placement").split(",")
        assert set(cases["model"]) == {_arg(step, "--model")} and set(cases["dtype"]) == {_arg(step, "--dtype")}
        assert set(cases["new_tokens"]) == {int(_arg(step, "--new-tokens"))}
    nccl = load_table(synthetic / "nccl.h5", "nccl/cases")
    assert set(nccl["placement"]) == set(_arg(STEPS["MempathPaperNccl"], "--placement").split(","))
    assert set(nccl["ranks"]) == {4} and nccl["size_bytes"].max() == 1 << 30   # the default sweep's top
    nodes = load_table(synthetic / "nccl_nodes.h5", "nccl/cases")
    assert set(zip(nodes["collective"], nodes["rank_bytes"])) == {("allreduce", 4 << 30), ("allgather", 16 << 20)}
    assert set(nodes["nodes"]) == set(sps.SYNTHETIC_NODES["nccl"])


@pytest.mark.parametrize("check,old,new,table,column,expect", [
    ("MempathPaperGemmPlacement", "fp16,fp64", "fp16,tf32,fp64", "gemm/cases", "dtype", {"fp16", "tf32", "fp64"}),
    ("MempathPaperGemmPlacement", "512MiB", "128MiB", "gemm/cases", "n", {8192, 4096}),
    ("MempathPaperLlm7b", "default,hbm,host,host-remote,peer", "hbm,peer", "llm/cases", "placement", {"hbm", "peer"}),
    ("MempathPaperNccl", "device,hbm-system,host,peer,peer-host", "device,host", "nccl/cases", "placement",
     {"device", "host"}),
    ("MempathPaperLatencyGpu", "gpu0", "gpu1", "chase/cases", "pu", {"gpu1"}),
])
def test_a_step_whose_arguments_change_changes_the_synthetic_set(tmp_path: Path, check, old, new, table, column,
                                                                 expect):
    """Nothing in the synth code names a step's placements, dtypes or sizes: edit the step,
    and its synthetic file follows."""
    step = STEPS[check]
    assert old in step.args
    changed = dataclasses.replace(step, args=tuple(new if a == old else a for a in step.args))
    (path,) = sps.write(tmp_path, only=[changed])
    assert set(load_table(path, table)[column]) == expect


def test_the_generator_is_fast(tmp_path: Path):
    import time
    start = time.perf_counter()
    sps.write(tmp_path)
    assert time.perf_counter() - start < 10
    assert (REPO / "build" / "mempath").exists()
