"""Values the source texts print (numbers in their text or tables, never read off a plot),
each with where it is printed; a paper figure holds this run against the ones that match
its processor role, memory role and operation (``Comparison`` in items.py).

Keys: ``fig<N>.<what>...``; ``of("fig14.")`` gives one figure's values. Each figure group
keeps its values in one contiguous section headed by a comment naming its figures."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.peaks import ALPS_PAPER


@dataclass(frozen=True)
class Published:
    key: str
    quantity: str
    value: float
    unit: str
    source: str


VALUES: tuple[Published, ...] = (
    # --- mpi_bandwidth (Fig. 14), nccl_by_size (Fig. 18), nccl_by_nodes (Fig. 19): analysis/paper/scaleout.py
    # Figs. 18 and 19 print no value in the text (only their sizes, kept in scaleout.py).
    Published("fig14.bi.node_max", "node to other nodes, bidirectional, maximum achievable "
              "(4 Slingshot 11 ports of 200 Gb/s per node)", 100.0, "GB/s",
              f"{ALPS_PAPER}, Sec. II: \"a maximum achievable bidirectional bandwidth of 100 GB/s to "
              "other nodes\""),
    Published("fig14.uni.port", "one GH200's network port (one MPI process uses one interface, "
              "Sec. III-F)", 200.0, "Gb/s",
              f"{ALPS_PAPER}, Sec. II: \"Each GH200 is connected to a switch through a 200 Gb/s "
              "ethernet port\""),
    # --- end of Figs. 14, 18, 19
)


def of(prefix: str) -> list[Published]:
    """The published values whose key starts with ``prefix``."""
    return [p for p in VALUES if p.key.startswith(prefix)]

