"""How both halves of the paper's Fig. 7 draw (fig07_read_write.py alone,
fig07_contention.py under a partner's reads): one panel per processor, a group of bars per
memory role, read and write side by side, each with its % of the path's peak above it.

The peers of one role (the three other superchips of a quad GH200) share one bar: their
median, the whisker spanning them; the CSV beside each figure holds every processor x
memory."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..model.peaks import ASSUMED_MARK, PeakModel
from ..model.roles import role_rank
from ..render import style
from ..render.items import Context, Drawn, Grid, faceted
from ..results.cases import natural_key
from .paths import compact, paper_processors

OPS = ("read", "write")


def with_peaks(frame: pd.DataFrame, models: Mapping[str, PeakModel]) -> pd.DataFrame:
    """Each row's path peak (``peak_GBps``, ``assumed``) and its median as % of it (``pct``)."""
    peaks = [models[h].path(p, m) if h in models else None
             for h, p, m in zip(frame["host"], frame["pu"], frame["mem"])]
    gbps = [pk.gbps if pk is not None and pk.gbps else math.nan for pk in peaks]
    return frame.assign(peak_GBps=gbps, assumed=[bool(pk and pk.assumed) for pk in peaks],
                        pct=100.0 * frame["median_GBps"].astype(float) / pd.Series(gbps, index=frame.index))


def bw_figure(ctx: Context, key: str, source: Callable[[Context], tuple[pd.DataFrame, list[str]]],
              grid: Callable[[Context, pd.DataFrame, list[str]], Grid], columns: Sequence[str],
              why_empty: str) -> Drawn:
    """A figure of ``source``'s bw cases (with its notes), drawn by ``grid``, its rows'
    ``columns`` as the source data."""
    frame, found = source(ctx)
    return faceted(ctx, key, frame, why_empty, lambda frame: grid(ctx, frame, found), found, csv=(frame, columns))


def panels_for(frame: pd.DataFrame, ctx: Context, extra: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """(host, pu, *extra) panels in topology order, hosts in run order."""
    out = []
    for host, topo in ctx.topologies.items():
        order = paper_processors(topo)
        mine = frame[frame["host"] == host]
        keys = list(dict.fromkeys(zip(*(mine[c] for c in ("pu", *extra))))) if not mine.empty else []
        keys.sort(key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k))
        out += [(host, *k) for k in keys]
    return out


def _role_names(role_name: str, names: Sequence[str]) -> str:
    """A role and its memories on two lines: ``peer LPDDR`` / ``(numa1,2,3)``."""
    return f"{role_name}\n({compact(names)})" if role_name else compact(names)


