"""The one writer of report tables: a header, rows of cells and the right-aligned
columns, as Markdown (summary.md and the section files) or HTML (index.html).

Cells are formatted by the caller (``num`` for numbers that may be missing); a ``|`` in
a cell is escaped so that a reason or a command line cannot split a Markdown row.
"""
from __future__ import annotations

import html as _html
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pandas as pd


def num(value: Any, digits: int = 1) -> str:
    """A number with ``digits`` decimals; "" where it is missing (None or NaN)."""
    return "" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|")


def markdown(header: Sequence[Any], rows: Sequence[Sequence[Any]],
             right: Collection[int] = ()) -> list[str]:
    """A pipe table and the blank line after it; columns numbered in ``right`` align right."""
    rule = "|" + "".join("---:|" if i in right else "---|" for i in range(len(header)))
    return (["| " + " | ".join(map(_cell, header)) + " |", rule]
            + ["| " + " | ".join(map(_cell, row)) + " |" for row in rows] + [""])


def parse_row(line: str) -> list[str]:
    """The cells of one Markdown table row, escaped pipes restored (the inverse of markdown)."""
    cells, cell, i = [], "", 0
    text = line.strip()
    while i < len(text):
        if text.startswith("\\|", i):
            cell, i = cell + "|", i + 2
        elif text[i] == "|":
            cells.append(cell.strip())
            cell, i = "", i + 1
        else:
            cell, i = cell + text[i], i + 1
    cells.append(cell.strip())
    return cells[1:-1]


def is_rule(cells: Sequence[str]) -> bool:
    """Whether a parsed row is the header rule (``---``, ``---:``, ``:---:``)."""
    return bool(cells) and all(re.fullmatch(r":?-+:?", c) for c in cells)


def html(header: Sequence[Any], rows: Sequence[Sequence[Any]],
         inline: Callable[[str], str] = lambda text: _html.escape(text, quote=False)) -> str:
    """The same table as one HTML ``<table>``; ``inline`` renders each cell's text."""
    head = "".join(f"<th>{inline(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{inline(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
