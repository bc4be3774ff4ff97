"""The allocator of each (processor, memory) read of the simulator's `--layout node`, as the
binary plans it: `mempath bw --op read --pu P --mem M --from tests/fixtures/FIXTURE` (its
default allocator, src/core/bw_plan.cpp), never chosen again here, so the simulator cannot
drift from the planner.

The answers of the fixtures with a saved topology are committed (data/reads_FIXTURE.json,
made by `MEMPATH_BIN=build/mempath python -m tests.fleetsim.reads FIXTURE ...`; run it again
when the planner changes: tests/python/test_fleetsim.py compares them with the binary's), so
the simulator needs no binary for them; another fixture folder is asked of MEMPATH_BIN, as
sim.load_topology reads its topology.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis import outfiles
from analysis.errors import InputError

from .preset import DATA, REPO, parse_plan_line


def read_paths(topology: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(processor, memory) of each read the node layout writes: every path of the topology
    but the interleaved ones (no one component's path) and those no allocator reaches."""
    return [(p["pu"], p["mem"]) for p in topology.get("paths", [])
            if "spread" not in p["via"] and p.get("allocs")]


def ask(fixture: str, topology: Mapping[str, Any], binary: str) -> dict[str, str]:
    """{"PU MEM": allocator} of each read, from the binary's plan against the snapshot."""
    snapshot = str(REPO / "tests" / "fixtures" / fixture)
    allocs = {}
    for pu, mem in read_paths(topology):
        done = subprocess.run([binary, "bw", "--op", "read", "--pu", pu, "--mem", mem, "--from", snapshot],
                              capture_output=True, text=True, check=False)
        line = next((l for l in done.stdout.splitlines() if l.startswith("PLAN bw ")), None)
        if done.returncode != 0 or line is None:
            raise InputError(f"{binary} bw --pu {pu} --mem {mem} --from {snapshot}: no plan "
                             f"({done.stderr.strip() or done.stdout.strip()})")
        allocs[f"{pu} {mem}"] = parse_plan_line(line)["alloc"]
    return allocs


def load(fixture: str, topology: Mapping[str, Any]) -> dict[str, str]:
    """The committed answers of ``fixture``, else the binary's (MEMPATH_BIN); a clear error
    where neither is."""
    committed = DATA / f"reads_{fixture}.json"
    if committed.is_file():
        return json.loads(committed.read_text())["allocs"]
    binary = os.environ.get("MEMPATH_BIN")
    if binary and (REPO / "tests" / "fixtures" / fixture).is_dir():
        return ask(fixture, topology, binary)
    known = sorted(p.stem[len("reads_"):] for p in DATA.glob("reads_*.json"))
    raise InputError(f"--layout node: no planned reads for fixture {fixture!r}; valid: {', '.join(known)} "
                     "(or a tests/fixtures folder with MEMPATH_BIN set to a mempath binary)")


if __name__ == "__main__":
    from .sim import load_topology  # the same topology the simulator plans on
    binary = os.environ.get("MEMPATH_BIN", str(REPO / "build" / "mempath"))
    for name in sys.argv[1:] or ["gh200_quad"]:
        out = DATA / f"reads_{name}.json"
        answers = {"fixture": name, "made_by": "python -m tests.fleetsim.reads " + name,
                   "allocs": ask(name, load_topology(name), binary)}
        outfiles.write_text(out, json.dumps(answers, indent=1) + "\n")
        print(f"{out}: {len(answers['allocs'])} reads")
