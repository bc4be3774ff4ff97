"""Structure-aware fuzzing of result files' attributes through every command that reads
them (issue 33, "Result files"; docs/testing.md).

tests/fuzz/fuzz_readers.py damages files and calls the single-file readers; this one writes
*valid* HDF5 result files, real ones (tests/python/data, tests/fuzz/corpus/results) and
the test writers' (tests/python/h5fixtures.py, synth_scaleout.py), with hostile attribute
values: the root attributes every reader parses (the topology JSON, host, start_time and
end_time, git_revision, command_line, page_size, gpu_clocks, gpu_uuids, mpi_machines, ...)
and the datasets' ``units``, replaced by empty strings and objects, values of another type
(an int for a string, an array for a scalar, bytes that are not UTF-8), JSON of the wrong
shape (``{"memories": [{}]}``, ``{"processors": 5}``), huge, negative and non-finite
numbers, names outside the naming rules (``gpuX``, a memory name with a space, a line break,
unicode, 300 characters), dates out of range. The topology is changed as JSON: a field of
a processor, memory, path or NUMA node replaced, removed, renamed, a list replaced by
something else.

Each input is read by every command, in-process in a forked child (its module caches
fresh) beside an intact file: ``report`` and ``paper`` (style.save checks each figure, but no
file is rendered), ``compare`` (BASE: the input and the intact file; RUN: the input's original and the
intact file), ``fleet`` and ``fleet-history append``. The rule each keeps:
- it succeeds, or it refuses the file in one ``analysis: error:`` line that names it and
  says what is wrong (a valid HDF5 file is never "damaged"); exit 0, 1 or 2; never a
  Python exception out of the command, never a line on stderr that is not the command's;
- a part of a report or paper that fails (exit 1, its line and errors.log) where the
  input's original did not is a failure: the file's values broke it;
- report, paper, compare and fleet-history leave the refused file out and process the
  intact one; the fleet fails the input's node with the file and the reason in nodes.csv,
  and a node it read is in nodes.csv, never absent.

Inputs are drawn from the seed alone (input I of seed S: ``--seed S --index I``); a failure
prints that, and with --crashes the file is saved with the command that reproduces it.

    python tests/fuzz/fuzz_attributes.py --seconds 60 --seed 7 --crashes /tmp/crashes

Exit status 1 when any input broke the rule.
"""
from __future__ import annotations

import time

STARTED = time.monotonic()  # the budget counts the imports too: the test command pays them

import argparse  # noqa: E402
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(1, str(REPO / "tests" / "python"))  # the test writers
sys.path.insert(2, str(REPO / "tests" / "fuzz"))  # fuzz_readers' forked child

from analysis.__main__ import main as analysis_main  # noqa: E402
from analysis import outfiles  # noqa: E402
from analysis.errors import InputError  # noqa: E402
from analysis.fleet.table import load_cases_run  # noqa: E402
from fuzz_readers import forked  # noqa: E402

# What the commands import when they run: imported once here, so a child does not.
for _module in ("analysis.compare.runs", "analysis.fleet.history", "analysis.fleet.verdicts",
                "analysis.paper.write", "analysis.report.write", "analysis.render.style"):
    importlib.import_module(_module)
try:
    importlib.import_module("duckdb")  # fleet-history's: without it that command is not fuzzed
    HAVE_DUCKDB = True
except ImportError:
    HAVE_DUCKDB = False

FUZZ = Path(__file__).resolve().parent
DATA = REPO / "tests" / "python" / "data"
CORPUS = FUZZ / "corpus" / "results"
CRASHES = FUZZ / "crashes" / "attributes"
#: The intact file beside each input (the smallest file every command reads cleanly).
INTACT = CORPUS / "bw.h5"
#: Inputs drawn from one base before the next.
PER_BASE = 4
#: How _judge says a line of an error not about the file: the original is then run too,
#: and a line it gives as well (a report part that fails on the original) is not counted.
NOT_NAMED = "an error line that does not name the file: "
FUZZED, INTACT_NAME = "fuzzed.h5", "intact.h5"


# ---- bases ------------------------------------------------------------------------------------

