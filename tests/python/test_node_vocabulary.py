"""One vocabulary for a node (issue 50, analysis/model/vocabulary.py): whether a node is a
Grace one is decided once, and every label of a memory says the same word for it, on every
topology fixture (each folder of tests/fixtures/ that `mempath topo --from DIR` reads) and
on the GH200 snapshots the tests hold (tests/python/data/topology_*.json): Fig. 7's panel
titles and role groups, Table II's access and placement columns, the latency flags'
memories, the report's path matrix and peak limits, the fleet's case words.

Before, a Grace-only node (grace_numa_fake: a Grace, no HBM, no C2C) was ``cpu0 (Grace)``
with an LPDDR5X peak in Fig. 7's panel, ``local DDR`` in its role groups, ``LPDDR`` in
Table II and ``host memory`` in the fleet."""
from __future__ import annotations

import csv
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import DATA, REPO, run

import synth_bandwidth
from analysis.figures import latency, published, table2_allocators, table2_translation as translation
from analysis.figures.paths import paper_processors, pu_title
from analysis.fleet.table import Topo, component, words
from analysis.model import vocabulary as vocab
from analysis.model.pathtable import limit_text
from analysis.model.peaks import GRACE_LPDDR5X, GRACE_LPDDR5X_480, PeakModel
from analysis.model.roles import role
from analysis.paper.write import write_paper
from analysis.render import style
from analysis.results.io import load_runs

FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_DIRS = sorted(d.name for d in FIXTURES.iterdir() if (d / "sys").is_dir())
SNAPSHOTS = sorted(p.name for p in DATA.glob("topology_*.json"))
TOPOLOGIES = [f"fixtures/{name}" for name in FIXTURE_DIRS] + [f"data/{name}" for name in SNAPSHOTS]
#: What each node is: the fixtures' README and the snapshots' names.
GRACE = {"gh200_dual", "gh200_quad", "gh200_quad_gpu_fenced", "gh200_single", "gh200_single_hbm_offline",
         "grace_numa_fake", "topology_gh200_dual.json", "topology_gh200_quad.json", "topology_gh200_single.json"}
NOT_GRACE = {"h100_loan_saved", "x86_2s_4gpu", "x86_h100", "topology_x86_h100.json"}
ALLOCS = ("system", "numa", "pinned", "registered", "managed", "device")


def test_every_topology_is_named_here() -> None:
    """A fixture added later is checked too, and says what it is."""
    assert FIXTURE_DIRS and SNAPSHOTS
    assert {*FIXTURE_DIRS, *SNAPSHOTS} == GRACE | NOT_GRACE


@cache
def _read(binary: str, where: str) -> str:
    kind, name = where.split("/", 1)
    if kind == "data":
        return (DATA / name).read_text()
    return run(Path(binary), "topo", "--from", str(FIXTURES / name), "--json").stdout


def topology_of(binary: Path, where: str) -> dict[str, Any]:
    return json.loads(_read(str(binary), where))


def _memories(topology: dict[str, Any]) -> list[str]:
    return [m["name"] for m in topology["memories"]]


@pytest.mark.parametrize("where", TOPOLOGIES)
def test_grace_is_decided_once_by_the_cpu(mempath_bin: Path, where: str) -> None:
    """A Grace is a Grace by its CPU model, HBM or not; every place that asks agrees."""
    topo = topology_of(mempath_bin, where)
    grace = vocab.is_grace(topo)
    assert grace == (where.split("/", 1)[1] in GRACE)
    assert grace == ("GRACE" in str(topo.get("cpu_model", "")).upper())
    model = PeakModel(topo)
    assert model.grace == grace
    hosts = [m for m in topo["memories"] if m["kind"] == "host"]
    citations = {model.memory(m["name"]).citation for m in hosts}
    if grace:  # the LPDDR5X peak of a Grace socket, whether or not a GPU sits beside it
        assert citations and all(str(c).startswith((GRACE_LPDDR5X.citation, GRACE_LPDDR5X_480.citation))
                                 for c in citations), citations
    else:
        assert citations == {None}
    for pu in paper_processors(topo):
        kind = next(p["kind"] for p in topo["processors"] if p["name"] == pu)
        title = pu_title(topo, pu)
        classes = published.hardware_classes(topo, pu)
        if kind == "cpu":
            assert title == f"{pu} ({'Grace' if grace else 'CPU'})"
            assert ("Grace" in classes) == grace, classes
        for mem in _memories(topo):
            if next(m["kind"] for m in topo["memories"] if m["name"] == mem) == "host":
                lpddr = {c for c in published.hardware_classes(topo, pu, [mem]) if "LPDDR5X" in c}
                assert bool(lpddr) == grace, (pu, mem, lpddr)
                if grace:  # the module the peak model took
                    big = model.memory(mem).gbps == GRACE_LPDDR5X_480.gbps
                    assert lpddr == {f"LPDDR5X {'480 GB' if big else '120/240 GB'} module"}, (mem, lpddr)
    # Fig. 7's comparisons against Grace Hopper sources: on Grace nodes only.
    assert bool(published.node_class(topo)) == (grace and any("GH200" in str(p.get("model", ""))
                                                              for p in topo["processors"]))


