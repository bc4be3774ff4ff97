"""The vetting preset's cases of one node kind, file by file, as `slurm/vet_node.sh` plans them.

The simulator's `--layout preset` writes exactly these files and cases. They come from the
script itself: `python -m tests.fleetsim.preset FIXTURE` runs `VET_PLAN=tests/fixtures/FIXTURE
slurm/vet_node.sh` with MEMPATH_BIN behind a recording wrapper, pairs each mempath call's
`PLAN` lines with the file the script names for it, and writes
tests/fleetsim/data/preset_FIXTURE.json (committed, so the simulator needs no binary). Run
it again when the preset or the planner changes; tests/python/test_fleet_noise.py checks the
counts against the script where the binary exists.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from analysis import outfiles
from analysis.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[2]
# PLAN keys that are spelled differently in the cases tables (docs/schema.md).
RENAMED = {"size": "size_bytes", "dst": "dst_mem", "line": "line_bytes",
           "locality": "locality_bytes", "huge": "huge_pages"}
_WRAPPER = """#!/usr/bin/env bash
out=$("$PRESET_REAL" "$@" 2>&1); rc=$?
{ printf 'CALL'; printf ' %q' "$@"; printf '\\n%s\\n' "$out"; } >>"$PRESET_LOG"
printf '%s\\n' "$out"; exit $rc
"""


def _value(text: str) -> Any:
    if text == "-":
        return ""
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_plan_line(line: str) -> dict[str, Any]:
    """``PLAN bw op=read pu=cpu0 ... status=planned reason="..."`` -> {"family": "bw", ...}."""
    tokens = shlex.split(line)
    case: dict[str, Any] = {"family": tokens[1]}
    for token in tokens[2:]:
        key, _, text = token.partition("=")
        case[RENAMED.get(key, key)] = text if key == "reason" else _value(text)
    return case


def generate(fixture: str, binary: str) -> dict[str, Any]:
    """The preset's files and cases of ``fixture`` (a tests/fixtures folder), planned by the
    script against that snapshot with ``binary``."""
    with tempfile.TemporaryDirectory() as tmp:
        wrapper, log = Path(tmp) / "mempath", Path(tmp) / "calls.log"
        wrapper.write_text(_WRAPPER)
        wrapper.chmod(0o755)
        env = {**os.environ, "MEMPATH": str(wrapper), "PRESET_REAL": binary,
               "PRESET_LOG": str(log), "VET_PLAN": str(REPO / "tests" / "fixtures" / fixture)}
        done = subprocess.run(["bash", str(REPO / "slurm" / "vet_node.sh"), tmp + "/out"],
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InputError(f"vet_node.sh VET_PLAN={fixture} failed: {done.stderr.strip()}")
        calls = log.read_text().split("CALL ")[1:]
    planned = re.findall(r"^vet_node\.sh: plan (\S+): (\d+) cases$", done.stdout, re.M)
    calls = [c for c in calls if not c.startswith("topo")]
    if len(calls) != len(planned):
        raise InputError(f"vet_node.sh made {len(calls)} planning calls for {len(planned)} files")
    files: dict[str, list[dict[str, Any]]] = {}
    for (name, count), call in zip(planned, calls):
        cases = [parse_plan_line(line) for line in call.splitlines() if line.startswith("PLAN ")]
        if sum(c["status"] == "planned" for c in cases) != int(count):
            raise InputError(f"{name}: {count} planned cases announced, PLAN lines differ")
        files[name] = cases
    topology = subprocess.run([binary, "topo", "--from", str(REPO / "tests" / "fixtures" / fixture),
                               "--json"], capture_output=True, text=True, check=True).stdout
    return {"fixture": fixture, "made_by": "python -m tests.fleetsim.preset " + fixture,
            "topology": json.loads(topology), "files": files}


def load_preset(fixture: str) -> dict[str, Any]:
    """The committed preset of ``fixture``; a clear error where none is."""
    path = DATA / f"preset_{fixture}.json"
    if not path.is_file():
        known = sorted(p.stem[len("preset_"):] for p in DATA.glob("preset_*.json"))
        raise InputError(f"--layout preset: no preset plan for fixture {fixture!r}; valid: "
                         f"{', '.join(known)} (or make one: python -m tests.fleetsim.preset "
                         f"{fixture}, with MEMPATH_BIN set)")
    return json.loads(path.read_text())


def planned_counts(preset: dict[str, Any]) -> dict[str, int]:
    """plan.json's files: the planned (not skipped) cases of each file."""
    return {name: sum(c["status"] == "planned" for c in cases)
            for name, cases in preset["files"].items()}


if __name__ == "__main__":
    binary = os.environ.get("MEMPATH_BIN", str(REPO / "build" / "mempath"))
    for name in sys.argv[1:] or ["gh200_quad"]:
        preset = generate(name, binary)
        out = DATA / f"preset_{name}.json"
        out.parent.mkdir(exist_ok=True)
        outfiles.write_text(out, json.dumps(preset, indent=None, separators=(",", ":")) + "\n")
        print(f"{out}: " + ", ".join(f"{f} {n}" for f, n in planned_counts(preset).items()))