def _gh200_bw_memcpy(path: Path) -> Path:
    """A quad GH200 node's bw and memcpy cases (h5fixtures, the tests' writer)."""
    from h5fixtures import case, memcpy_case, topology, write_run
    topo = topology("gh200_quad")
    cases = [case(pu="cpu0", mem="numa0", kernel="neon", threads=t, median_GBps=gbps) for t, gbps in
             ((1, 50.0), (8, 200.0), (72, 400.0))]
    cases += [case(pu=f"gpu{g}", mem=f"numa{4 + 8 * g}", alloc="numa", via="local", median_GBps=3000.0)
              for g in range(2)]
    cases += [case(pu="gpu0", mem="numa1", alloc="numa", via="c2c+interconnect", median_GBps=100.0),
              case(op="copy", pu="cpu0", mem="numa0", dst_mem="numa1", via="local", median_GBps=80.0),
              case(pu="gpu1", mem="gpu0", alloc="device", via="nvlink", median_GBps=120.0),
              case(pu="cpu1", mem="numa12", alloc="numa", via="interconnect+c2c", status="skipped",
                   reason="not this time")]
    copies = [memcpy_case(gpu=g, host_numa=g, via="c2c", median_GBps=380.0) for g in range(2)]
    copies += [memcpy_case(gpu=0, direction="d2h", host_numa=1, via="c2c+interconnect", median_GBps=90.0),
               memcpy_case(gpu=0, dst_gpu=1, direction="d2d", host_numa=-1, via="nvlink", median_GBps=130.0)]
    return write_run(path, cases, topology=topo, memcpy=copies,
                     attrs={"gpu_uuids": ",".join(f"GPU-{g:08x}-0000-0000-0000-000000000000" for g in range(4)),
                            "gpu_clocks": json.dumps([{"gpu": g, "sm_clock_khz": 1980000, "mem_clock_khz": 2619000}
                                                      for g in range(4)])})


def _gh200_mpi_bw(path: Path) -> Path:
    """A two-node `mempath-mpi bw --split` file (synth_scaleout, the paper set's writer)."""
    from h5fixtures import topology
    import synth_scaleout
    synth_scaleout.write_mpi(path, topology("gh200_quad"))
    with h5py.File(path, "r+") as handle:
        handle.attrs.create("mpi_machines", 2, dtype=np.int64)
    return path


#: Bases written here (name -> writer), beside the committed files.
WRITTEN: dict[str, Callable[[Path], Path]] = {"gh200_quad_bw_memcpy.h5": _gh200_bw_memcpy,
                                              "gh200_quad_mpi_bw.h5": _gh200_mpi_bw}


def base_names() -> list[str]:
    return sorted([*(f"data/{p.name}" for p in DATA.glob("*.h5")), *(f"corpus/{p.name}" for p in CORPUS.glob("*.h5")),
                   *(f"written/{name}" for name in WRITTEN)])


def base_file(name: str, work: Path) -> Path:
    """The base ``name`` (base_names()): a committed file, or written into ``work`` once."""
    folder, _, file = name.partition("/")
    if folder == "data":
        return DATA / file
    if folder == "corpus":
        return CORPUS / file
    path = work / "bases" / file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        WRITTEN[file](path)
    return path


# ---- hostile values -----------------------------------------------------------------------------
# A value is (kind, payload): how it is written (to_h5) and what it is, printable with repr.

LONG = "a" * 300
#: A real host name of a cloud VM: 46 characters, within Linux's 64.
LONG_HOST = "ip-172-31-45-120.eu-central-1.compute.internal"
HUGE_TEXT = "x" * 100_000
STRINGS = ["", " ", "\n", "x\ny", "\t", "\r\n", "\x1b[31mred\x1b[0m", "ñandú", "数据", "🙂" * 3, "\u202egnp.exe",
           "\ufeff", LONG, LONG_HOST, HUGE_TEXT, "=1+1", "-1", "null", "None", "NaN", "../../etc/passwd", "<script>x</script>",
           "`", "$(id)", "a,b", "\\x00", "\udcff"]
NUMBERS: list[tuple[str, Any]] = [("int64", 0), ("int64", -1), ("int64", 1), ("int64", 2**31), ("int64", 2**63 - 1),
                                  ("int64", -2**63), ("uint64", 2**64 - 1), ("float", 1e308), ("float", -1e308),
                                  ("float", 5e-324), ("float", math.nan), ("float", math.inf), ("float", -math.inf),
                                  ("float", -0.0), ("float", 2.5), ("bool", True), ("bool", False)]
DATES = ["", "0000-00-00T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z",
         "-001-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-24T25:61:61Z",
         "2026-11-24", "2026-11-24T02:00:00+14:00", "2026-11-24 02:00", "20261124T020000Z",
         "\uff12\uff10\uff12\uff16-11-24T00:00:00Z", "2026-11-24T00:00:00Z\n", "Tue Nov 24 2026", "1e308",
         "2026-11-2", "  2026-11-24", "1970-01-01T00:00:00Z", "2026-11-24T00:00:00.123456789Z", "yesterday"]
