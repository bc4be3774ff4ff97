"""What `analysis fleet` writes into its folder: nodes.csv, flagged.json, summary.md, the
heatmap, and with --history the night appended and its trend files."""
from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import outfiles
from ..render import style, tables
from . import history as fleet_history
from . import integrity
from . import operators
from .location import chassis_of, located
from .trends import write_trends
from .table import COLUMNS, WORDS


HEATMAP_NODES = 60   # rows of the heatmap: the worst degraded nodes, then healthy ones

def number(value: float, metric: str) -> str:
    unit = "GB/s" if metric.endswith("GBps") else "ns"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.1f} {unit}"


def write_outputs(out: Path, table: pd.DataFrame, nodes: pd.DataFrame, flagged: pd.DataFrame,
                  rejected: Sequence[str], slow: pd.DataFrame | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    outfiles.write_csv(nodes, out / "nodes.csv")
    records = json.loads(flagged.to_json(orient="records"))
    outfiles.write_text(out / "flagged.json", json.dumps(records, indent=1, ensure_ascii=False))
    outfiles.write_text(out / "summary.md", _summary(table, nodes, rejected, slow))
    bad = operators.ranked(nodes, flagged)
    night = str(table["night"].iloc[0]) if len(table) else ""
    files = [out / "nodes.csv", out / "flagged.json", out / "summary.md",
             operators.write_drain(out, bad, night),
             *operators.write_pages(out, table, bad, flagged), *_heatmap(out, table, nodes)]
    failed = nodes.loc[nodes["verdict"] == "failed", "node"]  # stored as failed, no value
    return files + write_table(out, integrity.held_back(table, failed))

def write_table(out: Path, table: pd.DataFrame) -> list[Path]:
    """DIR/fleet.parquet: the night's fleet table (the history's columns), which
    `fleet-history append DIR/fleet.parquet` stores without reading the files again.
    Written by DuckDB (the history's own dependency); without it, not written."""
    try:
        import duckdb
    except ImportError:
        return []
    path = out / fleet_history.TABLE_FILE
    con = duckdb.connect(config=fleet_history.duckdb_config())
    try:
        con.execute("SET enable_progress_bar = false")
        con.register("night_rows", table[list(COLUMNS)])
        con.execute(f"COPY (SELECT * FROM night_rows) TO {fleet_history._literal(str(path))} "
                    "(FORMAT parquet)")
    finally:
        con.close()
    return [path]


@dataclass
class History:
    """--history DB: the night is appended and the trends of the window join the report."""
    db: Path
    nights: int = 90
    min_drop: float = 0.05

    def __post_init__(self) -> None:  # before the night is appended
        fleet_history.check_window(self.nights, self.min_drop)

def add_history(out: Path, table: pd.DataFrame,
                history: History) -> tuple[pd.DataFrame, list[Path]]:
    """Append the night to the history database and write its trend files into ``out``;
    returns the slowly degrading series, worst first, each with its ``text`` in words.

    The rows appended carry the node kind as it should be (expected_kinds), so that a node
    that lost a part keeps its series. The trends are of the kind of data analysed: a
    simulated night's come from the synthetic rows, a real night's from the real ones."""
    fleet_history.append(history.db, table[list(COLUMNS)])
    synthetic = bool(table["synthetic"].all())
    _, slow = write_trends(history.db, out, history.nights, history.min_drop, synthetic)
    what = table.drop_duplicates("path").set_index("path")[WORDS]
    slow = slow.assign(what=slow["path"].map(what).fillna(slow["component"]))
    slow["text"] = [f"{r['what']} {number(r['start'], r['metric'])} to "
                    f"{number(r['end'], r['metric'])} ({-r['loss'] * 100:+.0f} % over "
                    f"{r['nights']} nights)".replace("-", "\u2212")
                    for r in slow.to_dict("records")]
    files = [out / name for name in ("trend.csv", "slow_degradation.csv", "slow_degradation.json",
                                     *style.figure_names("worst_trends"))]
    return slow, files

def _summary(table: pd.DataFrame, nodes: pd.DataFrame, rejected: Sequence[str],
             slow: pd.DataFrame | None = None) -> str:
    counts = nodes["verdict"].value_counts()
    lines = ["# Fleet report", "",
             "It only suggests: no node is drained. Verdicts: healthy, suspect (flagged, "
             "the retest did not confirm it), degraded (a component flagged, confirmed by "
             "the retest where one ran), failed (a file, case or value is broken), missing (expected, no "
             "file).", ""]
    lines += tables.markdown(["node kind", "nodes", "paths"],
                             [[kind, part["node"].nunique(), part["path"].nunique()]
                              for kind, part in table.groupby("node_kind")])
    lines += tables.markdown(["verdict", "nodes"],
                             [[v, int(counts.get(v, 0))]
                              for v in ("healthy", "suspect", "degraded", "failed", "missing")])
    if bool(table["synthetic"].any()):
        lines += ["**Synthetic data** (simulator output) is among the inputs.", ""]
    drained = operators.conditioned(nodes)
    if drained.any():  # counted apart from the bandwidth verdicts above
        alone = drained & ~nodes["verdict"].isin(operators.DRAINED)
        lines += [f"Recorded conditions drain {int(drained.sum())} node(s) on their own "
                  f"({int(alone.sum())} of them not failed, missing or degraded by their figures; "
                  "analysis/model/causes.py):", ""]
        lines += tables.markdown(nodes.loc[drained, ["node", "verdict", "condition"]])
    bad = nodes[nodes["verdict"] != "healthy"]
    if len(bad):
        lines += tables.markdown(bad[["node", "verdict", "retest", "reason"]]
                                 if "retest" in bad else bad[["node", "verdict", "reason"]])
        lines += ["drain.txt: the Slurm commands that would drain the failed, missing and "
                  "degraded nodes (printed, never run); nodes/<node>.md: why, per node.", ""]
    lines += by_chassis(nodes)
    if slow is not None:
        lines += ["## Slowly degrading (history database)", ""]
        if slow.empty:
            lines += ["No series lost more than the minimum drop over the window.", ""]
        else:
            lines += tables.markdown(["node", "component", "trend"],
                                     [[r.node, r.component, r.text] for r in slow.itertuples()])
    if rejected:
        lines += ["Inputs left out:", ""] + [f"- {line}" for line in rejected]
    return "\n".join(lines).rstrip("\n") + "\n"

CHASSIS_ROWS = 30  # rows of the by-chassis table: the chassis with most nodes not healthy

def by_chassis(nodes: pd.DataFrame) -> list[str]:
    """Summary lines: the nodes that are not healthy counted per chassis (from the xnames),
    most first, so that a chassis or cabinet problem (cooling, power) shows; for names
    without a location (nid names) one line saying so."""
    if not located(nodes["node"]):
        return ["Node names carry no location (nid names, not xnames): the tables and the "
                "heatmap list nodes worst first, not by cabinet or chassis.", ""]
    chassis = chassis_of(nodes["node"]).to_numpy()
    frame = nodes.assign(chassis=chassis, cabinet=[c[:c.index("c")] for c in chassis])
    counts = pd.crosstab(frame["chassis"], frame["verdict"])
    verdicts = [v for v in operators.SEVERITY if v != "healthy" and v in counts.columns]
    if not verdicts:
        return [f"All nodes healthy in {counts.shape[0]} chassis of "
                f"{frame['cabinet'].nunique()} cabinets.", ""]
    counts["not healthy"] = counts[verdicts].sum(axis=1)
    counts["nodes"] = counts.drop(columns=["not healthy"]).sum(axis=1)
    worst = counts[counts["not healthy"] > 0].sort_values(["not healthy", "nodes"], ascending=False,
                                                          kind="stable")
    lines = ["## Nodes not healthy by chassis", "",
             f"{len(worst)} of {len(counts)} chassis ({frame['cabinet'].nunique()} cabinets) "
             "hold a node that is not healthy; most first" +
             (f", the first {CHASSIS_ROWS} shown." if len(worst) > CHASSIS_ROWS else "."), ""]
    rows = [[name, int(r["nodes"]), int(r["not healthy"]), *(int(r[v]) for v in verdicts)]
            for name, r in worst.head(CHASSIS_ROWS).iterrows()]
    return lines + tables.markdown(["chassis", "nodes", "not healthy", *verdicts], rows,
                                   right=range(1, 3 + len(verdicts)))

def heatmap_rows(table: pd.DataFrame, nodes: pd.DataFrame) -> tuple[list[str], int]:
    """(rows, failed or degraded nodes left out): the worst HEATMAP_NODES failed or degraded
    nodes (largest flagged deviation first; a failed or missing case, or a failed node,
    counts as -100 %), then the suspect ones (flagged, not confirmed), then healthy ones
    sampled evenly up to HEATMAP_NODES; thousands of rows would not be readable."""
    flagged = table[table["flag"] != ""]
    worst = flagged["deviation"].abs().fillna(1.0).groupby(flagged["node"]).max()
    verdict = nodes.set_index("node")["verdict"]
    bad = verdict.index[verdict.isin(["failed", "degraded"])]
    worst = worst.reindex(bad).fillna(1.0)
    worst[verdict.reindex(bad) == "failed"] = np.inf  # the most severe verdict comes first
    bad = worst.sort_values(ascending=False, kind="stable").index.tolist()
    bad += verdict.index[verdict == "suspect"].tolist()
    healthy = nodes.loc[nodes["verdict"] == "healthy", "node"].tolist()
    room = max(0, HEATMAP_NODES - len(bad))
    step = max(1, len(healthy) // max(1, room))
    return bad[:HEATMAP_NODES] + healthy[::step][:room], max(0, len(bad) - HEATMAP_NODES)

HEATMAP_ROW_IN = 0.13  # a row of the heatmap: room for its 7 pt node name
def _heatmap(out: Path, table: pd.DataFrame, nodes: pd.DataFrame) -> list[Path]:
    """Deviation from the fleet median, nodes x paths, heatmap_rows() only, at page width
    in the report style (render.style); the figure's height follows its rows so that each
    row keeps a 7 pt label. Returns heatmap.png and heatmap.pdf."""
    from ..render import style
    shown_nodes, hidden = heatmap_rows(table, nodes)
    grouped = located(nodes["node"])
    if grouped:
        shown_nodes = by_location(shown_nodes)
    part = table[table["node"].isin(shown_nodes)]
    sign = np.where(part["higher_is_better"].to_numpy(dtype=bool), 1.0, -1.0)
    grid = part.assign(d=sign * part["deviation"] * 100).pivot_table(
        index="node", columns="path", values="d", aggfunc="first").reindex(shown_nodes)
    fig, (ax,) = style.panels(1, style.PAGE_IN, panel_height=HEATMAP_ROW_IN * len(grid) + 1.0)
    image = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap="RdBu", vmin=-20, vmax=20,
                      interpolation="nearest")
    ax.set_yticks(range(len(grid)), [style.short_name(str(node)) for node in grid.index])
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    label = f"{grid.shape[1]} paths (fleet_table.py path names)"
    if grouped:
        label += ("; rows by cabinet and chassis (from the xnames), worst first within a "
                  "chassis; lines between cabinets")
        names = np.array([c[:c.index("c")] for c in chassis_of(grid.index)])  # cabinets
        for row in np.flatnonzero(names[1:] != names[:-1]):
            ax.axhline(row + 0.5, color="black", linewidth=0.6)
    else:
        label += "; node names carry no location (nid names): rows worst first"
    if hidden:
        label += f"\n{hidden} more failed, degraded or suspect nodes not shown (nodes.csv lists every node)"
    ax.set_xlabel("\n".join(textwrap.fill(line, 100) for line in label.split("\n")))  # within the page
    ax.set_title("Deviation from the fleet median, % (negative = worse; colour saturates at ±20 %)")
    fig.colorbar(image, ax=ax, label="deviation, %", fraction=0.04, aspect=30, pad=0.02)
    return style.save(fig, out, "heatmap", page=False)  # a row per node: read on screen

def by_location(rows: Sequence[str]) -> list[str]:
    """Heatmap rows of xnames: a chassis's nodes together (cabinets and chassis in
    numeric order), in their given order (worst first) within it."""
    chassis = chassis_of(rows)
    place = {node: i for i, node in enumerate(rows)}
    return sorted(rows, key=lambda n: (_chassis_key(chassis[n]), place[n]))

def _chassis_key(name: str) -> tuple[int, int]:
    """x1000c3 -> (1000, 3): cabinets and chassis in numeric order."""
    cabinet, _, chassis = name[1:].partition("c")
    return int(cabinet), int(chassis)
