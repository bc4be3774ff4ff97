"""The report's index page: the Markdown the report writes (headings, paragraphs, pipe
tables, images, links, lists, code spans) as one static HTML file that opens from disk,
every PNG figure embedded as a data URI, nothing fetched from anywhere."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from . import tables

STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;line-height:1.4}"
         "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #bbb;padding:2px 6px}"
         "th{background:#eee}img{max-width:100%}code{background:#f4f4f4;padding:0 2px}")


def slug(title: str) -> str:
    """The anchor of a heading (GitHub's rule, simplified): lower case, words joined by -."""
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).strip().replace(" ", "-")


def _inline(text: str, folder: Path) -> str:
    out = html.escape(text, quote=False)

    def image(m: re.Match) -> str:
        path = folder / m[2]
        if path.suffix == ".png" and path.is_file():
            data = base64.b64encode(path.read_bytes()).decode()
            return f'<img alt="{m[1]}" src="data:image/png;base64,{data}">'
        return f"[{m[1]}: {m[2]} not found]"

    out = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", image, out)
    out = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def render(lines: list[str], folder: Path, title: str) -> str:
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"(#{1,6}) (.*)", line):
            level = len(m[1])
            body.append(f'<h{level} id="{slug(m[2])}">{_inline(m[2], folder)}</h{level}>')
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(tables.parse_row(lines[i]))
                i += 1
            body.append(tables.html(rows[0], [r for r in rows[1:] if not tables.is_rule(r)],
                                    lambda text: _inline(text, folder)))
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:], folder)}</li>")
                i += 1
            body.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            body.append(f"<p>{_inline(line, folder)}</p>")
        i += 1
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def index_lines(lines: list[str]) -> list[str]:
    """The report's lines with a table of contents (every ## and ### heading) after the title."""
    toc = []
    for line in lines:
        if m := re.match(r"(##+) (.*)", line):
            toc.append("  " * (len(m[1]) - 2) + f"- [{m[2]}](#{slug(m[2])})")
    toc = [t.strip() if t.startswith("  ") else t for t in toc]  # the HTML list is flat
    return lines[:2] + ["## Contents", ""] + toc + [""] + lines[2:]


def write_index(lines: list[str], folder: Path) -> list[Path]:
    """index.md and index.html in `folder`; figures are read from there."""
    lines = index_lines(lines)
    md, page = folder / "index.md", folder / "index.html"
    md.write_text("\n".join(lines))
    page.write_text(render(lines, folder, lines[0].lstrip("# ") if lines else "mempath report"))
    return [md, page]
