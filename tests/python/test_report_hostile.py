"""Reports and other analysis outputs built from hostile result files (issue 22, "Report and
HTML"): text from a result file is data, never markup or a path; output files are written
atomically and never through a link planted in the output folder; CSV cells that a
spreadsheet would evaluate are neutralised. The page in a real browser: test_browser.py."""
from __future__ import annotations

import base64
import csv
import errno
import hashlib
import io
import os
import re
import resource
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

import hostile_run
from conftest import DATA, REPO, analysis_cli, figure_suffixes
from h5fixtures import case, topology, write_run

from analysis import outfiles
from analysis.errors import record_failure
from analysis.render import html as report_html
from analysis.render.mdtext import CODE_SPAN


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the hostile result file, its report folder)."""
    folder = tmp_path_factory.mktemp("hostile")
    run = hostile_run.write(folder)
    proc = analysis_cli("report", run, "-o", folder / "report")
    assert proc.returncode == 0, proc.stderr
    return run, folder / "report"


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of its style elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def page_tags(page: Path) -> Tags:
    parser = Tags()
    parser.feed(page.read_text())
    return parser


def assert_page_is_inert(page: Path) -> None:
    """Only the tags the report makes; links to anchors and the folder's own files; images
    only the folder's own PNGs (embedded); no script, event handler or outside URL."""
    folder = page.parent
    parsed = page_tags(page)
    own_pngs = {p.read_bytes() for p in folder.glob("*.png")}
    allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "h5", "h6",
               "p", "ul", "li", "table", "tr", "th", "td", "code", "a", "img"}
    assert {tag for tag, _ in parsed.tags} <= allowed
    assert [tag for tag, _ in parsed.tags].count("style") == 1
    for tag, attrs in parsed.tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        if tag == "a":
            href = attrs["href"] or ""
            assert re.fullmatch(r"#[a-z0-9-]*", href) or (
                re.fullmatch(r"[\w.-]+", href) and (folder / href).is_file()), href
        elif tag == "img":
            src = attrs["src"] or ""
            assert src.startswith("data:image/png;base64,"), src[:80]
            assert base64.b64decode(src.split(",", 1)[1]) in own_pngs, "an image not of the report"
        elif tag == "meta":
            assert set(attrs) <= {"charset", "http-equiv", "content", "name"}
    text = page.read_text()
    assert base64.b64encode(hostile_run.MARK[:24]).decode()[:30] not in text
    assert "<script" not in text.lower() and "javascript:" not in re.sub(r"&[^;]+;", "", "".join(
        v or "" for _, a in parsed.tags for v in a.values()))


def test_page_links_and_images_only_to_the_reports_own_files(hostile: tuple[Path, Path]) -> None:
    _, out = hostile
    assert_page_is_inert(out / "index.html")
    page = (out / "index.html").read_text()
    # the hostile text is on the page, as text
    assert "[x](javascript:document.title='pwned')" in page
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in page
    assert page.count("<img ") == len(list(out.glob("*.png"))) == 3


