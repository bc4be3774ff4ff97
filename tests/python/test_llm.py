"""src/llm/llm_placement.py: model shapes, the bound, placement names on reference nodes,
--bw-from's choice of a mempath run's case and bad input here; on a GPU with PyTorch (marked
`gpu`) decoding with the weights in HBM and in pinned host memory, same tokens, host slower,
under the bound, and CUDA-graph decode generating the eager decode's tokens."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from h5fixtures import case, memcpy_case, topology, write_run

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src" / "llm"))

import llm_placement as llm  # noqa: E402

SCRIPT = REPO / "src" / "llm" / "llm_placement.py"


def topo(fixture: str, mempath: Path) -> dict:
    out = subprocess.run([str(mempath), "topo", "--from", str(REPO / "tests" / "fixtures" / fixture), "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_shapes_give_the_published_parameter_counts() -> None:
    assert llm.param_count(llm.CONFIGS["llama-3.2-1b"]) == 1_235_814_400  # 1.24 B, tied embeddings
    assert round(llm.param_count(llm.CONFIGS["llama-3.2-3b"]) / 1e9, 2) == 3.21
    assert round(llm.param_count(llm.CONFIGS["llama-3.1-8b"]) / 1e9, 2) == 8.03


def test_llama2_shapes_are_the_papers_models() -> None:
    """Fig. 17's models, from meta-llama/Llama-2-{7b,13b}-hf's config.json: Hugging Face's
    own parameter counts (6,738,415,616 and 13,015,864,320), within 1% of 6.74 B and 13.0 B."""
    seven, thirteen = (llm.param_count(llm.CONFIGS[m]) for m in ("llama-2-7b", "llama-2-13b"))
    assert abs(seven / 6.74e9 - 1) < 0.01 and abs(thirteen / 13.0e9 - 1) < 0.01
    assert (seven, thirteen) == (6_738_415_616, 13_015_864_320)
    for m in ("llama-2-7b", "llama-2-13b"):
        c = llm.CONFIGS[m]
        assert c["kv_heads"] == c["heads"] and not c["tied"] and c["vocab"] == 32000 and c["bos"] == 1


def test_an_empty_prompt_is_the_bos_token_alone() -> None:
    assert llm.parse_prompt("empty") == (1, "bos")
    assert llm.parse_prompt("16") == (16, "random")
    for bad in ("0", "-3", "none", "", "1.5"):
        with pytest.raises(llm.BadInput, match="valid: a positive count, or empty"):
            llm.parse_prompt(bad)


def test_default_is_pytorchs_own_allocator_on_the_gpu(mempath_bin: Path) -> None:
    assert llm.resolve_placement("default", topo("x86_h100", mempath_bin), 0) == ("pytorch", "gpu0", "")
    assert llm.resolve_placement("default", topo("gh200_quad", mempath_bin), 2) == ("pytorch", "gpu2", "")
    row = llm.new_row(_args("default"), 0, "default", "pytorch", "gpu0", 10)
    assert row["torch_allocator"] == "caching" and row["weight_alloc"] == "pytorch"
    assert llm.new_row(_args("hbm"), 1, "hbm", "device", "gpu0", 10)["torch_allocator"] == "pluggable"


def _args(placement: str):
    args = llm.parser().parse_args(["--model", "llama-2-7b", "--placement", placement, "--prompt-tokens", "empty"])
    args.prompt_n, args.prompt_kind = llm.parse_prompt(args.prompt_tokens)
    return args


def free_from_snapshot(t: dict):
    """What the allocator layer would say on that node: a GPU's whole memory, a NUMA node's free pages."""
    gpus = {p["name"]: p["memory_bytes"] for p in t["processors"] if p["kind"] == "gpu"}
    numa = {f"numa{n['id']}": n["mem_free_bytes"] for n in t["numa_nodes"]}
    return lambda mem: gpus.get(mem, numa.get(mem))


@pytest.mark.parametrize("node,gpu", [("x86_h100", 0), ("gh200_quad", 1), ("x86_2s_4gpu", 3)])
def test_13b_runs_or_is_skipped_with_the_reason_in_every_placement(mempath_bin: Path, node: str, gpu: int) -> None:
    """Llama-2-13b (26 GB in fp16) on an 80 GB H100, a GH200 and a 4-GPU x86 node: every
    placement either fits or is skipped with why, nothing left to fail halfway."""
    t = topo(node, mempath_bin)
    c = llm.CONFIGS["llama-2-13b"]
    weights, work = llm.param_count(c) * 2, llm.working_bytes(c, 1, 1, 100)
    outcome = {}
    for name in ("default", "hbm", "host", "host-remote", "peer"):
        alloc, mem, why = llm.resolve_placement(name, t, gpu)
        outcome[name] = why or llm.fit_problem(weights, work, mem, gpu, t, free_from_snapshot(t))
    assert outcome["default"] == outcome["hbm"] == outcome["host"] == ""  # 26 GB fit in 80+ GB and in host memory
    if node == "x86_h100":
        assert "one host NUMA node" in outcome["host-remote"] and "one GPU" in outcome["peer"]
    else:
        assert outcome["host-remote"] == outcome["peer"] == ""


def test_weights_that_do_not_fit_are_skipped_with_the_reason(mempath_bin: Path) -> None:
    t = topo("x86_h100", mempath_bin)
    c = llm.CONFIGS["llama-2-13b"]
    weights, work = llm.param_count(c) * 2, llm.working_bytes(c, 1, 1, 100)
    small = {"gpu0": 24 * 10**9, "numa0": 16 * 10**9}.get
    why = llm.fit_problem(weights, work, "gpu0", 0, t, small)
    assert why.startswith("does not fit: the weights and the decode's working memory need 27.2 GB and gpu0 has 24.0 GB")
    assert "the weights need 26.0 GB and numa0 has 16.0 GB free" in llm.fit_problem(weights, work, "numa0", 0, t, small)
    # Weights in host memory, but no room on the GPU for the KV cache and activations.
    full_gpu = {"gpu0": 10**8, "numa0": 10**12}.get
    assert "the decode's working memory need 1.2 GB and gpu0" in llm.fit_problem(weights, work, "numa0", 0, t, full_gpu)
    assert llm.fit_problem(weights, work, "numa0", 0, t, lambda mem: None) == ""  # unknown: it is tried
    # On GH200 the GPU's HBM NUMA node is its own memory: weights and working memory add up there.
    quad = topo("gh200_quad", mempath_bin)
    assert "weights and the decode's working memory" in llm.fit_problem(weights, work, "numa4", 0, quad,
                                                                       {"numa4": 27 * 10**9}.get)


def test_the_working_memory_grows_with_the_kv_cache() -> None:
    c = llm.CONFIGS["llama-2-7b"]
    kv_per_token = 2 * 32 * 4096 * 2  # keys and values of every layer, fp16
    scores = 4 * 32  # the prompt's fp32 attention scores over one more position, 32 heads
    assert llm.working_bytes(c, 1, 1, 101) - llm.working_bytes(c, 1, 1, 100) == kv_per_token + scores
    assert llm.working_bytes(c, 4, 1, 100) > llm.working_bytes(c, 1, 1, 100)
    assert llm.working_bytes(c, 1, 1, 2) > llm.WORKING_MARGIN_BYTES


def test_the_bound_is_bandwidth_over_weight_bytes() -> None:
    assert llm.bound_tokens_per_s(3000.0, 2_471_628_800) == pytest.approx(1213.8, rel=1e-4)
    assert llm.bound_tokens_per_s(100.0, 10**9, batch=4) == pytest.approx(400.0)


def test_placements_on_an_x86_node_and_on_gh200(mempath_bin: Path) -> None:
    x86 = topo("x86_h100", mempath_bin)
    assert llm.resolve_placement("hbm", x86, 0) == ("device", "gpu0", "")
    assert llm.resolve_placement("host", x86, 0) == ("pinned", "numa0", "")  # no ATS: pinned host memory
    assert "one host NUMA node" in llm.resolve_placement("host-remote", x86, 0)[2]
    assert "one GPU" in llm.resolve_placement("peer", x86, 0)[2]
    assert "pageable" in llm.resolve_placement("numa:numa0", x86, 0)[2]
    quad = topo("gh200_quad", mempath_bin)
    assert llm.resolve_placement("host", quad, 1) == ("numa", "numa1", "")  # ATS: the LPDDR of its Grace
    alloc, mem, why = llm.resolve_placement("host-remote", quad, 1)
    assert alloc == "numa" and mem in {"numa0", "numa2", "numa3"} and why == ""
    assert llm.resolve_placement("peer", quad, 1)[:2] == ("device", "gpu0")
    with pytest.raises(llm.BadInput):
        llm.resolve_placement("far-away", quad, 0)


def test_bad_input_is_one_line() -> None:
    for args in (["--model", "gpt-5"], ["--dtype", "fp8"], ["--new-tokens", "1"], ["--decode", "lazy"],
                 ["--mempath", "/nonexistent/mempath"], ["--prompt-tokens", "0"], ["--prompt-tokens", "bos?"]):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "valid" in proc.stderr


def test_the_allocator_refuses_unknown_names(mempath_bin: Path) -> None:
    lib_path = mempath_bin.parent / "libmempath_placement.so"
    if not lib_path.exists():
        pytest.skip("no libmempath_placement.so: a build without CUDA")
    lib = ctypes.CDLL(str(lib_path))
    lib.mempath_last_error.restype = ctypes.c_char_p
    assert lib.mempath_place(b"bogus", b"numa0") == -1
    assert b"valid: system, numa" in lib.mempath_last_error()
    assert lib.mempath_place(b"numa", b"numa99") == -1 and b"numa99" in lib.mempath_last_error()
    assert lib.mempath_place(b"numa", None) == -1
    assert lib.mempath_place(None, None) == 0


def test_a_bad_placement_and_a_misused_worker_flag_are_one_line(tmp_path: Path) -> None:
    mempath = str(fake_mempath(tmp_path, "x86_h100"))
    for args, hint in ((["--placement", "hbm,nowhere"], "valid: default, hbm"),
                       (["--placement", "hbm", "--worker-json", str(tmp_path / "w.json")], "default placement alone")):
        proc = subprocess.run([sys.executable, str(SCRIPT), "--mempath", mempath, *args], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and hint in proc.stderr, proc.stderr


def test_the_default_placements_process_gets_this_runs_options() -> None:
    args = llm.parser().parse_args(["--model", "llama-2-7b", "--dtype", "fp16", "--placement", "hbm,default",
                                    "--prompt-tokens", "empty", "--new-tokens", "100", "--reps", "2", "--batch", "3",
                                    "--bw-from", "path.h5", "--decode", "eager"])
    cmd = llm.worker_args(args, Path("/tmp/x.json"), 1, (7, 9))
    flags = dict(zip(cmd[2::2], cmd[3::2]))
    assert flags["--placement"] == "default" and flags["--worker-json"] == "/tmp/x.json"
    # its case's number in this run, and the pipe ends of this run's conditions reader
    assert (flags["--case-id"], flags["--conditions-fds"]) == ("1", "7,9")
    assert (flags["--model"], flags["--dtype"], flags["--prompt-tokens"], flags["--new-tokens"]) == (
        "llama-2-7b", "fp16", "empty", "100")
    assert (flags["--reps"], flags["--batch"], flags["--bw-from"], flags["--decode"]) == ("2", "3", "path.h5", "eager")


def llm_cases(path: Path) -> dict:
    with h5py.File(path) as f:
        g = f["llm/cases"]
        return {k: (g[k].asstr()[()] if g[k].dtype.kind == "O" else g[k][()]) for k in g}


@pytest.mark.gpu
def test_llama2_7b_decodes_the_same_tokens_in_hbm_and_with_pytorchs_allocator(mempath_bin: Path,
                                                                              tmp_path: Path) -> None:
    """The paper's setting, short: Llama-2-7b shape, fp16, from an empty prompt (BOS), with
    the weights in HBM through mempath's allocator and with PyTorch's own (the baseline, in
    a process of its own): both run, the same tokens, the peaks split at 1 MiB recorded."""
    pytest.importorskip("torch")
    out = tmp_path / "llama2.h5"
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "llama-2-7b", "--dtype", "fp16",
                           "--placement", "hbm,default", "--prompt-tokens", "empty", "--new-tokens", "4",
                           "--reps", "1", "--warmup", "0", "--output", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    c = llm_cases(out)
    assert list(c["placement"]) == ["hbm", "default"] and list(c["status"]) == ["ok", "ok"], c["reason"]
    assert (c["verified"] == 1).all()
    assert list(c["torch_allocator"]) == ["pluggable", "caching"] and c["weight_alloc"][1] == "pytorch"
    assert list(c["prompt"]) == ["bos", "bos"] and (c["prompt_tokens"] == 1).all() and (c["new_tokens"] == 4).all()
    assert (c["params"] == 6_738_415_616).all()
    weights = c["weight_bytes"][0]
    # Every weight matrix is over 1 MiB; the norms (8 KiB each) and small activations are not.
    assert (c["peak_large_bytes"] >= 0.99 * weights).all() and (c["peak_large_bytes"] < 1.2 * weights).all()
    assert (c["peak_small_bytes"] > 0).all() and (c["peak_small_bytes"] < 2**30).all()
    assert (c["median_tokens_per_s"] > 0).all()
    assert "placement=default" in proc.stdout and "prompt=bos" in proc.stdout
    # Each decode's conditions, the worker's (default) too, read through NVML on the GPU.
    from analysis.results import conditions as recorded
    from analysis.results.io import load_run
    run_ = load_run(out)
    cond = recorded.of_tables(run_.attrs, run_.tables, run_.topology)
    assert cond.nvml.startswith("NVML ") and sorted(cond.windows) == [0, 1]
    assert all(w.processors == ("gpu0",) and w.end > w.start for w in cond.windows.values())


@pytest.mark.gpu
def test_weights_in_pinned_host_memory_decode_the_same_tokens_slower(mempath_bin: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "llm.h5"
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "llama-3.2-1b", "--placement", "hbm,host",
                           "--prompt-tokens", "16", "--new-tokens", "16", "--reps", "2", "--output", str(out)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    with h5py.File(out) as f:
        c = {k: (f["llm/cases"][k].asstr()[()] if f["llm/cases"][k].dtype.kind == "O" else f["llm/cases"][k][()])
             for k in f["llm/cases"]}
    assert list(c["status"]) == ["ok", "ok"] and (c["verified"] == 1).all()
    assert c["weight_placement"][1].startswith("numa")
    hbm, host = c["median_tokens_per_s"]
    assert host < hbm
    assert (c["fraction_of_bound"] <= 1.05).all()


def test_the_placement_library_keeps_its_own_references_inside() -> None:
    """The 7efe226 crash (issue 12): inside the PyTorch process, the library's stream parsing
    ran into the process's C++ runtime and died in libstdc++'s locale code. Its symbols bind
    inside it (-Bsymbolic, DT_SYMBOLIC / DF_SYMBOLIC in the dynamic section)."""
    lib = Path(os.environ.get("MEMPATH_BIN", REPO / "build" / "mempath")).parent / "libmempath_placement.so"
    if not lib.exists():
        pytest.skip(f"{lib} is built only with CUDA")
    dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "SYMBOLIC" in dynamic, dynamic


@pytest.mark.gpu
def test_every_placement_of_a_tiny_model_runs_in_the_pytorch_process(mempath_bin: Path, tmp_path: Path) -> None:
    """The reported crash: signal 11 at the first mempath_place call, every placement."""
    pytest.importorskip("torch")
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(SCRIPT), "--model", "tiny", "--placement", "hbm,host",
                           "--lib", str(mempath_bin.parent / "libmempath_placement.so"), "--mempath", str(mempath_bin),
                           "--output", str(tmp_path / "tiny.h5")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Fatal Python error" not in proc.stderr, proc.stderr + proc.stdout
    assert proc.stdout.count("status=ok") == 2, proc.stdout


@pytest.mark.gpu
def test_weights_in_a_peer_gpus_memory_are_read_over_peer_access(mempath_bin: Path, tmp_path: Path) -> None:
    """`peer`: the weights in gpu1's HBM, the decode on gpu0. Without peer access turned on by
    the placement library, gpu0's first read of them was an illegal address (4x H100, stop 22)."""
    pytest.importorskip("torch")
    t = json.loads(subprocess.run([str(mempath_bin), "topo", "--json"], capture_output=True, text=True,
                                  check=True).stdout)
    if sum(1 for p in t["processors"] if p["kind"] == "gpu") < 2:
        pytest.skip("peer memory needs at least 2 GPUs; this node has fewer")
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "tiny", "--placement", "peer", "--gpu", "0",
                           "--lib", str(mempath_bin.parent / "libmempath_placement.so"), "--mempath", str(mempath_bin),
                           "--output", str(tmp_path / "peer.h5")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.count("status=ok") == 1 and "placement=peer" in proc.stdout, proc.stdout


