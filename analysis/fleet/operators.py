"""What an operator acts on: DIR/drain.txt, the Slurm commands that would drain the nodes
to take out (printed, never run), and DIR/nodes/<node>.md, one page per node that is not
healthy showing why (each flagged case against the fleet's distribution of that case)."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .. import outfiles
from ..render import mdtext, tables
from .table import WORDS

#: Worst first; the contract's verdicts (docs/fleet.md).
SEVERITY = ("failed", "missing", "degraded", "suspect", "healthy")
#: The verdicts drain.txt drains: a suspect node (not confirmed by its retest) stays in.
DRAINED = ("failed", "missing", "degraded")
#: Slurm's scontrol takes a reason of any length (src/scontrol/update_node.c copies it
#: as is), but slurmdbd stores a node's reason in a MySQL ``tinytext`` column (255 bytes:
#: event_table_fields in src/plugins/accounting_storage/mysql/accounting_storage_mysql.c);
#: 200 leaves room for a prefix a site's drain wrapper adds (user name, date).
REASON_MAX = 200
#: Per-node figures are drawn for the worst nodes only: a figure costs about a second,
#: and a night with hundreds of flagged nodes must not spend minutes drawing.
NODE_FIGURES = 6
#: Flagged cases drawn in one node's figure (its worst ones).
FIGURE_CASES = 8

_SAFE_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9 ,.:;%/()+=_@#-]")
_SPELLED = {"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u00b1": "+-", "\u00d7": "x",
            "\u2192": "to", "\u2264": "<=", "\u2265": ">=", "\u00b5": "u"}


def safe_reason(text: str, limit: int = REASON_MAX) -> str:
    """``text`` as a Slurm reason safe between double quotes in a shell: ASCII letters,
    digits, spaces and ``,.:;%/()+=_@#-`` only (no quote, backslash, $, backtick, !,
    newline), runs of spaces made one, at most ``limit`` characters (cut at a word)."""
    for char, ascii_text in _SPELLED.items():
        text = text.replace(char, ascii_text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = " ".join(_UNSAFE.sub(" ", text).split())
    if len(text) > limit:
        cut = text[:limit - 3].rsplit(" ", 1)[0] if " " in text[:limit - 3] else text[:limit - 3]
        text = cut.rstrip(" ,.:;") + "..."
    return text


def conditioned(nodes: pd.DataFrame) -> pd.Series:
    """Per node: whether a recorded condition drains it on its own (the ``condition`` column
    of verdicts(): a link trained below its maximum, memory awaiting repair)."""
    if "condition" not in nodes:
        return pd.Series(False, index=nodes.index)
    return nodes["condition"].fillna("").astype(str) != ""


def ranked(nodes: pd.DataFrame, flagged: pd.DataFrame) -> pd.DataFrame:
    """The nodes that are not healthy, or that a recorded condition drains, worst first: by
    verdict (SEVERITY), then by the size of their worst flagged deviation (a failed or lost
    case counts as 100 %), then by name. Adds ``worst`` (that size, a fraction; NaN where
    nothing was measured)."""
    bad = nodes[(nodes["verdict"] != "healthy") | conditioned(nodes)].copy()
    deviation = flagged["deviation"].abs().where(flagged["path"].astype(str) != "", np.nan)
    per_node = deviation.fillna(1.0).groupby(flagged["node"]).max()
    bad["worst"] = bad["node"].map(per_node).where(
        ~bad["verdict"].isin(["failed", "missing"]), np.nan)
    order = {v: i for i, v in enumerate(SEVERITY)}
    bad["_severity"] = bad["verdict"].map(order).fillna(len(SEVERITY))
    bad["_size"] = -bad["worst"].fillna(0.0)
    bad = bad.sort_values(["_severity", "_size", "node"], kind="stable")
    return bad.drop(columns=["_severity", "_size"]).reset_index(drop=True)


def drain_lines(bad: pd.DataFrame, night: str = "") -> list[str]:
    """drain.txt: a comment header, then one ``scontrol update`` line per failed, missing
    or degraded node of ``bad`` (ranked()), worst first. A node name that is not a plain
    host name is a comment, never a command."""
    drained = bad[bad["verdict"].isin(DRAINED) | conditioned(bad)]
    alone = int((~drained["verdict"].isin(DRAINED)).sum())
    lines = [f"# mempath fleet drain list{' for ' + night if night else ''}: "
             f"{len(drained)} nodes (failed, missing, degraded; {alone} on a recorded condition alone), "
             "worst first.",
             "# Printed, never run: review it, then run the lines you agree with "
             "(e.g. sh drain.txt). Suspect nodes (not confirmed by their retest) are not here",
             "# unless a recorded condition drains them; nodes/<node>.md shows each node's flagged cases."]
    for row in drained.to_dict("records"):
        node = str(row["node"])
        condition = str(row.get("condition") or "")
        if row["verdict"] in DRAINED:
            said = f"mempath {row['verdict']}: {row.get('reason', '')}"
            said += f"; condition: {condition}" if condition else ""
        else:
            said = f"mempath condition: {condition}"
        reason = safe_reason(said)
        if not _SAFE_NODE.match(node):
            lines.append(f"# not drained: node name {ascii(node)} is not a plain host name")
            continue
        lines.append(f'scontrol update nodename={node} state=drain reason="{reason}"')
    return lines


def write_drain(out: Path, bad: pd.DataFrame, night: str = "") -> Path:
    path = out / "drain.txt"
    outfiles.write_text(path, "\n".join(drain_lines(bad, night)) + "\n", encoding="ascii")
    return path


def page_name(node: str) -> str:
    """The node's page file name (a name that is not a plain host name made one)."""
    return (node if _SAFE_NODE.match(node) else re.sub(r"[^A-Za-z0-9._-]", "_", node)) + ".md"


