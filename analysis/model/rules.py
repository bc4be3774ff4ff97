"""Deployment rules written from a host's measured path table (analysis.model.pathtable).

Every rule is computed from the numbers: which memory the GPU reads fastest and in what
order to spill, which host node to stage transfers on, how d2h compares with h2d, what
bidirectional traffic costs each direction, the size a copy needs to saturate, which
allocator and engine to use, and where GPU<->GPU traffic stands. A rule whose inputs were
not measured is left out; nothing is stated that the runs did not measure.
"""
from __future__ import annotations

import pandas as pd

from ..results import transfers
from .pathtable import oneway

AVOID = 0.5       # a memory or node below this share of the better one is "to avoid"
SIMILAR = 0.9     # within this share two numbers count as equal
OVERLAP = 1.5     # bidir sum over the best one-way from which overlapping clearly pays


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _where(row: pd.Series) -> str:
    return "its HBM" if row["role"] == "HBM" else f"{row['memory']} ({row['role']})"


def hot_data(table: pd.DataFrame, gpu: int) -> list[str]:
    """Rank the memories by the GPU's measured read bandwidth (kernel reads; a host node
    without one is ranked by its copy-engine h2d rate, and says so)."""
    mine = table[table["gpu"] == gpu]
    reads = mine[mine["kind"].isin(["hbm-read", "host-read", "peer-read"])]
    copies = mine[(mine["kind"] == "h2d") & ~mine["memory"].isin(reads["memory"])]
    ranked = pd.concat([reads, copies]).sort_values("GBps", ascending=False)
    ranked = ranked.drop_duplicates("memory")
    if len(ranked) < 2:
        return []
    first = ranked.iloc[0]
    how = {"h2d": "copy-engine h2d"}
    tail = ", ".join(f"{_where(r)} {_pct(r['GBps'] / first['GBps'])} ({r['GBps']:.1f} GB/s"
                     f"{', ' + how[r['kind']] if r['kind'] in how else ''})"
                     for _, r in ranked.iloc[1:].iterrows())
    lines = [f"**gpu{gpu}, hot data**: put the data gpu{gpu} reads every step (weights, KV "
             f"cache) in {_where(first)}, the fastest memory it reads ({first['GBps']:.1f} "
             f"GB/s); the others reach {tail}."]
    spill = ranked.iloc[1:]
    if len(spill) >= 2:
        order = " then ".join(_where(r) for _, r in spill.iterrows())
        line = f"**gpu{gpu}, spill order**: {order}."
        slow = [r for _, r in spill.iloc[1:].iterrows()
                if r["GBps"] < AVOID * spill.iloc[0]["GBps"]]
        if slow:
            line += " Avoid " + ", ".join(
                f"{_where(r)} ({_pct(r['GBps'] / spill.iloc[0]['GBps'])} of "
                f"{_where(spill.iloc[0])})" for r in slow) + " for data read often."
        lines.append(line)
    return lines


def staging(table: pd.DataFrame, gpu: int) -> list[str]:
    """Per direction, the host node whose buffers transfer fastest, and the others' share."""
    lines = []
    for direction in ("h2d", "d2h"):
        rows = table[(table["gpu"] == gpu) & (table["kind"] == direction)]
        rows = rows.sort_values("GBps", ascending=False)
        if len(rows) < 2:
            continue
        top, rest = rows.iloc[0], rows.iloc[1:]
        others = ", ".join(f"{r['memory']} gives {_pct(r['GBps'] / top['GBps'])} "
                           f"({r['GBps']:.1f} GB/s)" for _, r in rest.iterrows())
        slowest = rest["GBps"].min() / top["GBps"]
        advice = ("avoid the others for transfers (allocate and bind on "
                  f"{top['memory']})" if slowest < AVOID else
                  "the node matters little" if slowest >= SIMILAR else
                  f"prefer {top['memory']}")
        lines.append(f"**gpu{gpu}, {direction} buffers**: stage them on {top['memory']} "
                     f"({top['role']}, {top['GBps']:.1f} GB/s); {others}: {advice}.")
    return lines


def _best(table: pd.DataFrame, gpu: int, kind: str) -> pd.Series | None:
    rows = table[(table["gpu"] == gpu) & (table["kind"] == kind)]
    return None if rows.empty else rows.loc[rows["GBps"].idxmax()]


