"""The history's trends written for people: trend.csv, slow_degradation.csv/.json and a
figure of the worst series (docs/fleet_history.md). Shared by `fleet-history trend` and
`fleet --history`."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import outfiles
from . import history as fleet_history


def write_trends(db: Path, out: Path, nights: int = 90, min_drop: float = 0.05,
                 synthetic: bool = False, node: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """trend.csv, slow_degradation.csv/.json and worst_trends.png/.pdf into ``out`` (created);
    returns (trend, slow degradation). Shared by `fleet-history trend` and `fleet --history`."""
    fleet_history.check_window(nights, min_drop)
    table = fleet_history.trend(db, node=node, nights=nights, include_synthetic=synthetic)
    slow = fleet_history.slow_degradation(db, nights, min_drop, synthetic)
    if node is not None:
        slow = slow[slow["node"] == node]
    out.mkdir(parents=True, exist_ok=True)
    outfiles.write_csv(table, out / "trend.csv")
    outfiles.write_csv(slow, out / "slow_degradation.csv")
    _plot_worst(table, slow, out / "worst_trends.png")
    summary = {"series": len(table), "degrading": len(slow), "nodes": sorted(set(slow["node"]))}
    outfiles.write_text(out / "slow_degradation.json", json.dumps(summary, indent=1))
    return table, slow


def _plot_worst(table: pd.DataFrame, slow: pd.DataFrame, path: Path, count: int = 8) -> list[Path]:
    """The worst series (at most 8: one look each), each relative to its fitted start, so
    that paths of any unit share an axis; in the report style (render.style), PNG and PDF."""
    import matplotlib.dates as mdates
    from ..render import style
    from ..render.figures import Styles
    fig, (ax,) = style.panels(1, style.PAGE_IN, panel_height=2.4)
    keys = ["node", "path", "metric"]
    worst = slow.head(count).merge(table, on=[*keys, "node_kind", "component"], how="left")
    nights = [c for c in table.columns if c not in fleet_history.SERIES]
    styles = Styles()
    for _, row in worst.iterrows():
        values = pd.to_numeric(row[nights], errors="coerce").astype(float)
        label = f"{row['node']} {row['component']} {row['metric']} (-{row['loss']:.0%})"
        ax.plot(pd.to_datetime(nights), values / row["start"], label=label, markersize=2.5, **styles(label))
    if worst.empty:
        ax.text(0.5, 0.5, "no series lost more than --min-drop", ha="center", transform=ax.transAxes)
    else:
        locator = mdates.AutoDateLocator(maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    # The losses are a few % of a value near 1: an axis from zero would flatten them.
    style.allow_nonzero(ax, "values relative to the fitted start, near 1: the drop is the point")
    ax.grid(True)
    ax.set(ylabel="value / fitted start", xlabel="night",
           title="worst per-node trends (y axis not from zero: values relative to the fitted start)")
    style.legend_below(fig, [ax])
    return style.save(fig, path.parent, path.stem)
