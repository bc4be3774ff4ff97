"""LLM decode placement: where the active weights live, and the tokens/s that allows.

Decoding one token reads every active weight once, so with ``active_bytes`` per token
and a path delivering B GB/s the memory time per token is ``active_bytes / (B * 1e9)``
seconds and the ceiling is ``B * 1e9 / active_bytes`` tokens/s (compute, KV cache and
overlap ignored: an upper bound). Rows come from the path table (analysis.model.pathtable):
HBM (the GPU's kernel read of its memory), each host node (kernel read over C2C/PCIe,
and the copy-engine h2d stream where measured), other GPUs (peer read, GPU-to-GPU copy).
Placements without a measurement are listed as not measured.
"""
from __future__ import annotations

import math
import re

import pandas as pd

from ..errors import InputError
from ..render import tables
from ..render.mdtext import code

DEFAULT_ACTIVE_BYTES = 21e9  # the dual-GH200 seed: 21 GB of active weights per token
COLUMNS = ["host", "gpu", "placement", "measured_by", "GBps", "ms_per_token",
           "tokens_per_s", "vs_hbm"]
SOURCES = {"hbm-read": "GPU kernel read (/bw)", "host-read": "GPU kernel read (/bw)",
           "h2d": "copy-engine h2d stream (/memcpy)", "peer-read": "GPU kernel read (/bw)",
           "gpu-copy": "GPU-to-GPU copy (/bw)", "d2d": "GPU-to-GPU copy (/memcpy)"}


_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_active_bytes(text: str) -> float:
    """``--active-bytes``: a positive number of bytes, optionally with a unit (21e9, 21GB,
    19.5GiB); InputError naming the fix otherwise."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", text)
    try:
        value = float(match.group(1)) * _UNITS[match.group(2).lower()] if match else math.nan
    except (ValueError, KeyError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"--active-bytes {text!r}: give the bytes read per generated token "
                         "as a positive number, e.g. 21e9 or 21GB")
    return value


def tokens_per_s(gbps: float, active_bytes: float) -> float:
    return gbps * 1e9 / active_bytes


def ms_per_token(gbps: float, active_bytes: float) -> float:
    return active_bytes / (gbps * 1e9) * 1e3


def _placement(row: pd.Series) -> str:
    if row["role"] == "HBM":
        return f"gpu{row['gpu']} HBM"
    if "host" in row["role"]:
        return f"{row['memory']} ({row['role']})"
    return f"{row['memory']} (other GPU)"


def build(table: pd.DataFrame, host: str, gpus: dict[int, int], host_nodes: list[int],
          active_bytes: float) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """Placement rows of one host (COLUMNS) and the (gpu, placement) not measured."""
    rows, missing = [], []
    for gpu, local in gpus.items():
        mine = table[(table["gpu"] == gpu) & table["kind"].isin(list(SOURCES))] \
            if not table.empty else table
        hbm = mine[mine["kind"] == "hbm-read"]["GBps"].max() if not mine.empty else math.nan
        for _, row in mine.iterrows():
            gbps = float(row["GBps"])
            rows.append({"host": host, "gpu": gpu, "placement": _placement(row),
                         "measured_by": (f"{SOURCES['d2d']}: {row['how'].split(',')[0]}"
                                         if row["kind"] == "d2d" else SOURCES[row["kind"]]),
                         "GBps": gbps,
                         "ms_per_token": ms_per_token(gbps, active_bytes),
                         "tokens_per_s": tokens_per_s(gbps, active_bytes),
                         "vs_hbm": gbps / hbm if pd.notna(hbm) else math.nan})
        have = set(mine["memory"]) if not mine.empty else set()
        wanted = [(f"gpu{gpu}", f"gpu{gpu} HBM")]
        wanted += [(f"numa{n}", f"numa{n} ({'local' if n == local else 'remote'} host)")
                   for n in sorted(host_nodes, key=lambda n: (n != local, n))]
        if len(gpus) > 1 and not any(str(m).startswith("gpu") and m != f"gpu{gpu}"
                                     for m in have):
            wanted.append(("other GPU", "another GPU (GPU↔GPU)"))
        missing += [(gpu, label) for memory, label in wanted if memory not in have]
    order = ["gpu", "vs_hbm"]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if not frame.empty:
        frame = frame.sort_values(order, ascending=[True, False], kind="stable")
    return frame.reset_index(drop=True), missing


def markdown(frames: dict[str, tuple[pd.DataFrame, list[tuple[int, str]]]],
             active_bytes: float) -> str:
    """placement.md: per host the table and the placements not measured."""
    lines = ["# LLM decode placement", "",
             f"Active bytes per generated token: {active_bytes:,.0f} "
             f"({active_bytes / 1e9:.4g} GB, `--active-bytes`). Each token reads them once: "
             "memory time per token = active bytes / bandwidth, tokens/s ceiling = "
             "bandwidth x 1e9 / active bytes (compute and KV cache ignored, an upper bound). "
             "Bandwidth is the measured median of the path (path_table.md); `vs HBM` is the "
             "share of the GPU's HBM read rate.", ""]
    for host, (frame, missing) in frames.items():
        lines += [f"## Host {code(host)}", ""]
        if frame.empty:
            lines += ["_No placement was measured._", ""]
        else:
            rows = [[f"gpu{r['gpu']}", r["placement"], r["measured_by"], f"{r['GBps']:.1f}",
                     f"{r['ms_per_token']:.2f}", f"{r['tokens_per_s']:.2f}",
                     "" if pd.isna(r["vs_hbm"]) else f"{100 * r['vs_hbm']:.1f}%"]
                    for _, r in frame.iterrows()]
            lines += tables.markdown(["GPU", "active weights in", "measured by", "GB/s", "ms per token",
                               "tokens/s ceiling", "vs HBM"], rows, right={3, 4, 5, 6})
        if missing:
            lines += ["Not measured:", ""] + [f"- gpu{g}: {label}" for g, label in missing] + [""]
    return "\n".join(lines)