def directions(table: pd.DataFrame, gpu: int) -> list[str]:
    """d2h against h2d, and what running both at once costs each (best host node)."""
    h2d, d2h = _best(table, gpu, "h2d"), _best(table, gpu, "d2h")
    lines = []
    if h2d is not None and d2h is not None:
        ratio = d2h["GBps"] / h2d["GBps"]
        if SIMILAR <= ratio <= 1 / SIMILAR:
            lines.append(f"**gpu{gpu}, directions**: h2d and d2h are symmetric "
                         f"({h2d['GBps']:.1f} and {d2h['GBps']:.1f} GB/s).")
        else:
            slow, fast = ("d2h", "h2d") if ratio < 1 else ("h2d", "d2h")
            low = min(h2d["GBps"], d2h["GBps"])
            what = "offloads (GPU → host)" if slow == "d2h" else "loads (host → GPU)"
            lines.append(f"**gpu{gpu}, directions**: {slow} reaches {_pct(min(ratio, 1 / ratio))}"
                         f" of {fast}: plan {what} at {low:.1f} GB/s, not "
                         f"{max(h2d['GBps'], d2h['GBps']):.1f}.")
    bidir = table[(table["gpu"] == gpu) & (table["kind"] == "bidir")]
    if h2d is None or d2h is None or bidir.empty:
        return lines
    both = bidir.loc[bidir["GBps"].idxmax()]
    ways = {k: oneway(both, table, k) for k in ("h2d", "d2h")}
    if pd.isna(both["h2d_GBps"]) or pd.isna(both["d2h_GBps"]):
        return lines
    known = {k: v for k, v in ways.items() if v}
    if len(known) < 2:
        return lines
    loss = {k: 1 - both[f"{k}_GBps"] / known[k] for k in known}
    gain = both["GBps"] / max(known.values())
    costs = (f"h2d {both['h2d_GBps']:.1f} GB/s ({_pct(loss['h2d'])} below one-way), d2h "
             f"{both['d2h_GBps']:.1f} GB/s ({_pct(loss['d2h'])} below one-way)")
    if gain >= OVERLAP:
        verdict = (f"overlap loads and offloads: together they move {both['GBps']:.1f} GB/s, "
                   f"{gain:.2f}x one direction")
    elif gain > 1 / SIMILAR:
        verdict = (f"overlapping pays only {gain:.2f}x one direction ({both['GBps']:.1f} GB/s)"
                   "; keep large loads and offloads apart where latency matters")
    else:
        verdict = (f"bidirectional traffic adds nothing ({gain:.2f}x one direction): "
                   "serialise large loads and offloads")
    lines.append(f"**gpu{gpu}, bidirectional ({both['memory']})**: {verdict}; per direction "
                 f"{costs}.")
    return lines


def sizes(cases: pd.DataFrame, gpu: int) -> list[str]:
    """The size a copy needs (sweep saturation) and what a tiny copy costs (latency)."""
    lines = []
    groups = [g for g in transfers.sweep_groups(cases)
              if int(g["gpu"].iloc[0]) == gpu and int(g["all_gpus"].iloc[0]) == 0
              and g["engine"].iloc[0] == "ce" and g["direction"].iloc[0] in ("h2d", "d2h")]
    parts = []
    for direction in ("h2d", "d2h"):
        mine = [g for g in groups if g["direction"].iloc[0] == direction]
        if not mine:
            continue
        top = max(mine, key=lambda g: float(g["median_GBps"].max()))
        saturated = transfers.saturation(top)
        if saturated is not None:
            parts.append(f"{direction} needs {transfers.size_label(saturated)} per copy to "
                         f"reach {transfers.SATURATION_FRACTION:.0%} of "
                         f"{top['median_GBps'].max():.1f} GB/s ({top['alloc'].iloc[0]}, "
                         f"numa{int(top['host_numa'].iloc[0])})")
    if parts:
        lines.append(f"**gpu{gpu}, transfer size**: " + "; ".join(parts)
                     + ". Batch smaller copies into transfers of at least that size.")
    small = transfers.latency(cases)
    small = small[(small["gpu"] == gpu) & (small["all_gpus"].astype(int) == 0)]
    if not small.empty:
        tiny = small[small["size_bytes"] == small["size_bytes"].min()]
        text = "; ".join(f"{r['direction']} {r['median_time_s'] * 1e6:.1f} µs median, "
                         f"{r['p99_time_s'] * 1e6:.1f} µs p99"
                         for _, r in tiny.sort_values("direction", key=lambda d: d.map(
                             {"h2d": 0, "d2h": 1})).drop_duplicates("direction").iterrows())
        lines.append(f"**gpu{gpu}, small copies**: a {transfers.size_label(tiny['size_bytes'].iloc[0])}"
                     f" copy + synchronise costs {text}: fuse small per-step transfers.")
    return lines


