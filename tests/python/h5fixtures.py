"""Write mempath result files (schema version 1, docs/schema.md) from row dicts, for tests.

``write_run(path, cases, topology=...)`` writes root attributes, ``/bw/cases`` and
``/bw/samples`` exactly as the C++ writer documents them: one 1-D dataset per column,
int64, float64 or variable-length UTF-8 strings. ``case(...)`` fills a case row's
defaults; ``samples_of(cases)`` gives three samples per case that ran (min, median, max).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

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


def _write_table(group: h5py.Group, columns: Mapping[str, type],
                 rows: Sequence[Mapping[str, Any]]) -> None:
    for name, kind in columns.items():
        values = [row.get(name, _MISSING[kind]) for row in rows]
        if kind is str:
            data = np.array(values, dtype=h5py.string_dtype("utf-8"))
        else:
            data = np.array(values, dtype=np.int64 if kind is int else np.float64)
        group.create_dataset(name, data=data, shape=(len(rows),))


def write_run(path: Path, cases: Sequence[Mapping[str, Any]],
              samples: Sequence[Mapping[str, Any]] | None = None, *,
              topology: Mapping[str, Any] | str, schema_version: int = 1,
              attrs: Mapping[str, Any] | None = None) -> Path:
    """Write a schema-v1 file; ``case_id`` defaults to the row index."""
    rows = [{"case_id": i, **row} for i, row in enumerate(cases)]
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
    with h5py.File(path, "w") as f:
        for key, value in root.items():
            if isinstance(value, str):
                f.attrs.create(key, value, dtype=h5py.string_dtype("utf-8"))
            else:
                f.attrs.create(key, value, dtype=np.int64)
        _write_table(f.create_group("bw/cases"), CASE_COLUMNS, rows)
        _write_table(f.create_group("bw/samples"), SAMPLE_COLUMNS,
                     samples_of(rows) if samples is None else list(samples))
    return path
