#!/usr/bin/env python3
"""The PyTorch referee of `mempath llm`, which starts it as a subprocess.

The model is core/llm_model.hpp's: the shapes of core/llm_models.def, weights drawn from a
counter-based hash (weight_values, one definition for numpy and torch alike), a hashed prompt.
A Llama-style decoder: RMSNorm (eps 1e-5), rotary embedding (base 10000, pairs 2i and 2i+1),
grouped-query attention, SwiGLU, an untied or tied lm_head.

  check  the tokens a decode generated, teacher-forced against PyTorch's plain decode: one
         forward pass over prompt + tokens[:-1], each layer's weights made on the GPU right
         before the whole sequence passes through it and freed right after (a 138 GB
         Llama-2-70B is checked on an 80 GB GPU).
  time   one timed case: `default`, every weight in PyTorch's own caching allocator, decoded by
         libmempath_decode.so's fused kernels (one CUDA graph a step); `vllm`, vLLM's
         --cpu-offload-gb way: the last --offload-layers layers' weights in --offload-to
         (ALLOC:MEM, through libmempath_placement.so's pluggable allocator, which then serves
         every allocation of the process), PyTorch's own ops reading them where they lie
         (one CUDA graph a step; eager where capture fails).

Each prints one JSON object on stdout. Bad input: one line `referee: error: WHAT; valid: WHAT`
on stderr, exit 2; a failure while running: one line `referee: failed: WHAT`, exit 1.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import re
import sys
from pathlib import Path

import numpy as np


class BadInput(Exception):
    pass


# ---- the model: shapes, weights and prompt, exactly as core/llm_model.hpp defines them ----

def models_def() -> Path:
    """core/llm_models.def: the source tree's, else the one an install put under share/mempath."""
    here = Path(__file__).resolve().parent
    candidates = (here.parent / "core" / "llm_models.def", Path(sys.prefix) / "share" / "mempath" / "llm_models.def",
                  here.parent / "llm_models.def")  # cmake --install puts this script in share/mempath/llm
    for path in candidates:
        if path.is_file():
            return path
    raise BadInput(f"no llm_models.def at {candidates[0]} or {candidates[1]}; valid: a source tree's "
                   "src/core/llm_models.def or an install's share/mempath/llm_models.def")


def load_models(path: Path | None = None) -> dict[str, dict]:
    """The rows MEMPATH_LLM_MODEL(name, hidden, layers, heads, kv_heads, intermediate, vocab,
    tied, bos) of core/llm_models.def, read as text, by name."""
    models = {}
    for line in (path or models_def()).read_text().splitlines():
        match = re.match(r"^MEMPATH_LLM_MODEL\((.*)\)\s*$", line.strip())
        if match:
            name, *numbers = (f.strip() for f in match.group(1).split(","))
            keys = ("hidden", "layers", "heads", "kv_heads", "intermediate", "vocab", "tied", "bos")
            c = dict(zip(keys, map(int, numbers)), name=name.strip('"'))
            c["tied"] = bool(c["tied"])
            models[c["name"]] = c
    return models


M32 = 0xFFFFFFFF
EMBED_TENSOR, NORM_TENSOR, HEAD_TENSOR, PROMPT_TENSOR = 0, 1, 2, 0xFFFFFFFF
#: A layer's tensors in checkpoint order: tensor number first + 9 x layer + position here.
PARTS = ("q", "k", "v", "o", "gate", "up", "down", "n1", "n2")
#: The tensors a layer keeps: q|k|v and gate|up stacked (rows of q, k, v one after the other;
#: gate's then up's), which the fused decode reads as one matrix each and the plain decode as
#: row ranges (layer_parts).
LAYER_TENSORS = ("qkv", "o", "gu", "down", "n1", "n2")


def tensor_number(c: dict, layer: int, part: str) -> int:
    return (2 if c["tied"] else 3) + 9 * layer + PARTS.index(part)


def _mul32(h, k: int):
    """h x k mod 2^32 of int64 values below 2^32 (numpy, torch or Python ints) without
    overflowing 64 bits: the low and high 16 bits of h apart."""
    return ((h & 0xFFFF) * k + (((h >> 16) * k & 0xFFFF) << 16)) & M32