def allocators_and_engines(cases: pd.DataFrame, host: str, gpu: int, numa: int) -> list[str]:
    """Which host allocator and which engine to copy with (local host node, largest size)."""
    lines = []
    for direction in ("h2d", "d2h"):
        allocs = transfers.by_alloc(cases, host, gpu, numa, direction)
        if len(allocs) >= 2:
            top = allocs.iloc[0]
            rest = ", ".join(f"{r['alloc']} {_pct(r['median_GBps'] / top['median_GBps'])}"
                             for _, r in allocs.iloc[1:].iterrows())
            slow = allocs.iloc[-1]["median_GBps"] / top["median_GBps"] < SIMILAR
            lines.append(f"**gpu{gpu}, {direction} allocator**: {top['alloc']} is fastest "
                         f"({top['median_GBps']:.1f} GB/s at "
                         f"{transfers.size_label(top['size_bytes'])}); {rest}"
                         + (f": allocate copied buffers as {top['alloc']}." if slow else
                            ": the allocator matters little."))
        ce = transfers.best(cases, host, gpu, numa, direction, "ce")
        sm = transfers.best(cases, host, gpu, numa, direction, "sm")
        if ce is not None and sm is not None:
            ratio = sm["median_GBps"] / ce["median_GBps"]
            verdict = ("copy engines are faster: leave copies to them and the SMs free"
                       if ratio < SIMILAR else
                       "a copy kernel is faster, at the price of SMs" if ratio > 1 / SIMILAR
                       else "both engines are close: copy engines keep the SMs free")
            lines.append(f"**gpu{gpu}, {direction} engine**: SM copies reach {_pct(ratio)} of "
                         f"copy-engine copies ({sm['median_GBps']:.1f} vs "
                         f"{ce['median_GBps']:.1f} GB/s): {verdict}.")
    return lines


def gpu_to_gpu(table: pd.DataFrame, gpu: int, gpus: int) -> list[str]:
    rows = table[(table["gpu"] == gpu) & table["kind"].isin(["gpu-copy", "peer-read", "d2d"])]
    if rows.empty:
        return ([f"**gpu{gpu}, GPU↔GPU**: not measured; run peer or staged copies before "
                 "splitting a model across GPUs."] if gpus > 1 else [])
    top = rows.loc[rows["GBps"].idxmax()]
    h2d, hbm = _best(table, gpu, "h2d"), _best(table, gpu, "hbm-read")
    compare = (f", {top['GBps'] / h2d['GBps']:.1f}x its best host → GPU copy"
               if h2d is not None else "")
    verdict = ""
    if hbm is not None:
        share = top["GBps"] / hbm["GBps"]
        verdict = (f"; that is {_pct(share)} of its HBM read: "
                   + ("keep tensors exchanged every step on one GPU" if share < AVOID
                      else "splitting across GPUs costs little bandwidth"))
    lines = [f"**gpu{gpu}, GPU↔GPU**: fastest is {top['path']} ({top['how'].split(',')[0]}) "
             f"at {top['GBps']:.1f} GB/s{compare}{verdict}."]
    copies = rows[rows["kind"] == "d2d"]
    staged = copies[copies["how"].str.startswith("staged")]
    peer = copies[~copies["how"].str.startswith("staged")]
    if not staged.empty and not peer.empty:
        ratio = peer["GBps"].max() / staged["GBps"].max()
        lines.append(f"**gpu{gpu}, peer vs staged**: peer copies reach {ratio:.2f}x the copy "
                     "staged through host memory: " + (
                         "use peer access" if ratio > 1 / SIMILAR else
                         "stage through the host; peer access does not pay here"
                         if ratio < SIMILAR else "either way costs about the same"))
    return lines


def rules(table: pd.DataFrame, cases: pd.DataFrame, host: str,
          gpus: dict[int, int]) -> list[str]:
    """All rules of one host, per GPU, in the order of this module."""
    lines: list[str] = []
    for gpu, local in gpus.items():
        lines += hot_data(table, gpu) + staging(table, gpu) + directions(table, gpu)
        mine = cases[cases["host"] == host] if not cases.empty else cases
        if not mine.empty:
            lines += sizes(mine, gpu) + allocators_and_engines(mine, host, gpu, local)
        lines += gpu_to_gpu(table, gpu, len(gpus))
    return lines