def _groups(part: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """(role, memories) of one processor's rows, roles in ROLE_ORDER."""
    roles = sorted(set(part["role"]), key=lambda r: (role_rank(r), r))
    return [(r, sorted(set(part.loc[part["role"] == r, "mem"]), key=natural_key)) for r in roles]


TEXT_IN_PER_CHAR = 0.058  # 7 pt text along its line


def _headroom(ends: Sequence[tuple[float, str]], plot_in: float) -> float:
    """The y limit at which each (top, text) fits its rotated text above it in a plot
    ``plot_in`` inches tall."""
    top = 0.0
    for end, text in ends:
        share = 1.0 - (len(text) * TEXT_IN_PER_CHAR + 0.06) / plot_in
        top = max(top, end / max(share, 0.2), end * 1.08)
    return top


def fit_texts(fig: Any, panels: Sequence[tuple[Any, Sequence[tuple[float, str]]]]) -> None:
    """Raise each panel's y limit until its bars' rotated texts fit (after the layout has
    set the plots' heights)."""
    fig.draw_without_rendering()
    for ax, ends in panels:
        if ax.figure is not fig:  # a panel of the figure's other page
            continue
        top = _headroom(ends, ax.get_window_extent().height / fig.dpi)
        ax.set_ylim(0, top if top > 0 else 1)


def bar_panel(ax: Any, part: pd.DataFrame, value: Callable[[pd.DataFrame], tuple[float, float, float]],
              texts: Callable[[pd.DataFrame], str], peak: bool = True,
              stack: Callable[[pd.DataFrame], float] | None = None,
              marker: Callable[[pd.DataFrame], float] | None = None) -> list[tuple[float, str]]:
    """Grouped bars of one processor: a group per memory role, a bar per op; the text of
    each bar above it (rotated), the path's peak as a dotted line, the peers' spread as a
    whisker; ``stack`` adds a segment on top (the noise reader), ``marker`` a diamond (the
    bandwidth alone)."""
    groups = _groups(part)
    width = 0.8 / len(OPS)
    ends: list[tuple[float, str]] = []
    for x, (role_name, mems) in enumerate(groups):
        rows = part[part["role"] == role_name]
        peaks = rows["peak_GBps"].astype(float) if peak else pd.Series(dtype=float)
        level = float(np.nanmedian(peaks)) if np.isfinite(peaks).any() else math.nan
        if math.isfinite(level):
            ax.hlines(level, x - 0.45, x + 0.45, colors="black", linestyles=(0, (1, 1)), linewidth=0.8,
                      label="theoretical peak of the path (Fig. 3)")
            ends.append((level, ""))
        for k, op in enumerate(OPS):
            mine = rows[rows["op"] == op]
            if mine.empty:
                continue
            pos = x + (k - (len(OPS) - 1) / 2) * width
            mid, lo, hi = value(mine)
            look = style.series(k)
            ax.bar(pos, mid, width * 0.92, color=look["color"], hatch="////" if k else None,
                   edgecolor="white", linewidth=0.4, label=op)
            end = mid
            if stack is not None:
                extra = stack(mine)
                if math.isfinite(extra):
                    ax.bar(pos, extra, width * 0.92, bottom=mid, color="0.75", hatch="....",
                           edgecolor="0.45", linewidth=0.4, label="noise reader's own GB/s (stacked)")
                    end = mid + extra
            if len(mems) > 1 and math.isfinite(lo) and hi > lo:
                ax.errorbar(pos, mid, yerr=[[mid - lo], [hi - mid]], fmt="none", ecolor="black",
                            elinewidth=0.6, capsize=1.5, label="spread over the peers (min-max)")
                end = max(end, hi)
            if marker is not None:
                alone = marker(mine)
                if math.isfinite(alone):
                    ax.plot([pos], [alone], linestyle="none", marker="D", markersize=2.5, color="black",
                            label="the same case alone (no noise)")
                    end = max(end, alone)
            text = " " + texts(mine)
            at = max(end, level) if math.isfinite(level) else end
            if text.strip():  # above the bar, and above the peak's line where that is higher
                ax.text(pos, at, text, rotation=90, ha="center", va="bottom", fontsize=7)
            ends.append((at, text))
    ax.set_xticks(range(len(groups)), [_role_names(r, m) for r, m in groups], rotation=90, fontsize=7)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, max((e for e, _ in ends), default=1.0) * 1.5 or 1.0)  # fit_texts sets the final one
    ax.grid(True, axis="y")
    ax.set_axisbelow(True)
    return ends


def stats(column: str) -> Callable[[pd.DataFrame], tuple[float, float, float]]:
    """(median, min, max) of ``column`` over a bar's rows: the bar and its whisker."""
    def of(rows: pd.DataFrame) -> tuple[float, float, float]:
        values = rows[column].astype(float)
        return float(values.median()), float(values.min()), float(values.max())
    return of


def _pct_text(pct: float, assumed: bool) -> str:
    return "" if not math.isfinite(pct) else f"{pct:.0f}%" + (ASSUMED_MARK if assumed else "")


def median_pct(rows: pd.DataFrame) -> str:
    """A bar's text: its rows' median % of peak, marked where a peak is assumed."""
    pct = rows["pct"].astype(float)
    return _pct_text(float(pct.median()), bool(rows["assumed"].any())) if np.isfinite(pct).any() else ""


def first_column_label(ax: Any) -> None:
    """The y axis named on the panels of the first column."""
    if ax.get_subplotspec().colspan.start == 0:
        ax.set_ylabel("GB/s (median of repetitions)")