def fake_mempath(tmp_path: Path, node: str) -> Path:
    """A `mempath` whose `topo --json` is a reference node's, for runs on this GPU-less machine."""
    script = tmp_path / "mempath"
    script.write_text(f"#!/bin/sh\ncat {REPO / 'tests' / 'python' / 'data' / f'topology_{node}.json'}\n")
    script.chmod(0o755)
    return script


def x86_run(path: Path, cases: list[dict], memcpy: list[dict] | None = None) -> Path:
    return write_run(path, cases, topology=topology("x86_h100"), memcpy=memcpy)


def test_bw_from_takes_the_gpus_kernel_read_of_the_weights_memory_and_allocator(tmp_path: Path) -> None:
    run = llm.load_bw_run(str(x86_run(tmp_path / "bw.h5", [
        case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=3010.0),
        case(pu="gpu0", mem="gpu0", alloc="device", kernel="block", median_GBps=150.0),
        case(pu="gpu0", mem="numa0", alloc="pinned", median_GBps=52.5, size_bytes=1 << 28),
        case(pu="gpu0", mem="numa0", alloc="registered", median_GBps=55.0),  # faster, other allocator
        case(pu="gpu0", mem="numa0", alloc="pinned", status="failed", median_GBps=900.0),
        case(pu="gpu0", mem="numa0", alloc="pinned", op="write", median_GBps=60.0),
        case(pu="cpu0", mem="numa0", alloc="pinned", median_GBps=70.0),
    ], memcpy=[memcpy_case(gpu=0, host_numa=0, alloc="pinned", median_GBps=56.0)])))
    assert llm.path_from_run(run, 0, "device", "gpu0") == (3010.0, f"bw read gpu0 device kernel=grid size={1 << 30}")
    gbps, how = llm.path_from_run(run, 0, "pinned", "numa0")  # the kernel read, not the faster h2d copy
    assert gbps == 52.5 and how == f"bw read numa0 pinned kernel=grid size={1 << 28}"
    assert llm.path_from_run(run, 0, "numa", "numa0")[0] == 55.0  # no `numa` read: the best of the others


