"""Where a node sits, from its name: HPE Cray EX names (xnames) carry it, nid names do not.

An xname ``x1000c3s5b0n1`` is cabinet x1000, chassis 3, slot 5, board 0, node 1; a
problem of a chassis or a cabinet (cooling, power, a switch) shows as its nodes together.
Alps's ``nid001234`` is a number only: no location can be read from it."""
from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

_XNAME = re.compile(r"^(x\d+)(c\d+)s\d+b\d+n\d+$")


def location(node: str) -> tuple[str, str] | None:
    """(cabinet, chassis) of an xname, e.g. ("x1000", "x1000c3"); None for other names."""
    match = _XNAME.match(node)
    return (match.group(1), match.group(1) + match.group(2)) if match else None


def chassis_of(nodes: Iterable[str]) -> pd.Series:
    """The chassis of each node (index: node), "" where the name has no location."""
    nodes = list(nodes)
    return pd.Series([(location(n) or ("", ""))[1] for n in nodes], index=nodes, dtype=object)


def located(nodes: Iterable[str]) -> bool:
    """Every node name carries a location (a fleet of xnames)."""
    nodes = list(nodes)
    return bool(nodes) and all(location(n) is not None for n in nodes)
