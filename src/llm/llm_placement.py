#!/usr/bin/env python3
"""LLM decode with the weights placed in a chosen memory (docs/cli.md).

A Llama-style decoder in plain PyTorch (RMSNorm, rotary embeddings, grouped-query attention
with a KV cache, SwiGLU MLP) with random weights of a real model's shape (nothing is
downloaded), its weights allocated through mempath's allocator layer by a pluggable CUDA
allocator (libmempath_placement.so) in each memory asked for, everything else (activations,
KV cache) in the GPU's own memory. The placement `default` is the baseline without the
pluggable allocator: PyTorch's own caching allocator, everything in the GPU's memory, run in
a process of its own (a process's allocator cannot change once it allocated). Greedy
decoding of --new-tokens after a --prompt-tokens prompt (`empty`: the BOS token alone, what
Hugging Face generate starts from with an empty prompt), batch --batch, each decode step
replayed from a CUDA graph (eager where capture fails, with the reason), so that the time
is the GPU's and not Python's launches; tokens/s from CUDA events around the decode; the
memory-time bound from the GPU's read bandwidth of the placed weights, measured here or
taken from a mempath run (--bw-from; each decode step reads every weight once at batch 1).
A placement whose weights do not fit in the free memory is skipped with the reason. Writes
/llm/cases and /llm/samples (docs/schema.md).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Shapes of published models (their config.json); weights are random, seeded. `bos` is the
# tokenizer's beginning-of-sequence id: the whole prompt of `--prompt-tokens empty`.
# Llama-2 (the paper's Fig. 17): meta-llama/Llama-2-{7b,13b}-hf, multi-head attention
# (kv heads = heads), untied lm_head, 6.74 B and 13.0 B parameters.
CONFIGS = {
    "tiny": dict(hidden=256, layers=2, heads=4, kv_heads=2, intermediate=768, vocab=4096, tied=True, bos=1),
    "llama-3.2-1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, intermediate=8192, vocab=128256, tied=True,
                         bos=128000),
    "llama-3.2-3b": dict(hidden=3072, layers=28, heads=24, kv_heads=8, intermediate=8192, vocab=128256, tied=True,
                         bos=128000),
    "llama-3.1-8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336, vocab=128256, tied=False,
                         bos=128000),
    "llama-2-7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, intermediate=11008, vocab=32000, tied=False,
                       bos=1),
    "llama-2-13b": dict(hidden=5120, layers=40, heads=40, kv_heads=40, intermediate=13824, vocab=32000, tied=False,
                        bos=1),
}
DTYPES = ("bf16", "fp16")
DECODE_MODES = ("graph", "eager")
PLACEMENTS = "default, hbm, host, host-remote, peer, ALLOC:MEM"
#: What the GPU needs beside the weights and the KV cache: the CUDA context of a process of
#: its own (`default`), cuBLAS workspaces, the graph's pool, logits. Generous on purpose: a
#: placement that passes the check must not fail for want of memory halfway.
WORKING_MARGIN_BYTES = 1 << 30


class BadInput(Exception):
    pass


def param_count(c: dict) -> int:
    head_dim = c["hidden"] // c["heads"]
    attn = 2 * c["hidden"] * c["hidden"] + 2 * c["hidden"] * c["kv_heads"] * head_dim
    layer = attn + 3 * c["hidden"] * c["intermediate"] + 2 * c["hidden"]
    embed = c["vocab"] * c["hidden"]
    return c["layers"] * layer + embed * (1 if c["tied"] else 2) + c["hidden"]


def parse_prompt(text: str) -> tuple[int, str]:
    """(prompt tokens, kind) of --prompt-tokens: `empty` is Hugging Face generate's empty
    prompt, which starts from the BOS token alone (one token, kind "bos"); a count N is N
    seeded random tokens (kind "random")."""
    if text == "empty":
        return 1, "bos"
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise BadInput(f"--prompt-tokens {text} is not a prompt; valid: a positive count, or empty "
                       "(the BOS token alone, as Hugging Face generate with an empty prompt)")
    return n, "random"


def working_bytes(c: dict, batch: int, prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2) -> int:
    """GPU memory the decode needs beside the weights: the KV cache of every position, the
    prompt's activations (logits in fp32, the MLP's three intermediates, attention scores)
    and WORKING_MARGIN_BYTES."""
    head_dim = c["hidden"] // c["heads"]
    total = prompt_tokens + new_tokens
    kv = 2 * c["layers"] * batch * c["kv_heads"] * head_dim * total * dtype_bytes
    act = batch * prompt_tokens * (4 * c["vocab"] + 3 * c["intermediate"] * dtype_bytes + 8 * c["hidden"] * dtype_bytes)
    scores = 4 * batch * c["heads"] * prompt_tokens * total
    return kv + act + scores + WORKING_MARGIN_BYTES


def gpu_memories(topo: dict, gpu: int) -> set[str]:
    """The names of the decoding GPU's own memory: gpuN, and its HBM NUMA node where it has one."""
    g = next((p for p in topo["processors"] if p["name"] == f"gpu{gpu}"), {})
    hbm = g.get("hbm_numa")
    return {f"gpu{gpu}"} | ({f"numa{hbm}"} if hbm is not None and hbm >= 0 else set())


