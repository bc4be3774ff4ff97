"""A case's path in the fleet: the text that names it on every node of a kind and every
night (the fleet table's ``path``, the history's key), and that text read back: the preset
file of slurm/vet_node.sh that held it and the mempath options that plan exactly it again
(the retest). Both readings of one string live here, so that a family the fleet judges is
added in one place: its ``PATHS`` entry, its options in ``filter_args``.

A path leaves out what differs between alike nodes (the GPU grid's thread count follows the
SM count), so that the same path on every node of a kind can be compared.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _bw(row: Mapping[str, Any]) -> str:
    threads = -1 if row["pu_kind"] == "gpu" else row["threads"]
    dst = f" dst={row['dst_mem']} dst_alloc={row['dst_alloc']}" if row["dst_mem"] else ""
    noise = f" noise={row['noise']}" if row.get("noise") else ""
    return (f"bw {row['op']} pu={row['pu']} mem={row['mem']} alloc={row['alloc']}{dst} "
            f"kernel={row['kernel']} threads={threads} size={row['size_bytes']}{noise}")


def _memcpy(row: Mapping[str, Any]) -> str:
    return (f"memcpy {row['direction']} gpus={row['gpus']} host_numa={row['host_numa']} "
            f"alloc={row['alloc']} engine={row['engine']} mode={row['mode']} "
            f"size={row['size_bytes']}")


def _chase(row: Mapping[str, Any]) -> str:
    return (f"chase pu={row['pu']} mem={row['mem']} alloc={row['alloc']} "
            f"pattern={row['pattern']} size={row['size_bytes']} line={row['line_bytes']}")


def _pingpong(row: Mapping[str, Any]) -> str:
    return f"pingpong a={row['a']} b={row['b']} mem={row['mem']} alloc={row['alloc']}"


#: The path of a case row of each family the fleet judges (a cases_metric in families.def).
PATHS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "bw": _bw, "memcpy": _memcpy, "chase": _chase, "pingpong": _pingpong}


def fields(path: str) -> tuple[str, str, dict[str, str]]:
    """(family, leading word, key=value fields) of a path (PATHS):
    ``bw read pu=gpu0 mem=gpu0 ...`` -> ("bw", "read", {"pu": "gpu0", ...})."""
    tokens = path.split(" ")
    word = tokens[1] if len(tokens) > 1 and "=" not in tokens[1] else ""
    pairs = dict(t.split("=", 1) for t in tokens[1:] if "=" in t)
    return tokens[0], word, pairs


def preset_file(path: str) -> str:
    """The file of slurm/vet_node.sh's layout that holds the case (docs/vetting.md); the
    table keeps no file name, and the retest writes the same names."""
    family, word, f = fields(path)
    if family == "bw":
        return f"copy/{f['pu']}.h5" if word == "copy" else "bw.h5"
    if family == "chase":
        return "chase_gpu.h5" if f["pu"].startswith("gpu") else "chase.h5"
    return f"{family}.h5"


def filter_args(path: str) -> list[str]:
    """The mempath options (after the command) that plan exactly the case of ``path``.

    bw runs one case without --all (a copy's destination is no --all filter); a copy whose
    allocators differ came from --all's defaults, which one case without --alloc takes too.
    A ping-pong pair of two agents also plans each agent with itself (3 cases, the pair
    among them): mempath has no pair filter."""
    family, word, f = fields(path)
    if family == "bw":
        args = ["--op", word, "--pu", f["pu"], "--mem", f["mem"]]
        if f.get("dst"):
            args += ["--dst-mem", f["dst"]]
        if not f.get("dst") or f.get("dst_alloc") == f["alloc"]:
            args += ["--alloc", f["alloc"]]
        if f["pu"].startswith("gpu") and f.get("kernel") in ("grid", "block"):
            args += ["--kernel", f["kernel"]]
        if f.get("threads", "-1") != "-1":
            args += ["--threads", f["threads"]]
        args += ["--size", f["size"]]
        return args + (["--noise", f["noise"]] if f.get("noise") else [])
    if family == "memcpy":
        if word.startswith("d2d"):
            return ["--direction", word, "--gpu", f["gpus"], "--engine", f["engine"],
                    "--size", f["size"]]
        gpus = ["--all-gpus"] if "," in f["gpus"] else ["--gpu", f["gpus"]]
        size = ["--latency"] if f.get("mode") == "latency" else ["--size", f["size"]]
        return [*gpus, "--direction", word, "--engine", f["engine"], "--mem",
                f"numa{f['host_numa']}", "--alloc", f["alloc"], *size]
    if family == "chase":
        return ["--pu", f["pu"], "--mem", f["mem"], "--alloc", f["alloc"], "--pattern",
                f["pattern"], "--size", f["size"], "--line", f["line"]]
    if family == "pingpong":
        pus = f["a"] if f["a"] == f["b"] else f"{f['a']},{f['b']}"
        return ["--pu", pus, "--mem", f["mem"], "--alloc", f["alloc"]]
    raise ValueError(f"no retest options for the family of {path!r}")
