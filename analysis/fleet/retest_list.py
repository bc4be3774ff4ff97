"""retest.json (written by retest.write_plan) read in one place: by the simulator and, as
``python3 -m analysis.fleet.retest_list``, by slurm/vet_node.sh and slurm/vet_fleet.sbatch
on compute nodes, whose python3 may have no package but the standard library: this module
and what it imports use nothing else.

    python3 -m analysis.fleet.retest_list nodes RETEST.json       # host,host,...
    python3 -m analysis.fleet.retest_list cases RETEST.json HOST  # FAMILY\\tNAME\\tARGS...
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..results.families import FAMILIES

#: What a retest re-runs: the families the fleet judges (a cases metric in families.def).
RETESTED = tuple(name for name, family in FAMILIES.items() if family.cases_metric)
FORM = '{"schema": 1, "nodes": {"HOST": [{"file": ..., "family": ..., "path": ..., "args": [...]}]}}'


def read(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Per host, its entries, each checked; ValueError (one line) for anything else."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read it ({error})") from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict):
        raise ValueError(f"not a retest list; valid: {FORM}")
    for host, entries in nodes.items():
        if not isinstance(entries, list):
            raise ValueError(f"host {host}: not a list of cases; valid: {FORM}")
        for entry in entries:
            _check(host, entry)
    return nodes


def _check(host: str, entry: Any) -> None:
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("file", "family", "path")):
        raise ValueError(f"host {host}: entry {entry!r} lacks file, family or path; valid: {FORM}")
    if entry["family"] not in RETESTED:
        raise ValueError(f"host {host}: family {entry['family']!r}; valid: {', '.join(RETESTED)}")
    name = entry["file"]
    if not name.endswith(".h5") or name.startswith("/") or ".." in name.split("/"):
        raise ValueError(f"host {host}: file {name!r}; valid: a .h5 name below the host folder")
    args = entry.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"host {host}: args {args!r}; valid: a list of mempath options")


def cases(nodes: dict[str, list[dict[str, Any]]], host: str) -> list[list[str]]:
    """[family, output name, *args] of each case of ``host``: the file's stem, numbered
    (``bw-2``) where one file holds several listed cases, as each re-run writes its own."""
    seen: dict[str, int] = {}
    out = []
    for entry in nodes.get(host, []):
        stem = entry["file"][:-3]
        seen[stem] = seen.get(stem, 0) + 1
        out.append([entry["family"], stem if seen[stem] == 1 else f"{stem}-{seen[stem]}", *entry["args"]])
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("nodes", "cases") or (argv[0] == "cases") != (len(argv) == 3):
        print("usage: python3 -m analysis.fleet.retest_list nodes RETEST.json | cases RETEST.json HOST",
              file=sys.stderr)
        return 2
    try:
        nodes = read(Path(argv[1]))
    except ValueError as error:
        print(f"{argv[1]}: {error}", file=sys.stderr)
        return 2
    if argv[0] == "nodes":
        print(",".join(sorted(nodes)))
    else:
        for case in cases(nodes, argv[2]):
            print("\t".join(case))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
