#!/usr/bin/env python3
"""LLM decode with the weights placed in a chosen memory (docs/cli.md).

A Llama-style decoder (RMSNorm, rotary embeddings, grouped-query attention with a KV cache,
SwiGLU MLP) with random weights of a real model's shape (nothing is downloaded), made once on
the GPU and copied into each memory asked for through mempath's allocator layer by a pluggable
CUDA allocator (libmempath_placement.so); everything else (activations, KV cache) in the GPU's
own memory. The placement `default` is the baseline without the pluggable allocator: PyTorch's
own caching allocator, everything in the GPU's memory, run in a process of its own (a
process's allocator cannot change once it allocated). Greedy decoding of --new-tokens after a
--prompt-tokens prompt (`empty`: the BOS token alone, what Hugging Face generate starts from
with an empty prompt), batch --batch. The decode step is libmempath_decode.so's fused kernels
(`--decode fused`: five kernels a layer, the next token chosen on the GPU), else PyTorch's ops
(`graph`, `eager`); either is one CUDA graph a step, so that the time is the GPU's and not
Python's launches; tokens/s from CUDA events around the decode steps; the generated tokens
checked against the plain PyTorch decode, teacher-forced. The memory-time bound: the GPU's read
bandwidth of the placed weights, measured here or taken from a mempath run (--bw-from), over the
bytes a decode step reads (the weights but an untied embedding table, and the KV cache). A
placement whose weights do not fit in the free memory is skipped with the reason. Writes
/llm/cases and /llm/samples (docs/schema.md). --from SNAPSHOT plans only (an EXPECT line).
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import json
import math
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def analysis(module: str):
    """``MODULE`` of the analysis (``results.io``): in a checkout its analysis/ folder (a
    checkout's script writes with its own analysis, even where another is installed), loaded
    as the package ``analysis`` from its path, with no sys.path entry that could shadow a
    module of the caller's; elsewhere (`cmake --install` puts this script in share/mempath/llm)
    the distribution `pip install .` installed, mempath_analysis."""
    folder = REPO / "analysis"
    if not (folder / "__init__.py").is_file():
        return importlib.import_module(f"mempath_analysis.{module}")
    if "analysis" not in sys.modules:
        spec = importlib.util.spec_from_file_location("analysis", folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        sys.modules["analysis"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["analysis"])
    return importlib.import_module(f"analysis.{module}")

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
DECODE_MODES = ("fused", "graph", "eager")
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


def write_h5(path: Path, attrs: dict, cases: list[dict], samples: list[dict],
             conditions: CaseConditions | None = None) -> None:
    """The results writer's layout (docs/schema.md), atomically, through analysis/results/h5writer.py,
    with the conditions read so far."""
    # The script runs as `python3 src/llm/llm_placement.py` from anywhere (ReFrame, docs/cli.md):
    # h5writer needs only numpy and h5py (no pandas).
    # The columns are src/core/families.def's llm rows, as the C++ writers' are theirs.
    writer = analysis("results.h5writer")
    table_columns, write_result = writer.table_columns, writer.write_result
    tables = {name: table_columns(name, rows) for name, rows in (("llm/cases", cases), ("llm/samples", samples))}
    more_attrs, more_tables = conditions.recorded() if conditions else ({}, {})
    write_result(path, {**attrs, **more_attrs}, {**tables, **more_tables})


class CaseConditions:
    """The conditions of this run's cases (docs/methodology.md "Conditions"), read by `mempath
    conditions`, the binary's one reader of NVML and the host: a reading just before a case's
    decode (its probe, warm-up and timed repetitions) and one just after, never inside it; this
    process's CPU time and its worker's the run's own. The `default` placement's worker asks
    the same reader through the pipes it inherits (`fds`, `inherited`). Where the binary cannot
    (a build older than the command), the run goes on without them and says so."""

    def __init__(self, mempath: str | None, folder: Path | None = None):
        self.path = folder / "conditions.h5" if folder else None
        self.proc: subprocess.Popen | None = None
        self._to = self._from = None
        if mempath is None:
            return
        try:
            self.proc = subprocess.Popen([mempath, "conditions", "--output", str(self.path), "--of", str(os.getpid())],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
            self._to, self._from = self.proc.stdin, self.proc.stdout
            self._answered("ready")
        except OSError as error:
            self._give_up(str(error))

    @classmethod
    def inherited(cls, fds: str) -> CaseConditions:
        """The parent's reader, through the pipe ends it passed ("READ,WRITE")."""
        made = cls(None)
        read, write = (int(fd) for fd in fds.split(","))
        made._from, made._to = os.fdopen(read, "r"), os.fdopen(write, "w")
        return made

    def fds(self) -> tuple[int, ...]:
        """The pipe ends a worker inherits (none where nothing is read)."""
        return (self._from.fileno(), self._to.fileno()) if self._to else ()

    #: A reading that hangs (an NVML call) ends the conditions after this long, never the run.
    ANSWER_LIMIT_S = 60.0

    def _answered(self, word: str) -> None:
        if self._from is None:
            return
        line = self._from.readline() if select.select([self._from], [], [], self.ANSWER_LIMIT_S)[0] else None
        if line is None:
            self._give_up(f"no answer from the reader in {self.ANSWER_LIMIT_S:g} s")
        elif line.strip() != word:
            why = "the reader ended"
            if self.proc:
                why = (self.proc.communicate()[1].strip().splitlines() or [f"exit {self.proc.returncode}"])[-1]
            self._give_up(why)

    def _give_up(self, why: str) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = self._to = self._from = None
        print(f"llm: conditions not recorded: {why}", file=sys.stderr, flush=True)

    def _ask(self, request: str, answer: str = "ok") -> None:
        if self._to is None:
            return
        try:
            self._to.write(request + "\n")
            self._to.flush()
        except OSError as error:
            self._give_up(str(error))
            return
        self._answered(answer)

    def begin(self) -> None:
        """A case starts now: the window starts at the last reading (one taken first unless recent)."""
        self._ask("begin")

    def end(self, case_id: int, **parts: str) -> None:
        """The case ended; `parts` as a MEMPATH line names them (pu=gpu0, mem=numa0)."""
        self._ask(f"end {case_id} " + " ".join(f"{k}={v}" for k, v in parts.items() if v))

    def finish(self) -> None:
        """The run's last reading (the last case's window ends there)."""
        self._ask("finish")
        if self.proc:
            self.proc.wait()

    def recorded(self) -> tuple[dict, dict]:
        """The conditions attributes and tables written so far, for this run's result file."""
        if self.path is None or not self.path.exists():
            return {}, {}
        import h5py
        writer, families = analysis("results.h5writer"), analysis("results.families")
        conditions = analysis("results.conditions")
        with h5py.File(self.path, "r") as f:
            attrs = {name: f.attrs[name] for name in conditions.ATTRIBUTES if name in f.attrs}
            tables = {}
            for table in conditions.TABLES.values():
                if table not in f:
                    continue
                tables[table] = [writer.Column(c.name, writer.KIND_OF_TYPE[c.type], c.unit,
                                               [v.decode() if isinstance(v, bytes) else v for v in f[table][c.name][()]])
                                 for c in families.columns(table)]
        return attrs, tables


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


def logical_tensors(c: dict) -> list[tuple[str, tuple[int, ...]]]:
    """Every weight of the model as the published checkpoint names them (q, k, v, gate, up
    apart), in the order that gives each its seed."""
    head_dim = c["hidden"] // c["heads"]
    kv = c["kv_heads"] * head_dim
    shapes = [("embed", (c["vocab"], c["hidden"])), ("norm", (c["hidden"],))]
    if not c["tied"]:
        shapes.append(("head", (c["vocab"], c["hidden"])))
    for i in range(c["layers"]):
        shapes += [(f"{i}.q", (c["hidden"], c["hidden"])), (f"{i}.k", (kv, c["hidden"])), (f"{i}.v", (kv, c["hidden"])),
                   (f"{i}.o", (c["hidden"], c["hidden"])), (f"{i}.gate", (c["intermediate"], c["hidden"])),
                   (f"{i}.up", (c["intermediate"], c["hidden"])), (f"{i}.down", (c["hidden"], c["intermediate"])),
                   (f"{i}.n1", (c["hidden"],)), (f"{i}.n2", (c["hidden"],))]
    return shapes


#: The stacked tensors a layer keeps (rows of q, k, v one after the other; gate's then up's):
#: the fused decode reads each as one matrix, the plain decode takes row ranges of them.
STACKED = {"qkv": ("q", "k", "v"), "gu": ("gate", "up")}


def make_weights(c: dict, dtype, device, seed: int) -> dict:
    """Every weight of the model, seeded per logical tensor (the same weights in every memory
    and either layout), q|k|v and gate|up stacked into one tensor each (STACKED)."""
    shapes = dict(logical_tensors(c))
    part_of = {f"{i}.{p}": (f"{i}.{name}", k) for i in range(c["layers"]) for name, parts in STACKED.items()
               for k, p in enumerate(parts)}
    w: dict = {}
    for name, shape in shapes.items():
        if name in part_of:
            stacked, k = part_of[name]
            if k == 0:
                layer = stacked.split(".")[0]
                parts = [shapes[f"{layer}.{p}"] for p in STACKED[stacked.split(".")[1]]]
                w[stacked] = torch.empty((sum(p[0] for p in parts), shape[1]), dtype=dtype, device=device)
        else:
            w[name] = torch.empty(shape, dtype=dtype, device=device)
    g = torch.Generator(device=device)
    row = {}
    for k, (name, shape) in enumerate(shapes.items()):
        if name in part_of:
            stacked, _ = part_of[name]
            start = row.get(stacked, 0)
            t = w[stacked][start:start + shape[0]]
            row[stacked] = start + shape[0]
        else:
            t = w[name]
        g.manual_seed(seed + k)
        if len(shape) == 1:
            t.fill_(1.0)
        else:
            t.normal_(0.0, 1.0 / math.sqrt(shape[1]), generator=g)
    return w


def part(c: dict, w: dict, layer: int, name: str):
    """A logical weight (q, k, v, gate, up) as the row range of its stacked tensor."""
    head_dim = c["hidden"] // c["heads"]
    sizes = {"q": c["hidden"], "k": c["kv_heads"] * head_dim, "v": c["kv_heads"] * head_dim,
             "gate": c["intermediate"], "up": c["intermediate"]}
    stacked = next(s for s, parts in STACKED.items() if name in parts)
    start = sum(sizes[p] for p in STACKED[stacked][:STACKED[stacked].index(name)])
    return w[f"{layer}.{stacked}"][start:start + sizes[name]]


def read_bytes_per_step(c: dict, dtype_bytes: int = 2) -> int:
    """Bytes of weights a batch-1 decode step reads: every matrix and norm but an untied
    embedding table, of which a step reads one row (a tied one is the lm_head, read whole)."""
    embed = c["vocab"] * c["hidden"] * dtype_bytes
    return param_count(c) * dtype_bytes - (0 if c["tied"] else embed)


def kv_bytes_per_step(c: dict, slots: float, dtype_bytes: int = 2) -> float:
    """Bytes of KV cache a decode step reads: keys and values of `slots` positions a layer."""
    head_dim = c["hidden"] // c["heads"]
    return 2 * c["layers"] * c["kv_heads"] * head_dim * dtype_bytes * slots


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

    def forward(self, tokens, pos, all_positions: bool = False):
        """Logits of the last position (of every position with `all_positions`); stores the
        keys and values of positions `pos`."""
        c, w = self.c, self.w
        b, t = tokens.shape
        head_dim = c["hidden"] // c["heads"]
        mask = self.slots[None, :] <= pos[:, None]  # causal, and hides the slots not yet written
        x = F.embedding(tokens, w["embed"])
        for i in range(c["layers"]):
            h = rms(x, w[f"{i}.n1"])
            q = F.linear(h, part(c, w, i, "q")).view(b, t, c["heads"], head_dim).transpose(1, 2)
            k = F.linear(h, part(c, w, i, "k")).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
            v = F.linear(h, part(c, w, i, "v")).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            kc, vc = self.cache[i]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            repeat = c["heads"] // c["kv_heads"]
            a = F.scaled_dot_product_attention(q, grouped(kc, repeat), grouped(vc, repeat), attn_mask=mask)
            x = x + F.linear(a.transpose(1, 2).reshape(b, t, c["hidden"]), w[f"{i}.o"])
            h = rms(x, w[f"{i}.n2"])
            x = x + F.linear(F.silu(F.linear(h, part(c, w, i, "gate"))) * F.linear(h, part(c, w, i, "up")),
                             w[f"{i}.down"])
        x = rms(x if all_positions else x[:, -1:], w["norm"])
        return F.linear(x, w["head"] if "head" in w else w["embed"])

    def forward_all(self, tokens):
        """Logits at every position of `tokens` (from position 0; verify_tokens' one pass)."""
        return self.forward(tokens, self.slots[:tokens.shape[1]], all_positions=True)

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

    def generate(self, eager: bool = False, steps: int | None = None):
        """One repetition: seconds of `steps` decode steps (default new_tokens - 1; CUDA events
        around the replays or eager steps, so every kernel of every token is inside) and the
        tokens so far (batch x steps + 1)."""
        steps = self.new_tokens - 1 if steps is None else steps
        self.prefill()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(steps):
            if self.graph is not None and not eager:
                self.graph.replay()
            else:
                self.step()
        e1.record()
        torch.cuda.synchronize(self.device)
        return e0.elapsed_time(e1) / 1e3, self.out[:, :steps + 1].cpu()


class FusedDecoder:
    """The batch-1 decode step of libmempath_decode.so (src/llm/decode_kernels.cu): five
    kernels a layer, the weights streamed with 16-byte loads, the norms, rotary embedding,
    attention, SwiGLU and residual adds folded in, the next token chosen and its embedding
    read on the GPU. Every input of a step lives on the GPU, so one CUDA graph of one step
    (captured once per placement) is replayed for the prompt and for every new token. The
    state is this object's own (residual stream, KV cache, position, output tokens)."""

    EPS = 1e-5

    def __init__(self, lib, c: dict, w: dict, prompt, new_tokens: int):
        self.lib, self.c, self.w, self.new_tokens = lib, c, w, new_tokens
        dev, dt = w["embed"].device, w["embed"].dtype
        self.dtype = 0 if dt == torch.float16 else 1
        head_dim = c["hidden"] // c["heads"]
        self.head_dim, self.kv_dim = head_dim, c["kv_heads"] * head_dim
        self.prompt = prompt.to(device=dev, dtype=torch.int32).reshape(-1).contiguous()
        self.prompt_len = int(self.prompt.numel())
        self.positions = self.prompt_len + new_tokens
        empty = lambda *shape, dtype=dt: torch.zeros(shape, dtype=dtype, device=dev)  # noqa: E731
        self.x = empty(c["hidden"])
        self.qkv = empty(c["hidden"] + 2 * self.kv_dim)
        self.attn = empty(c["hidden"])
        self.act = empty(c["intermediate"])
        self.logits = empty(c["vocab"], dtype=torch.float32)
        self.pos = empty(1, dtype=torch.int32)
        self.out = empty(new_tokens, dtype=torch.int32)
        self.k_cache = empty(c["layers"], self.positions, self.kv_dim)
        self.v_cache = empty(c["layers"], self.positions, self.kv_dim)
        self.head = w["head"] if "head" in w else w["embed"]
        self.graph = None

    def _call(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"fused decode: {what}: {self.lib.mempath_decode_error().decode() or f'error {code}'}")

    def launch_step(self) -> None:
        """One step's kernels on the current stream (the graph captures them)."""
        lib, c, w, d = self.lib, self.c, self.w, self.dtype
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
        eps = ctypes.c_float(self.EPS)
        hidden, inter, kv = c["hidden"], c["intermediate"], self.kv_dim
        for i in range(c["layers"]):
            self._call(lib.mempath_decode_gemv(d, 0, ptr(w[f"{i}.qkv"]), ptr(self.x), ptr(w[f"{i}.n1"]), ptr(self.qkv),
                                               hidden + 2 * kv, hidden, eps, stream), "q|k|v")
            self._call(lib.mempath_decode_attention(d, ptr(self.qkv), ptr(self.k_cache[i]), ptr(self.v_cache[i]),
                                                    ptr(self.attn), ptr(self.pos), c["heads"], c["kv_heads"],
                                                    self.head_dim, self.positions, stream), "attention")
            self._call(lib.mempath_decode_gemv(d, 1, ptr(w[f"{i}.o"]), ptr(self.attn), None, ptr(self.x),
                                               hidden, hidden, eps, stream), "o")
            self._call(lib.mempath_decode_gemv(d, 2, ptr(w[f"{i}.gu"]), ptr(self.x), ptr(w[f"{i}.n2"]), ptr(self.act),
                                               2 * inter, hidden, eps, stream), "gate|up")
            self._call(lib.mempath_decode_gemv(d, 1, ptr(w[f"{i}.down"]), ptr(self.act), None, ptr(self.x),
                                               hidden, inter, eps, stream), "down")
        self._call(lib.mempath_decode_gemv(d, 3, ptr(self.head), ptr(self.x), ptr(w["norm"]), ptr(self.logits),
                                           c["vocab"], hidden, eps, stream), "lm_head")
        self._call(lib.mempath_decode_next_token(d, ptr(self.logits), c["vocab"], ptr(w["embed"]), hidden, ptr(self.x),
                                                 ptr(self.prompt), self.prompt_len, ptr(self.out), self.new_tokens,
                                                 ptr(self.pos), stream), "next token")

    def restart(self) -> None:
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self._call(self.lib.mempath_decode_start(self.dtype, ctypes.c_void_p(self.w["embed"].data_ptr()),
                                                 self.c["hidden"], ctypes.c_void_p(self.prompt.data_ptr()),
                                                 ctypes.c_void_p(self.x.data_ptr()),
                                                 ctypes.c_void_p(self.pos.data_ptr()), stream), "start")

    def step(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.launch_step()

    def capture(self) -> str:
        """The step's graph; '' or why not (then each step launches its kernels)."""
        try:
            side = torch.cuda.Stream(self.w["embed"].device)
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.restart()
                for _ in range(min(2, self.prompt_len + self.new_tokens - 1)):
                    self.launch_step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                self.launch_step()
        except Exception as error:  # noqa: BLE001  the kernels launch one by one instead
            torch.cuda.synchronize()
            return "CUDA graph capture of the fused step failed: " + (str(error).strip().splitlines() or ["?"])[0]
        self.graph = graph
        return ""

    def prefill(self) -> None:
        """The prompt, one position a step (not timed): afterwards out[0] holds the first new token."""
        self.restart()
        for _ in range(self.prompt_len):
            self.step()

    def generate(self, steps: int):
        """Seconds of `steps` decode steps after the prompt (CUDA events around them) and the
        tokens so far (the first new token and one a step)."""
        self.prefill()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(steps):
            self.step()
        e1.record()
        torch.cuda.synchronize()
        return e0.elapsed_time(e1) / 1e3, self.out[:steps + 1].long().cpu()


def load_decode_library(path: str):
    """libmempath_decode.so (the fused decode's kernels), or None with why it cannot be used."""
    lib_path = Path(path)
    if not lib_path.is_file():
        return None, f"{lib_path} does not exist (a CUDA build makes it)"
    try:
        lib = ctypes.CDLL(str(lib_path))
    except OSError as error:
        return None, f"{lib_path} does not load ({error})"
    lib.mempath_decode_error.restype = ctypes.c_char_p
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    lib.mempath_decode_gemv.argtypes = [i, i, p, p, p, p, i, i, f, p]
    lib.mempath_decode_attention.argtypes = [i, p, p, p, p, p, i, i, i, i, p]
    lib.mempath_decode_next_token.argtypes = [i, p, i, p, i, p, p, i, p, i, p, p]
    lib.mempath_decode_start.argtypes = [i, p, i, p, p, p, p]
    lib.mempath_decode_programmatic_launch.restype = i
    lib.mempath_decode_read_seconds.argtypes = [p, p, i, i, p]
    return lib, ""


def near_tie_tolerance(logits) -> float:
    """How far below the reference's best logit a chosen token may be and still count as a
    near-tie: the two decodes round in different orders (fp32 sums, then the model's dtype),
    about 1e-2 of the logits' range over a model's layers."""
    return 0.02 * max(1.0, float(logits.abs().max()))


def verify_tokens(reference, prompt, tokens) -> dict:
    """Greedy tokens checked against the plain decode's, teacher-forced: one forward pass of
    the plain decode over prompt + tokens[:-1] gives the logits at each step given the same
    history; a token is equal to the plain decode's argmax, or a near-tie (its plain logit
    within near_tie_tolerance of the best), or wrong."""
    seq = torch.cat([prompt.reshape(1, -1).to(tokens.device), tokens.reshape(1, -1)[:, :-1]], dim=1)
    seq = seq.to(reference.device)
    logits = reference.forward_all(seq).float()[0, prompt.numel() - 1:]
    best = logits.argmax(-1).cpu()
    got = tokens.reshape(-1).cpu()
    chosen = logits.gather(1, got.to(logits.device)[:, None])[:, 0].cpu()
    top = logits.max(-1).values.cpu()
    equal = int((best == got).sum())
    margin = (top - chosen)
    tol = near_tie_tolerance(logits)
    ties = int(((best != got) & (margin <= tol)).sum())
    return {"tokens_checked": int(got.numel()), "tokens_equal": equal, "near_ties": ties,
            "tokens_wrong": int(got.numel()) - equal - ties, "max_margin": float(margin.max()) if got.numel() else 0.0}


def read_bandwidth(w, dec_lib=None) -> float:
    """GB/s of reading every weight matrix, best of 3: libmempath_decode.so's streaming read
    (the GEMV's loads) where it is loaded, else one multi-tensor PyTorch kernel (a sum per
    tensor would be launch-bound in HBM; the max-abs norm reads every byte and cannot
    overflow fp16), which reads HBM at about half the rate (2,100 of 4,400 GB/s on an H200)."""
    tensors = [t for t in w.values() if t.dim() == 2]
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    if dec_lib is not None:
        ptrs = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
        sizes = (ctypes.c_ulonglong * len(tensors))(*[t.numel() * t.element_size() for t in tensors])
        best = ctypes.c_double()
        if dec_lib.mempath_decode_read_seconds(ptrs, sizes, len(tensors), 3, ctypes.byref(best)) == 0:
            return nbytes / best.value / 1e9
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
    try:
        load_run = analysis("results.io").load_run
        InputError = analysis("errors").InputError
    except ImportError as error:
        raise BadInput(f"--bw-from needs pandas and h5py ({error}); valid: the Python of the analysis")
    try:
        return load_run(path)
    except InputError as error:
        raise BadInput(f"--bw-from {error}") from None


def path_from_run(run, gpu: int, alloc: str, mem: str) -> tuple[float, str]:
    """(GB/s, case) of the GPU reading `mem` (analysis/results/gpu_reads.py's rule, which
    Fig. 17 applies to the paper set's files); BadInput saying what the file has."""
    reader = analysis("results.gpu_reads")
    gpu_reads, read_path = reader.gpu_reads, reader.read_path
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
            "peak_small_bytes": -1, "peak_large_bytes": -1, "timed_tokens": 0, "weight_read_bytes": -1,
            "kv_read_bytes": -1, "tokens_checked": 0, "tokens_equal": 0, "near_ties": 0, "tokens_wrong": 0,
            "max_margin": math.nan}


#: A repetition decodes at most this long (s): a slow placement (weights read over PCIe, a
#: quarter second a token) times fewer tokens, at least MIN_TIMED, not --new-tokens.
REP_BUDGET_S = 2.0
MIN_TIMED = 8


def timed_steps(step_s: float, new_tokens: int) -> int:
    """Decode steps a repetition times: every new token after the first, or as many as fit
    REP_BUDGET_S when a step is slow (at least MIN_TIMED)."""
    most = new_tokens - 1
    if step_s * most <= REP_BUDGET_S:
        return most
    return min(most, max(MIN_TIMED, math.ceil(REP_BUDGET_S / step_s)))


def placed_weights(built: dict, lib, alloc: str, mem: str) -> dict:
    """The built weights copied into `mem` through mempath's allocator layer (the pluggable
    allocator's placement while they are allocated): moved, not built again."""
    if lib.mempath_place(alloc.encode(), mem.encode()) != 0:
        raise RuntimeError(lib.mempath_last_error().decode())
    try:
        w = {name: torch.empty_like(t) for name, t in built.items()}
    finally:
        lib.mempath_place(None, None)
    for name, t in built.items():
        w[name].copy_(t)
    torch.cuda.synchronize()
    return w


def fused_or_why(args: argparse.Namespace, dec_lib, dec_why: str, c: dict, w: dict, reference):
    """The fused decoder of these weights, checked on its first tokens against the plain
    decode (teacher-forced), or None and why the plain decode runs instead."""
    if dec_lib is None:
        return None, f"no fused decode: {dec_why}"
    if args.batch != 1:
        return None, "no fused decode: it decodes batch 1 (--batch 1)"
    fused = FusedDecoder(dec_lib, c, w, reference.prompt[0], args.new_tokens)
    why = fused.capture()
    probe = min(args.new_tokens - 1, 4)
    _, tokens = fused.generate(probe)
    check = verify_tokens(reference, reference.prompt[0], tokens)
    if check["tokens_wrong"]:
        return None, (f"no fused decode: {check['tokens_wrong']} of its first {check['tokens_checked']} tokens differ "
                      "from the plain decode's")
    return fused, why


def decode_case(args: argparse.Namespace, row: dict, lib, pluggable: bool, path: tuple[float, str] | None,
                samples: list[dict], built: dict, dec_lib=None, dec_why: str = "",
                conditions: CaseConditions | None = None):
    """One placement in this process: the built weights moved into its memory, the decode
    (fused, else PyTorch's op by op in a CUDA graph) in the conditions' window, its tokens
    checked, the peaks; fills `row` and `samples`; returns the generated tokens (a list) for
    the check across placements."""
    c = CONFIGS[args.model]
    dev = torch.device("cuda", args.gpu)
    torch.cuda.synchronize()
    if pluggable:
        lib.mempath_reset_peaks()
        # The built weights the placements copy from are held already: the placement's peak
        # is what it holds beyond them, as the `default` process's own peak is.
        held = [lib.mempath_peak_bytes(large) for large in (0, 1)]
        w = placed_weights(built, lib, row["weight_alloc"], row["weight_mem"])
        row["weight_placement"] = (lib.mempath_placement_of(w["0.qkv"].data_ptr()) or b"").decode() or "gpu pool"
    else:
        w = built
        row["weight_placement"] = f"gpu{args.gpu}"  # the caching allocator's cudaMalloc memory
    dtype_bytes = w["embed"].element_size()
    with torch.inference_mode():
        reference = Decoder(c, w, args.batch, args.prompt_n, args.new_tokens, args.seed, args.prompt_kind)
        fused, why = fused_or_why(args, dec_lib, dec_why, c, w, reference) if args.decode == "fused" else (None, "")
        if fused is not None:
            decoder, mode = fused, "fused"
            fallback = why
            run_steps = fused.generate
        else:
            fallback = why
            capture_why = reference.capture() if args.decode in ("graph", "fused") else ""
            fallback = "; ".join(x for x in (fallback, capture_why) if x)
            decoder, mode = reference, "graph" if reference.graph is not None else "eager"
            run_steps = lambda steps: reference.generate(steps=steps)  # noqa: E731
        row.update(decode_mode=mode, decode_fallback=fallback, cuda_graph=int(getattr(decoder, "graph", None) is not None))
        if conditions:
            torch.cuda.synchronize()
            conditions.begin()
        probe = min(args.new_tokens - 1, 3)
        seconds, _ = run_steps(probe)
        steps = timed_steps(seconds / probe, args.new_tokens)
        rates = []
        for rep in range(args.warmup + args.reps):
            seconds, tokens = run_steps(steps)
            if rep >= args.warmup:
                rate = steps * args.batch / seconds
                rates.append(rate)
                samples.append({"case_id": row["case_id"], "rep": rep - args.warmup, "time_s": seconds,
                                "tokens_per_s": rate})
        if conditions:
            torch.cuda.synchronize()
            conditions.end(row["case_id"], pu=f"gpu{args.gpu}", mem=row["weight_mem"])
        if mode == "fused" or args.batch == 1:
            row.update(verify_tokens(reference, reference.prompt[0], tokens[0] if tokens.dim() > 1 else tokens))
        else:  # batch > 1 runs the plain decode only: a graph replays what was captured
            same = decoder.graph is None or torch.equal(tokens, reference.generate(eager=True, steps=steps)[1])
            row.update(tokens_checked=int(tokens.numel()), tokens_equal=int(tokens.numel()) if same else 0,
                       near_ties=0, tokens_wrong=0 if same else int(tokens.numel()))
        gbps, row["path_case"] = path if path is not None else (read_bandwidth(w, dec_lib), "")
    torch.cuda.synchronize()
    if pluggable:
        row.update(peak_small_bytes=int(lib.mempath_peak_bytes(0) - held[0]),
                   peak_large_bytes=int(lib.mempath_peak_bytes(1) - held[1]))
    else:  # PyTorch's pools split at the same 1 MiB
        stats = torch.cuda.memory_stats(dev)
        row.update(peak_small_bytes=int(stats.get("allocated_bytes.small_pool.peak", -1)),
                   peak_large_bytes=int(stats.get("allocated_bytes.large_pool.peak", -1)))
    rates.sort()
    # A step reads the weights and the KV cache of the positions before it: on average over the
    # timed steps (positions prompt .. prompt + steps - 1) prompt + (steps + 1) / 2 slots.
    kv = kv_bytes_per_step(c, args.prompt_n + (steps + 1) / 2, dtype_bytes) * args.batch
    row.update(reps=len(rates), median_tokens_per_s=rates[len(rates) // 2], best_tokens_per_s=rates[-1],
               timed_tokens=steps, weight_read_bytes=read_bytes_per_step(c, dtype_bytes), kv_read_bytes=int(kv),
               path_GBps=gbps)
    row["bound_tokens_per_s"] = bound_tokens_per_s(gbps, row["weight_read_bytes"] + row["kv_read_bytes"], args.batch)
    row["fraction_of_bound"] = row["median_tokens_per_s"] / row["bound_tokens_per_s"]
    row["verified"] = int(row["tokens_wrong"] == 0)
    if row["tokens_wrong"]:
        row.update(status="failed", reason=f"{row['tokens_wrong']} of {row['tokens_checked']} tokens differ from the "
                                           f"plain decode's (teacher-forced; {row['near_ties']} near-ties allowed)")
    out = (tokens[0] if tokens.dim() > 1 else tokens).tolist()
    del w, decoder, reference
    torch.cuda.synchronize()
    return out


def worker_args(args: argparse.Namespace, result: Path, case_id: int, fds: tuple[int, ...]) -> list[str]:
    """The command line of the `default` placement's own process: this run's options, its
    case's number and the conditions reader's pipe ends."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--model", args.model, "--dtype", args.dtype,
           "--gpu", str(args.gpu), "--placement", "default", "--prompt-tokens", args.prompt_tokens,
           "--new-tokens", str(args.new_tokens), "--batch", str(args.batch), "--reps", str(args.reps),
           "--warmup", str(args.warmup), "--seed", str(args.seed), "--lib", args.lib, "--mempath", args.mempath,
           "--decode", args.decode, "--decode-lib", args.decode_lib, "--worker-json", str(result),
           "--case-id", str(case_id)]
    return cmd + (["--bw-from", args.bw_from] if args.bw_from else []) + \
        (["--conditions-fds", ",".join(map(str, fds))] if fds else [])


def decode_in_worker(args: argparse.Namespace, row: dict, samples: list[dict], conditions: CaseConditions | None):
    """The `default` placement in a process of its own, whose PyTorch never saw the pluggable
    allocator; its row, samples and tokens come back as JSON."""
    fds = conditions.fds() if conditions else ()
    with tempfile.TemporaryDirectory(prefix="mempath-llm-") as folder:
        result = Path(folder) / "default.json"
        proc = subprocess.run(worker_args(args, result, row["case_id"], fds), capture_output=True, text=True,
                              pass_fds=fds)
        if proc.returncode not in (0, 1) or not result.exists():
            lines = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()
            raise RuntimeError(f"the default placement's process failed: {lines[-1]}")
        got = json.loads(result.read_text())
    case = got["cases"][0]
    row.update({k: v for k, v in case.items() if k != "case_id"})
    samples += [{**s, "case_id": row["case_id"]} for s in got["samples"]]
    return got["tokens"]


def modelled_read_gbps(mempath: str, snapshot: str, gpu: int, alloc: str, mem: str) -> float:
    """The duration model's GB/s of the GPU reading `mem` (alloc), asked of the binary: the
    modelled time of two plans of `mempath bw` that differ only in their repetitions of a
    large read, whose difference is those repetitions' bytes over the rate (the model's
    constants stay in src/core/duration_model.hpp)."""
    def expected(reps: int) -> float:
        out = subprocess.run([mempath, "bw", "--op", "read", "--pu", f"gpu{gpu}", "--mem", mem, "--alloc", alloc,
                              "--size", "4GiB", "--reps", str(reps), "--from", snapshot],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("EXPECT ") and " expected_s=" in line:
                return float(line.rsplit("expected_s=", 1)[1].split()[0])
        raise BadInput(f"'{mempath} bw --from {snapshot}' gave no EXPECT line for gpu{gpu} reading {mem} ({alloc})")
    low, high = expected(1000), expected(3000)
    return 2000 * (4 << 30) / max(high - low, 1e-9) / 1e9


#: What the plan adds (s): a PyTorch process's start (import, CUDA context), a placement's
#: graph capture and fused-decode check; the fused decode's share of the read rate.
PROCESS_START_S = 5.0
CAPTURE_S = 1.0
DECODE_EFFICIENCY = 0.8


def plan(args: argparse.Namespace) -> int:
    """--from SNAPSHOT: the run's cases and modelled seconds on that node, as mempath's own
    `EXPECT` line; nothing is measured or written."""
    try:
        topo = json.loads(subprocess.run([args.mempath, "topo", "--from", args.plan_from, "--json"],
                                         capture_output=True, text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as error:
        raise BadInput(f"'{args.mempath} topo --from {args.plan_from} --json' failed "
                       f"({str(error).strip().splitlines()[0]}); valid: a snapshot of `mempath topo --save DIR`")
    c = CONFIGS[args.model]
    weight = param_count(c) * 2
    per_step = read_bytes_per_step(c) + kv_bytes_per_step(c, args.prompt_n + args.new_tokens / 2)
    placements = [resolve_placement(p, topo, args.gpu) + (p,) for p in args.placement.split(",")]
    hbm = modelled_read_gbps(args.mempath, args.plan_from, args.gpu, "device", f"gpu{args.gpu}") * 1e9
    total, planned = PROCESS_START_S, 0
    built = False
    for alloc, mem, skip, name in placements:
        if skip:
            continue
        planned += 1
        rate = hbm if name == "default" else modelled_read_gbps(args.mempath, args.plan_from, args.gpu, alloc, mem) * 1e9
        if name == "default" or not built:  # the weights made on the GPU (default: in its own process)
            total += 2 * weight / hbm + (PROCESS_START_S if name == "default" and len(placements) > 1 else 0)
            built = built or name != "default"
        step = per_step / (rate * DECODE_EFFICIENCY)
        steps = timed_steps(step, args.new_tokens)
        total += weight / rate + CAPTURE_S + step * (min(args.new_tokens - 1, 3) + 4)  # moved in, checked
        total += (args.warmup + args.reps) * steps * step + weight / rate  # the decode, the tokens' check
        if not args.bw_from:
            total += 3 * weight / rate  # read_bandwidth's own read of the weights
    print(f"EXPECT llm cases={len(placements)} planned={planned} skipped={len(placements) - planned} "
          f"expected_s={total:.1f}")
    return 0


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
    dec_lib, dec_why = load_decode_library(args.decode_lib) if args.decode == "fused" else (None, "")
    if dec_lib is not None:
        print("fused decode: programmatic dependent launch "
              + ("on" if dec_lib.mempath_decode_programmatic_launch() else "off (before Hopper, or MEMPATH_DECODE_PDL=0)"))
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
    built: dict = {}  # the model's weights, made once on the GPU, then copied to each placement

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
    # The node's conditions of each case: read for a worker by its parent's reader.
    scratch = None if worker else tempfile.TemporaryDirectory(prefix="mempath-llm-conditions-")
    if scratch:
        conditions = CaseConditions(args.mempath, Path(scratch.name))
    else:
        conditions = CaseConditions.inherited(args.conditions_fds) if args.conditions_fds else None
    for case_id, (a, mem, skip, name) in enumerate(placements, start=args.case_id):
        row = new_row(args, case_id, name, a, mem, n_params)
        if not skip:
            # Beside its copy in `mem`, the GPU keeps the built weights the placements copy.
            kept = row["weight_bytes"] if pluggable and name != "default" and not built else 0
            skip = fit_problem(row["weight_bytes"], work + kept, mem, args.gpu, topo, free_of)
        if skip:
            row.update(status="skipped", reason=skip)
        else:
            try:
                if name == "default" and not in_process_default:
                    tokens = decode_in_worker(args, row, samples, conditions)
                else:
                    if not built:
                        t0 = time.perf_counter()
                        built.update(make_weights(c, torch.bfloat16 if args.dtype == "bf16" else torch.float16,
                                                  torch.device("cuda", args.gpu), args.seed))
                        torch.cuda.synchronize()
                        attrs["weights_built_ms"] = int(1000 * (time.perf_counter() - t0))
                    tokens = decode_case(args, row, lib, name != "default", paths.get(name), samples, built,
                                         dec_lib, dec_why, conditions)
                if row["status"] == "ok":
                    reference = tokens if reference is None else reference
                    # Placements decode with the same kernels: the same tokens, as far as both ran.
                    common = min(len(tokens), len(reference))
                    if tokens[:common] != reference[:common]:
                        row.update(status="failed", verified=0,
                                   reason="generated tokens differ from the first placement's")
            except Exception as error:  # a placement that fails is recorded, the next one runs
                row.update(status="failed", reason=(str(error).splitlines() or [repr(error)])[0])
        exit_code = exit_code or (1 if row["status"] == "failed" else 0)
        cases.append(row)
        if worker:
            continue
        attrs["end_time"] = now()
        write_h5(out, attrs, cases, samples, conditions)
        extra = (f" tokens_per_s={row['median_tokens_per_s']:.2f} bound_tokens_per_s={row['bound_tokens_per_s']:.2f}"
                 f" fraction_of_bound={row['fraction_of_bound']:.3f} timed_tokens={row['timed_tokens']}"
                 f" tokens_equal={row['tokens_equal']}/{row['tokens_checked']} near_ties={row['near_ties']}"
                 f" path_GBps={row['path_GBps']:.1f} decode_mode={row['decode_mode']}"
                 f" peak_small_bytes={row['peak_small_bytes']} peak_large_bytes={row['peak_large_bytes']}"
                 if row["status"] == "ok" else "")
        reason = f' reason="{row["reason"]}"' if row["reason"] else ""
        print(f"MEMPATH llm model={args.model} placement={name} alloc={a} mem={mem} prompt={args.prompt_kind}"
              f" prompt_tokens={args.prompt_n} new_tokens={args.new_tokens} status={row['status']}{extra}{reason}",
              flush=True)
    if worker:
        Path(args.worker_json).write_text(json.dumps({"cases": cases, "samples": samples, "tokens": reference}))
    else:  # the last case's window ends at the run's last reading
        conditions.finish()
        write_h5(out, attrs, cases, samples, conditions)
        scratch.cleanup()
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
    p.add_argument("--decode", default="fused",
                   help="fused (default: libmempath_decode.so's kernels, one CUDA graph a step; PyTorch's graph "
                        "where they cannot run, with the reason), graph (PyTorch op by op, one CUDA graph a step, "
                        "eager where capture fails) or eager")
    p.add_argument("--decode-lib", default=str(build / "libmempath_decode.so"),
                   help="the fused decode's library (default: beside --lib)")
    p.add_argument("--bw-from", metavar="RUN.h5",
                   help="take the path GB/s of each placement from this mempath result (/bw reads, /memcpy) "
                        "instead of measuring it")
    p.add_argument("--output", default=f"mempath-llm-{socket.gethostname()}.h5")
    p.add_argument("--from", dest="plan_from", metavar="SNAPSHOT",
                   help="plan only: the cases and modelled seconds on the node of this snapshot (`mempath topo "
                        "--save DIR`), as an EXPECT line; nothing runs (no GPU needed)")
    # Internal: how run() starts the `default` placement in a process of its own.
    p.add_argument("--worker-json", help=argparse.SUPPRESS)
    p.add_argument("--case-id", type=int, default=0, help=argparse.SUPPRESS)  # a worker's case's number
    p.add_argument("--conditions-fds", help=argparse.SUPPRESS)  # a worker's pipe ends to its parent's reader
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
        return plan(args) if args.plan_from else run(args)
    except BadInput as error:
        print(f"llm_placement: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
