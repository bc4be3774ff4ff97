"""Host<->device transfers of ``mempath memcpy`` (``/memcpy/cases``, docs/schema.md).

Selection rules shared by the transfer figures, the path table and the placement table:
a case stands for its transfer when it ran (``ok``, finite median) and its host pages
were on the node it names (``placement``; ``unknown`` or empty is accepted except for
``managed`` memory, which may migrate). Per (GPU, host node, direction, engine) the
representative case is, for each allocator, the one at its largest size, and of these the
one with the highest median ("best allocator at the largest size").
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .io import RunSet

TABLE = "memcpy/cases"
# Columns of /memcpy/cases the analysis uses; the ones in OPTIONAL may be absent.
COLUMNS = ("case_id", "mode", "gpu", "all_gpus", "host_numa", "cpu_numa", "alloc",
           "direction", "engine", "size_bytes", "status", "reason", "median_GBps")
OPTIONAL: dict[str, object] = {
    "gpus": "", "via": "", "sweep": 0, "min_GBps": math.nan, "max_GBps": math.nan,
    "h2d_median_GBps": math.nan, "d2h_median_GBps": math.nan, "median_time_s": math.nan,
    "p99_time_s": math.nan, "saturation_bytes": -1, "placement": "", "timing": "",
    "dst_gpu": -1,
}
DIRECTIONS = ("h2d", "d2h", "bidir")
D2D = ("d2d", "d2d-bidir")  # GPU<->GPU: gpus = "src,dst" (d2d-bidir: both ways at once)
SATURATION_FRACTION = 0.95  # as mempath (src/core/memcpy_plan.hpp, kSaturationFraction)
# A sweep group: the cases that differ only in size (src/core/memcpy_plan.hpp, group_key).
SWEEP_KEYS = ["host", "run", "gpus", "all_gpus", "host_numa", "cpu_numa", "alloc",
              "direction", "engine"]


def load(runs: RunSet) -> tuple[pd.DataFrame, str]:
    """The /memcpy/cases rows of all runs, and "" or why the table cannot be used."""
    if TABLE not in runs.tables:
        return pd.DataFrame(), (f"no /{TABLE} table in these runs (run `mempath memcpy`): "
                                "no transfer curves, latency, path table or placement table")
    cases = runs.tables[TABLE]
    lacking = [c for c in COLUMNS if c not in cases]
    if lacking:
        return pd.DataFrame(), (f"/{TABLE} lacks the columns {', '.join(lacking)} "
                                "(written by a mempath of another schema): transfers left out")
    cases = cases.assign(**{c: v for c, v in OPTIONAL.items() if c not in cases})
    if "gpus" in cases:
        cases["gpus"] = [g or str(n) for g, n in zip(cases["gpus"].fillna(""), cases["gpu"])]
    return cases, ""


def _placed(placement: str, host_numa: int, alloc: str) -> bool:
    if placement in ("", "-", "unknown"):
        return alloc != "managed"
    if host_numa < 0:
        return True
    return all(part == f"numa{host_numa}" for part in placement.split(";"))


def measured(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases that ran with a finite median and their host pages where they name."""
    if cases.empty:
        return cases
    ok = (cases["status"] == "ok") & np.isfinite(cases["median_GBps"].astype(float))
    placed = [_placed(str(p), int(n), str(a)) for p, n, a in
              zip(cases["placement"].fillna(""), cases["host_numa"], cases["alloc"])]
    return cases[ok & np.array(placed, dtype=bool)]


def bandwidth(cases: pd.DataFrame) -> pd.DataFrame:
    """Measured one-GPU bandwidth cases (no --all-gpus aggregate)."""
    ran = measured(cases)
    if ran.empty:
        return ran
    return ran[(ran["mode"] == "bandwidth") & (ran["all_gpus"].astype(int) == 0)]


def at_largest(cases: pd.DataFrame) -> pd.DataFrame:
    """Per allocator, the cases at that allocator's largest size."""
    largest = cases.groupby("alloc")["size_bytes"].transform("max")
    return cases[cases["size_bytes"] == largest]


def best(cases: pd.DataFrame, host: str, gpu: int, host_numa: int, direction: str,
         engine: str = "ce") -> pd.Series | None:
    """The representative case (module docstring), or None when none was measured."""
    ran = bandwidth(cases)
    if ran.empty:
        return None
    mine = ran[(ran["host"] == host) & (ran["gpu"] == gpu) & (ran["host_numa"] == host_numa)
               & (ran["direction"] == direction) & (ran["engine"] == engine)]
    if mine.empty:
        return None
    top = at_largest(mine)
    return top.loc[top["median_GBps"].astype(float).idxmax()]


def median_at(cases: pd.DataFrame, host: str, gpu: int, host_numa: int, direction: str,
              size: int, alloc: str, engine: str = "ce") -> float | None:
    """The best measured median of one transfer at one size and allocator, or None."""
    ran = bandwidth(cases)
    if ran.empty:
        return None
    hit = ran[(ran["host"] == host) & (ran["gpu"] == gpu) & (ran["host_numa"] == host_numa)
              & (ran["direction"] == direction) & (ran["engine"] == engine)
              & (ran["size_bytes"] == size) & (ran["alloc"] == alloc)]
    return None if hit.empty else float(hit["median_GBps"].max())


