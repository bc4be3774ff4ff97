"""The report's index page: the Markdown the report writes (headings, paragraphs, pipe
tables, images, links, lists, code spans) as one static HTML file that opens from disk,
every PNG figure embedded as a data URI, nothing fetched from anywhere. The page is
templates/report.html.j2 (jinja2, autoescaped) over the blocks parsed here."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from . import tables

#: The page's template; autoescaping on, so a text reaches the page escaped unless it went
#: through _inline (which escapes it before adding its own markup).
_PAGE = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
    trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined).get_template("report.html.j2")


def slug(title: str) -> str:
    """The anchor of a heading (GitHub's rule, simplified): lower case, words joined by -."""
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).strip().replace(" ", "-")


def _inline(text: Any, folder: Path) -> Markup:
    out = html.escape(str(text), quote=False)

    def image(m: re.Match) -> str:
        path = folder / html.unescape(m[2])
        if path.suffix == ".png" and path.is_file():
            data = base64.b64encode(path.read_bytes()).decode()
            return f'<img alt="{_attribute(m[1])}" src="data:image/png;base64,{data}">'
        return f"[{m[1]}: {m[2]} not found]"

    out = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", image, out)
    out = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", lambda m: f'<a href="{_attribute(m[2])}">{m[1]}</a>', out)
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", out))


def _attribute(escaped: str) -> str:
    """Text already escaped for the body, made safe inside a double-quoted attribute."""
    return escaped.replace('"', "&quot;")


def _blocks(lines: list[str]) -> list[dict[str, Any]]:
    """The Markdown the report writes as the page's blocks: heading, table, list, paragraph."""
    blocks: list[dict[str, Any]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"(#{1,6}) (.*)", line):
            blocks.append({"kind": "heading", "level": len(m[1]), "id": slug(m[2]), "text": m[2]})
        elif line.startswith("|"):
            start = i
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            blocks.append({"kind": "table", "frame": tables.parse(lines[start:i])})
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(lines[i][2:])
                i += 1
            blocks.append({"kind": "list", "entries": items})
            continue
        elif line.strip():
            blocks.append({"kind": "paragraph", "text": line})
        i += 1
    return blocks


def render(lines: list[str], folder: Path, title: str) -> str:
    return _PAGE.render(title=title, blocks=_blocks(lines), inline=lambda text: _inline(text, folder)) + "\n"


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