#: Names outside docs/topology.md's rules (cpuN, gpuN, cpus; numaN, gpuN).
BAD_NAMES = ["gpuX", "gpu", "cpu-1", "gpu-1", "numa", "numa 0", "numa0\n", " numa0", "NUMA0", "gpu00",
             "gpu99999999999999999999", "cpu\u0663", "gpu0 ", "numä0", "🙂", LONG, "", "numa0/../x", "<b>x</b>",
             "numa0,numa1", "gpu0+c2c", "=cmd|' /C calc'!A0", "numa-1", "cpus", "gpu1e3", "numa\t0"]
JSON_VALUES: list[Any] = [None, "", 0, -1, 1, 2**63, 2**64, -2**63 - 1, 10**30, 1e308, -1e308, math.nan, math.inf,
                          -math.inf, True, False, [], {}, [{}], [None], [[]], {"a": 1}, "x", LONG, 2.5, "0", "-1",
                          [1, "a", None], {"name": 5}, "gpuX", "numa 0", "🙂"]
#: Whole topology texts: not JSON, JSON that is not an object, objects of the wrong shape.
TOPOLOGY_TEXTS = ["", "{}", "[]", "null", "5", '"x"', "true", "{", "NaN", '{"memories": [{}]}',
                  '{"processors": 5}', '{"processors": [5]}', '{"processors": [null]}', '{"paths": {}}',
                  '{"paths": [{}]}', '{"paths": [5]}', '{"processors": [{"name": "gpuX"}]}',
                  '{"processors": [{"name": "gpu0", "kind": "gpu"}]}',
                  '{"processors": [{"name": "cpu0", "kind": "cpu", "numa": "x"}]}',
                  '{"memories": [{"name": "numa0", "kind": "hbm", "gpu": "x"}]}',
                  '{"memories": [{"name": "gpu0", "kind": "device"}]}', '{"host": 5}', '{"host": ["x"]}',
                  '{"arch": {}}', '{"numa_nodes": 5}', '{"numa_nodes": [{}]}', '{"a": 1, "a": 2}',
                  "[" * 100_000 + "]" * 100_000, '{"x":' * 50_000 + "1" + "}" * 50_000,
                  '{"processors": [{"name": "gpu0", "kind": "gpu", "gpu": 1e308}]}',
                  '{"processors": [{"name": "gpu0", "kind": "gpu", "gpu": -1, "link": 5}]}']

#: Root attributes and what they hold (docs/schema.md): text, a number, a date, JSON.
ROOT_ATTRIBUTES = {
    "tool_version": "text", "git_revision": "text", "command_line": "text", "host": "text", "start_time": "date",
    "end_time": "date", "kernel_release": "text", "arch": "text", "page_size": "number", "thp_enabled": "text",
    "cpu_governor": "text", "cuda_driver_version": "number", "cuda_runtime_version": "number", "gpu_clocks": "json",
    "gpu_uuids": "text", "build_type": "text", "compiler": "text", "aborted": "text", "synthetic": "number",
    "mpi_ranks": "number", "mpi_nodes": "number", "mpi_machines": "number", "mpi_library": "text",
    "nccl_version": "number", "torch_version": "text", "cuda_runtime": "text", "tool": "text",
    "schema_version": "number",
}
GPU_CLOCKS = ["[]", "{}", "[{}]", "5", "[null]", "not json", '[{"gpu": "x", "sm_clock_khz": -1}]',
              '[{"gpu": 0, "sm_clock_khz": 1e308, "mem_clock_khz": NaN}]', '[{"gpu": -1}]', '{"gpu": 0}',
              '[{"gpu": 0, "sm_clock_khz": "fast"}]', '[{"gpu": 99999999999999999999, "sm_clock_khz": 1}]', "[[]]"]


def any_value(rng: random.Random, like: str) -> tuple[str, Any]:
    """A hostile value for an attribute holding ``like`` (text, number, date, json): of
    another type a third of the time, else of its own type (what the readers' checks let
    through, so what the commands meet)."""
    roll = rng.random()
    if roll < 0.15:  # another type altogether
        return rng.choice([("int_array", [1, 2]), ("int_array", []), ("str_array", ["a", "b"]), ("array2d", None),
                           ("empty", None), ("bytes", b"\xff\xfe"), ("vlen_bytes", b"\xc3("), ("ascii", b"numa0"),
                           ("float_array", [math.nan]), ("str_array", [""])])
    if like == "number":
        if roll < 0.35:
            return ("str", rng.choice(["12", "abc", "", "1e308", "-5", "nan", " 7", "0x10", "\u0661\u0662"]))
        if roll < 0.55:
            return rng.choice(NUMBERS)
        return ("int64", rng.choice([0, 1, 2, 3, 4096, 65536, 1 << 40, 2**31 - 1, 2**63 - 1]))
    if roll < 0.3:
        return rng.choice(NUMBERS)
    if like == "date":
        return ("str", rng.choice(DATES))
    if like == "json" and roll < 0.8:
        return ("str", rng.choice(GPU_CLOCKS))
    return ("str", rng.choice(STRINGS + BAD_NAMES))


