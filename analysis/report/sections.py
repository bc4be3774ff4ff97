"""What a report section returns (Part) and how it embeds a figure. A section module
registers its builder in the one registry (render.items, kind "section", the heading as
its title); the report runs them in ``order``. A figure the paper draws too is named in
its section by the paper's item key (``Part.add_item``) and drawn by that one item
(analysis/figures), not drawn again here."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import figures
from ..render.items import Context, draw, supplementary_lines


@dataclass
class Part:
    """Files written, what is missing (and why), notes, and the summary.md lines."""

    files: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_figure(self, stem: str, title: str, files: list[Path], why_not: str) -> None:
        """Embed a drawn figure in the summary lines, or say why it was not drawn; its
        caption note (``files.note``, render.figures.Files) goes under it."""
        self.files += files
        if files:
            self.lines += figure_lines(stem, title, note=getattr(files, "note", ""))
        else:
            self.missing.append(f"{title} not drawn: {why_not}")


    def add_item(self, ctx: Context, key: str) -> None:
        """Draw the paper's item ``key`` into the report (files named by the key), its
        caption notes under it, or say why it was not drawn."""
        item = figures.by_key(key)
        drawn = draw(ctx, item)
        title = f"{item.title} ({item.ref})"
        self.files += drawn.files
        if not drawn.files:
            self.missing.append(f"{title} not drawn: {drawn.why_not}")
            return
        self.lines += figure_lines(key, title) + supplementary_lines(drawn.supplementary, title)
        self.lines += [n if n.startswith("- ") else f"- {n}" for n in drawn.notes]
        self.lines += ([f"- Not shown: {drawn.why_not}."] if drawn.why_not else []) + [""] * bool(drawn.notes or drawn.why_not)


def figure_lines(stem: str, title: str, why_not: str | None = None, note: str = "") -> list[str]:
    """A figure's summary lines: the PNG embedded with links and its caption note, or why
    it was not drawn."""
    if why_not is not None:
        return [f"### {title}", "", f"_Not drawn: {why_not}._", ""]
    return ([f"### {title}", "", f"![{title}]({stem}.png)", "", f"[PNG]({stem}.png), [PDF]({stem}.pdf)", ""]
            + ([note, ""] if note else []))


def ok(table: pd.DataFrame) -> pd.DataFrame:
    """The finished cases of a table (none where it has no status column)."""
    return table[table["status"] == "ok"] if "status" in table else table.iloc[0:0]
