"""src/llm/llm_placement.py: model shapes, the bound, placement names on reference nodes and
bad input here; on a GPU with PyTorch (marked `gpu`) decoding with the weights in HBM and in
pinned host memory, same tokens, host slower, under the bound."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

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
    for args in (["--model", "gpt-5"], ["--dtype", "fp8"], ["--new-tokens", "1"]):
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