def like_value(rng: random.Random, current: Any) -> Any:
    """A hostile JSON value of ``current``'s own type: edge integers, odd texts, lists
    emptied, shortened, repeated or reversed, an object emptied."""
    if isinstance(current, bool):
        return not current
    if isinstance(current, int) or current is None:
        base = current or 0
        return rng.choice([0, 1, 2, 7, 255, 2**31, 2**63 - 1, 10**9, base + 1, base * 1000])
    if isinstance(current, str):
        return rng.choice(STRINGS + BAD_NAMES)
    if isinstance(current, list):
        return rng.choice([[], current[:1], current[::-1], current * 50, current[:1] * 3])
    if isinstance(current, dict):
        return rng.choice([{}, {k: v for k, v in current.items() if k != rng.choice(sorted(current) or [""])}])
    return rng.choice(JSON_VALUES)


def to_h5(value: tuple[str, Any]) -> tuple[Any, Any]:
    """(data, dtype) for h5py's attrs.create."""
    kind, payload = value
    if kind == "str":
        return payload, h5py.string_dtype("utf-8")
    if kind == "ascii":
        return np.bytes_(payload), None
    if kind == "bytes":
        return np.void(payload), None
    if kind == "vlen_bytes":
        return np.array(payload, dtype=h5py.vlen_dtype(bytes)), None
    if kind in ("int64", "uint64"):
        return getattr(np, kind)(payload), None
    if kind == "float":
        return np.float64(payload), None
    if kind == "bool":
        return np.bool_(payload), None
    if kind == "int_array":
        return np.array(payload, dtype=np.int64), None
    if kind == "float_array":
        return np.array(payload, dtype=np.float64), None
    if kind == "str_array":
        return np.array(payload, dtype=h5py.string_dtype()), None
    if kind == "array2d":
        return np.zeros((2, 2)), None
    return h5py.Empty("f8"), None


# ---- edits ----------------------------------------------------------------------------------------
# An edit: ("attr", key, value) | ("del", key) | ("units", dataset index, value)
# | ("topology", text) | ("topo_set", path, JSON value) | ("topo_del", path) | ("topo_dup", path).