def test_page_keeps_a_strict_content_security_policy(hostile: tuple[Path, Path]) -> None:
    _, out = hostile
    parsed = page_tags(out / "index.html")
    policies = [a["content"] for tag, a in parsed.tags if tag == "meta"
                and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(policies) == 1
    rules = {r.split()[0]: r.split()[1:] for r in policies[0].split(";") if r.strip()}
    assert rules["default-src"] == ["'none'"] and rules["img-src"] == ["data:"]
    assert "script-src" not in rules and "unsafe-inline" not in policies[0]
    digest = base64.b64encode(hashlib.sha256("".join(parsed.styles).encode()).digest()).decode()
    assert rules["style-src"] == [f"'sha256-{digest}'"]
    # the first thing in head: nothing before it could load or run
    assert [tag for tag, _ in parsed.tags][:4] == ["html", "head", "meta", "meta"]


def _outside_code(markdown: str) -> str:
    """The text with its code spans blanked, read left to right as CommonMark does (an
    escaped backtick opens no span)."""
    return re.sub(r"\\.|" + CODE_SPAN.pattern, lambda m: m[0] if m[0].startswith("\\") else " ", markdown,
                  flags=re.S)


@pytest.mark.parametrize("name", ["summary.md", "index.md", "path_matrix.md"])
def test_markdown_holds_result_text_as_data(hostile: tuple[Path, Path], name: str) -> None:
    """In the Markdown files too (a Git forge or a wiki renders them): no link or image but
    the report's own, no raw HTML, no line of a result's text starting a block."""
    _, out = hostile
    text = _outside_code((out / name).read_text())
    for m in re.finditer(r"(?<!\\)!?\[((?:\\.|[^\]\\])*)\]\(([^)]*)\)", text):
        assert re.fullmatch(r"#[a-z0-9-]*", m[2]) or (out / m[2]).is_file(), m[0]  # no dead link, no PDF unwritten
    assert not re.search(r"(?<!\\)<[A-Za-z/!?]", text)
    assert not re.search(r"^#+ injected", text, re.M)


def test_csv_cells_a_spreadsheet_would_evaluate_are_neutralised(hostile: tuple[Path, Path]) -> None:
    _, out = hostile
    rows = list(csv.reader(io.StringIO((out / "path_matrix.csv").read_text())))
    cells = [c for row in rows for c in row]
    assert any(c.startswith("'=HYPERLINK(") for c in cells)
    for cell in cells:
        if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
            float(cell)  # only a number may start so


def _victims(tmp_path: Path, names: list[str]) -> dict[str, Path]:
    victims = {}
    for name in names:
        victim = tmp_path / "victims" / name
        victim.parent.mkdir(exist_ok=True)
        victim.write_text(f"precious {name}\n")
        victims[name] = victim
    return victims


PLANTED = ["summary.md", "index.html", "index.md", "path_matrix.csv", "path_matrix.md",
           ".mempath-report", "thread_scaling.png"]


def test_links_planted_in_the_output_folder_are_replaced_not_written_through(
        hostile: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = hostile
    out = tmp_path / "report"
    out.mkdir()
    victims = _victims(tmp_path, [*PLANTED, *(f"copy_heatmap{suffix}" for suffix in figure_suffixes())])
    for name, victim in victims.items():
        (out / name).symlink_to(victim)
    (out / "errors.log").symlink_to(tmp_path / "victims" / "created-through-a-link")  # dangling
    proc = analysis_cli("report", run, "-o", out)
    assert proc.returncode == 0, proc.stderr
    for name, victim in victims.items():
        assert victim.read_text() == f"precious {name}\n", name
        assert not (out / name).is_symlink() and (out / name).is_file(), name
    assert not (tmp_path / "victims" / "created-through-a-link").exists()
    assert not list(out.glob(".*.tmp")), "a temporary file left behind"


def test_a_full_disk_is_one_line_and_the_old_report_stays(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    """A file-size limit stands for a full disk (Python ignores SIGXFSZ: the write fails
    with EFBIG where it would fail with ENOSPC). The second report, of two runs, has a
    larger index.html than the first (about 410 kB against 220 kB): the limit lets every
    other file through and stops that one, which must stay the first report's, whole."""
    run, _ = hostile
    out = tmp_path / "report"
    first = analysis_cli("report", run, "-o", out)
    assert first.returncode == 0, first.stderr
    old_page = (out / "index.html").read_bytes()
    assert len(old_page) < 300_000

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))

    proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(run), str(DATA / "h100_chase_cpu.h5"),
                           "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analysis: error: ") and "index.html" in lines[0] \
        and "File too large" in lines[0], proc.stderr
    assert (out / "index.html").read_bytes() == old_page
    assert "h100_chase_cpu" in (out / "summary.md").read_text()  # written before, whole
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_the_paper_page_of_a_hostile_file_is_inert(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = hostile
    proc = analysis_cli("paper", run, "-o", tmp_path / "paper")
    assert proc.returncode == 0, proc.stderr
    assert_page_is_inert(tmp_path / "paper" / "index.html")


def test_a_topology_that_is_json_but_not_an_object_is_one_line(tmp_path: Path) -> None:
    """The reader refuses it (analysis/results/io.py); the report shows its one line."""
    run = write_run(tmp_path / "list.h5", [case()], topology=topology("x86_h100"),
                    attrs={"topology": "[1, 2]"})
    proc = analysis_cli("report", run, "-o", tmp_path / "report")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analysis: error: ") and "topology" in lines[0], proc.stderr


def test_the_report_reads_the_simulators_own_files(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    proc = subprocess.run([sys.executable, "-m", "tests.fleetsim", "--nodes", "1", "-o", str(sim), "--seed", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = analysis_cli("report", *sorted(sim.glob("*.h5")), "-o", tmp_path / "report")
    assert proc.returncode == 0, proc.stderr
    assert "(pingpong.png)" in (tmp_path / "report" / "summary.md").read_text()  # the paper's Fig. 13


# outfiles, the one writer


def test_write_text_replaces_a_link_and_never_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out.txt").symlink_to(victim)
    outfiles.write_text(tmp_path / "out.txt", "new")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "out.txt").is_symlink() and (tmp_path / "out.txt").read_text() == "new"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        code: int) -> None:
    path = tmp_path / "summary.md"
    path.write_text("old report")

    def full(fd: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as caught:
        outfiles.write_text(path, "new report, never whole")
    assert caught.value.errno == code and caught.value.filename == str(path)
    assert path.read_text() == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]


def test_a_new_file_is_readable_as_open_would_make_it(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    try:
        outfiles.write_text(tmp_path / "page.html", "x")
    finally:
        os.umask(mask)
    assert (tmp_path / "page.html").stat().st_mode & 0o777 == 0o644


def test_a_planted_folder_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "nodes").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        outfiles.folder(tmp_path / "nodes")
    assert outfiles.folder(tmp_path / "a" / "b").is_dir()


def test_errors_log_is_not_appended_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "errors.log").symlink_to(victim)
    record_failure(out, "part", ValueError("boom"))
    assert victim.read_text() == "precious"
    assert "boom" in (out / "errors.log").read_text() and not (out / "errors.log").is_symlink()


@pytest.mark.parametrize("cell, expected", [
    ("=1+2", "'=1+2"), ("+SUM(A1)", "'+SUM(A1)"), ("-2+3", "'-2+3"), ("@SUM(1)", "'@SUM(1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("-1.5", "-1.5"), ("-3", "-3"), ("1e3", "1e3"),
    ("numa0", "numa0"), ("", ""), (-3, -3), (-1.5, -1.5), (None, None)])
def test_csv_cell(cell: object, expected: object) -> None:
    assert outfiles.csv_cell(cell) == expected


def test_write_csv_neutralises_text_and_keeps_numbers(tmp_path: Path) -> None:
    frame = pd.DataFrame({"host": ["=cmd|' /C calc'!A0", "n1"], "delta": [-0.5, 2.0],
                          "mixed": pd.Series(["-x", -4], dtype=object), "=head": [1, 2]})
    outfiles.write_csv(frame, tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv")
    assert list(back.columns) == ["host", "delta", "mixed", "'=head"]
    assert list(back["host"]) == ["'=cmd|' /C calc'!A0", "n1"]
    assert list(back["delta"]) == [-0.5, 2.0] and list(back["mixed"]) == ["'-x", "-4"]


def test_own_file_refuses_everything_but_a_file_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(b"x")
    (tmp_path / "link.png").symlink_to(outside)
    assert report_html.own_file("a.png", tmp_path) and report_html.own_file("sub/b.md", tmp_path)
    for target in ("/etc/passwd", str(tmp_path / "a.png"), f"../{outside.name}", "sub/../a.png",
                   "javascript:alert(1)", "data:image/png;base64,AAAA", "http://x/a.png", "//x/a.png",
                   "link.png", "missing.png", "a.png?x", "%2e%2e/a.png", "sub\\b.md", ""):
        assert report_html.own_file(target, tmp_path) is None, target
