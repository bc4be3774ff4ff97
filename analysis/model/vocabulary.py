"""A node's vocabulary, decided once: whether it is a Grace node, whether a memory is a GPU's,
and the word for each memory and processor. Every figure, table, report and fleet word asks
here, so that one node is never called two things (issue 50: Fig. 7's panel said
``cpu0 (Grace)`` with an LPDDR5X peak while its role groups said ``local DDR``).

Is a node a Grace node (``is_grace``)? By its CPU, as the topology names it:
``cpu_model`` naming Grace (mempath names an aarch64 part 0xd4f ``NVIDIA Grace (Neoverse
V2)``; src/core/topology_discovery.cpp). A Grace CPU is a Grace whether or not a GPU sits
beside it: a Grace-only node (tests/fixtures/grace_numa_fake) has LPDDR5X and no HBM. A
GH200 superchip adds its Hopper's HBM (a NUMA node of kind ``hbm``) and the NVLink-C2C
link, which only a Grace has, so they are evidence of a Grace only where the topology names
no CPU model (``cpu_model`` missing, empty or ``unknown``). The CPU model decides where it
is known: HBM or C2C are facts of the GPU, not of the CPU, and a CPU the topology names is
what it is named.

The words: a host memory is ``LPDDR`` on Grace (its part: ``LPDDR5X``), ``DDR`` elsewhere; a
GPU's memory is ``HBM`` as a NUMA node (kind ``hbm``), ``device memory`` as cudaMalloc sees
it (kind ``device``): the paper's words (``kind_word``, and model/roles.py's roles built
from them: ``local LPDDR``, ``peer HBM``). What the memory itself is, whichever way it is
reached (``memory_word``: the fleet's case words, the report's ``gpu0 HBM``): the host word,
or ``HBM`` for any GPU memory (a GH200's device memory and its HBM node are one memory).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The memory kinds a GPU owns (topology ``memories[].kind``): its HBM shown as a NUMA node
#: (Grace Hopper) and its device memory (cudaMalloc).
GPU_MEMORY_KINDS = ("hbm", "device")

LPDDR, DDR, HBM, DEVICE_MEMORY = "LPDDR", "DDR", "HBM", "device memory"
#: Grace's host memory by its part (the peak model's module, the published classes).
LPDDR5X = "LPDDR5X"
#: The host memory words: Grace's, then x86's.
HOST_WORDS = (LPDDR, DDR)
#: Every memory word, in the paper's order (host memory, HBM, device memory).
MEMORY_WORDS = (LPDDR, DDR, HBM, DEVICE_MEMORY)
#: A processor's word beside its name (``cpu0 (Grace)``, ``gpu0 (Hopper)``).
GRACE, HOPPER = "Grace", "Hopper"

_UNKNOWN_MODELS = ("", "unknown", "?")


def on_gpu(kind: Any) -> bool:
    """Whether a memory of topology kind ``kind`` is a GPU's (its HBM node, its device memory)."""
    return kind in GPU_MEMORY_KINDS


def memory(topology: Mapping[str, Any], mem: str) -> Mapping[str, Any]:
    """The topology's entry of memory ``mem`` ({} where it lists none)."""
    return next((m for m in topology.get("memories", []) if m.get("name") == mem), {})


def gpu_of_memory(entry: Mapping[str, Any]) -> int | None:
    """The GPU whose memory a topology memory entry is, None for a host memory."""
    return entry.get("gpu") if on_gpu(entry.get("kind")) else None


def is_grace(topology: Mapping[str, Any]) -> bool:
    """Whether the node's CPU is a Grace: by ``cpu_model``; where the topology names no CPU
    model, by the GH200's own evidence (a GPU's HBM as a NUMA node, or a GPU on NVLink-C2C).
    The module's docstring says why."""
    model = str(topology.get("cpu_model") or "").strip()
    if model.lower() not in _UNKNOWN_MODELS:
        return "GRACE" in model.upper()
    return any(m.get("kind") == "hbm" for m in topology.get("memories", [])) or any(
        (p.get("link") or {}).get("type") == "c2c" for p in topology.get("processors", []))


def host_word(topology: Mapping[str, Any]) -> str:
    """``LPDDR`` on a Grace node, ``DDR`` elsewhere."""
    return LPDDR if is_grace(topology) else DDR


def word_of_kind(topology: Mapping[str, Any], kind: Any) -> str:
    """The paper's word for a memory of topology kind ``kind``: ``LPDDR`` (``DDR`` off
    Grace), ``HBM``, ``device memory``; '' for an unknown kind."""
    if kind == "host":
        return host_word(topology)
    return {"hbm": HBM, "device": DEVICE_MEMORY}.get(kind, "")


def kind_word(topology: Mapping[str, Any], mem: str) -> str:
    """What memory ``mem`` is, seen from no processor in particular: ``LPDDR`` (``DDR`` off
    Grace), ``HBM``, ``device memory``; '' where the topology does not list it."""
    return word_of_kind(topology, memory(topology, mem).get("kind"))


def kind_name(topology: Mapping[str, Any], mem: str) -> str:
    """``LPDDR numa0``, ``HBM numa4``, ``device memory gpu0``: a memory without a viewpoint,
    its name alone where the topology does not list it."""
    return f"{kind_word(topology, mem)} {mem}".strip()


def memory_word(topology: Mapping[str, Any], mem: str) -> str:
    """What memory ``mem`` itself is, whichever way it is reached: the host word, or ``HBM``
    for a GPU's memory (``gpuN`` or its HBM node); '' where the topology does not say."""
    entry = memory(topology, mem)
    if on_gpu(entry.get("kind")) or (not entry and mem.startswith("gpu")):
        return HBM
    return host_word(topology) if entry.get("kind") == "host" else ""


def processor_word(topology: Mapping[str, Any], pu: str) -> str:
    """``Grace`` (a CPU of a Grace node, else ``CPU``), ``Hopper`` (a GH200's GPU), else the
    GPU's model without ``NVIDIA`` (``GPU`` where unnamed)."""
    p = next((q for q in topology.get("processors", []) if q.get("name") == pu), {})
    if p.get("kind") == "cpu":
        return GRACE if is_grace(topology) else "CPU"
    model = str(p.get("model", "")).replace("NVIDIA ", "")
    return HOPPER if "GH200" in model.upper() else (model or "GPU")