def _descend(rng: random.Random, doc: Any) -> list[Any]:
    """A random place in a JSON document, from the root: at each object or list stop with
    probability 0.25 (the container itself is the place), else go into one of its members."""
    path: list[Any] = []
    node = doc
    while isinstance(node, (dict, list)) and node and (not path or rng.random() > 0.25):
        key = rng.choice(sorted(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    return path


def _named(rng: random.Random, doc: Any) -> list[Any] | None:
    """The path of a processor's or memory's name, or None."""
    lists = [k for k in ("processors", "memories") if isinstance(doc, dict) and isinstance(doc.get(k), list) and doc[k]]
    if not lists:
        return None
    key = rng.choice(lists)
    return [key, rng.randrange(len(doc[key])), "name"]


def topology_edit(rng: random.Random, doc: Any) -> tuple:
    roll = rng.random()
    if roll < 0.12 or not isinstance(doc, dict):
        return ("topology", rng.choice(TOPOLOGY_TEXTS))
    if roll < 0.4:
        path = _named(rng, doc)
        if path:
            names = [e.get("name") for k in ("processors", "memories") for e in doc.get(k) or [] if isinstance(e, dict)]
            return ("topo_set", path, rng.choice(BAD_NAMES + [n for n in names if isinstance(n, str)]))
    if roll < 0.55:
        top = rng.choice(["host", "arch", "cpu_model", "source"])
        return ("topo_set", [top], rng.choice(JSON_VALUES + BAD_NAMES[:6]))
    path = _descend(rng, doc)
    if roll < 0.7 and path:
        return ("topo_del", path)
    if roll < 0.78 and path and isinstance(path[-1], int):
        return ("topo_dup", path)
    return ("topo_set", path, like_value(rng, _at(doc, path)) if rng.random() < 0.5 else rng.choice(JSON_VALUES))


def _at(doc: Any, path: list[Any]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def make_edits(rng: random.Random, attrs: dict[str, Any], datasets: list[str]) -> list[tuple]:
    """1 to 3 edits of a file whose root attributes are ``attrs``."""
    try:
        doc: Any = json.loads(str(attrs.get("topology") or "{}"))
    except ValueError:
        doc = None
    edits = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        roll = rng.random()
        if roll < 0.45:
            edit = topology_edit(rng, doc)
            doc = apply_topology(doc, edit)
        elif roll < 0.9:
            keys = sorted(ROOT_ATTRIBUTES)
            key = rng.choice(keys + [k for k in ("host", "start_time", "command_line", "git_revision") for _ in range(2)])
            edit = ("attr", key, any_value(rng, ROOT_ATTRIBUTES[key]))
        elif roll < 0.95 and datasets:
            edit = ("units", rng.randrange(len(datasets)), any_value(rng, "text"))
        else:
            edit = ("del", rng.choice(["host", "start_time", "topology", "arch", "command_line", "git_revision",
                                       "tool_version", "end_time", "page_size"]))
        edits.append(edit)
    return edits


def apply_topology(doc: Any, edit: tuple) -> Any:
    """The topology document after ``edit`` (a copy; the text edit's parse, or None)."""
    what = edit[0]
    if what == "topology":
        try:
            return json.loads(edit[1])
        except (ValueError, RecursionError):
            return None
    if not what.startswith("topo_") or not isinstance(doc, (dict, list)):
        return doc
    doc = json.loads(json.dumps(doc))
    path = edit[1]
    parent = doc
    for key in path[:-1]:
        try:
            parent = parent[key]
        except (KeyError, IndexError, TypeError):
            return doc
    if not path:
        return edit[2] if what == "topo_set" else doc
    last = path[-1]
    try:
        if what == "topo_set":
            parent[last] = edit[2]
        elif what == "topo_del":
            del parent[last]
        else:
            parent.insert(last, json.loads(json.dumps(parent[last])))
    except (KeyError, IndexError, TypeError):
        pass
    return doc


def _datasets(handle: h5py.File) -> list[str]:
    names: list[str] = []
    handle.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(names)


def _set(handle: h5py.Group | h5py.Dataset, key: str, value: tuple[str, Any]) -> None:
    if key in handle.attrs:
        del handle.attrs[key]
    data, dtype = to_h5(value)
    handle.attrs.create(key, data, dtype=dtype)


def write_input(base: Path, path: Path, edits: list[tuple]) -> None:
    """``base`` copied to ``path`` with ``edits`` (OSError, ValueError, TypeError where
    h5py would not write one: no input)."""
    shutil.copyfile(base, path)
    with h5py.File(path, "r+") as handle:
        raw = handle.attrs.get("topology")
        try:
            doc: Any = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw or "{}"))
        except ValueError:
            doc = None
        text_edit = None
        for edit in edits:
            what = edit[0]
            if what == "attr":
                _set(handle, edit[1], edit[2])
            elif what == "del":
                if edit[1] in handle.attrs:
                    del handle.attrs[edit[1]]
            elif what == "units":
                names = _datasets(handle)
                _set(handle[names[edit[1] % len(names)]], "units", edit[2])
            else:
                if what == "topology":
                    text_edit = edit[1]
                doc = apply_topology(doc, edit)
                text = text_edit if what == "topology" else json.dumps(doc, allow_nan=True)
                _set(handle, "topology", ("str", text))


def draw(seed: int, index: int, bases: list[str], work: Path) -> tuple[str, list[tuple]]:
    """Input ``index`` of ``seed``: (its base's name, its edits); a function of the two."""
    order = random.Random(seed).sample(bases, len(bases))
    base = order[(index // PER_BASE) % len(order)]
    rng = random.Random(f"{seed}/{index}")
    path = base_file(base, work)
    with h5py.File(path, "r") as handle:
        attrs = {k: handle.attrs[k] for k in handle.attrs}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        datasets = _datasets(handle)
    return base, make_edits(rng, attrs, datasets)


def shown_edits(edits: list[tuple]) -> str:
    """The edits in one line, long texts cut."""
    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > 40:
            return f"{value[:20]}...({len(value)} chars)"
        if isinstance(value, tuple):
            return tuple(cut(v) for v in value)
        if isinstance(value, list):
            return [cut(v) for v in value[:4]] + ([f"...({len(value)} items)"] if len(value) > 4 else [])
        if isinstance(value, dict):
            return {k: cut(v) for k, v in list(value.items())[:4]} | ({"...": f"{len(value)} keys"} if len(value) > 4 else {})
        return value
    return repr([cut(e) for e in edits])


# ---- the commands and their rule --------------------------------------------------------------------

def _no_figure_file(fig: Any, path: Path, **options: Any) -> Path:
    """outfiles.save_figure without the file: style.save still checks each figure (a hostile
    text that breaks a figure's rules is a StyleError, as in a real run), but the PNG and PDF,
    most of a report's time, are not rendered."""
    return Path(path)


def _call(argv: list[str]) -> tuple[int | None, str, str, str]:
    """(exit status, stdout, stderr, the exception that escaped, as 'Type at file:line: text')."""
    out, err = io.StringIO(), io.StringIO()
    escaped = ""
    code: int | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = analysis_main(argv)
        except SystemExit as error:  # argparse's
            code = error.code if isinstance(error.code, int) else 2
        except BaseException as error:  # noqa: BLE001 - the finding
            tb = traceback.extract_tb(error.__traceback__)
            where = next((f"{Path(f.filename).relative_to(REPO)}:{f.lineno}" for f in reversed(tb)
                          if str(REPO / "analysis") in f.filename), "?")
            escaped = f"{type(error).__name__} at {where}: {str(error)[:300]}"
    return code, out.getvalue(), err.getvalue(), escaped


SUMMARY = re.compile(r"\d+ node\(s\) failed")  # the fleet's and fleet-history's own summary line


def _judge(command: str, code: int | None, stdout: str, stderr: str, escaped: str, fuzzed: Path) -> list[str]:
    """[command, kind, message]: kind ok, refused (the file named in one line) or failed."""
    if escaped:
        return [command, "failed", f"a Python exception left the command (a traceback): {escaped}"]
    if code not in (0, 1, 2):
        return [command, "failed", f"exit status {code!r}, not 0, 1 or 2"]
    refused = ""
    for line in stderr.splitlines():
        if not line.startswith("analysis: "):
            return [command, "failed", f"stderr holds a line that is not the command's: {line[:300]!r}"]
        if not line.startswith("analysis: error: "):
            continue
        said = line[len("analysis: error: "):]
        if fuzzed.name in said and SUMMARY.search(said) is None:
            if re.search(r"is damaged|HDF5 library (crashed|hangs)|cannot be read", said):
                return [command, "failed", f"a valid HDF5 file said to be damaged: {said[:300]}"]
            refused = refused or said
        elif SUMMARY.search(said) and command in ("fleet", "fleet-history"):
            continue
        else:
            return [command, "failed", f"{NOT_NAMED}{said[:300]}"]
    if refused and code == 0:
        return [command, "failed", f"exit 0 with the file refused: {refused[:300]}"]
    if refused:
        done = {"report": "analysis: report in", "paper": "analysis: paper in",
                "fleet-history": " appended to "}.get(command)
        if done and done not in stdout:
            return [command, "failed", f"the intact file was not processed beside the refused one: {refused[:200]}"]
        return [command, "refused", refused]
    return [command, "ok", ""]


def _fleet_node(work: Path, fuzzed: Path, outcome: list[str]) -> list[str]:
    """The fleet's node of the input: failed with the file named, or there as read."""
    table = work / "fleet" / "nodes.csv"
    if not table.is_file():
        return ["fleet", "failed", f"no nodes.csv (exit {outcome})"]
    import pandas as pd
    nodes = pd.read_csv(table, dtype=str, keep_default_na=False)
    if outcome[1] == "refused":
        failed = nodes[(nodes["verdict"] == "failed") & nodes["reason"].str.contains(fuzzed.name, regex=False)]
        if failed.empty:
            return ["fleet", "failed", f"the refused file's node is not failed with the file named in nodes.csv: "
                                       f"{outcome[2][:200]}"]
        return outcome
    try:
        run = load_cases_run(fuzzed)
    except InputError as error:
        return ["fleet", "failed", f"the fleet did not name the file its reader refuses: {str(error)[:200]}"]
    if not run.tables:  # none of the fleet's families (an nccl, gemm, stream file): no node to judge
        return outcome
    host = run.host
    if host not in set(nodes["node"]) and f"'{host}" not in set(nodes["node"]):
        return ["fleet", "failed", f"node {host[:80]!r} of the file is absent from nodes.csv"]
    return outcome


def commands(work: Path, fuzzed: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every command on ``fuzzed`` beside the intact file (lay_out's folders)."""
    intact = work / "a" / INTACT_NAME
    run = [("report", ["report", str(fuzzed), str(intact), "-o", str(work / "report")]),
           ("paper", ["paper", str(fuzzed), str(intact), "-o", str(work / "paper")]),
           ("compare", ["compare", str(work / "a"), str(work / "b")]),
           ("fleet", ["fleet", str(fuzzed), str(intact), "-o", str(work / "fleet")])]
    if HAVE_DUCKDB:
        run.append(("fleet-history", ["fleet-history", "append", "--db", str(work / "history.duckdb"),
                                      str(fuzzed), str(intact)]))
    return run


def lay_out(work: Path, source: Path, original: Path) -> Path:
    """work/a: the input (fuzzed.h5) and the intact file; work/b: the input's original
    under the same name and the intact file (compare's BASE and RUN)."""
    for side, file in (("a", source), ("b", original)):
        folder = work / side
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, folder / FUZZED)
        shutil.copyfile(INTACT, folder / INTACT_NAME)
    return work / "a" / FUZZED


def read_all(work: Path, source: Path, original: Path) -> list[list[str]]:
    """Every command's outcome on ``source`` (in this process)."""
    fuzzed = lay_out(work, source, original)
    out = []
    for name, argv in commands(work, fuzzed):
        code, stdout, stderr, escaped = _call(argv)
        outcome = _judge(name, code, stdout, stderr, escaped, fuzzed)
        if name == "fleet" and outcome[1] != "failed":
            outcome = _fleet_node(work, fuzzed, outcome)
        out.append(outcome)
    return out


def signature(command: str, message: str, fuzzed: Path | None = None) -> str:
    """What an outcome is like: the message without the file's name, numbers and quotes."""
    text = message
    if fuzzed is not None:
        text = text.replace(str(fuzzed.parent), "").replace(fuzzed.name, "")
    text = re.sub(r"/[^\s:;,')]*", "", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)
    return f"{command}:{re.sub(r'[0-9]+', '#', text)[:200]}"


def run_child(work: Path, source: Path, original: Path, deadline_s: float) -> list[list[str]] | str:
    """read_all() in a forked child (fuzz_readers.forked, its stdout kept with its stderr)."""
    return forked(lambda: read_all(work, source, original), deadline_s, stdout_too=True)


# ---- the run --------------------------------------------------------------------------------------

def read_known(path: Path | None) -> dict[str, str]:
    """tests/fuzz/known.txt's ``attributes`` lines: NAME -> WHAT (docs/testing.md)."""
    known: dict[str, str] = {}
    for line in (path.read_text().splitlines() if path and path.is_file() else []):
        words = line.split("#")[0].split()
        if len(words) >= 2 and words[0] == "attributes":
            known[words[1]] = " ".join(words[2:])
    return known


class Fuzzer:
    def __init__(self, seed: int, work: Path, crashes: Path | None, deadline_s: float,
                 known: dict[str, str]) -> None:
        self.seed, self.work, self.crashes, self.deadline_s, self.known = seed, work, crashes, deadline_s, known
        self.before: dict[str, set[str]] = {}  # base -> its original's failures (signatures)
        self.failures: dict[str, str] = {}
        self.counts = {"ok": 0, "refused": 0, "failed": 0, "as the original": 0}
        self.known_found = 0
        self.inputs = 0
        self.seen: set[str] = set()

    def _work(self) -> Path:
        folder = self.work / "run"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        return folder

    def baseline(self, base: str) -> set[str]:
        """The signatures of the failures of every command on the base itself: what its
        attributes did not cause (run once a base, where an input needs it)."""
        if base not in self.before:
            path = base_file(base, self.work)
            outcome = run_child(self._work(), path, path, self.deadline_s)
            self.before[base] = set()
            for command, kind, message in outcome if isinstance(outcome, list) else []:
                if kind == "failed":
                    self.before[base].add(signature(command, message))
                    print(f"note: {command} on the original {base} alone: {message[:300]} (not counted: "
                          "no attribute of it was changed)", flush=True)
        return self.before[base]

    def _save(self, path: Path) -> Path | None:
        if not self.crashes:
            return None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        self.crashes.mkdir(parents=True, exist_ok=True)
        to = self.crashes / f"{digest}.h5"
        if not to.exists():
            shutil.copyfile(path, to)
        return to

    def check(self, source: Path, original: Path, how: str, base: str | None = None) -> None:
        """Every command on ``source`` (made from ``base``'s file ``original``); failures printed."""
        self.inputs += 1
        outcome = run_child(self._work(), source, original, self.deadline_s)
        if isinstance(outcome, str):
            outcome = [["all", "failed", outcome]]
        for command, kind, message in outcome:
            if kind == "failed" and base and message.startswith(NOT_NAMED) \
                    and signature(command, message) in self.baseline(base):
                kind = "as the original"
            entry = next((name for name, what in self.known.items() if what and what in message), None)
            if kind == "failed" and entry:
                self.known_found += 1
                continue
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if kind != "failed":
                self.seen.add(f"{kind}:{signature(command, message)}")
                continue
            sig = signature(command, message)
            if sig in self.failures:
                continue
            saved = self._save(source)
            line = f"FAIL {command} {how}: {message.splitlines()[0] if message else ''}"
            if saved:
                line += (f"\n  saved: {saved}\n  reproduce: python tests/fuzz/fuzz_attributes.py --one {saved}"
                         + (f" --original {original}" if base and not base.startswith("written/") else ""))
            self.failures[sig] = line
            print(line, flush=True)

    def one_input(self, index: int, bases: list[str]) -> None:
        base, edits = draw(self.seed, index, bases, self.work)
        original = base_file(base, self.work)
        path = self.work / "input.h5"
        try:
            write_input(original, path, edits)
        except (OSError, ValueError, TypeError, KeyError, RuntimeError, OverflowError):
            return  # h5py would not write it: not an input
        how = f"input {index} of seed {self.seed} (--seed {self.seed} --index {index}) from {base}: {shown_edits(edits)}"
        self.check(path, original, how[:700], base)


def fuzz(seconds: float, seed: int, crashes: Path | None, deadline_s: float, replay: Path | None,
         known_file: Path | None, first: int = 0, count: int | None = None) -> int:
    bases = base_names()
    print(f"fuzz_attributes: seed {seed}, {seconds:g} s, {len(bases)} bases, commands report, paper, compare, "
          f"fleet{', fleet-history' if HAVE_DUCKDB else ' (no duckdb: fleet-history not fuzzed)'} "
          f"(input I reproduces with --seed {seed} --index I)", flush=True)
    known = read_known(known_file)
    with tempfile.TemporaryDirectory(prefix="mempath_fuzz_attr_",
                                     dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        fuzzer = Fuzzer(seed, Path(tmp), crashes, deadline_s, known)
        for path in sorted(replay.glob("*.h5")) if replay and replay.is_dir() else []:
            if path.name in known:
                print(f"known, skipped: {path}", flush=True)
                continue
            fuzzer.check(path, path, f"reproducer {path}")
        index, spent = first, []
        while count is None or index < first + count:
            elapsed = time.monotonic() - STARTED
            mean = sum(spent) / len(spent) if spent else 0.0
            if count is None and spent and elapsed + mean > seconds:  # the next would overrun (one always runs)
                break
            began = time.monotonic()
            fuzzer.one_input(index, bases)
            spent.append(time.monotonic() - began)
            index += 1
    c = fuzzer.counts
    print(f"fuzz_attributes: seed {seed}, {fuzzer.inputs} inputs (indexes {first} to {index - 1}) in "
          f"{time.monotonic() - STARTED:.1f} s: {c['ok']} command runs ok, {c['refused']} refused the file in one "
          f"line, {c['as the original']} failed as on the input's original (not counted), {c['failed']} failed "
          f"({len(fuzzer.failures)} distinct); {len(fuzzer.seen)} behaviours"
          + (f"; {fuzzer.known_found} failures as known reproducers" if fuzzer.known_found else ""), flush=True)
    return 1 if fuzzer.failures else 0


def one(path: Path, original: Path | None) -> int:
    """Every command on one file, in this process, each outcome and any traceback printed."""
    with tempfile.TemporaryDirectory(prefix="mempath_fuzz_attr_") as tmp:
        work = Path(tmp)
        fuzzed = lay_out(work, path, original or path)
        for name, argv in commands(work, fuzzed):
            code, stdout, stderr, escaped = _call(argv)
            outcome = _judge(name, code, stdout, stderr, escaped, fuzzed)
            if name == "fleet" and outcome[1] != "failed":
                outcome = _fleet_node(work, fuzzed, outcome)
            print(f"{name}: exit {code}: {outcome[1]}{': ' + outcome[2] if outcome[2] else ''}")
            for line in stderr.splitlines():
                print(f"    {line}")
            if escaped:  # again, for its whole traceback
                try:
                    analysis_main(argv)
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30, help="the whole run's time, imports included")
    parser.add_argument("--seed", type=int, default=None, help="default: from the time (printed)")
    parser.add_argument("--index", type=int, default=None, help="with --seed: run only input I (and --count more)")
    parser.add_argument("--count", type=int, default=1, help="with --index: this many inputs from I")
    parser.add_argument("--crashes", type=Path, default=None, help="save failing inputs here")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds one input's commands may take")
    parser.add_argument("--one", type=Path, help="run every command on this file in this process and stop")
    parser.add_argument("--original", type=Path, help="with --one: the file it was made from (compare's RUN)")
    parser.add_argument("--replay", type=Path, help="reproducers that must pass (tests/fuzz/crashes/attributes)")
    parser.add_argument("--known", type=Path, help="known failures to skip (tests/fuzz/known.txt)")
    args = parser.parse_args(argv)
    outfiles.save_figure = _no_figure_file
    if args.one:
        return one(args.one, args.original)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    if args.index is not None:
        return fuzz(args.seconds, seed, args.crashes, args.deadline, None, args.known, args.index, args.count)
    return fuzz(args.seconds, seed, args.crashes, args.deadline, args.replay, args.known)


if __name__ == "__main__":
    sys.exit(main())