@pytest.mark.parametrize("where", TOPOLOGIES)
def test_a_memory_on_a_gpu_is_decided_once(mempath_bin: Path, where: str) -> None:
    topo = topology_of(mempath_bin, where)
    fleet = Topo(topo)
    for m in topo["memories"]:
        gpu = vocab.gpu_of_memory(m)
        assert vocab.on_gpu(m["kind"]) == (m["kind"] in ("hbm", "device")) == (gpu is not None)
        assert fleet.gpu_of(m["name"]) == gpu
        assert (latency.memory_owner(topo, m["name"]) == f"gpu{gpu}") == (gpu is not None)
        assert (limit_text(m["name"], PeakModel(topo)) == f"gpu{gpu} HBM") == (gpu is not None)


@pytest.mark.parametrize("where", TOPOLOGIES)
def test_every_label_of_a_memory_says_one_word(mempath_bin: Path, where: str) -> None:
    """Fig. 7's role groups, Table II's access and placement columns, the latency flags'
    memories, the report's path matrix and peak limits, the fleet's words: one word a memory."""
    topo = topology_of(mempath_bin, where)
    grace = vocab.is_grace(topo)
    host = vocab.LPDDR if grace else vocab.DDR
    assert vocab.host_word(topo) == host
    model, fleet = PeakModel(topo), Topo(topo)
    for mem in _memories(topo):
        kind = next(m["kind"] for m in topo["memories"] if m["name"] == mem)
        word = vocab.kind_word(topo, mem)
        assert word == {"host": host, "hbm": vocab.HBM, "device": vocab.DEVICE_MEMORY}[kind]
        # Fig. 7 (and every figure's role groups): the role seen from each processor.
        for pu in paper_processors(topo):
            assert role(topo, pu, mem) in (f"local {word}", f"peer {word}", word), (pu, mem)
        assert role(topo, "cpus", mem) in ("", word)  # every socket at once: the word alone
        # Table II: the memory without a viewpoint, and the access column.
        assert vocab.kind_name(topo, mem) == f"{word} {mem}"
        for pu_kind in ("cpu", "gpu"):
            ok = pd.DataFrame([{"pu_kind": pu_kind, "alloc": "numa", "status": "ok", "mem": mem, "reason": ""}])
            assert table2_allocators._access_text(ok, topo, pu_kind, "numa") == f"yes: {word} (bw, 1 cases ran)"
        # Fig. 12's flags: where the memory sits.
        assert latency.home(topo, mem).startswith(f"{word} ")
        # The report: the path matrix's memory label and the peak a path is limited by.
        assert f"{mem} {vocab.kind_word(topo, mem)}" == f"{mem} {word}"
        limit = limit_text(mem, model)
        if kind == "host":
            assert limit == f"{mem} memory" + (" (LPDDR5X)" if grace else "")
        else:
            assert limit.endswith(" HBM")
        # The fleet and the report's case words: the memory itself (a GPU's device memory and
        # its HBM node: HBM).
        said = vocab.memory_word(topo, mem)
        assert said == (host if kind == "host" else vocab.HBM)
        for pu in paper_processors(topo):
            path = next((p for p in topo["paths"] if p["pu"] == pu and p["mem"] == mem), None)
            if path is None:
                continue
            row = {"op": "read", "pu": pu, "mem": mem, "dst_mem": "", "alloc": "numa", "via": path["via"]}
            text = words("bw", row, fleet, component(fleet, pu, mem, path["via"]))
            assert re.search(rf"\b{said}\b", text) and _host_words(text) <= {host}, text
    # Table II's translation columns name host memory by no word of another node's.
    for alloc in ALLOCS:
        assert _host_words(translation.translation(topo, alloc)) <= {host}
        assert _host_words(translation.page_size(topo, alloc, {}, "")) <= {host}


def _host_words(text: str) -> set[str]:
    return set(re.findall(r"\b(LPDDR|DDR)\b", text))