def llm_hash(seed: int, tensor: int, index):
    """core/llm_model.hpp's llm_hash (lowbias32 of a mixed counter), uint32 arithmetic on
    int64 values: `index` a Python int or an int64 array (numpy or torch)."""
    h = (((seed * 0x9E3779B1 + tensor * 0x85EBCA77) & M32) + index) & M32
    h = h ^ (h >> 16)
    h = _mul32(h, 0x7FEB352D)
    h = h ^ (h >> 15)
    h = _mul32(h, 0x846CA68B)
    return h ^ (h >> 16)


def llm_scale(fan_in: int) -> float:
    """float32(sqrt(3 / fan_in)), the square root taken in double (core/llm_model.cpp)."""
    return float(np.float32(math.sqrt(3.0 / fan_in)))


def weight_values(seed: int, tensor: int, index, fan_in: int):
    """float32 values of elements `index` (an int64 array, numpy or torch: the same operations
    on either) of a matrix of fan-in `fan_in`: (2u - 1) x llm_scale(fan_in), u the top 24 bits
    of the hash over 2^24; every step exact but the last product, rounded once in float32."""
    h = llm_hash(seed, tensor, index) >> 8
    u = (h.astype(np.float32) if isinstance(h, np.ndarray) else h.float()) * 2.0 ** -24
    return (u * 2.0 - 1.0) * llm_scale(fan_in)


