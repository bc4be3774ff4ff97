"""Write mempath result files (schema version 1, docs/schema.md) from row dicts, for tests.

``write_run(path, cases, topology=...)`` writes root attributes, ``/bw/cases`` and
``/bw/samples`` exactly as the C++ writer documents them: one 1-D dataset per column,
int64, float64 or variable-length UTF-8 strings. ``case(...)`` fills a case row's
defaults; ``samples_of(cases)`` gives three samples per case that ran (min, median, max).
``write_run(..., memcpy=[memcpy_case(...), ...])`` adds ``/memcpy/cases`` and samples.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: analysis
from analysis.results.h5writer import Column, column, write_result  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"

SAMPLE_COLUMNS: dict[str, type] = {
    "case_id": int, "rep": int, "op": str, "pu": str, "pu_kind": str, "mem": str,
    "dst_mem": str, "alloc": str, "dst_alloc": str, "kernel": str, "threads": int,
    "size_bytes": int, "bytes": int, "time_s": float, "bandwidth_GBps": float, "noise": str,
}
CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "op": str, "pu": str, "pu_kind": str, "mem": str, "dst_mem": str,
    "alloc": str, "dst_alloc": str, "kernel": str, "threads": int, "size_bytes": int,
    "bytes": int, "noise": str, "passes": int, "via": str, "status": str, "reason": str,
    "reps": int, "median_GBps": float, "min_GBps": float, "max_GBps": float, "placement": str,
    "dst_placement": str, "verified": int, "cache_resident": int,
}
# /memcpy tables as src/apps/memcpy_command.cpp writes them (kSampleColumns, kCaseColumns).
MEMCPY_SAMPLE_COLUMNS: dict[str, type] = {
    "case_id": int, "rep": int, "mode": str, "gpu": int, "host_numa": int, "cpu_numa": int,
    "alloc": str, "direction": str, "part": str, "engine": str, "size_bytes": int,
    "bytes": int, "time_s": float, "bandwidth_GBps": float, "timing": str, "dst_gpu": int,
}
MEMCPY_CASE_COLUMNS: dict[str, type] = {
    "case_id": int, "mode": str, "gpu": int, "gpus": str, "all_gpus": int, "host_numa": int,
    "cpu_numa": int, "alloc": str, "direction": str, "engine": str, "size_bytes": int,
    "bytes": int, "timing": str, "via": str, "sweep": int, "status": str, "reason": str,
    "reps": int, "median_GBps": float, "min_GBps": float, "max_GBps": float,
    "h2d_median_GBps": float, "d2h_median_GBps": float, "median_time_s": float,
    "p99_time_s": float, "min_time_s": float, "max_time_s": float, "saturation_bytes": int,
    "sm_threads": int, "placement": str, "verified": int, "dst_gpu": int, "chunk_bytes": int,
    "fwd_median_GBps": float, "rev_median_GBps": float,
}
_MISSING = {int: -1, float: math.nan, str: ""}


def topology(name: str) -> dict[str, Any]:
    """A reference node's topology JSON (`mempath topo --from tests/fixtures/NAME --json`)."""
    return json.loads((DATA / f"topology_{name}.json").read_text())


def case(**values: Any) -> dict[str, Any]:
    """A /bw/cases row: read by cpu0 of numa0, 1 GiB, ok, unless ``values`` say otherwise."""
    row: dict[str, Any] = {"op": "read", "pu": "cpu0", "mem": "numa0", "alloc": "numa",
                           "threads": 1, "size_bytes": 1 << 30, "via": "local", "status": "ok",
                           "reps": 3, "passes": 1, "verified": 1, "cache_resident": 0}
    row.update(values)
    gpu = str(row["pu"]).startswith("gpu")
    row.setdefault("pu_kind", "gpu" if gpu else "cpu")
    row.setdefault("kernel", "grid" if gpu else "neon")
    copy = row["op"] == "copy"
    row.setdefault("dst_alloc", row["alloc"] if copy else "")
    row.setdefault("bytes", row["size_bytes"] * row["passes"] * (2 if copy else 1))
    ran = row["status"] == "ok"
    median = row.setdefault("median_GBps", 100.0 if ran else math.nan)
    row.setdefault("min_GBps", 0.95 * median)
    row.setdefault("max_GBps", 1.05 * median)
    row.setdefault("placement", row["mem"] if ran else "")
    row.setdefault("dst_placement", row.get("dst_mem", "") if ran else "")
    if not ran:
        row["reps"] = 0
    return row


