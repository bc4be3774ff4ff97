"""The report's and the paper's index.html opened in a real headless Chromium: the page's
title, every <img> decoded (naturalWidth > 0), no console error (what Selenium calls
SEVERE: console.error, an uncaught exception, a resource that failed to load), every
table of the Markdown rendered with its rows. A report of a hostile result file
(hostile_run.py) makes no request outside its own file and runs no script, and its
Content Security Policy stops a script or an outside image put into the page afterwards.

Chromium is driven through its DevTools protocol over a pipe (--remote-debugging-pipe:
JSON messages ending in a NUL byte on file descriptors 3 and 4), so no driver and no
Python package beyond the standard library is needed. Marked `browser`: skipped where no
Chromium is installed; .ci/run installs Debian's `chromium` and fails if these skipped."""
from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import hostile_run
import synth_report
import synth_scaleout
from conftest import DATA, REPO, analysis_cli, chromium_binary
from h5fixtures import topology
from shared_render import analysis_once
from analysis.paper.write import write_paper
from analysis.results.io import load_runs

pytestmark = pytest.mark.browser

TIMEOUT_S = 60.0

#: What the page reports about itself once loaded.
PAGE_FACTS = """JSON.stringify({
  title: document.title,
  images: [...document.images].map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth})),
  tables: [...document.querySelectorAll('table')].map(t => ({
    rows: [...t.rows].filter(r => r.querySelector('td')).length,
    height: t.getBoundingClientRect().height}))
})"""


@dataclass
class Page:
    """A loaded page: its facts (PAGE_FACTS) and every error the console showed."""

    title: str
    images: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    errors: list[str] = field(default_factory=list)


