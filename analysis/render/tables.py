"""The one writer of report tables: a DataFrame (its columns the header, its rows the
cells) and the right-aligned columns, as Markdown (summary.md and the section files); the
HTML of index.html is the report template's ``table`` macro over the DataFrame that
``parse`` reads back from that Markdown, so both show the same cells.

Cells are formatted by the caller (``num`` for numbers that may be missing); a missing
cell (None, NaN) is blank, and a ``|`` in a cell is escaped so that a reason or a command
line cannot split a Markdown row. A cell is data (mdtext.safe): its code spans are kept,
but a link, image or HTML tag in it (a host name or reason from a result file) is text.
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Collection, Sequence
from typing import Any

import pandas as pd

from . import mdtext


def num(value: Any, digits: int = 1) -> str:
    """A number with ``digits`` decimals; "" where it is missing (None or NaN)."""
    return "" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def frame(header: Sequence[Any], rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """Rows of cells as a DataFrame; object columns, so that an int column with a blank
    cell stays ints (not floats) and every cell prints as the caller made it."""
    return pd.DataFrame([list(r) for r in rows], columns=list(header), dtype=object)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        return _escaped(value)
    except TypeError:  # unhashable
        return _escaped.__wrapped__(value)


@functools.lru_cache(maxsize=1 << 16, typed=True)
def _escaped(value: Any) -> str:
    """A cell's text: long tables (compare's, a fleet's) repeat a few thousand values."""
    return mdtext.safe(value).replace("|", "\\|")


def markdown(table: pd.DataFrame | Sequence[Any], rows: Sequence[Sequence[Any]] | None = None,
             right: Collection[int] = ()) -> list[str]:
    """A pipe table and the blank line after it; columns numbered in ``right`` align right.

    ``table`` is a DataFrame, or a header with its ``rows`` (made into one by ``frame``)."""
    if not isinstance(table, pd.DataFrame):
        table = frame(table, rows if rows is not None else [])
    rule = "|" + "".join("---:|" if i in right else "---|" for i in range(table.shape[1]))
    return (["| " + " | ".join(map(_cell, table.columns)) + " |", rule]
            + ["| " + " | ".join(map(_cell, row)) + " |" for row in table.itertuples(index=False, name=None)]
            + [""])


def parse_row(line: str) -> list[str]:
    """The cells of one Markdown table row, escaped pipes and Markdown restored (the
    inverse of markdown: a cell is the text it was made from, mdtext.unescape)."""
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
    return [mdtext.unescape(c) for c in cells[1:-1]]


def is_rule(cells: Sequence[str]) -> bool:
    """Whether a parsed row is the header rule (``---``, ``---:``, ``:---:``)."""
    return bool(cells) and all(re.fullmatch(r":?-+:?", c) for c in cells)


def parse(lines: Sequence[str]) -> pd.DataFrame:
    """The DataFrame of a Markdown table's lines (header, rule, rows): markdown's inverse."""
    rows = [parse_row(line) for line in lines]
    return frame(rows[0], [r for r in rows[1:] if not is_rule(r)])
