"""A result file whose text attributes and cells are hostile: Markdown links to
``javascript:`` and ``data:`` URLs, images from outside the report (an absolute path, a
``..`` path, an http URL), raw HTML with ``<script>``, ``<iframe>`` and ``on*`` attributes,
code-span breakouts, line breaks that would start Markdown blocks, and CSV formulas.
Used by test_report_hostile.py (the files) and test_browser.py (the page in Chromium).

``write(folder)`` writes folder/hostile.h5 and folder/outside.png (an image the report must
never embed: its bytes are MARK) and returns the result file."""
from __future__ import annotations

from pathlib import Path

from h5fixtures import case, topology, write_run

#: An address nothing listens on: a page that loaded it would show in Chromium's requests.
OUTSIDE_URL = "http://127.0.0.1:9/outside.png"
#: The bytes of folder/outside.png: found in a page, the report embedded a file from outside.
MARK = b"\x89PNG\r\n\x1a\nOUTSIDE-THE-REPORT-0123456789"

SCRIPTS = ("<script>document.title='pwned'</script>",
           "<img src=x onerror=\"document.title='pwned'\">",
           "<iframe src=\"javascript:parent.document.title='pwned'\"></iframe>",
           "<a href=\"javascript:document.title='pwned'\" onclick=\"document.title='pwned'\">a</a>",
           "<svg onload=\"document.title='pwned'\"></svg>",
           "<style>body{background:url(" + OUTSIDE_URL + ")}</style>")


def hostile_text(outside: Path) -> str:
    """Every trick at once, as one attribute or cell would hold it."""
    return (f"[x](javascript:document.title='pwned') ![o]({outside}) ![p](../outside.png) "
            f"![u]({OUTSIDE_URL}) [d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) "
            f"<{OUTSIDE_URL}> " + " ".join(SCRIPTS))


def write(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    outside = folder / "outside.png"
    outside.write_bytes(MARK)
    evil = hostile_text(outside)
    topo = topology("x86_h100")
    topo["cpu_model"] = "EPYC " + evil
    topo["host"] = "node"
    cases = [case(threads=t, median_GBps=20.0 * t) for t in (1, 2, 4)]
    cases += [case(op="copy", mem="numa0", dst_mem="numa0", median_GBps=30.0),
              case(status="skipped", mem="gpu0", reason="=HYPERLINK(\"http://127.0.0.1:9/\") " + evil),
              case(status="failed", threads=8, reason="@SUM(1+1)\n## injected heading\n" + evil)]
    attrs = {"host": "node<b>1</b>[h](javascript:x)",
             "command_line": "mempath bw ` " + evil + " `\n![n](" + str(outside) + ")",
             "tool_version": "=1+1 " + evil, "git_revision": "``` " + evil,
             "start_time": "-2+3 " + SCRIPTS[0], "end_time": "+cmd|' /C calc'!A0"}
    return write_run(folder / "hostile.h5", cases, topology=topo, attrs=attrs)