def fit_problem(weight_bytes: int, work_bytes: int, mem: str, gpu: int, topo: dict, free_of) -> str:
    """Why a placement cannot run for want of memory, or "": the weights in `mem`, and the
    working memory (working_bytes) on the decoding GPU, each within what `free_of(memory)`
    says is free (bytes; None when it cannot say, which passes)."""
    own = gpu_memories(topo, gpu)
    needs = {mem: weight_bytes}
    gpu_mem = mem if mem in own else f"gpu{gpu}"
    needs[gpu_mem] = needs.get(gpu_mem, 0) + work_bytes
    for where, need in needs.items():
        free = free_of(where)
        if free is not None and need > free:
            what = ("the weights and the decode's working memory" if where == mem and where in own
                    else "the weights" if where == mem else "the decode's working memory")
            return (f"does not fit: {what} need {need / 1e9:.1f} GB and {where} has {free / 1e9:.1f} GB free")
    return ""


def bound_tokens_per_s(path_gbps: float, weight_bytes: int, batch: int = 1) -> float:
    """Every decode step reads every weight once: steps/s <= bandwidth / weight bytes."""
    return path_gbps * 1e9 / weight_bytes * batch


def resolve_placement(name: str, topo: dict, gpu: int) -> tuple[str, str, str]:
    """(alloc, mem, skip reason) of a placement name on this node."""
    g = next((p for p in topo["processors"] if p["name"] == f"gpu{gpu}"), None)
    if g is None:
        raise BadInput(f"--gpu {gpu}: this node has no gpu{gpu}")
    paths = {p["mem"]: p for p in topo["paths"] if p["pu"] == f"gpu{gpu}"}

    def check(alloc: str, mem: str) -> tuple[str, str, str]:
        path = paths.get(mem)
        if path is None:
            return alloc, mem, f"gpu{gpu} has no path to {mem}"
        if alloc not in path["allocs"]:
            why = next((s["reason"] for s in path.get("skipped", []) if s["alloc"] == alloc), "not supported")
            return alloc, mem, why
        return alloc, mem, ""

    host = f"numa{g['host_numa']}"
    readable = lambda mem: "numa" if "numa" in paths.get(mem, {}).get("allocs", []) else "pinned"  # noqa: E731
    if name == "default":  # PyTorch's caching allocator: cudaMalloc on the GPU, no mempath in the way
        _, mem, why = check("device", f"gpu{gpu}")
        return "pytorch", mem, why
    if name == "hbm":
        return check("device", f"gpu{gpu}")
    if name == "host":
        return check(readable(host), host)
    if name == "host-remote":
        others = [f"numa{n['id']}" for n in topo["numa_nodes"] if n.get("kind") == "host" and n.get("cpus")
                  and f"numa{n['id']}" != host]
        return check(readable(others[0]), others[0]) if others else ("", "", "one host NUMA node: no remote host memory")
    if name == "peer":
        peers = [p["name"] for p in topo["processors"] if p["kind"] == "gpu" and p["name"] != f"gpu{gpu}"]
        return check("device", peers[0]) if peers else ("device", "", "one GPU: no peer memory")
    if ":" in name:
        alloc, mem = name.split(":", 1)
        return check(alloc, mem)
    raise BadInput(f"invalid placement '{name}'; valid: {PLACEMENTS}")


