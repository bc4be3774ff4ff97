"""The report's index page: the Markdown the report writes (headings, paragraphs, pipe
tables, images, links, lists, code spans) as one static HTML file that opens from disk,
every PNG figure embedded as a data URI, nothing fetched from anywhere. The page is
templates/report.html.j2 (jinja2, autoescaped) over the blocks parsed here.

Safe to publish on a web server (docs/analysis.md): text from result files is escaped
(mdtext.py in the Markdown, _inline here); a link becomes one only where it points to an
anchor of the page or to a file of the report's own folder, an image only where it is a
PNG of that folder (embedded); and the page's Content Security Policy allows no script,
no request for anything (images are data: URIs) and the one style element by its hash."""
from __future__ import annotations

import base64
import hashlib
import html
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from .. import outfiles
from . import style, tables
from .mdtext import CODE_SPAN, CODE_SPAN_PATTERN, safe

_TEMPLATES = Path(__file__).parent / "templates"
#: The page's template; autoescaping on, so a text reaches the page escaped unless it went
#: through _inline (which escapes it before adding its own markup).
_PAGE = jinja2.Environment(
    loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
    trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined).get_template("report.html.j2")
#: The page's style sheet, inlined so that the page is one file; the policy names it by
#: its hash, so no other style (nor an inline style attribute) applies.
CSS = (_TEMPLATES / "report.css").read_text().strip()
#: No script, no frame, no form, no base, nothing loaded: images are data: URIs.
CSP = ("default-src 'none'; img-src data:; "
       f"style-src 'sha256-{base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()}'; "
       "base-uri 'none'; form-action 'none'")

#: The CSS pixels a two-column figure (7.16 in) takes on the page: the body's width less its
#: padding (report.css).
PAGE_PX = 1150
#: An escaped ASCII punctuation character, a code span, a link or an image (a label may
#: hold code spans and escapes; a target has no space or parenthesis).
_TOKEN = re.compile(r"\\(?P<escaped>[!-/:-@\[-`{-~])"
                    rf"|(?P<code>{CODE_SPAN_PATTERN})"
                    r"|(?P<image>!)?\[(?P<label>(?:\\.|`[^`]*`|[^\]\\`])*)\]\((?P<target>[^()\s]*)\)", re.S)
#: A target that may name a file of the report's folder: a relative path of plain names.
_OWN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+,=@-]*(/[A-Za-z0-9_][A-Za-z0-9_.+,=@-]*)*")


def slug(title: str) -> str:
    """The anchor of a heading (GitHub's rule, simplified): lower case, words joined by -."""
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).strip().replace(" ", "-")


def own_file(target: str, folder: Path) -> Path | None:
    """The file of ``folder`` that ``target`` names, or None: no scheme, no absolute path,
    no ``..``, no link that leads out of the folder, and the file is there."""
    if not _OWN_FILE.fullmatch(target) or ".." in target.split("/"):
        return None
    root = folder.resolve()
    path = (root / target).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None


def _plain(text: str) -> str:
    """A label as plain text (an image's alt): escapes and code fences removed."""
    text = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)
    return CODE_SPAN.sub(lambda m: m["body"], text)


def _code(body: str) -> str:
    if body.startswith(" ") and body.endswith(" ") and body.strip():
        body = body[1:-1]
    return f"<code>{html.escape(body, quote=False)}</code>"


def _inline(text: Any, folder: Path) -> Markup:
    """One line of the report's Markdown as HTML: everything escaped, then the markup of
    its escapes, code spans, and the links and images that pass own_file."""
    text, out, at = str(text), [], 0
    for m in _TOKEN.finditer(text):
        out.append(html.escape(text[at:m.start()], quote=False))
        at = m.end()
        if m["escaped"] is not None:
            out.append(html.escape(m["escaped"], quote=False))
        elif m["code"] is not None:
            out.append(_code(m["body"]))
        elif m["image"]:
            path = own_file(m["target"], folder)
            alt = html.escape(_plain(m["label"]))
            if path is not None and path.suffix == ".png":
                png = path.read_bytes()
                data = base64.b64encode(png).decode()
                out.append(f'<img alt="{alt}"{_width(png)} src="data:image/png;base64,{data}">')
            else:
                out.append(f"[{alt}: {html.escape(m['target'])} not found in the report]")
        else:
            target = m["target"]
            label = _inline(m["label"], folder)
            if re.fullmatch(r"#[a-z0-9-]*", target) or own_file(target, folder) is not None:
                out.append(f'<a href="{html.escape(quote(target, safe="/#"))}">{label}</a>')
            else:  # not a file of the report: the text as written, no link
                out.append(f"[{label}]({html.escape(target)})")
    out.append(html.escape(text[at:], quote=False))
    return Markup("".join(out))


def _width(png: bytes) -> str:
    """The width attribute that shows a figure at the page's one scale: a two-column figure
    (style.PAGE_IN) across PAGE_PX, a one-column figure half of that, so that the text of
    every figure is the same size on the page (the CSS only shrinks them on a narrow screen)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return ""
    pixels = int.from_bytes(png[16:20], "big")
    return f' width="{round(pixels / (style.PAGE_IN * style.DPI) * PAGE_PX)}"'


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
    return _PAGE.render(title=title, blocks=_blocks(lines), inline=lambda text: _inline(text, folder),
                        cell=lambda value: _inline(safe(value), folder), csp=CSP, css=Markup(CSS)) + "\n"


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
    outfiles.write_text(md, "\n".join(lines))
    outfiles.write_text(page, render(lines, folder, lines[0].lstrip("# ") if lines else "mempath report"))
    return [md, page]