def test_bw_from_falls_back_to_copies_into_the_gpu(tmp_path: Path) -> None:
    run = llm.load_bw_run(str(x86_run(tmp_path / "memcpy.h5", [], memcpy=[
        memcpy_case(gpu=0, host_numa=0, alloc="pinned", median_GBps=53.0),
        memcpy_case(gpu=0, host_numa=0, alloc="pinned", direction="d2h", median_GBps=57.0),
        memcpy_case(gpu=1, dst_gpu=0, host_numa=-1, alloc="device", direction="d2d", median_GBps=370.0),
        memcpy_case(gpu=0, dst_gpu=1, host_numa=-1, alloc="device", direction="d2d", median_GBps=999.0),
    ])))
    assert llm.path_from_run(run, 0, "pinned", "numa0") == (53.0, f"memcpy h2d numa0 pinned engine=ce size={1 << 30}")
    assert llm.path_from_run(run, 0, "device", "gpu1") == (370.0, "memcpy d2d gpu1 engine=ce")


def test_bw_from_knows_gh200_hbm_by_its_numa_node(tmp_path: Path) -> None:
    path = write_run(tmp_path / "gh.h5", [case(pu="gpu0", mem="numa1", alloc="numa", median_GBps=3700.0)],
                     topology=topology("gh200_single"))
    assert llm.path_from_run(llm.load_bw_run(str(path)), 0, "device", "gpu0")[0] == 3700.0