def case_spread(table: pd.DataFrame, cases: pd.DataFrame) -> dict[tuple[str, str, str], np.ndarray]:
    """The fleet's sorted ok values of each (node_kind, path, metric) of ``cases``: only the
    flagged cases' rows of the table are grouped, not the whole fleet's."""
    keys = ["node_kind", "path", "metric"]
    wanted = cases[keys].drop_duplicates()
    if wanted.empty:
        return {}
    part = table[table["path"].isin(set(wanted["path"]))]
    part = part[np.isfinite(part["value"].to_numpy(dtype=float))]
    part = part.merge(wanted, on=keys)
    return {key: np.sort(group["value"].to_numpy(dtype=float))
            for key, group in part.groupby(keys, sort=False)}


def _rank(values: np.ndarray, value: float, higher: bool) -> int:
    """1 = the worst of the fleet: the nodes strictly worse, plus one."""
    if higher:
        return int(np.searchsorted(values, value, side="left")) + 1
    return int(len(values) - np.searchsorted(values, value, side="right")) + 1


def case_rows(table: pd.DataFrame, flagged: pd.DataFrame) -> pd.DataFrame:
    """The flagged rows that name a case, with the case's kind, metric, direction and words,
    and its fleet statistics: q1, q3, min, max, nodes and the node's rank (1 = worst)."""
    measured = flagged[flagged["path"].astype(str) != ""]
    facts = table[["node", "path", "node_kind", "metric", "higher_is_better", WORDS, "status"]]
    cases = measured.merge(facts, on=["node", "path"], how="left")
    cases = cases[cases["metric"].notna()]
    spread = case_spread(table, cases)
    stats = []
    for row in cases.itertuples(index=False):
        values = spread.get((row.node_kind, row.path, row.metric), np.array([]))
        known = len(values) > 0 and np.isfinite(row.value)
        stats.append({
            "q1": np.quantile(values, 0.25) if len(values) else np.nan,
            "q3": np.quantile(values, 0.75) if len(values) else np.nan,
            "min": values[0] if len(values) else np.nan,
            "max": values[-1] if len(values) else np.nan, "fleet_nodes": len(values),
            "rank": _rank(values, row.value, bool(row.higher_is_better)) if known else 0})
    return pd.concat([cases.reset_index(drop=True), pd.DataFrame(stats, index=range(len(cases)))],
                     axis=1)


def _number(value: float, metric: str) -> str:
    if not np.isfinite(value):
        return ""
    unit = "GB/s" if str(metric).endswith("GBps") else "ns"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.1f} {unit}"


def write_pages(out: Path, table: pd.DataFrame, bad: pd.DataFrame, flagged: pd.DataFrame,
                figures: int | None = None) -> list[Path]:
    """DIR/nodes/<node>.md for every node of ``bad`` (ranked()), and for the first
    ``figures`` of them with measured flagged cases a figure nodes/<node>.png."""
    figures = NODE_FIGURES if figures is None else figures
    folder = outfiles.folder(out / "nodes")  # a planted link would send the pages and their clean-up elsewhere
    for old in folder.glob("*.md"):  # a page of an earlier night's node would mislead
        old.unlink()
    for old in folder.glob("*.png"):
        old.unlink()
    cases = case_rows(table, flagged[flagged["node"].isin(set(bad["node"]))])
    by_node = {node: part for node, part in cases.groupby("node", sort=False)}
    others = flagged[flagged["path"].astype(str) == ""].groupby("node")["reason"].agg(list)
    written, drawn = [], 0
    for place, row in enumerate(bad.to_dict("records"), start=1):
        node = str(row["node"])
        mine = by_node.get(node, cases.iloc[0:0])
        mine = mine.assign(_size=-mine["deviation"].abs()).sort_values("_size", kind="stable")
        figure = ""
        if drawn < figures and mine["value"].notna().any():
            stem = page_name(node)[:-3]
            written += _figure(folder, stem, node, mine, table)
            figure, drawn = f"{stem}.png", drawn + 1
        path = folder / page_name(node)
        outfiles.write_text(path, _page(row, place, len(bad), mine, others.get(node, []), figure,
                                        figures if drawn >= figures and not figure else 0))
        written.append(path)
    return written


