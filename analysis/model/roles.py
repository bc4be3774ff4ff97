"""A memory named by its role seen from a processor, as the paper names them: local LPDDR,
peer LPDDR, local HBM, peer HBM, device memory, with the NUMA id (or GPU) beside it.

A memory belongs to a superchip: a host NUMA node to the GPU whose ``host_numa`` it is,
an HBM node or a device memory to its GPU. A processor is local to the memories of its
own superchip (a CPU socket: its NUMA node's; a GPU: its own and its host node's). Off
Grace the same words apply with DDR for LPDDR; the words and whether a node is a Grace one
are model/vocabulary.py's."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .vocabulary import DEVICE_MEMORY, DDR, HBM, LPDDR, host_word, kind_word, on_gpu


def _superchip_of_host(topology: Mapping[str, Any], numa: int | None) -> int | None:
    for p in topology.get("processors", []):
        if p.get("kind") == "gpu" and p.get("host_numa") == numa:
            return int(p["gpu"])
    return None


def role(topology: Mapping[str, Any], pu: str, mem: str) -> str:
    """The role of ``mem`` seen from ``pu`` (``local LPDDR``...), '' where either is unknown."""
    procs = {p["name"]: p for p in topology.get("processors", [])}
    mems = {m["name"]: m for m in topology.get("memories", [])}
    p, m = procs.get(pu), mems.get(mem)
    if p is None or m is None:
        return ""
    kind = m.get("kind")
    if p.get("kind") == "gpu":
        mine_gpu, mine_numa = int(p["gpu"]), p.get("host_numa")
    elif p.get("numa") is None:  # every socket at once: no locality
        return kind_word(topology, mem)
    else:
        mine_numa = p.get("numa")
        mine_gpu = _superchip_of_host(topology, mine_numa)
    if kind == "host":
        local = m.get("numa") == mine_numa
        return f"{'local' if local else 'peer'} {host_word(topology)}"
    if on_gpu(kind):
        local = mine_gpu is not None and m.get("gpu") == mine_gpu
        if kind == "hbm":
            return f"{'local' if local else 'peer'} {HBM}"
        return DEVICE_MEMORY if local else f"peer {DEVICE_MEMORY}"
    return ""


def role_label(topology: Mapping[str, Any] | None, pu: str, mem: str) -> str:
    """The role of ``mem`` seen from ``pu`` (``local HBM``), its name where no role is known
    (no topology among them): the label a series takes in a figure whose panels are processors."""
    return (role(topology, pu, mem) if topology else "") or mem


def labelled(topology: Mapping[str, Any] | None, pu: str, mem: str) -> str:
    """``local HBM (numa4)``: the role with the memory's name beside it; the name alone
    where no role is known (no topology among them)."""
    r = role(topology, pu, mem) if topology else ""
    return f"{r} ({mem})" if r else mem


#: The order the paper lists memories in, seen from a processor: its own superchip's first
#: (host memory, then HBM), then the peers'; x86 words after the Grace Hopper ones.
ROLE_ORDER = (f"local {LPDDR}", f"local {DDR}", f"local {HBM}", DEVICE_MEMORY, f"peer {LPDDR}", f"peer {DDR}",
              f"peer {HBM}", f"peer {DEVICE_MEMORY}", LPDDR, DDR, HBM)


def role_rank(label: str) -> int:
    """Sort key of a label that starts with a memory role (``local HBM``, ``local HBM,
    managed``, ``local LPDDR → peer HBM``): the role's place in ROLE_ORDER, so that a legend
    reads local before peer; any other label after every role."""
    head = label.split(",")[0].split(" →")[0].strip()
    return ROLE_ORDER.index(head) if head in ROLE_ORDER else len(ROLE_ORDER)


def by_role(topology: Mapping[str, Any], pu: str, mems: list[str] | tuple[str, ...]) -> list[str]:
    """The distinct ``mems`` in ROLE_ORDER seen from ``pu``, then by NUMA id or GPU number
    (numa2 before numa12); memories without a role last, by name."""

    def key(mem: str) -> tuple[int, int, str]:
        number = re.search(r"(\d+)$", mem)
        return role_rank(role(topology, pu, mem)), int(number.group(1)) if number else -1, mem
    return sorted(dict.fromkeys(mems), key=key)