class Chromium:
    """A headless Chromium on the DevTools pipe; ``open(path)`` loads a file and returns
    its Page."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        args = [binary, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--remote-debugging-pipe", f"--user-data-dir={profile}"]
        if os.geteuid() == 0:  # Chromium refuses root without it (CI containers run as root)
            args.append("--no-sandbox")
        self._log = open(profile.parent / "chromium.log", "w+b")

        def pipes() -> None:  # in the child: the protocol's descriptors 3 and 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self._proc = subprocess.Popen([*args, "about:blank"], pass_fds=(3, 4), preexec_fn=pipes,
                                      stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _died(self, why: str) -> AssertionError:
        self._log.seek(0)
        tail = self._log.read().decode(errors="replace")[-2000:]
        return AssertionError(f"Chromium {why} (exit {self._proc.poll()}); its output:\n{tail}")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise self._died(f"sent nothing for {TIMEOUT_S:g} s")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise self._died("closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        """Send one command and wait for its answer; events that come meanwhile are kept."""
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def open(self, path: Path) -> Page:
        self.events.clear()
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive(deadline))
        facts = self.call("Runtime.evaluate", {"expression": PAGE_FACTS, "returnByValue": True}, session=True)
        page = Page(**json.loads(facts["result"]["value"]))
        page.errors = severe(self.events)
        return page

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    def settle(self, seconds: float) -> None:
        """Keep the events of the next ``seconds`` (a load or a request the page starts late)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise self._died("closed the DevTools pipe")
                self._buffer += chunk
                while b"\0" in self._buffer:
                    message, _, self._buffer = self._buffer.partition(b"\0")
                    self.events.append(json.loads(message))

    def requests(self, blocked: bool = False) -> list[str]:
        """The URLs the page loaded since it was opened (the page itself among them), or
        with ``blocked`` those the Content Security Policy refused (Chromium announces a
        request before the policy refuses it)."""
        refused = {e["params"]["requestId"] for e in self.events if e.get("method") == "Network.loadingFailed"
                   and e["params"].get("blockedReason") == "csp"}
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent" and (e["params"]["requestId"] in refused) == blocked]

    def close(self) -> None:
        try:
            self.call("Browser.close")
            self._proc.wait(timeout=20)
        except (AssertionError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            os.close(self._write)
            os.close(self._read)
            self._log.close()


def severe(events: Sequence[dict[str, Any]]) -> list[str]:
    """The console's errors among DevTools events: console.error/assert, uncaught
    exceptions, error log entries (a resource that failed to load)."""
    out = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            out.append("console." + params["type"] + ": " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            out.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            out.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    binary = chromium_binary()
    assert binary, "the browser marker lets these run only where Chromium is found"
    chromium = Chromium(binary, tmp_path_factory.mktemp("chromium") / "profile")
    yield chromium
    chromium.close()


def markdown_tables(text: str) -> list[int]:
    """The data rows of every pipe table of a Markdown text, in order (header and rule
    excluded)."""
    counts, run = [], 0
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            run += 1
        elif run:
            counts.append(run - 2)
            run = 0
    return counts


def markdown_images(text: str) -> list[str]:
    """The PNG images of a Markdown text; none from its code spans or escaped brackets."""
    text = re.sub(r"\\.|(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", lambda m: m[0] if m[0].startswith("\\") else " ",
                  text, flags=re.S)
    return re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)


def assert_page(page: Page, markdown: str, title: str, figures: bool = True) -> None:
    """The page shows what its Markdown says; ``figures``: it has at least one image."""
    assert page.title == title
    assert not page.errors, page.errors
    assert page.images or not figures, "no figure on the page"
    assert len(page.images) == len(markdown_images(markdown))
    broken = [i["alt"] for i in page.images if not i["complete"] or i["width"] <= 0]
    assert not broken, f"images not decoded: {broken}"
    assert [t["rows"] for t in page.tables] == markdown_tables(markdown)
    assert all(t["height"] > 0 for t in page.tables), "a table is not rendered"


def cli(*args: str | Path) -> None:
    proc = analysis_cli(*args)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def shared_cli(*args: str | Path) -> Path:
    """``cli(*args, "-o", OUT)`` drawn once in the run for every test file that draws it
    alike (shared_render): OUT, which the page only reads."""
    proc, out = analysis_once(*args)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return out


REAL_RUNS = (DATA / "h100_gemm.h5", DATA / "h100_chase_cpu.h5")


def test_the_harness_sees_a_broken_page(browser: Chromium, tmp_path: Path) -> None:
    """What the checks below rely on: a bad image, a console error and a missing file are
    reported, and a table's rows are counted."""
    page_file = tmp_path / "broken.html"
    page_file.write_text('<!DOCTYPE html><html><head><title>t</title></head><body>'
                         '<img alt="bad" src="data:image/png;base64,AAAA"><img alt="gone" src="gone.png">'
                         '<table><tr><th>a</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table>'
                         '<script>console.error("boom")</script></body></html>')
    page = browser.open(page_file)
    assert [i["width"] for i in page.images] == [0, 0]
    assert any("boom" in e for e in page.errors) and any("gone.png" in e for e in page.errors)
    assert [t["rows"] for t in page.tables] == [2]
    with pytest.raises(AssertionError):
        assert_page(page, "![x](a.png)\n![y](b.png)\n\n| a |\n|---|\n| 1 |\n| 2 |\n", "t")


def test_report_page_of_real_runs(browser: Chromium, tmp_path: Path) -> None:
    out = tmp_path / "report"
    cli("report", *REAL_RUNS, "-o", out)
    markdown = (out / "index.md").read_text()
    page = browser.open(out / "index.html")
    assert_page(page, markdown, markdown.splitlines()[0].lstrip("# "))
    assert len(page.tables) >= 2


def test_paper_page_of_real_runs(browser: Chromium) -> None:
    out = shared_cli("paper", *REAL_RUNS)  # as test_paper_framework.py draws it
    markdown = (out / "paper.md").read_text()
    # Which items these runs draw depends on the registered figures; the page shows them all.
    page = browser.open(out / "index.html")
    assert_page(page, markdown, "mempath: the paper", figures=False)
    assert page.tables, "not even the theoretical peaks (Fig. 3) as a table"


def test_paper_page_of_the_synthetic_quad_gh200_runs(browser: Chromium, tmp_path: Path) -> None:
    files = synth_scaleout.write(tmp_path / "runs", topology("gh200_quad"))
    out = tmp_path / "paper"
    cli("paper", *files, "-o", out)
    markdown = (out / "paper.md").read_text()
    page = browser.open(out / "index.html")
    assert_page(page, markdown, "mempath: the paper")
    assert {i["alt"] for i in page.images} >= {"MPI node-to-node bandwidth against the node's bytes, per processes per node"}


@pytest.mark.parametrize("runs", ["synthetic quad GH200, every processor", "two H200s"])
def test_the_paper_page_shows_every_figure_and_supplementary_page_whole(browser: Chromium, tmp_path: Path,
                                                                      runs: str) -> None:
    """The page of a quad GH200 whose every processor was measured (main figures of cpu0 and
    gpu0, the others on supplementary pages) and of the recorded two-H200 set: every image,
    supplementary ones included, decoded; every table rendered; no console error."""
    out = tmp_path / "paper"
    if runs.startswith("synthetic"):
        # The items with supplementary pages there (Figs. 11-13, per processor and per flag),
        # drawn in this process: the whole set's page is the two-H200 case's and the
        # synthetic scale-out's below.
        files = synth_report.write(tmp_path / "runs", topology("gh200_quad"))
        write_paper(load_runs(files), out, only=("latency_by_memory", "latency_by_size", "pingpong"))
    else:  # as test_paper_full_set.py draws it
        out = shared_cli("paper", REPO / "docs" / "results" / "raw" / "2026-11-28-paper-h200x2")
    markdown = (out / "paper.md").read_text()
    page = browser.open(out / "index.html")
    assert_page(page, markdown, "mempath: the paper")
    supplementary = [i for i in page.images if "supplementary" in i["alt"]]
    assert bool(supplementary) == runs.startswith("synthetic")


def test_a_hostile_report_loads_nothing_from_outside_and_runs_no_script(browser: Chromium, tmp_path: Path) -> None:
    """Links to javascript: and data:, images from an absolute path, from .. and from http,
    <script>, <iframe>, <svg onload>, on* attributes and <style> with an outside URL, in the
    attributes and cells of a result file: the page asks for nothing but its own file
    (its figures are data: URIs), its title stays, no script element exists. Then a script
    and an outside image are put into the page (as a flaw of the escaping would): the
    Content Security Policy refuses both."""
    run = hostile_run.write(tmp_path)
    out = tmp_path / "report"
    cli("report", run, "-o", out)
    markdown = (out / "index.md").read_text()
    page_file = out / "index.html"
    page = browser.open(page_file)
    assert_page(page, markdown, "mempath report")
    browser.settle(1.0)
    own = page_file.resolve().as_uri()
    outside = [url for url in browser.requests() + browser.requests(blocked=True)
               if url != own and not url.startswith("data:image/png;base64,")]
    assert not outside, outside
    assert browser.evaluate("document.title") == "mempath report"
    assert browser.evaluate("document.scripts.length + document.querySelectorAll("
                            "'iframe,object,embed,svg,link,base,form').length") == 0
    handlers = browser.evaluate("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes])"
                                ".map(a => a.name).filter(n => n.startsWith('on') || n === 'style')")
    assert handlers == []
    links = browser.evaluate("[...document.links].map(a => a.getAttribute('href'))")
    assert links and all(re.fullmatch(r"#[a-z0-9-]*|[\w.-]+", h) for h in links), links
    # the style element is allowed by its hash: the page is styled
    assert browser.evaluate("getComputedStyle(document.body).maxWidth") == "1200px"
    # what the policy does where escaping had failed
    browser.evaluate("""(() => {
        const s = document.createElement('script');
        s.textContent = "document.title = 'pwned'";
        document.body.appendChild(s);
        const i = document.createElement('img');
        i.src = '""" + hostile_run.OUTSIDE_URL + """';
        document.body.appendChild(i);
        document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="document.title=1">');
    })()""")
    browser.settle(1.0)
    assert browser.evaluate("document.title") == "mempath report"
    assert hostile_run.OUTSIDE_URL not in browser.requests()
    assert hostile_run.OUTSIDE_URL in browser.requests(blocked=True)
    refused = [e for e in severe(browser.events) if "Content Security Policy" in e]
    assert refused, severe(browser.events)