def _page(row: dict, place: int, count: int, cases: pd.DataFrame, other: Sequence[str],
          figure: str, capped: int) -> str:
    node, verdict = str(row["node"]), str(row["verdict"])
    lines = [f"# {mdtext.text(node)}: {verdict}", "",
             f"{place} of {count} nodes that are not healthy, worst first (failed, missing, "
             "degraded, suspect; then by the largest flagged deviation).", ""]
    facts = [["verdict", verdict], ["reason", str(row.get("reason", ""))],
             ["node kind", str(row.get("node_kind", ""))]]
    if "retest" in row:
        facts.append(["retest", str(row.get("retest") or "")])
    condition = str(row.get("condition") or "")
    if condition:
        facts.append(["recorded condition", condition])
    facts.append(["drained by drain.txt", "yes" if verdict in DRAINED else "yes (its recorded condition)"
                  if condition else "no (" + ("not confirmed by its retest" if verdict == "suspect" else verdict) + ")"])
    lines += tables.markdown(["", ""], facts)
    if verdict == "missing":
        lines += ["No result file: nothing of this node was measured.", ""]
    if len(cases):
        lines += ["## Flagged cases against the fleet", "",
                  "Each case's value against the same case on every node of its kind: the "
                  "median, the quartiles, the range, and this node's rank (1 = the worst of "
                  "the fleet).", ""]
        rows = []
        for case in cases.itertuples(index=False):
            metric = case.metric
            deviation = (f"{case.deviation * 100:+.1f} %" if np.isfinite(case.deviation) else "")
            rows.append([case.what, _number(case.value, metric) or str(case.status),
                         _number(case.fleet_median, metric),
                         f"{_number(case.q1, metric)} to {_number(case.q3, metric)}",
                         f"{_number(case.min, metric)} to {_number(case.max, metric)}",
                         f"{case.rank:,} of {case.fleet_nodes:,}" if case.rank else "",
                         deviation, case.path])
        lines += tables.markdown(["case", "value", "fleet median", "quartiles", "min to max",
                                  "rank", "deviation", "path"], rows, right=(1, 2, 5, 6))
    if other:
        lines += ["## Other reasons", ""] + [f"- {mdtext.safe(text)}" for text in other] + [""]
    if figure:
        lines += [f"![{mdtext.text(node)}: flagged cases against the fleet]({figure})", ""]
    elif capped and len(cases):
        lines += [f"No figure: figures are drawn for the {capped} worst nodes only "
                  "(the table above has every number).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _figure(folder: Path, stem: str, node: str, cases: pd.DataFrame,
            table: pd.DataFrame) -> list[Path]:
    """The node's worst flagged cases: per case the fleet as a box (quartiles, whiskers at
    the min and max) of value / fleet median, and this node as a marker."""
    from ..render import style
    shown = cases[cases["value"].notna()].head(FIGURE_CASES)
    spread = case_spread(table, shown)
    boxes = [spread.get((r.node_kind, r.path, r.metric), np.array([np.nan])) / r.fleet_median
             for r in shown.itertuples(index=False)]
    fig, (ax,) = style.panels(1, style.PAGE_IN, panel_height=0.32 * len(shown) + 0.6)
    import matplotlib
    sideways = ({"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2]))
                >= (3, 10) else {"vert": False})  # `vert` is deprecated from 3.10 on
    ax.boxplot(boxes, whis=(0, 100), widths=0.5, showfliers=False, **sideways)
    ax.plot((shown["value"] / shown["fleet_median"]).to_numpy(), range(1, len(shown) + 1),
            linestyle="none", marker="D", color=style.PALETTE[3], label=node)
    ax.set_yticks(range(1, len(shown) + 1), [str(w)[:60] for w in shown[WORDS]])
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", linewidth=0.5)
    style.allow_nonzero(ax, "values relative to the fleet median, near 1: the distance is the point")
    ax.set_xlabel("value / fleet median of the case\n(box: quartiles; whiskers: min and max)")
    ax.set_title(f"{node}: flagged cases against the fleet of its kind")
    style.legend_below(fig, [ax])
    # PNG only (the page shows it): a PDF, with its embedded font, would double the cost.
    return style.save(fig, folder, stem, pdf=False)