def memcpy_case(**values: Any) -> dict[str, Any]:
    """A /memcpy/cases row: pinned h2d copy-engine bandwidth of gpu0 from numa0, 1 GiB, ok,
    unless ``values`` say otherwise. ``median_us``/``p99_us`` set latency times."""
    row: dict[str, Any] = {"mode": "bandwidth", "gpu": 0, "all_gpus": 0, "host_numa": 0,
                           "cpu_numa": 0, "alloc": "pinned", "direction": "h2d",
                           "engine": "ce", "size_bytes": 1 << 30, "via": "c2c", "sweep": 0,
                           "status": "ok", "reps": 10, "saturation_bytes": -1, "verified": 1,
                           "timing": "events"}
    median_us, p99_us = values.pop("median_us", None), values.pop("p99_us", None)
    row.update(values)
    if "dst_gpu" in row:                            # GPU<->GPU: gpus = "src,dst"
        row.setdefault("gpus", f"{row['gpu']},{row['dst_gpu']}")
    row.setdefault("gpus", str(row["gpu"]))
    row.setdefault("sm_threads", -1 if row["engine"] == "ce" else 270336)
    streams = 2 if str(row["direction"]).endswith("bidir") else 1
    row.setdefault("bytes", row["size_bytes"] * streams)
    ran = row["status"] == "ok"
    if median_us is not None:
        row.setdefault("median_GBps", row["bytes"] / (median_us * 1e-6) / 1e9)
        row.setdefault("median_time_s", median_us * 1e-6)
        row.setdefault("p99_time_s", (p99_us or median_us) * 1e-6)
        row["mode"], row["timing"] = "latency", "host"
    median = row.setdefault("median_GBps", 100.0 if ran else math.nan)
    row.setdefault("min_GBps", 0.95 * median)
    row.setdefault("max_GBps", 1.05 * median)
    if row["direction"] == "h2d":
        row.setdefault("h2d_median_GBps", median)
    if row["direction"] == "d2h":
        row.setdefault("d2h_median_GBps", median)
    row.setdefault("median_time_s", row["bytes"] / median / 1e9 if ran else math.nan)
    row.setdefault("p99_time_s", row["median_time_s"])
    row.setdefault("placement", f"numa{row['host_numa']}" if ran and row["host_numa"] >= 0
                   else "")
    if not ran:
        row["reps"] = 0
    return row


def memcpy_samples_of(cases: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One /memcpy/samples row per case that ran (its median), part = its direction."""
    rows = []
    for case_id, row in enumerate(cases):
        if row.get("status", "ok") != "ok":
            continue
        sample = {k: row[k] for k in MEMCPY_SAMPLE_COLUMNS if k in row}
        sample.update(case_id=row.get("case_id", case_id), rep=0, part=row["direction"],
                      bandwidth_GBps=row["median_GBps"], time_s=row["median_time_s"])
        rows.append(sample)
    return rows


def samples_of(cases: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Three /bw/samples rows (min, median, max) per case that ran."""
    rows = []
    for case_id, row in enumerate(cases):
        if row.get("status", "ok") != "ok":
            continue
        for rep, gbps in enumerate((row["min_GBps"], row["median_GBps"], row["max_GBps"])):
            sample = {k: row[k] for k in SAMPLE_COLUMNS if k in row}
            sample.update(case_id=row.get("case_id", case_id), rep=rep, bandwidth_GBps=gbps,
                          time_s=row["bytes"] / gbps / 1e9)
            rows.append(sample)
    return rows


def table(columns: Mapping[str, type], rows: Sequence[Mapping[str, Any]]) -> list[Column]:
    """The columns of a table from row dicts; a value a row lacks is the schema's missing one."""
    return [column(name, [row.get(name, _MISSING[kind]) for row in rows], kind)
            for name, kind in columns.items()]


def write_run(path: Path, cases: Sequence[Mapping[str, Any]],
              samples: Sequence[Mapping[str, Any]] | None = None, *,
              topology: Mapping[str, Any] | str, schema_version: int = 1,
              attrs: Mapping[str, Any] | None = None,
              memcpy: Sequence[Mapping[str, Any]] | None = None, bw: bool = True,
              extra: Mapping[str, Sequence[Column]] | None = None) -> Path:
    """Write a schema-v1 file (analysis.results.h5writer); ``case_id`` defaults to the row index.

    ``memcpy``: /memcpy/cases rows (memcpy_case()), written with their samples; ``bw``
    False leaves /bw out (a file of `mempath memcpy` alone); ``extra``: more tables
    (name -> table(...)).
    """
    rows = [{"case_id": i, **row} for i, row in enumerate(cases)]
    copies = [{"case_id": i, **row} for i, row in enumerate(memcpy or [])]
    topo = topology if isinstance(topology, str) else json.dumps(topology)
    host = json.loads(topo).get("host", "testhost") if topo.strip() else "testhost"
    root: dict[str, Any] = {
        "schema_version": schema_version, "tool": "mempath", "tool_version": "0.1.0",
        "git_revision": "abc1234", "command_line": "mempath bw --all", "host": host,
        "start_time": "2025-01-01T00:00:00Z", "end_time": "2025-01-01T00:10:00Z",
        "topology": topo, "kernel_release": "6.8.0", "arch": "aarch64", "page_size": 65536,
        "thp_enabled": "always [madvise] never", "cpu_governor": "performance",
        "cuda_driver_version": 12040, "cuda_runtime_version": 12040,
        "gpu_clocks": "[]", "build_type": "Release", "compiler": "GNU 12.2.0",
    }
    root.update(attrs or {})
    tables: dict[str, list[Column]] = {}
    if bw:
        tables["bw/cases"] = table(CASE_COLUMNS, rows)
        tables["bw/samples"] = table(SAMPLE_COLUMNS, samples_of(rows) if samples is None else list(samples))
    if memcpy is not None:
        tables["memcpy/cases"] = table(MEMCPY_CASE_COLUMNS, copies)
        tables["memcpy/samples"] = table(MEMCPY_SAMPLE_COLUMNS, memcpy_samples_of(copies))
    write_result(path, root, {**tables, **(extra or {})})
    return path