def test_a_grace_without_hbm_is_a_grace_everywhere(mempath_bin: Path) -> None:
    """The issue's node: Fig. 7's panel, its role groups, Table II, the flags, the report and
    the fleet all call cpu0's own memory LPDDR (was: local DDR beside cpu0 (Grace))."""
    topo = topology_of(mempath_bin, "fixtures/grace_numa_fake")
    assert not any(m["kind"] == "hbm" for m in topo["memories"])
    assert not any((p.get("link") or {}).get("type") == "c2c" for p in topo["processors"])
    fleet = Topo(topo)
    assert pu_title(topo, "cpu0") == "cpu0 (Grace)"
    assert role(topo, "cpu0", "numa0") == "local LPDDR"
    assert vocab.kind_name(topo, "numa0") == "LPDDR numa0"
    assert latency.home(topo, "numa0") == "LPDDR (numa0)"
    assert limit_text("numa0", PeakModel(topo)) == "numa0 memory (LPDDR5X)"
    row = {"op": "read", "pu": "cpu0", "mem": "numa0", "dst_mem": "", "alloc": "numa", "via": "local"}
    assert words("bw", row, fleet, component(fleet, "cpu0", "numa0", "local")) == "cpu0 LPDDR read"


def test_without_a_cpu_model_a_superchip_is_a_grace() -> None:
    """A topology that names no CPU (written by hand, or by a tool that left it out): the
    GH200's HBM node or C2C link says Grace; a named CPU decides whatever its GPUs are."""
    hbm = {"memories": [{"name": "numa0", "kind": "host", "numa": 0}, {"name": "numa1", "kind": "hbm", "gpu": 0}]}
    c2c = {"processors": [{"name": "gpu0", "kind": "gpu", "gpu": 0, "link": {"type": "c2c"}}]}
    pcie = {"processors": [{"name": "gpu0", "kind": "gpu", "gpu": 0, "link": {"type": "pcie"}}]}
    assert vocab.is_grace(hbm) and vocab.is_grace(c2c) and not vocab.is_grace(pcie) and not vocab.is_grace({})
    assert vocab.is_grace({**hbm, "cpu_model": "unknown"})
    assert not vocab.is_grace({**hbm, "cpu_model": "AMD EPYC 9124 16-Core Processor"})
    assert vocab.is_grace({"cpu_model": "NVIDIA Grace (Neoverse V2)"})
    assert vocab.kind_word(hbm, "numa0") == "LPDDR" and vocab.kind_word(hbm, "numa1") == "HBM"


# ---- end to end: the paper's Fig. 7 and Table II drawn from a synthetic run of each node

class Titles:
    """The panel titles of every figure saved."""

    def __init__(self) -> None:
        self.titles: list[str] = []

    def save(self, original: Any) -> Any:
        def wrapped(fig: Any, out: Path, stem: str, **kwargs: Any) -> list[Path]:
            self.titles += [ax.get_title() for ax in fig.axes if ax.get_title()]
            return original(fig, out, stem, **kwargs)
        return wrapped


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("name", ["grace_numa_fake", "gh200_dual", "x86_2s_4gpu"])
def test_fig7_and_table2_drawn_say_one_word(mempath_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            name: str) -> None:
    """Drawn from a synthetic run of the node: Fig. 7's panels and role groups and Table II's
    columns name the host memory by the node's one word."""
    topo = topology_of(mempath_bin, f"fixtures/{name}")
    host, other = (vocab.LPDDR, vocab.DDR) if vocab.is_grace(topo) else (vocab.DDR, vocab.LPDDR)
    titles = Titles()
    monkeypatch.setattr(style, "save", titles.save(style.save))
    files = synth_bandwidth.write(tmp_path / "runs", topo)
    paper = write_paper(load_runs(files), tmp_path / "paper", only=("read_write_bandwidth", "allocation_apis"))
    assert paper.drawn["read_write_bandwidth"].files, paper.drawn["read_write_bandwidth"].why_not
    roles = {r["role"] for r in _rows(tmp_path / "paper" / "read_write_bandwidth.csv")}
    assert {f"local {host}"} <= roles and not any(other in r.split() for r in roles), roles
    cpu_titles = [t for t in titles.titles if re.search(r"\bcpu\d+ \(", t)]
    assert cpu_titles and all(f"({'Grace' if host == vocab.LPDDR else 'CPU'})" in t for t in cpu_titles), cpu_titles
    table = _rows(tmp_path / "paper" / "allocation_apis.csv")
    # (the "(paper)" columns quote the paper's Table II: its words, not this node's)
    said = " ".join(v for r in table for k, v in r.items() if not k.endswith("(paper)"))
    assert host in _host_words(said) and other not in _host_words(said), said
