"""The paper folder: every registered figure (PNG + PDF) and table (Markdown + CSV), then
paper.md and index.html listing each with the runs, commits and command lines it came
from, why an item was not drawn, and "published | this run | ratio" for every published
value a figure can be held against (docs/paper.md)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import outfiles
from ..errors import ERRORS_LOG, record_failure
from ..render import html, style
from ..render.mdtext import code
from ..render.provenance import runs_table
from ..render.tables import markdown, num
from ..results.io import RunSet
from ..render.items import Comparison, Context, Drawn, Item, draw, supplementary_lines
from .. import figures


@dataclass
class Paper:
    out: Path
    files: list[Path] = field(default_factory=list)
    drawn: dict[str, Drawn] = field(default_factory=dict)   # item key -> what it made
    items: list[Item] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # items that raised (errors.log has the traces)

    @property
    def missing(self) -> list[str]:
        return [f"{i.ref} {i.title}: {self.drawn[i.key].why_not}" for i in self.items
                if not self.drawn[i.key].files and not self.drawn[i.key].table]


def _source_lines(ctx: Context, names: Sequence[str]) -> list[str]:
    """The runs of one item: file, host, git revision and command line of each."""
    lines = []
    for run in ctx.runs.runs:
        if run.name in names:
            lines.append(f"- {code(run.name)} on {code(run.node)}, commit {code(run.attrs.get('git_revision', '?'))}: "
                         f"{code(run.attrs.get('command_line', '?'))}")
    return lines


def _item_lines(ctx: Context, item: Item, drawn: Drawn) -> list[str]:
    lines = [f"## {item.ref}: {item.title}", ""]
    if drawn.why_not and not drawn.files and not drawn.table:
        return lines + [f"_Not drawn: {drawn.why_not}._", "", f"Measured by: `{item.command}`.", ""]
    if item.kind == "figure":
        lines += [f"![{item.title}]({item.key}.png)", "", style.figure_links(item.key), ""]
        lines += supplementary_lines(drawn.supplementary, item.title)
    else:
        lines += drawn.table + ["", f"[Markdown]({item.key}.md), [CSV]({item.key}.csv)", ""]
    lines += [note if note.startswith("- ") else f"- {note}" for note in drawn.notes]
    if drawn.why_not:  # drawn, but some of it not: say what
        lines.append(f"- Not shown: {drawn.why_not}.")
    lines += ["", f"Measured by: `{item.command}`. From:", ""] + _source_lines(ctx, drawn.runs) + [""]
    return lines


def _comparison_lines(items: Sequence[Item], drawn: dict[str, Drawn]) -> list[str]:
    """Two tables: published values held against this run's like for like (the same hardware
    class, link, definition and direction: figures.published.Held.comparable) with their
    ratio, and the others, apart and without a ratio, with what differs. A Comparison that
    carries no facts is context too: nothing shows it to be alike."""
    refs = {i.key: i.ref for i in items}
    rows: list[Comparison] = [c for i in items for c in drawn[i.key].comparisons]
    lines = ["## Published values against this run", ""]
    if not rows:
        return lines + ["_No figure of these runs has a published value to compare with._", ""]
    alike = [c for c in rows if getattr(c, "comparable", False)]
    context = [c for c in rows if not getattr(c, "comparable", False)]

    def table(held: list[Comparison], column: str, values: list[str]) -> pd.DataFrame:
        """The columns both tables have, ``column`` (its ``values``) before the source."""
        return pd.DataFrame({
            "beside this run's": [refs.get(c.item, c.item) for c in held],
            "quantity": [c.quantity for c in held],
            "published": [f"{num(c.published)} {c.unit}" for c in held],
            "this run": [f"{num(c.run)} {c.unit}" if math.isfinite(c.run) else "not measured" for c in held],
            column: values,
            "published in": [c.source for c in held]}, dtype=object)
    if alike:
        lines += ["Ratio = this run / published, only where the value is the same quantity: the same hardware "
                  "class (processor or GPU model, link and its generation), definition and direction as the "
                  "source's. 'Beside this run's' names the item of this run that holds the value; 'published "
                  "in', the document and its figure, table or section.", ""] + markdown(table(
                      alike, "ratio", [f"{c.ratio:.2f}" if math.isfinite(c.ratio) else "" for c in alike])) + [""]
    else:
        lines += ["_No published value is the same quantity as this run's (hardware class, link, definition "
                  "and direction): none is compared; the context below lists them._", ""]
    if context:
        lines += ["### Context: published values that are not this run's quantity", "",
                  "Shown for orientation, without a ratio: each differs from this run's value in what the "
                  "last but one column says.", ""] + markdown(table(
                      context, "not the same quantity", ["; ".join(getattr(c, "differs", ())) or
                                                         "what the value is was not stated" for c in context])) + [""]
    return lines


def write_paper(runs: RunSet, out: Path, only: Sequence[str] = ()) -> Paper:
    """Draw every paper item (or those keyed in ``only``) into ``out`` (created)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / ERRORS_LOG).unlink(missing_ok=True)  # an earlier run's errors are not this one's
    hosts = runs.hosts()
    ctx = Context.of(runs, out)
    paper = Paper(out, items=[i for i in figures.every() if not only or i.key in only])
    body: list[str] = []
    for item in paper.items:
        try:
            drawn = draw(ctx, item)
        except Exception as err:  # noqa: BLE001  one item's bug must not cost the other items
            paper.failed.append(record_failure(out, f"{item.ref} {item.title}", err))
            drawn = Drawn(why_not=f"failed: {paper.failed[-1]}")
        if item.kind == "table" and drawn.table:
            frame_md = out / f"{item.key}.md"
            outfiles.write_text(frame_md, "\n".join(drawn.table) + "\n")
            drawn.files.append(frame_md)
        paper.drawn[item.key] = drawn
        paper.files += drawn.files
        body += _item_lines(ctx, item, drawn)
    drawn_count = sum(1 for i in paper.items if paper.drawn[i.key].files)
    lines = ["# mempath: the paper's figures and tables", "",
             f"{drawn_count} of {len(paper.items)} items drawn from {len(runs.runs)} run(s) on "
             f"{', '.join(code(h) for h in hosts)}. Figures are 3.5 in (one column) or 7.16 in "
             "(two columns) wide, as PNG (300 dpi) and PDF; memories are named by their role seen "
             "from the processor, with the NUMA node or GPU beside it. docs/paper.md maps each "
             "item to its command and ReFrame check.", ""]
    lines += runs_table(runs) + [""] + body + _comparison_lines(paper.items, paper.drawn)
    outfiles.write_text(out / "paper.md", "\n".join(lines) + "\n")
    outfiles.write_text(out / "index.html", html.render(html.index_lines(lines), out, "mempath: the paper"))
    paper.files += [out / "paper.md", out / "index.html"]
    return paper
