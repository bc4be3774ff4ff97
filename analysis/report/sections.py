"""What a report section returns (Part) and how it embeds a figure. A section module
registers its builder in the one registry (render.items, kind "section", the heading as
its title); the report runs them in ``order``. A figure is an item too, named in its
section by its key (``Part.add_item``): the paper's (analysis/figures), drawn by that one
item and not drawn again here, or the report's own (registered in this package, ref '')."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import figures
from ..render import style
from ..render.items import Context, Drawn, Item, draw, registry, supplementary_lines


def by_key(key: str) -> Item:
    """The item ``key``: the report's own or the paper's (KeyError naming the keys there are)."""
    found = {i.key: i for i in (*registry(__package__), *figures.every()) if i.kind != "section"}
    if key not in found:
        raise KeyError(f"no figure item {key!r}; items: {', '.join(found)}")
    return found[key]


@dataclass
class Part:
    """Files written, what is missing (and why), notes, and the summary.md lines."""

    files: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_item(self, ctx: Context, key: str) -> Drawn:
        """Draw the item ``key`` into the report (files named by the key), its caption under
        it (the report's own figures: one paragraph; the paper's: its notes as a list), or
        say why it was not drawn; what it drew."""
        item = by_key(key)
        drawn = draw(ctx, item)
        title = f"{item.title} ({item.ref})" if item.ref else item.title
        self.files += drawn.files
        if not drawn.files:
            self.missing.append(f"{title} not drawn: {drawn.why_not}")
            return drawn
        if not item.ref:
            self.lines += figure_lines(key, title, note=" ".join(drawn.notes))
            return drawn
        self.lines += figure_lines(key, title) + supplementary_lines(drawn.supplementary, title)
        self.lines += [n if n.startswith("- ") else f"- {n}" for n in drawn.notes]
        self.lines += ([f"- Not shown: {drawn.why_not}."] if drawn.why_not else []) + [""] * bool(drawn.notes or drawn.why_not)
        return drawn


def figure_lines(stem: str, title: str, why_not: str | None = None, note: str = "") -> list[str]:
    """A figure's summary lines: the PNG embedded with links and its caption note, or why
    it was not drawn."""
    if why_not is not None:
        return [f"### {title}", "", f"_Not drawn: {why_not}._", ""]
    return ([f"### {title}", "", f"![{title}]({stem}.png)", "", style.figure_links(stem), ""]
            + ([note, ""] if note else []))


def ok(table: pd.DataFrame) -> pd.DataFrame:
    """The finished cases of a table (none where it has no status column)."""
    return table[table["status"] == "ok"] if "status" in table else table.iloc[0:0]
