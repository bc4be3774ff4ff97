"""The report's sections in the one item registry (analysis/render/items.py) and its one
table writer (analysis/render/tables.py)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from analysis.render import html

from analysis.render import items
from analysis.report import sections

from analysis.render import tables
from analysis.results.io import load_runs
from analysis.report.write import write_report
from conftest import REPO
from h5fixtures import case, topology, write_run

SECTIONS = ["path_matrix_heatmap", "conditions", "transfers", "unified", "latency", "atomics", "scaleout",
            "applications"]
#: The report's own figures, each an item of its own drawn through the one tail (items.faceted).
FIGURES = ["thread_scaling", "copy_heatmap", "path_heatmap", "transfer_sweep", "transfer_latency", "unified_memory",
           "chase_prefetch", "pingpong_distribution", "stream_threads", "stream_gpu_placement", "gemm_sweep",
           "llm_placement"]


def test_markdown_aligns_and_escapes_pipes() -> None:
    lines = tables.markdown(["a", "b", "c"], [[1, "x | y", ""]], right={1, 2})
    assert lines == ["| a | b | c |", "|---|---:|---:|", "| 1 | x \\| y |  |", ""]


def test_html_is_the_same_table_and_reads_escaped_pipes_back() -> None:
    lines = tables.markdown(["key", "reason"], [["k", "a | b <c>"]])
    assert tables.parse_row(lines[2]) == ["k", "a | b <c>"] and tables.is_rule(tables.parse_row(lines[1]))
    page = html.render(["# t", "", *lines], Path("."), "t")
    assert "<table><tr><th>key</th><th>reason</th></tr><tr><td>k</td><td>a | b &lt;c&gt;</td></tr></table>" in page


def test_num_is_blank_where_missing() -> None:
    assert [tables.num(None), tables.num(float("nan")), tables.num(2.345, 2)] == ["", "", "2.35"]


def test_registry_holds_every_section_in_report_order_and_the_reports_own_figures() -> None:
    every = items.registry("analysis.report")
    found = [i for i in every if i.kind == "section"]
    assert [s.key for s in found] == SECTIONS
    assert [i.key for i in every if i.kind != "section"] == FIGURES
    assert {i.kind for i in every if i.kind != "section"} == {"figure"} and not any(i.ref for i in every)
    schema = (REPO / "docs" / "schema.md").read_text()
    for section in found:
        assert section.title and section.tables
        for table in section.tables:  # every table a section reads is a documented one
            assert f"/{table}" in schema, (section.key, table)


def test_the_report_runs_every_registered_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = write_run(tmp_path / "r.h5", [case()], topology=topology("x86_h100"))
    seen: list[str] = []

    def probe(ctx: items.Context) -> sections.Part:
        seen.append(ctx.out.name)
        return sections.Part(lines=["probe line", ""], missing=["probe missing"])

    monkeypatch.setitem(items._ITEMS, "probe", items.Item("probe", "", "Probe", "section", ("bw/cases",), "", 45,
                                                          probe, "analysis.report.probe"))
    write_report(load_runs([run]), tmp_path / "out")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert seen == ["out"]
    assert "## Probe\n\nprobe line" in summary and "- probe missing" in summary
    # Its place is its order: after scale-out (40), before the applications (50) and the peaks.
    assert summary.index("## Probe") < summary.index("## Theoretical peaks")


def test_sections_without_data_stay_out_of_the_summary(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r.h5", [case()], topology=topology("x86_h100"))
    write_report(load_runs([run]), tmp_path / "out")
    headings = re.findall(r"^## (.*)$", (tmp_path / "out" / "summary.md").read_text(), re.M)
    present = {s.title for s in items.registry("analysis.report") if s.kind == "section"} & set(headings)
    assert present == {"Path matrix heatmap", "Transfers and placement"}  # says why it produced nothing


def test_no_analysis_module_imports_another_ones_private_names() -> None:
    private = []
    for path in sorted((REPO / "analysis").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        items.item("latency", "", "Again", "section", ("chase/cases",), "", 99)(lambda ctx: sections.Part())


def test_a_section_that_raises_costs_only_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # CI's own run once lost the whole report to one figure's style error: the other sections,
    # index.html and the exit code must still tell the user what was written and what was not.
    from analysis.__main__ import main
    run = write_run(tmp_path / "r.h5", [case()], topology=topology("x86_h100"))

    def broken(ctx: items.Context) -> sections.Part:
        raise RuntimeError("a bug in this section\nsecond line")

    monkeypatch.setitem(items._ITEMS, "broken", items.Item("broken", "", "Broken", "section", ("bw/cases",), "", 45,
                                                           broken, "analysis.report.broken"))
    out = tmp_path / "out"
    (out).mkdir()
    (out / "errors.log").write_text("--- an earlier run's error\n")
    assert main(["report", str(run), "-o", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"analysis: error: section 'Broken': RuntimeError: a bug in this section (not written; "
                   f"trace in {out / 'errors.log'})"]
    summary = (out / "summary.md").read_text()
    assert "## Not written: errors" in summary and "- section 'Broken': RuntimeError" in summary
    assert "## Transfers and placement" in summary and (out / "index.html").is_file()
    log = (out / "errors.log").read_text()
    assert "earlier run" not in log and "Traceback" in log and "second line" in log
    monkeypatch.delitem(items._ITEMS, "broken")
    assert main(["report", str(run), "-o", str(out)]) == 0 and not (out / "errors.log").exists()
