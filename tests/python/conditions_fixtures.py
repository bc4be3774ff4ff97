"""Conditions of cases (docs/schema.md "Conditions") for the analysis' tests, from the
readings files of the fake NVML (tests/fake_nvml/readings/*.txt, read by tests/fake_nvml/fake_nvml.c
too): the same readings the C++ recorder is tested on become the rows it would have written.

Reading n of a GPU holds each key's value plus n x its step (a counter that grows between
readings, as the fake gives it at its n-th read); readings are ``seconds`` apart, and case i's
window is readings i to i + 1. ``conditions(...)`` returns the root attributes and tables for
``h5fixtures.write_run(..., attrs=..., extra=...)``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.results.h5writer import Column, table_columns

NVML = Path(__file__).resolve().parents[1] / "fake_nvml" / "readings"
NOT_SUPPORTED = "Not Supported"


def parse_readings(path: Path) -> dict[str, dict[str, Any]]:
    """uuid -> key -> (value, step) or the NVML error code (an int) of a ``!CODE`` line."""
    gpus: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in path.read_text().splitlines():
        words = line.split("#")[0].split()
        if not words:
            continue
        key, rest = words[0], words[1:]
        if key == "gpu":
            current = gpus.setdefault(rest[0], {})
        elif current is not None and key == "name":
            current[key] = " ".join(rest)
        elif current is not None:
            current[key] = int(rest[0][1:]) if rest[0].startswith("!") else \
                (float(rest[0]), float(rest[1]) if len(rest) > 1 else 0.0)
    return gpus


def _value(entry: Mapping[str, Any], key: str, n: int = 0, scale: float = 1.0, kind: type = int) -> Any:
    got = entry.get(key)
    if not isinstance(got, tuple):
        return math.nan if kind is float else -1
    value = (got[0] + n * got[1]) * scale
    return kind(value)


def gpu_facts(entry: Mapping[str, Any], gpu: int, uuid: str) -> dict[str, Any]:
    """One gpu_conditions entry, as src/core/conditions.cpp writes it."""
    def known(key: str) -> Any:
        v = _value(entry, key)
        return None if v == -1 else v
    links = sorted(int(k.split(".")[1]) for k in entry if k.startswith("nvlink_state.")
                   and isinstance(entry[k], tuple))
    limit = _value(entry, "default_power_limit_mw", scale=1e-3, kind=float)
    return {"gpu": gpu, "uuid": uuid, "name": entry.get("name", ""),
            "max_sm_clock_mhz": known("max_sm_clock"), "max_mem_clock_mhz": known("max_mem_clock"),
            "default_app_sm_clock_mhz": known("default_app_sm_clock"),
            "default_app_mem_clock_mhz": known("default_app_mem_clock"),
            "app_sm_clock_mhz": known("app_sm_clock"), "app_mem_clock_mhz": known("app_mem_clock"),
            "pcie_max_gen": known("pcie_max_gen"), "pcie_max_width": known("pcie_max_width"),
            "default_power_limit_w": None if math.isnan(limit) else limit,
            "persistence": known("persistence"), "compute_mode": known("compute_mode"), "mig": known("mig"),
            "ecc": known("ecc_mode"), "nvlinks": links, "c2c_links": known("c2c_links"),
            "missing": "" if links else f"nvlink ({NOT_SUPPORTED})"}


def gpu_row(entry: Mapping[str, Any], gpu: int, reading: int) -> dict[str, Any]:
    """The conditions/gpus row of reading ``reading`` of a GPU (its n-th read of the fake)."""
    links = sorted(int(k.split(".")[1]) for k in entry if k.startswith("nvlink_state.")
                   and isinstance(entry[k], tuple))
    down = [link for link in links if _value(entry, f"nvlink_state.{link}") == 0]

    def total(name: str) -> int:
        if not links:
            return -1
        return sum(max(_value(entry, f"{name}.{link}", reading), 0) for link in links)
    crc = total("nvlink_crc_flit") + max(total("nvlink_crc_data"), 0) if links else -1
    row = {"reading": reading, "gpu": gpu, "pstate": _value(entry, "pstate", reading),
           "sm_clock_mhz": _value(entry, "sm_clock", reading), "mem_clock_mhz": _value(entry, "mem_clock", reading),
           "event_reasons": _value(entry, "event_reasons", reading),
           "power_w": _value(entry, "power_mw", reading, 1e-3, float),
           "power_limit_w": _value(entry, "power_limit_mw", reading, 1e-3, float),
           "temperature_c": _value(entry, "temperature", reading),
           "pcie_gen": _value(entry, "pcie_gen", reading), "pcie_width": _value(entry, "pcie_width", reading),
           "ecc_corrected": _value(entry, "ecc_corrected", reading),
           "ecc_uncorrected": _value(entry, "ecc_uncorrected", reading),
           "retirement_pending": _value(entry, "retired_pending", reading),
           "remap_pending": _value(entry, "remap_pending", reading),
           "remap_failure": _value(entry, "remap_failure", reading),
           "nvlink_active": len(links) - len(down) if links else -1,
           "nvlink_down": ",".join(map(str, down)), "nvlink_replay": total("nvlink_replay"),
           "nvlink_recovery": total("nvlink_recovery"), "nvlink_crc": crc,
           "missing": ", ".join(f"{k} ({NOT_SUPPORTED})" for k in ("retired_pending", "violation_board_limit_ns")
                                if not isinstance(entry.get(k), tuple))}
    for column, key in (("power_capped_s", "violation_power_ns"), ("thermal_s", "violation_thermal_ns"),
                        ("sync_boost_s", "violation_sync_boost_ns"), ("board_limit_s", "violation_board_limit_ns"),
                        ("reliability_s", "violation_reliability_ns")):
        row[column] = _value(entry, key, reading, 1e-9, float)
    return row


def cpu_rows(reading: int, seconds: float, nodes: Sequence[int] = (0,), cores: int = 8,
             busy: float = 0.0, steal: float = 0.0, governor: str = "performance",
             freq_mhz: float = 3000.0) -> list[dict[str, Any]]:
    """conditions/cpus rows of a reading: each node's cores ``busy`` (share, this process's
    time included) and ``steal`` busy since reading 0."""
    elapsed = reading * seconds * cores
    return [{"reading": reading, "numa": n, "cpus": cores, "busy_s": 1000.0 + busy * elapsed,
             "idle_s": 5000.0 + (1 - busy - steal) * elapsed, "steal_s": steal * elapsed,
             "governor": governor, "freq_mhz": freq_mhz} for n in nodes]


def host_conditions(nodes: Sequence[int] = (0,), driver: str = "intel_pstate", governor: str = "performance",
                    max_mhz: float = 3500.0, cpuinfo_max_mhz: float = 3500.0) -> str:
    return json.dumps({"cpufreq_driver": driver,
                       "cpu_nodes": [{"numa": n, "governor": governor, "min_mhz": 800.0, "max_mhz": max_mhz,
                                      "cpuinfo_max_mhz": cpuinfo_max_mhz} for n in nodes],
                       "thp_defrag": "madvise", "numa_balancing": 0, "hugepages": {"2048kB": 0},
                       "kernel_memory_options": ""})


def conditions(windows: Sequence[tuple[int, str, str, str]], readings: str | None = None,
               seconds: float = 1.0, nodes: Sequence[int] = (0,), busy: float = 0.0, steal: float = 0.0,
               self_share: float = 0.0, governor: str = "performance", driver: str = "intel_pstate",
               host: str | None = None, nvml: str | None = None,
               ) -> tuple[dict[str, Any], dict[str, list[Column]]]:
    """Root attributes and conditions tables: case ``windows[i]`` = (case_id, processors,
    memories, via) runs between readings i and i + 1; the GPUs of the fake NVML readings
    file ``readings`` (a name under tests/fake_nvml/readings, None: no NVML) in its order."""
    gpus = parse_readings(NVML / readings) if readings else {}
    count = len(windows) + 1
    attrs = {"nvml": nvml or ("NVML 13.580.159.04, driver 580.159.04 (fake)" if readings else
                              "NVML not available: libnvidia-ml.so.1: cannot open shared object file"),
             "gpu_conditions": json.dumps([gpu_facts(e, g, u) for g, (u, e) in enumerate(gpus.items())]),
             "host_conditions": host or host_conditions(nodes, driver, governor)}
    cores = 8
    rows = {
        "windows": [{"case_id": c, "start": i, "end": i + 1, "processors": p, "memories": m, "via": v}
                    for i, (c, p, m, v) in enumerate(windows)],
        "readings": [{"reading": r, "time_s": r * seconds, "read_s": 1e-4, "load1": 1.0 + 8 * busy,
                      "running": 1, "self_cpu_s": 0.5 + r * seconds * cores * self_share} for r in range(count)],
        "cpus": [row for r in range(count) for row in cpu_rows(r, seconds, nodes, cores, busy, steal, governor)],
        "gpus": [gpu_row(e, g, r) for r in range(count) for g, e in enumerate(gpus.values())],
    }
    tables = {f"conditions/{name}": table_columns(f"conditions/{name}", r) for name, r in rows.items()}
    return attrs, tables