def test_bw_from_names_what_the_file_has_when_a_placement_is_missing(tmp_path: Path) -> None:
    path = x86_run(tmp_path / "hbm-only.h5", [case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=3000.0),
                                              case(pu="gpu0", mem="numa0", alloc="pinned", status="skipped")])
    with pytest.raises(llm.BadInput, match=r"no ok read of numa0 by gpu0.*it has: gpu0 reads gpu0 \(device, bw\)$"):
        llm.path_from_run(llm.load_bw_run(str(path)), 0, "pinned", "numa0")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "tiny", "--placement", "hbm,host", "--bw-from",
                           str(path), "--mempath", str(fake_mempath(tmp_path, "x86_h100")), "--output",
                           str(tmp_path / "llm.h5")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "hbm-only.h5: no ok read of numa0 by gpu0" in proc.stderr
    assert not (tmp_path / "llm.h5").exists()


def test_bw_from_skipped_placements_need_no_case_and_bad_files_are_one_line(tmp_path: Path) -> None:
    path = x86_run(tmp_path / "hbm.h5", [case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=3000.0)])
    mempath = str(fake_mempath(tmp_path, "x86_h100"))
    (tmp_path / "notes.h5").write_text("not HDF5")
    for bw_from, expect in ((tmp_path / "missing.h5", "no such file"), (tmp_path / "notes.h5", "not an HDF5 file")):
        proc = subprocess.run([sys.executable, str(SCRIPT), "--bw-from", str(bw_from), "--mempath", mempath],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and expect in proc.stderr, proc.stderr
    # peer is skipped on this one-GPU node: the file's HBM read is all the run needs, so what
    # stops it here is the missing PyTorch/GPU, not --bw-from.
    proc = subprocess.run([sys.executable, str(SCRIPT), "--placement", "hbm,peer", "--bw-from", str(path),
                           "--mempath", mempath], capture_output=True, text=True, timeout=120)
    assert "--bw-from" not in proc.stderr and "bw-from" not in proc.stdout, proc.stderr


@pytest.mark.gpu
def test_cuda_graph_decode_generates_the_eager_decodes_tokens() -> None:
    """The graph replays the eager step's kernels on the same static tensors: every repetition
    must give the eager tokens, and the eager ones must not depend on the graph's having run."""
    torch = pytest.importorskip("torch")
    llm.load_torch()
    c = llm.CONFIGS["tiny"]
    with torch.inference_mode():
        w = llm.make_weights(c, torch.bfloat16, torch.device("cuda", 0), 1234)
        decoder = llm.Decoder(c, w, batch=2, prompt_tokens=16, new_tokens=24, seed=1234)
        seconds, eager = decoder.generate()
        assert decoder.capture() == ""
        replays = [decoder.generate()[1] for _ in range(3)]
        again = decoder.generate(eager=True)[1]
    assert seconds > 0 and eager.shape == (2, 24)
    assert all(torch.equal(tokens, eager) for tokens in replays) and torch.equal(again, eager)


@pytest.mark.gpu
def test_decode_mode_and_bw_from_are_recorded(mempath_bin: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    bw = write_run(tmp_path / "path.h5", [case(pu="gpu0", mem="gpu0", alloc="device", median_GBps=2500.0)],
                   topology=json.loads(subprocess.run([str(mempath_bin), "topo", "--json"], capture_output=True,
                                                      text=True, check=True).stdout))
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    rows = {}
    for mode, extra in (("graph", ["--bw-from", str(bw)]), ("eager", [])):
        out = tmp_path / f"{mode}.h5"
        proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "tiny", "--placement", "hbm", "--decode", mode,
                               *extra, "--output", str(out)], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr + proc.stdout
        assert f"decode_mode={mode}" in proc.stdout
        with h5py.File(out) as f:
            g = f["llm/cases"]
            rows[mode] = {k: (g[k].asstr()[0] if g[k].dtype.kind == "O" else g[k][0]) for k in g}
    graph, eager = rows["graph"], rows["eager"]
    assert (graph["decode_mode"], graph["decode_fallback"], graph["cuda_graph"]) == ("graph", "", 1), graph
    assert (eager["decode_mode"], eager["decode_fallback"], eager["cuda_graph"]) == ("eager", "", 0)
    assert graph["verified"] == 1 and graph["status"] == "ok"
    assert (graph["path_source"], graph["path_GBps"]) == ("path.h5", 2500.0)
    assert graph["path_case"].startswith("bw read gpu0")
    assert eager["path_source"] == "measured" and eager["path_case"] == ""


# ---- issue 39: the fused decode, its bound and its plan ----

def test_a_step_reads_the_weights_but_an_untied_embedding_and_the_kv_cache() -> None:
    """Llama-2 7B (untied): 13.48 GB of weights, of which a step reads all but the 262 MB
    embedding table; a tied model's embedding is its lm_head, read whole."""
    c = llm.CONFIGS["llama-2-7b"]
    assert llm.read_bytes_per_step(c) == 6_738_415_616 * 2 - 32000 * 4096 * 2
    tied = llm.CONFIGS["llama-3.2-1b"]
    assert llm.read_bytes_per_step(tied) == llm.param_count(tied) * 2
    # 32 layers x keys and values x 4096 x 2 bytes a slot.
    assert llm.kv_bytes_per_step(c, 10) == 32 * 2 * 4096 * 2 * 10


def test_a_slow_placement_times_fewer_tokens_a_fast_one_all() -> None:
    assert llm.timed_steps(0.004, 100) == 99                 # HBM: 0.4 s
    assert llm.timed_steps(0.26, 100) == 8                   # host over PCIe: 2 s budget, at least 8
    assert llm.timed_steps(0.05, 100) == 40                  # 2 s of 50 ms steps
    assert llm.timed_steps(1.0, 5) == 4                      # never more than asked


def test_the_weights_are_made_once_in_the_stacked_layout_with_the_old_seeds() -> None:
    """q|k|v and gate|up are stacked; each logical tensor keeps the seed it had alone, so the
    model is the one earlier runs decoded."""
    names = [n for n, _ in llm.logical_tensors(llm.CONFIGS["tiny"])]
    assert names[:3] == ["embed", "norm", "0.q"] and names.index("0.gate") + 1 == names.index("0.up")
    assert set(llm.STACKED) == {"qkv", "gu"}


def test_plan_mode_prints_one_expect_line_without_a_gpu(mempath_bin: Path) -> None:
    """--from SNAPSHOT: the cases on that node and a modelled time, asked of the binary's model;
    a host placement (weights read over PCIe) costs more than HBM, a missing peer is skipped."""
    def expect(placements: str, fixture: str) -> dict:
        proc = subprocess.run([sys.executable, str(SCRIPT), "--model", "llama-2-7b", "--dtype", "fp16",
                               "--placement", placements, "--prompt-tokens", "empty", "--new-tokens", "100",
                               "--from", str(REPO / "tests" / "fixtures" / fixture), "--mempath", str(mempath_bin)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        line = next(l for l in proc.stdout.splitlines() if l.startswith("EXPECT llm "))
        return dict(kv.split("=") for kv in line.split()[2:])
    hbm, host = expect("hbm", "x86_h100"), expect("host", "x86_h100")
    assert hbm["planned"] == "1" and 5 < float(hbm["expected_s"]) < float(host["expected_s"]) < 120
    one_gpu = expect("hbm,peer", "x86_h100")
    assert (one_gpu["cases"], one_gpu["planned"], one_gpu["skipped"]) == ("2", "1", "1")


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["tiny", "llama-3.2-1b"])
def test_the_fused_decode_runs_and_generates_the_plain_decodes_tokens(mempath_bin: Path, tmp_path: Path,
                                                                      model: str) -> None:
    """The fused kernels (grouped-query attention, head_dim 64, a tied lm_head) decode every
    token as the plain decode chooses it, teacher-forced, but for near-ties; and not slower."""
    pytest.importorskip("torch")
    out = tmp_path / "llm.h5"
    env = {**os.environ, "MEMPATH_BIN": str(mempath_bin)}
    for decode in ("fused", "graph"):
        proc = subprocess.run([sys.executable, str(SCRIPT), "--model", model, "--placement", "hbm", "--decode", decode,
                               "--prompt-tokens", "8", "--new-tokens", "32", "--reps", "2",
                               "--output", str(out.with_suffix(f".{decode}.h5"))],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr + proc.stdout
    fused, plain = llm_cases(out.with_suffix(".fused.h5")), llm_cases(out.with_suffix(".graph.h5"))
    assert list(fused["decode_mode"]) == ["fused"], fused["decode_fallback"]
    assert fused["tokens_checked"][0] == 32 and fused["tokens_wrong"][0] == 0
    assert fused["tokens_equal"][0] + fused["near_ties"][0] == 32 and fused["near_ties"][0] <= 2
    assert fused["median_tokens_per_s"][0] >= 0.9 * plain["median_tokens_per_s"][0]


@pytest.mark.parametrize("folder,fraction", [("2026-11-29-llm-decode-h200x1", 0.6),
                                             ("2026-11-29-llm-decode-h200x1-pdl", 0.75)])
def test_fig17_of_the_recorded_fused_decode_counts_what_a_step_reads(tmp_path: Path, folder: str,
                                                                     fraction: float) -> None:
    """The one-H200 runs of issue 39 (fused decode, 2026-11-29; the second with the attention
    over eight warps and programmatic dependent launch): Fig. 17 drawn with its bound from
    mempath's read in the same folder over the bytes a step reads (the weights but the
    embedding table, and the KV cache), both in llm_decode.csv."""
    import pandas as pd

    from conftest import analysis_cli
    raw = REPO / "docs" / "results" / "raw" / folder
    proc = analysis_cli("paper", raw, "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "llm_decode.csv").set_index(["model", "placement"])
    hbm = rows.loc[("llama-2-7b", "hbm")]
    assert hbm["step_weight_bytes"] == llm.read_bytes_per_step(llm.CONFIGS["llama-2-7b"])
    assert 0 < hbm["step_kv_bytes"] < 0.01 * hbm["step_weight_bytes"]
    # The bound is the read GB/s the run took from the same file (--bw-from) over those bytes.
    gbps = float(llm_cases(raw / "llm_7b.h5")["path_GBps"][0])
    assert hbm["bound_from"].startswith("bw read gpu0 device") and hbm["bound_tokens_per_s"] == pytest.approx(gbps * 1e9 / (hbm["step_weight_bytes"] + hbm["step_kv_bytes"]),
                                                      rel=1e-3)
    assert hbm["tokens_per_s"] / hbm["bound_tokens_per_s"] > fraction