def dtype_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """numpy float32 values rounded to nearest even into fp16 or bf16, as uint16 bit patterns
    (torch's .to(float16 / bfloat16) rounds alike)."""
    if dtype == "fp16":
        return values.astype(np.float16).view(np.uint16)
    bits = values.astype(np.float32).view(np.uint32).astype(np.int64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def prompt_tokens(c: dict, text: str, seed: int) -> list[int]:
    """`empty`: the BOS token alone (Hugging Face generate's empty prompt); N: N tokens drawn
    from the hash (core/llm_model.cpp's llm_prompt)."""
    if text == "empty":
        return [c["bos"]]
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= 65536:
        raise BadInput(f"invalid --prompt-tokens '{text}'; valid: empty (the BOS token alone) or 1 .. 65536")
    return (llm_hash(seed, PROMPT_TENSOR, np.arange(int(text), dtype=np.int64)) % c["vocab"]).tolist()


# ---- the weights on the GPU (torch) ----

def load_torch(what: str):
    """Import PyTorch into this module's globals (bad input is found without it)."""
    global torch, F
    try:
        import torch as torch_module
        import torch.nn.functional as functional
    except ImportError as error:
        raise BadInput(f"PyTorch is needed for `{what}` ({error}); valid: a Python with torch and CUDA")
    torch, F = torch_module, functional
    return torch


torch = F = None  # set by load_torch()

#: Elements made at once: the hash's int64 temporaries stay at a few hundred MB.
FILL_CHUNK = 1 << 23


def fill(t, seed: int, tensor: int):
    """Tensor number `tensor` written into `t` (a contiguous matrix, or a norm: all 1) on its
    device: weight_values in float32, rounded to t's dtype (round-to-nearest-even)."""
    flat = t.view(-1)
    if t.dim() == 1:
        return flat.fill_(1.0)
    for start in range(0, flat.numel(), FILL_CHUNK):
        index = torch.arange(start, min(start + FILL_CHUNK, flat.numel()), dtype=torch.int64, device=t.device)
        flat[start:start + index.numel()].copy_(weight_values(seed, tensor, index, t.shape[1]))
    return t


def layer_parts(c: dict) -> dict[str, tuple[str, int, int]]:
    """Each logical tensor of a layer: (the tensor of LAYER_TENSORS holding it, first row, rows)."""
    h, kv, inter = c["hidden"], c["kv_heads"] * (c["hidden"] // c["heads"]), c["intermediate"]
    return {"q": ("qkv", 0, h), "k": ("qkv", h, kv), "v": ("qkv", h + kv, kv), "o": ("o", 0, h),
            "gate": ("gu", 0, inter), "up": ("gu", inter, inter), "down": ("down", 0, h),
            "n1": ("n1", 0, h), "n2": ("n2", 0, h)}


def layer_weights(c: dict, seed: int, layer: int, dtype, device) -> dict:
    """One layer's weights made on `device` from the hash, q|k|v and gate|up stacked (LAYER_TENSORS)."""
    h, kv, inter = c["hidden"], c["kv_heads"] * (c["hidden"] // c["heads"]), c["intermediate"]
    shapes = {"qkv": (h + 2 * kv, h), "o": (h, h), "gu": (2 * inter, h), "down": (h, inter), "n1": (h,), "n2": (h,)}
    lw = {name: torch.empty(shape, dtype=dtype, device=device) for name, shape in shapes.items()}
    for name, (stacked, first, rows) in layer_parts(c).items():
        fill(lw[stacked][first:first + rows], seed, tensor_number(c, layer, name))
    return lw


def matrix(c: dict, seed: int, tensor: int, dtype, device):
    return fill(torch.empty((c["vocab"], c["hidden"]), dtype=dtype, device=device), seed, tensor)


def model_weights(c: dict, seed: int, dtype, device, offload: int = 0, place=None) -> dict:
    """Every weight of the model on the GPU, made layer by layer from the hash; the last
    `offload` layers' moved by `place` (a dict of tensors to its copy elsewhere)."""
    w = {"embed": matrix(c, seed, EMBED_TENSOR, dtype, device),
         "norm": torch.ones(c["hidden"], dtype=dtype, device=device)}
    if not c["tied"]:
        w["head"] = matrix(c, seed, HEAD_TENSOR, dtype, device)
    for i in range(c["layers"]):
        lw = layer_weights(c, seed, i, dtype, device)
        if i >= c["layers"] - offload:
            lw = place(lw)
        w.update({f"{i}.{name}": t for name, t in lw.items()})
    return w


# ---- PyTorch's plain decode (moved from llm_placement.py) ----

def part(c: dict, lw: dict, name: str):
    """A logical weight (q, k, v, gate, up, ...) of a layer's weights: its row range."""
    stacked, first, rows = layer_parts(c)[name]
    return lw[stacked][first:first + rows]


def layer_of(w: dict, i: int) -> dict:
    return {name: w[f"{i}.{name}"] for name in LAYER_TENSORS}


def rms(x, w):
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w


def grouped(kv, repeat: int):
    """Each KV head repeated for its query heads (repeat_interleave on dim 1, as a view + copy)."""
    b, h, t, d = kv.shape
    return kv[:, :, None].expand(b, h, repeat, t, d).reshape(b, h * repeat, t, d)


def rope_inv(c: dict, device):
    head_dim = c["hidden"] // c["heads"]
    return 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))


def rope(x, pos, inv):
    ang = pos[:, None].float() * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def layer_forward(c: dict, lw: dict, x, pos, mask, kc, vc, inv):
    """One layer over x (batch x positions x hidden) at positions `pos`: their keys and values
    stored into kc, vc; attention over every slot under `mask` (None: causal, the positions
    being 0 .. t-1 and the caches t slots)."""
    b, t, _ = x.shape
    head_dim = c["hidden"] // c["heads"]
    h = rms(x, lw["n1"])
    q = F.linear(h, part(c, lw, "q")).view(b, t, c["heads"], head_dim).transpose(1, 2)
    k = F.linear(h, part(c, lw, "k")).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
    v = F.linear(h, part(c, lw, "v")).view(b, t, c["kv_heads"], head_dim).transpose(1, 2)
    q, k = rope(q, pos, inv), rope(k, pos, inv)
    kc.index_copy_(2, pos, k)
    vc.index_copy_(2, pos, v)
    repeat = c["heads"] // c["kv_heads"]
    a = F.scaled_dot_product_attention(q, grouped(kc, repeat), grouped(vc, repeat), attn_mask=mask,
                                       is_causal=mask is None)
    x = x + F.linear(a.transpose(1, 2).reshape(b, t, c["hidden"]), lw["o"])
    h = rms(x, lw["n2"])
    return x + F.linear(F.silu(F.linear(h, part(c, lw, "gate"))) * F.linear(h, part(c, lw, "up")), lw["down"])


class Decoder:
    """Greedy decode of one set of weights on their GPU with static tensors: the KV cache,
    the current token, its position and the output tokens are allocated once, and attention
    covers every cache slot under a mask instead of a slice, so a decode step has fixed shapes
    and addresses and can be captured in a CUDA graph. Eager mode runs the same step op by op,
    so both modes launch the same kernels and generate the same tokens."""

    def __init__(self, c: dict, w: dict, prompt, new_tokens: int):
        self.c, self.w, self.new_tokens = c, w, new_tokens
        dev, dt = w["embed"].device, w["embed"].dtype
        self.device = dev
        self.prompt = prompt.to(device=dev, dtype=torch.long).reshape(1, -1)
        self.prompt_tokens = self.prompt.shape[1]
        head_dim = c["hidden"] // c["heads"]
        total = self.prompt_tokens + new_tokens
        self.inv = rope_inv(c, dev)
        self.slots = torch.arange(total, device=dev)
        shape = (1, c["kv_heads"], total, head_dim)
        self.cache = [(torch.zeros(shape, dtype=dt, device=dev), torch.zeros(shape, dtype=dt, device=dev))
                      for _ in range(c["layers"])]
        self.token = torch.zeros(1, 1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.out = torch.zeros(1, new_tokens, dtype=torch.long, device=dev)
        self.graph = None

    def forward(self, tokens, pos):
        """Logits of the last position; stores the keys and values of positions `pos`."""
        c, w = self.c, self.w
        mask = self.slots[None, :] <= pos[:, None]  # causal, and hides the slots not yet written
        x = F.embedding(tokens, w["embed"])
        for i in range(c["layers"]):
            x = layer_forward(c, layer_of(w, i), x, pos, mask, *self.cache[i], self.inv)
        return F.linear(rms(x[:, -1:], w["norm"]), w.get("head", w["embed"]))

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

    def generate(self, steps: int):
        """One repetition: seconds of `steps` decode steps (CUDA events around the replays or
        eager steps, so every kernel of every token is inside) and the tokens so far (the
        first new token and one a step)."""
        self.prefill()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(steps):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.step()
        e1.record()
        torch.cuda.synchronize(self.device)
        return e0.elapsed_time(e1) / 1e3, self.out[0, :steps + 1].cpu()


class FusedDecoder:
    """The batch-1 decode step of libmempath_decode.so (src/llm/decode_library.cu): five
    kernels a layer, the weights streamed with 16-byte loads, the norms, rotary embedding,
    attention, SwiGLU and residual adds folded in, the next token chosen and its embedding
    read on the GPU. Every input of a step lives on the GPU, so one CUDA graph of one step
    (captured once) is replayed for the prompt and for every new token. The state is this
    object's own (residual stream, KV cache, position, output tokens)."""

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
    """libmempath_decode.so (the fused decode's kernels) through ctypes."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as error:
        raise BadInput(f"--decode-lib {path} does not load ({error}); valid: libmempath_decode.so of a CUDA build")
    lib.mempath_decode_error.restype = ctypes.c_char_p
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
    lib.mempath_decode_gemv.argtypes = [i, i, p, p, p, p, i, i, f, p]
    lib.mempath_decode_attention.argtypes = [i, p, p, p, p, p, i, i, i, i, p]
    lib.mempath_decode_next_token.argtypes = [i, p, i, p, i, p, p, i, p, i, p, p]
    lib.mempath_decode_start.argtypes = [i, p, i, p, p, p, p]
    return lib


def load_library(path: str):
    """libmempath_placement.so through ctypes (the pluggable allocator's entry points, its
    placement and its peaks)."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as error:
        raise BadInput(f"--placement-lib {path} does not load ({error}); valid: libmempath_placement.so of a CUDA "
                       "build")
    lib.mempath_last_error.restype = ctypes.c_char_p
    lib.mempath_peak_bytes.restype = ctypes.c_longlong
    return lib


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


# ---- the referee's checks ----

def near_tie_tolerance(logits) -> float:
    """How far below the reference's best logit a chosen token may be and still count as a
    near-tie: the two decodes round in different orders (fp32 sums, then the model's dtype),
    about 1e-2 of the logits' range over a model's layers."""
    return 0.02 * max(1.0, float(logits.abs().max()))


def verify_tokens(forward_all, prompt, tokens) -> dict:
    """Greedy tokens checked against the plain decode's, teacher-forced: one forward pass of
    the plain decode over prompt + tokens[:-1] (`forward_all(sequence, first)`: the logits of
    positions first ..) gives the logits at each step given the same history; a token is equal
    to the plain decode's argmax, or a near-tie (its plain logit within near_tie_tolerance of
    the best), or wrong."""
    seq = torch.cat([prompt.reshape(-1), tokens.reshape(-1)[:-1]])
    logits = forward_all(seq, prompt.numel() - 1).float()
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


def layerwise_logits(c: dict, seed: int, dtype, device, seq, first: int):
    """The plain decode's logits at positions first .. of `seq` (one sequence, from position
    0), never holding the model: each layer's weights made on the GPU right before the whole
    sequence passes through it and freed after; the embedding kept only where it is the head."""
    seq = seq.to(device)[None]
    t = seq.shape[1]
    pos, inv = torch.arange(t, device=device), rope_inv(c, device)
    kv_shape = (1, c["kv_heads"], t, c["hidden"] // c["heads"])
    embed = matrix(c, seed, EMBED_TENSOR, dtype, device)
    x = F.embedding(seq, embed)
    if not c["tied"]:
        del embed
    for i in range(c["layers"]):
        lw = layer_weights(c, seed, i, dtype, device)
        x = layer_forward(c, lw, x, pos, None, torch.empty(kv_shape, dtype=dtype, device=device),
                          torch.empty(kv_shape, dtype=dtype, device=device), inv)
        del lw
    head = embed if c["tied"] else matrix(c, seed, HEAD_TENSOR, dtype, device)
    return F.linear(rms(x[:, first:], torch.ones(c["hidden"], dtype=dtype, device=device)), head)[0]


def cuda_device(gpu: int):
    if not torch.cuda.is_available():
        raise BadInput("no CUDA GPU visible to PyTorch; valid: run on a GPU node")
    if gpu >= torch.cuda.device_count():
        raise BadInput(f"--gpu {gpu}: PyTorch sees {torch.cuda.device_count()} GPU(s); "
                       f"valid: 0 .. {torch.cuda.device_count() - 1}")
    return torch.device("cuda", gpu)


def torch_dtype(name: str):
    return torch.float16 if name == "fp16" else torch.bfloat16


def check(a: argparse.Namespace, c: dict) -> dict:
    load_torch("check")
    dev = cuda_device(a.gpu)
    torch.cuda.set_device(dev)
    dtype = torch_dtype(a.dtype)
    with torch.inference_mode():
        return verify_tokens(lambda seq, first: layerwise_logits(c, a.seed, dtype, dev, seq, first),
                             torch.tensor(a.prompt), torch.tensor(a.tokens))


#: A repetition decodes at most this long (s): a slow case (weights read over PCIe, a quarter
#: second a token) times fewer tokens, at least MIN_TIMED, not --new-tokens.
REP_BUDGET_S = 2.0
MIN_TIMED = 8


def timed_steps(step_s: float, new_tokens: int) -> int:
    """Decode steps a repetition times: every new token after the first, or as many as fit
    REP_BUDGET_S when a step is slow (at least MIN_TIMED)."""
    most = new_tokens - 1
    if step_s * most <= REP_BUDGET_S:
        return most
    return min(most, max(MIN_TIMED, math.ceil(REP_BUDGET_S / step_s)))


def time_case(a: argparse.Namespace, c: dict) -> dict:
    load_torch("time")
    dev = cuda_device(a.gpu)
    lib = None
    if a.offload_to:  # the pluggable allocator must be in place before PyTorch allocates anything
        lib = load_library(a.placement_lib)
        alloc, mem = a.offload_to.split(":", 1)
        if lib.mempath_place(alloc.encode(), mem.encode()) != 0:
            why = lib.mempath_last_error().decode()
            raise BadInput(f"--offload-to {a.offload_to}: {why}" if "; valid:" in why else
                           f"--offload-to {a.offload_to}: {why}; valid: ALLOC:MEM of this node (pinned:numa0)")
        lib.mempath_place(None, None)
        torch.cuda.memory.change_current_allocator(
            torch.cuda.memory.CUDAPluggableAllocator(a.placement_lib, "mempath_alloc", "mempath_free"))
    dec_lib = load_decode_library(a.decode_lib) if a.way == "default" else None
    torch.cuda.set_device(dev)
    with torch.inference_mode():
        place = (lambda lw: placed_weights(lw, lib, alloc, mem)) if lib else None  # noqa: E731
        w = model_weights(c, a.seed, torch_dtype(a.dtype), dev, a.offload_layers, place)
        torch.cuda.synchronize()
        if lib:  # the peaks from here: the weights held and what the decode adds
            lib.mempath_reset_peaks()
        else:
            torch.cuda.reset_peak_memory_stats(dev)
        prompt = torch.tensor(a.prompt, device=dev)
        if dec_lib is not None:
            decoder, mode = FusedDecoder(dec_lib, c, w, prompt, a.new_tokens), "fused"
            why = decoder.capture()
        else:
            decoder = Decoder(c, w, prompt, a.new_tokens)
            why = decoder.capture()
            mode = "graph" if decoder.graph is not None else "eager"
        probe = min(a.new_tokens - 1, 3)
        seconds, _ = decoder.generate(probe)
        steps = timed_steps(seconds / probe, a.new_tokens)
        timed = []
        for rep in range(a.warmup + a.reps):
            seconds, tokens = decoder.generate(steps)
            if rep >= a.warmup:
                timed.append(seconds)
    torch.cuda.synchronize()
    if lib:
        peaks = [int(lib.mempath_peak_bytes(large)) for large in (0, 1)]
    else:  # PyTorch's pools split at the same 1 MiB
        stats = torch.cuda.memory_stats(dev)
        peaks = [int(stats.get(f"allocated_bytes.{pool}_pool.peak", -1)) for pool in ("small", "large")]
    return {"seconds": timed, "timed_steps": steps, "tokens": tokens.tolist(), "decode_mode": mode,
            "decode_fallback": why, "peak_small_bytes": peaks[0], "peak_large_bytes": peaks[1]}


# ---- the command line ----

CHECK_SYNOPSIS = ("check --model M --dtype fp16|bf16 --seed S --prompt-tokens empty|N --tokens T0,T1,... --gpu G")
TIME_SYNOPSIS = ("time --way default|vllm --model M --dtype fp16|bf16 --seed S --prompt-tokens empty|N "
                 "--new-tokens N --reps R --warmup W --gpu G --decode-lib PATH --placement-lib PATH "
                 "[--offload-layers K --offload-to ALLOC:MEM]")


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one `referee: error: WHAT; valid: WHAT` line (exit 2)."""

    def __init__(self, *args, synopsis: str = f"{CHECK_SYNOPSIS} | {TIME_SYNOPSIS}", **kwargs):
        super().__init__(*args, allow_abbrev=False, **kwargs)
        self.synopsis = synopsis

    def error(self, message: str):
        raise BadInput(f"{message}; valid: {self.synopsis}")


#: Each flag's metavar and help (every one is required but --offload-layers and --offload-to).
FLAGS = {
    "--model": ("M", "a model of core/llm_models.def"),
    "--dtype": ("fp16|bf16", "the weights' and activations' type"),
    "--seed": ("S", "the weights' and the prompt's seed, 0 .. 2^32-1"),
    "--prompt-tokens": ("empty|N", "the BOS token alone, or N tokens drawn from the seed"),
    "--gpu": ("G", "the GPU's index, as PyTorch counts them"),
    "--tokens": ("T0,T1,...", "the generated tokens: the first new one and one a further step"),
    "--way": ("default|vllm", "default: PyTorch's allocator, the fused kernels; vllm: PyTorch's ops, the last "
                              "--offload-layers layers in --offload-to"),
    "--new-tokens": ("N", "tokens a repetition generates (2 or more)"),
    "--reps": ("R", "timed repetitions"),
    "--warmup": ("W", "untimed repetitions before them"),
    "--decode-lib": ("PATH", "libmempath_decode.so (the default way's kernels)"),
    "--placement-lib": ("PATH", "libmempath_placement.so (the pluggable allocator of --offload-to)"),
    "--offload-layers": ("K", "the vllm way: how many of the last layers lie in --offload-to (default 0)"),
    "--offload-to": ("ALLOC:MEM", "the vllm way: where they lie (pinned:numa0: page-locked host memory)"),
}


def parser() -> Parser:
    p = Parser(prog="referee.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    for name, synopsis in (("check", CHECK_SYNOPSIS), ("time", TIME_SYNOPSIS)):
        s = sub.add_parser(name, synopsis=synopsis, help=synopsis)
        for flag, (metavar, text) in FLAGS.items():
            if f"{flag} " in synopsis:
                s.add_argument(flag, metavar=metavar, help=text)
    return p


def integer(a: argparse.Namespace, flag: str, low: int, high: int, valid: str) -> int:
    text = getattr(a, flag.lstrip("-").replace("-", "_"))
    if not re.fullmatch(r"[0-9]+", text or "x") or not low <= int(text) <= high:
        raise BadInput(f"invalid {flag} '{text}'; valid: {valid}")
    return int(text)


def validated(a: argparse.Namespace) -> dict:
    """The arguments checked (before PyTorch is imported) and converted in place; the model."""
    if a.command is None:
        raise BadInput(f"no command; valid: {CHECK_SYNOPSIS} | {TIME_SYNOPSIS}")
    synopsis = CHECK_SYNOPSIS if a.command == "check" else TIME_SYNOPSIS
    optional = {"offload_layers", "offload_to"}
    for key, value in vars(a).items():
        if value is None and key not in optional:
            raise BadInput(f"missing --{key.replace('_', '-')}; valid: {synopsis}")
    models = load_models()
    if a.model not in models:
        raise BadInput(f"unknown --model '{a.model}'; valid: {', '.join(models)}")
    c = models[a.model]
    if a.dtype not in ("fp16", "bf16"):
        raise BadInput(f"invalid --dtype '{a.dtype}'; valid: fp16, bf16")
    a.seed = integer(a, "--seed", 0, M32, f"0 .. {M32}")
    a.gpu = integer(a, "--gpu", 0, 1 << 16, "a GPU's index (0, 1, ...)")
    a.prompt = prompt_tokens(c, a.prompt_tokens, a.seed)
    if a.command == "check":
        tokens = a.tokens.split(",")
        if not all(re.fullmatch(r"[0-9]+", t) and int(t) < c["vocab"] for t in tokens):
            raise BadInput(f"invalid --tokens '{a.tokens}'; valid: a comma list of token ids, each 0 .. "
                           f"{c['vocab'] - 1} ({a.model}'s vocabulary)")
        a.tokens = [int(t) for t in tokens]
        return c
    if a.way not in ("default", "vllm"):
        raise BadInput(f"invalid --way '{a.way}'; valid: default (PyTorch's allocator, the fused kernels), "
                       "vllm (vLLM's --cpu-offload-gb way: PyTorch's ops, the last layers offloaded)")
    a.new_tokens = integer(a, "--new-tokens", 2, 1 << 20, "2 or more")
    a.reps = integer(a, "--reps", 1, 1 << 20, "1 or more")
    a.warmup = integer(a, "--warmup", 0, 1 << 20, "0 or more")
    a.offload_layers = 0 if a.offload_layers is None else integer(a, "--offload-layers", 0, c["layers"],
                                                                   f"0 .. {c['layers']} ({a.model}'s layers)")
    if a.offload_to is not None and not re.fullmatch(r"[^:\s]+:[^:\s]+", a.offload_to):
        raise BadInput(f"invalid --offload-to '{a.offload_to}'; valid: ALLOC:MEM (pinned:numa0, device:gpu1)")
    if a.way == "default" and (a.offload_layers or a.offload_to):
        raise BadInput("--offload-layers and --offload-to are the vllm way's; valid: --way vllm, or default "
                       "without them")
    if a.offload_layers and not a.offload_to:
        raise BadInput(f"--offload-layers {a.offload_layers} needs --offload-to; valid: --offload-to ALLOC:MEM "
                       "(pinned:numa0)")
    for flag, needed in (("--decode-lib", a.way == "default"), ("--placement-lib", bool(a.offload_to))):
        path = getattr(a, flag[2:].replace("-", "_"))
        if needed and not Path(path).is_file():
            what = "libmempath_decode.so" if flag == "--decode-lib" else "libmempath_placement.so"
            raise BadInput(f"{flag} {path} does not exist; valid: the path of {what} (a CUDA build)")
    return c


def main(argv: list[str] | None = None) -> int:
    try:
        a = parser().parse_args(argv)
        c = validated(a)
        result = check(a, c) if a.command == "check" else time_case(a, c)
    except BadInput as error:
        print(f"referee: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001  one line for the C++ side, not a traceback
        print(f"referee: failed: {(str(error).strip().splitlines() or [type(error).__name__])[0]}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