def write_h5(path: Path, attrs: dict, cases: list[dict], samples: list[dict]) -> None:
    """The results writer's layout (docs/schema.md), atomically, through analysis/results/h5writer.py."""
    # The script runs as `python3 src/llm/llm_placement.py` from anywhere (ReFrame, docs/cli.md):
    # analysis/ is found from the repo root; h5writer needs only numpy and h5py (no pandas).
    sys.path.insert(0, str(REPO))
    # The columns are src/core/families.def's llm rows, as the C++ writers' are theirs.
    from analysis.results.h5writer import table_columns, write_result
    write_result(path, attrs, {name: table_columns(name, rows) for name, rows in (("llm/cases", cases),
                                                                                  ("llm/samples", samples))})


def load_torch():
    """Import PyTorch into this module's globals (--help, bad input and --bw-from checks need none)."""
    global torch, F
    try:
        import torch as torch_module
        import torch.nn.functional as functional
    except ImportError as error:
        raise BadInput(f"PyTorch is needed ({error}); valid: a Python with torch and CUDA")
    torch, F = torch_module, functional
    return torch


torch = F = None  # set by load_torch()


def make_weights(c: dict, dtype, device, seed: int) -> dict:
    """Every weight of the model, seeded per tensor: the same weights in every memory."""
    head_dim = c["hidden"] // c["heads"]
    g = torch.Generator(device=device)
    shapes = {"embed": (c["vocab"], c["hidden"]), "norm": (c["hidden"],)}
    if not c["tied"]:
        shapes["head"] = (c["vocab"], c["hidden"])
    kv = c["kv_heads"] * head_dim
    for i in range(c["layers"]):
        shapes.update({f"{i}.q": (c["hidden"], c["hidden"]), f"{i}.k": (kv, c["hidden"]), f"{i}.v": (kv, c["hidden"]),
                       f"{i}.o": (c["hidden"], c["hidden"]), f"{i}.gate": (c["intermediate"], c["hidden"]),
                       f"{i}.up": (c["intermediate"], c["hidden"]), f"{i}.down": (c["hidden"], c["intermediate"]),
                       f"{i}.n1": (c["hidden"],), f"{i}.n2": (c["hidden"],)})
    w: dict = {}
    for k, (name, shape) in enumerate(shapes.items()):
        g.manual_seed(seed + k)
        t = torch.empty(shape, dtype=dtype, device=device)
        if len(shape) == 1:
            t.fill_(1.0)
        else:
            t.normal_(0.0, 1.0 / math.sqrt(shape[1]), generator=g)
        w[name] = t
    return w


def rms(x, w):
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w


def grouped(kv, repeat: int):
    """Each KV head repeated for its query heads (repeat_interleave on dim 1, as a view + copy)."""
    b, h, t, d = kv.shape
    return kv[:, :, None].expand(b, h, repeat, t, d).reshape(b, h * repeat, t, d)