def by_alloc(cases: pd.DataFrame, host: str, gpu: int, host_numa: int, direction: str,
             engine: str = "ce") -> pd.DataFrame:
    """Per allocator its best case at the largest size measured by every allocator."""
    ran = bandwidth(cases)
    if ran.empty:
        return ran
    mine = ran[(ran["host"] == host) & (ran["gpu"] == gpu) & (ran["host_numa"] == host_numa)
               & (ran["direction"] == direction) & (ran["engine"] == engine)]
    shared = set.intersection(*(set(g["size_bytes"]) for _, g in mine.groupby("alloc"))) \
        if not mine.empty else set()
    if not shared:
        return mine.iloc[:0]
    size = max(shared)
    at = mine[mine["size_bytes"] == size]
    return at.loc[at.groupby("alloc")["median_GBps"].idxmax()].sort_values(
        "median_GBps", ascending=False)


def unmeasured_reason(cases: pd.DataFrame, host: str, gpu: int, host_numa: int,
                      direction: str) -> str:
    """Why a transfer has no measured case: the reasons of its skipped or failed cases."""
    if cases.empty:
        return ""
    mine = cases[(cases["host"] == host) & (cases["gpu"] == gpu)
                 & (cases["host_numa"] == host_numa) & (cases["direction"] == direction)
                 & (cases["status"] != "ok")]
    return "; ".join(dict.fromkeys(r for r in mine["reason"].fillna("") if r))


def saturation(group: pd.DataFrame, fraction: float = SATURATION_FRACTION) -> int | None:
    """Saturation size of one sweep group: the file's, else the smallest size whose
    median reaches ``fraction`` of the group's largest median; None without a measure."""
    recorded = [int(s) for s in group["saturation_bytes"] if int(s) > 0]
    if recorded:
        return recorded[0]
    ran = group[np.isfinite(group["median_GBps"].astype(float))]
    if ran.empty:
        return None
    top = float(ran["median_GBps"].max())
    return int(ran.loc[ran["median_GBps"] >= fraction * top, "size_bytes"].min())


def sweep_groups(cases: pd.DataFrame) -> list[pd.DataFrame]:
    """The measured cases of each bandwidth sweep group, sorted by size."""
    ran = measured(cases)
    if ran.empty:
        return []
    ran = ran[(ran["mode"] == "bandwidth") & (ran["sweep"].astype(int) == 1)]
    return [g.sort_values("size_bytes") for _, g in
            ran.groupby(SWEEP_KEYS, sort=False, dropna=False) if len(g) > 1]


def latency(cases: pd.DataFrame) -> pd.DataFrame:
    """Measured latency cases (host-observed copy + synchronise), sorted by size."""
    ran = measured(cases)
    if ran.empty:
        return ran
    return ran[ran["mode"] == "latency"].sort_values("size_bytes")


def size_label(size: float) -> str:
    """4096 -> '4 KiB', 3 -> '3 B'; powers of 1024 without decimals where exact."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def group_label(row: pd.Series, parts: Sequence[str] = ("engine", "alloc", "host_numa")) -> str:
    """'ce pinned numa0' (+ 'cpu numa1' where the issuing thread ran elsewhere); GPU<->GPU:
    the engine, and the staging node of a staged copy."""
    if row["direction"] in D2D:
        node = int(row["host_numa"])
        return str(row["engine"]) + (f" via numa{node}" if row["engine"] == "staged"
                                     and node >= 0 else "")
    words = [str(row[p]) if p != "host_numa" else
             (f"numa{int(row[p])}" if int(row[p]) >= 0 else "nearest nodes") for p in parts]
    if "host_numa" in parts and int(row["cpu_numa"]) not in (int(row["host_numa"]), -1):
        words.append(f"cpu numa{int(row['cpu_numa'])}")
    return " ".join(words)


def pair(row: pd.Series) -> tuple[int, int]:
    """(source, destination) GPU of a GPU<->GPU case: ``dst_gpu`` where written, else the
    second GPU of ``gpus``; (gpu, -1) when neither says."""
    dst = int(row.get("dst_gpu", -1)) if pd.notna(row.get("dst_gpu", -1)) else -1
    listed = [int(g) for g in str(row.get("gpus", "")).split(",") if g.strip().isdigit()]
    if dst < 0 and len(listed) > 1:
        dst = listed[1]
    return int(row["gpu"]), dst


def gpu_label(row: pd.Series) -> str:
    if row["direction"] in D2D:
        src, dst = pair(row)
        return f"gpu{src}{' ⇄ ' if row['direction'] == 'd2d-bidir' else ' → '}gpu{dst}"
    return "all GPUs" if int(row["all_gpus"]) == 1 else f"gpu{int(row['gpu'])}"
