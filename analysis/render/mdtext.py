"""Text from result files (host and run names, command lines, reasons, table cells) put
into the Markdown the analysis writes as data, never as markup: no link, image, raw HTML
or code span of its own, and no new line that would start a block.

- ``text``: every character that could open a link, an image, a code span or HTML
  backslash-escaped (CommonMark), line breaks made spaces.
- ``code``: the text as one code span, whatever backticks it holds (a fence longer than
  any run of backticks in it, as CommonMark allows).
- ``safe``: for a text that may hold code spans the analysis made (a cell such as
  ``numa0 `pinned```): those kept, the rest as ``text``; ``unescape`` reads it back.

html.py's renderer reads these escapes and spans back (the same CODE_SPAN), and on top of
that makes links and images only of files in the report's own folder.
"""
from __future__ import annotations

import re
from typing import Any

#: Characters that start Markdown's links, images, code spans, autolinks and raw HTML;
#: the backslash itself first.
_ACTIVE = re.compile(r"([\\`\[\]<>])")
_BREAK = re.compile(r"\r\n|[\r\n\v\f\x85\u2028\u2029]")
#: A code span: a run of backticks, text, the same run (not longer).
CODE_SPAN_PATTERN = r"(?<!`)(?P<fence>`+)(?!`)(?P<body>.+?)(?<!`)(?P=fence)(?!`)"
CODE_SPAN = re.compile(CODE_SPAN_PATTERN, re.S)
_READ = re.compile(r"\\(?P<char>[\\`\[\]<>])|" + CODE_SPAN_PATTERN, re.S)


def text(value: Any) -> str:
    return _ACTIVE.sub(r"\\\1", _BREAK.sub(" ", str(value)))


def code(value: Any) -> str:
    body = _BREAK.sub(" ", str(value))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ") and body.strip()):
        body = f" {body} "
    return f"{fence}{body}{fence}" if body else "` `"


def unescape(markdown: str) -> str:
    """``text``'s and ``safe``'s inverse (line breaks aside): escapes outside code spans
    undone, read left to right as CommonMark does."""
    return _READ.sub(lambda m: m["char"] if m["char"] is not None else m[0], markdown)


def safe(value: Any) -> str:
    value = _BREAK.sub(" ", str(value))
    out, at = [], 0
    for span in CODE_SPAN.finditer(value):
        out += [text(value[at:span.start()]), span[0]]
        at = span.end()
    return "".join(out + [text(value[at:])])