class Decoder:
    """Greedy decode of one set of weights on their GPU with static tensors: the KV cache,
    the current token, its position and the output tokens are allocated once, and attention
    covers every cache slot under a mask instead of a slice, so a decode step has fixed shapes
    and addresses and can be captured in a CUDA graph. Eager mode runs the same step op by op,
    so both modes launch the same kernels and generate the same tokens."""

    def __init__(self, c: dict, w: dict, batch: int, prompt_tokens: int, new_tokens: int, seed: int,
                 prompt: str = "random"):
        self.c, self.w, self.prompt_tokens, self.new_tokens = c, w, prompt_tokens, new_tokens
        dev, dt = w["embed"].device, w["embed"].dtype
        self.device = dev
        head_dim = c["hidden"] // c["heads"]
        total = prompt_tokens + new_tokens
        self.inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=dev, dtype=torch.float32) / head_dim))
        self.slots = torch.arange(total, device=dev)
        shape = (batch, c["kv_heads"], total, head_dim)
        self.cache = [(torch.zeros(shape, dtype=dt, device=dev), torch.zeros(shape, dtype=dt, device=dev))
                      for _ in range(c["layers"])]
        g = torch.Generator(device=dev).manual_seed(seed)
        if prompt == "bos":  # Hugging Face generate's empty prompt: the BOS token alone
            self.prompt = torch.full((batch, prompt_tokens), c["bos"], dtype=torch.long, device=dev)
        else:
            self.prompt = torch.randint(0, c["vocab"], (batch, prompt_tokens), device=dev, generator=g)
        self.token = torch.zeros(batch, 1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.out = torch.zeros(batch, new_tokens, dtype=torch.long, device=dev)
        self.graph = None

    def rope(self, x, pos):
        ang = pos[:, None].float() * self.inv[None, :]
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def forward(self, tokens, pos):
        """Logits of the last position; stores the keys and values of positions `pos`."""
        c, w = self.c, self.w
        b, t = tokens.shape
        head_dim = c["hidden"] // c["heads"]
        mask = self.slots[None, :] <= pos[:, None]  # causal, and hides the slots not yet written
        x = F.embedding(tokens, w["embed"])
        for i in range(c["layers"]):
            h = rms(x, w[f"{i}.n1"])
            q = F.linear(h, w[f"{i}.q"]).view(b, t, c["heads"], head_dim).transpose(1, 2)
            k = F.linear(h, w[f"{i}.k"]).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
            v = F.linear(h, w[f"{i}.v"]).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            kc, vc = self.cache[i]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            repeat = c["heads"] // c["kv_heads"]
            a = F.scaled_dot_product_attention(q, grouped(kc, repeat), grouped(vc, repeat), attn_mask=mask)
            x = x + F.linear(a.transpose(1, 2).reshape(b, t, c["hidden"]), w[f"{i}.o"])
            h = rms(x, w[f"{i}.n2"])
            x = x + F.linear(F.silu(F.linear(h, w[f"{i}.gate"])) * F.linear(h, w[f"{i}.up"]), w[f"{i}.down"])
        x = rms(x[:, -1:], w["norm"])
        return F.linear(x, w["head"] if "head" in w else w["embed"])

    def prefill(self) -> None:
        """The prompt (not timed): its cache slots, the first new token, the step's position;
        every repetition starts from this state."""
        first = self.forward(self.prompt, self.slots[:self.prompt_tokens]).argmax(-1)
        self.token.copy_(first)
        self.out[:, :1].copy_(first)
        self.pos.fill_(self.prompt_tokens)

    def step(self) -> None:
        """One token: reads and writes only the static tensors (nothing outlives a graph replay)."""
        nxt = self.forward(self.token, self.pos).argmax(-1)
        self.out.index_copy_(1, self.pos - (self.prompt_tokens - 1), nxt)
        self.token.copy_(nxt)
        self.pos.add_(1)

    def capture(self) -> str:
        """Capture one step in a CUDA graph; '' or why it could not be (decode then runs eagerly)."""
        try:
            self.prefill()
            # PyTorch's recipe: warm up on a side stream so that lazy initialisation (cuBLAS
            # handles, workspaces) happens before capture, where it is not allowed. Capture on
            # that same stream: cuBLAS keeps a workspace per stream, and one first allocated
            # inside the capture would come from mempath's allocator as a graph allocation.
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(min(3, self.new_tokens - 1)):
                    self.step()
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                self.step()
        except Exception as error:  # noqa: BLE001  any refusal (allocator, kernel, driver) means eager
            while error.__context__ is not None:  # the op that broke the capture, not capture_end's complaint
                error = error.__context__
            torch.cuda.synchronize(self.device)
            return "CUDA graph capture failed: " + (str(error).strip().splitlines() or [type(error).__name__])[0]
        self.graph = graph
        return ""

    def generate(self, eager: bool = False):
        """One repetition: seconds of the new_tokens - 1 decode steps (CUDA events around the
        replays or eager steps, so every kernel of every token is inside) and the tokens."""
        self.prefill()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(self.new_tokens - 1):
            if self.graph is not None and not eager:
                self.graph.replay()
            else:
                self.step()
        e1.record()
        torch.cuda.synchronize(self.device)
        return e0.elapsed_time(e1) / 1e3, self.out.cpu()


def read_bandwidth(w) -> float:
    """GB/s of one multi-tensor kernel reading every weight matrix, best of 3 (a sum per
    tensor would be launch-bound in HBM). The max-abs norm reads every byte and, unlike
    a sum, cannot overflow fp16 on a 7B model's matrices."""
    tensors = [t for t in w.values() if t.dim() == 2]
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    best = 0.0
    for _ in range(3):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        s = torch.stack(torch._foreach_norm(tensors, float("inf"))).float().max()
        e1.record()
        torch.cuda.synchronize()
        best = max(best, nbytes / (e0.elapsed_time(e1) / 1e3) / 1e9)
    assert math.isfinite(float(s))
    return best


def load_bw_run(path: str):
    """The mempath result file of --bw-from, through analysis/results/io.py (its checks and messages)."""
    sys.path.insert(0, str(REPO))
    try:
        from analysis.results.io import load_run
        from analysis.errors import InputError
    except ImportError as error:
        raise BadInput(f"--bw-from needs pandas and h5py ({error}); valid: the Python of the analysis")
    try:
        return load_run(path)
    except InputError as error:
        raise BadInput(f"--bw-from {error}") from None


def path_from_run(run, gpu: int, alloc: str, mem: str) -> tuple[float, str]:
    """(GB/s, case) of the GPU reading `mem` (analysis/results/gpu_reads.py's rule, which
    Fig. 17 applies to the paper set's files); BadInput saying what the file has."""
    from analysis.results.gpu_reads import gpu_reads, read_path
    reads = gpu_reads(run.tables, run.topology, gpu)
    best = read_path(reads, alloc, mem)
    if best is None:
        has = sorted({f"gpu{gpu} reads {m} ({a}, {case.split()[0]})" for m, a, _, case in reads})
        raise BadInput(f"--bw-from {run.path.name}: no ok read of {mem} by gpu{gpu} (bw read, memcpy h2d or d2d); "
                       f"valid: a file that has it; it has: {', '.join(has) or 'no GPU read of any memory'}")
    return best[2], best[3]


def load_library(path: str):
    """libmempath_placement.so through ctypes (the pluggable allocator's entry points, its
    peaks and the allocator layer's free bytes)."""
    lib_path = Path(path)
    if not lib_path.is_file():
        raise BadInput(f"{lib_path} does not exist; valid: --lib path of libmempath_placement.so (a CUDA build)")
    lib = ctypes.CDLL(str(lib_path))
    lib.mempath_last_error.restype = ctypes.c_char_p
    lib.mempath_placement_of.restype = ctypes.c_char_p
    lib.mempath_placement_of.argtypes = [ctypes.c_void_p]
    lib.mempath_peak_bytes.restype = ctypes.c_longlong
    lib.mempath_free_bytes.restype = ctypes.c_longlong
    lib.mempath_free_bytes.argtypes = [ctypes.c_char_p]
    return lib


def new_row(args: argparse.Namespace, case_id: int, name: str, alloc: str, mem: str, n_params: int) -> dict:
    return {"case_id": case_id, "model": args.model, "params": n_params, "weight_bytes": n_params * 2,
            "dtype": args.dtype, "placement": name, "weight_alloc": alloc, "weight_mem": mem, "weight_placement": "",
            "gpu": args.gpu, "batch": args.batch, "prompt_tokens": args.prompt_n, "new_tokens": args.new_tokens,
            "cuda_graph": 0, "status": "ok", "reason": "", "reps": 0, "median_tokens_per_s": math.nan,
            "best_tokens_per_s": math.nan, "path_GBps": math.nan,
            "path_source": Path(args.bw_from).name if args.bw_from else "measured",
            "bound_tokens_per_s": math.nan, "fraction_of_bound": math.nan, "verified": 0,
            "decode_mode": "", "decode_fallback": "", "path_case": "", "prompt": args.prompt_kind,
            "torch_allocator": "caching" if name == "default" else "pluggable",
            "peak_small_bytes": -1, "peak_large_bytes": -1}


def decode_case(args: argparse.Namespace, row: dict, lib, pluggable: bool, path: tuple[float, str] | None,
                samples: list[dict]):
    """One placement in this process: weights, decode, checks, peaks; fills `row` and
    `samples`; returns the generated tokens (a list) for the check across placements."""
    c = CONFIGS[args.model]
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    dev = torch.device("cuda", args.gpu)
    torch.cuda.synchronize()
    if pluggable:
        lib.mempath_reset_peaks()
        if lib.mempath_place(row["weight_alloc"].encode(), row["weight_mem"].encode()) != 0:
            raise RuntimeError(lib.mempath_last_error().decode())
        try:
            w = make_weights(c, dt, dev, args.seed)
        finally:
            lib.mempath_place(None, None)
        row["weight_placement"] = (lib.mempath_placement_of(w["0.q"].data_ptr()) or b"").decode() or "gpu pool"
    else:
        torch.cuda.reset_peak_memory_stats(dev)
        w = make_weights(c, dt, dev, args.seed)
        row["weight_placement"] = f"gpu{args.gpu}"  # the caching allocator's cudaMalloc memory
    with torch.inference_mode():
        decoder = Decoder(c, w, args.batch, args.prompt_n, args.new_tokens, args.seed, args.prompt_kind)
        fallback = decoder.capture() if args.decode == "graph" else ""
        row.update(decode_mode="graph" if decoder.graph is not None else "eager", decode_fallback=fallback,
                   cuda_graph=int(decoder.graph is not None))
        rates = []
        for rep in range(args.warmup + args.reps):
            seconds, tokens = decoder.generate()
            if rep >= args.warmup:
                rate = (args.new_tokens - 1) * args.batch / seconds
                rates.append(rate)
                samples.append({"case_id": row["case_id"], "rep": rep - args.warmup, "time_s": seconds,
                                "tokens_per_s": rate})
        # A graph replays what was captured: its tokens must be the eager steps' own.
        same_as_eager = decoder.graph is None or torch.equal(tokens, decoder.generate(eager=True)[1])
        gbps, row["path_case"] = path if path is not None else (read_bandwidth(w), "")
    torch.cuda.synchronize()
    if pluggable:
        row.update(peak_small_bytes=int(lib.mempath_peak_bytes(0)), peak_large_bytes=int(lib.mempath_peak_bytes(1)))
    else:  # PyTorch's pools split at the same 1 MiB
        stats = torch.cuda.memory_stats(dev)
        row.update(peak_small_bytes=int(stats.get("allocated_bytes.small_pool.peak", -1)),
                   peak_large_bytes=int(stats.get("allocated_bytes.large_pool.peak", -1)))
    rates.sort()
    row.update(reps=len(rates), median_tokens_per_s=rates[len(rates) // 2], best_tokens_per_s=rates[-1],
               path_GBps=gbps, bound_tokens_per_s=bound_tokens_per_s(gbps, row["weight_bytes"], args.batch))
    row["fraction_of_bound"] = row["median_tokens_per_s"] / row["bound_tokens_per_s"]
    row["verified"] = int(same_as_eager)
    if not same_as_eager:
        row.update(status="failed", reason="CUDA graph tokens differ from the eager decode's")
    del w, decoder
    torch.cuda.synchronize()
    return tokens.tolist()


def worker_args(args: argparse.Namespace, result: Path) -> list[str]:
    """The command line of the `default` placement's own process: this run's options."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--model", args.model, "--dtype", args.dtype,
           "--gpu", str(args.gpu), "--placement", "default", "--prompt-tokens", args.prompt_tokens,
           "--new-tokens", str(args.new_tokens), "--batch", str(args.batch), "--reps", str(args.reps),
           "--warmup", str(args.warmup), "--seed", str(args.seed), "--lib", args.lib, "--mempath", args.mempath,
           "--decode", args.decode, "--worker-json", str(result)]
    return cmd + (["--bw-from", args.bw_from] if args.bw_from else [])


def decode_in_worker(args: argparse.Namespace, row: dict, samples: list[dict]):
    """The `default` placement in a process of its own, whose PyTorch never saw the pluggable
    allocator; its row, samples and tokens come back as JSON."""
    with tempfile.TemporaryDirectory(prefix="mempath-llm-") as folder:
        result = Path(folder) / "default.json"
        proc = subprocess.run(worker_args(args, result), capture_output=True, text=True)
        if proc.returncode not in (0, 1) or not result.exists():
            lines = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()
            raise RuntimeError(f"the default placement's process failed: {lines[-1]}")
        got = json.loads(result.read_text())
    case = got["cases"][0]
    row.update({k: v for k, v in case.items() if k != "case_id"})
    samples += [{**s, "case_id": row["case_id"]} for s in got["samples"]]
    return got["tokens"]


def run(args: argparse.Namespace) -> int:
    bw_run = load_bw_run(args.bw_from) if args.bw_from else None
    try:
        topo = json.loads(subprocess.run([args.mempath, "topo", "--json"], capture_output=True, text=True,
                                         check=True).stdout)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as error:
        raise BadInput(f"'{args.mempath} topo --json' failed ({str(error).strip().splitlines()[0]}); "
                       "valid: --mempath path of a mempath build")
    placements = [resolve_placement(p, topo, args.gpu) + (p,) for p in args.placement.split(",")]
    worker = args.worker_json is not None
    if worker and [p[3] for p in placements] != ["default"]:
        raise BadInput("--worker-json runs the default placement alone (llm_placement.py starts it so)")
    # A file that lacks a placement's path fails before the model is built, not after an hour.
    paths = {name: path_from_run(bw_run, args.gpu, a, mem) for a, mem, skip, name in placements
             if bw_run is not None and not skip}
    load_torch()
    if not torch.cuda.is_available():
        raise BadInput("no CUDA GPU visible to PyTorch; valid: run on a GPU node")
    lib = load_library(args.lib)
    # The pluggable allocator must be in place before PyTorch allocates anything; `default`
    # (PyTorch's own allocator) runs in a process of its own, or in this one when alone.
    pluggable = not worker and any(name != "default" for *_, name in placements)
    if pluggable:
        alloc = torch.cuda.memory.CUDAPluggableAllocator(args.lib, "mempath_alloc", "mempath_free")
        torch.cuda.memory.change_current_allocator(alloc)
    in_process_default = not pluggable
    torch.cuda.set_device(args.gpu)
    c = CONFIGS[args.model]
    n_params = param_count(c)
    work = working_bytes(c, args.batch, args.prompt_n, args.new_tokens)

    def free_of(mem: str) -> int | None:
        free = lib.mempath_free_bytes(mem.encode())
        torch.cuda.set_device(args.gpu)
        return free if free >= 0 else None

    attrs = {"schema_version": 1, "tool": "mempath", "tool_version": "0.1.0", "git_revision": git_revision(),
             "command_line": " ".join(sys.argv), "host": socket.gethostname(), "start_time": now(), "end_time": now(),
             "topology": json.dumps(topo), "torch_version": torch.__version__, "cuda_runtime": str(torch.version.cuda)}
    cases: list[dict] = []
    samples: list[dict] = []
    reference = None
    out = Path(args.output)
    exit_code = 0
    for case_id, (a, mem, skip, name) in enumerate(placements):
        row = new_row(args, case_id, name, a, mem, n_params)
        if not skip:
            skip = fit_problem(row["weight_bytes"], work, mem, args.gpu, topo, free_of)
        if skip:
            row.update(status="skipped", reason=skip)
        else:
            try:
                if name == "default" and not in_process_default:
                    tokens = decode_in_worker(args, row, samples)
                else:
                    tokens = decode_case(args, row, lib, name != "default", paths.get(name), samples)
                if row["status"] == "ok":
                    reference = tokens if reference is None else reference
                    if tokens != reference:
                        row.update(status="failed", verified=0,
                                   reason="generated tokens differ from the first placement's")
            except Exception as error:  # a placement that fails is recorded, the next one runs
                row.update(status="failed", reason=(str(error).splitlines() or [repr(error)])[0])
        exit_code = exit_code or (1 if row["status"] == "failed" else 0)
        cases.append(row)
        if worker:
            continue
        attrs["end_time"] = now()
        write_h5(out, attrs, cases, samples)
        extra = (f" tokens_per_s={row['median_tokens_per_s']:.2f} bound_tokens_per_s={row['bound_tokens_per_s']:.2f}"
                 f" path_GBps={row['path_GBps']:.1f} decode_mode={row['decode_mode']}"
                 f" peak_small_bytes={row['peak_small_bytes']} peak_large_bytes={row['peak_large_bytes']}"
                 if row["status"] == "ok" else "")
        reason = f' reason="{row["reason"]}"' if row["reason"] else ""
        print(f"MEMPATH llm model={args.model} placement={name} alloc={a} mem={mem} prompt={args.prompt_kind}"
              f" prompt_tokens={args.prompt_n} new_tokens={args.new_tokens} status={row['status']}{extra}{reason}",
              flush=True)
    if worker:
        Path(args.worker_json).write_text(json.dumps({"cases": cases, "samples": samples, "tokens": reference}))
    return exit_code


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_revision() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parser() -> argparse.ArgumentParser:
    build = Path(os.environ.get("MEMPATH_BIN", REPO / "build" / "mempath")).parent
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama-3.2-1b", help=f"shape: {', '.join(CONFIGS)} (default llama-3.2-1b)")
    p.add_argument("--dtype", default="bf16", help="bf16 (default) or fp16")
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--placement", default="hbm,host,host-remote,peer",
                   help=f"comma list: {PLACEMENTS} (default: hbm,host,host-remote,peer)")
    p.add_argument("--prompt-tokens", default="128",
                   help="N random prompt tokens (default 128), or empty: the BOS token alone, as Hugging Face "
                        "generate starts from an empty prompt")
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lib", default=str(build / "libmempath_placement.so"))
    p.add_argument("--mempath", default=str(build / "mempath"))
    p.add_argument("--decode", default="graph",
                   help="graph (default: one CUDA graph per decode step, eager where capture fails) or eager")
    p.add_argument("--bw-from", metavar="RUN.h5",
                   help="take the path GB/s of each placement from this mempath result (/bw reads, /memcpy) "
                        "instead of measuring it")
    p.add_argument("--output", default=f"mempath-llm-{socket.gethostname()}.h5")
    # Internal: how run() starts the `default` placement in a process of its own.
    p.add_argument("--worker-json", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.model not in CONFIGS:
            raise BadInput(f"invalid --model '{args.model}'; valid: {', '.join(CONFIGS)}")
        if args.dtype not in DTYPES:
            raise BadInput(f"invalid --dtype '{args.dtype}'; valid: {', '.join(DTYPES)}")
        if args.decode not in DECODE_MODES:
            raise BadInput(f"invalid --decode '{args.decode}'; valid: {', '.join(DECODE_MODES)}")
        args.prompt_n, args.prompt_kind = parse_prompt(args.prompt_tokens)
        for flag in ("new_tokens", "batch", "reps"):
            if getattr(args, flag) < (2 if flag == "new_tokens" else 1):
                raise BadInput(f"--{flag.replace('_', '-')} {getattr(args, flag)} is too small; valid: a positive count")
        return run(args)
    except BadInput as error:
        print(f"llm_placement: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
