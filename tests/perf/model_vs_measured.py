#!/usr/bin/env python3
"""The duration model against measured runs (docs/methodology.md, "Expected duration").

    python -m tests.perf.model_vs_measured --snapshot SNAP [--mempath build/mempath] FOLDER...

run from the repository root, as a module: it imports reframe_checks/expected_duration.py so,
with no path edit (docs/design.md).

For every mempath and mempath-mpi result file under the FOLDERs (a ReFrame output tree, a
paper set): the measured seconds (the job's `ELAPSED` line in the `rfm_job.out` beside the
file, else in the file's own log `FILE.txt` as slurm/paper.sbatch writes it, else the sum
of the cases' `case_s`), and the model's seconds for the same command line (its root
attribute `command_line`) planned now against SNAP, the snapshot of the node that ran it
(`mempath topo --save`); a mempath-mpi run is planned for its job's shape (the file's
`mpi_ranks` and `mpi_nodes`: `--plan-ranks`, `--plan-nodes`). Prints one row per file and
the ratio modelled / measured; with `--cases`, the measured seconds per (bench, pu kind,
via, alloc) group, where the time went. Exit 0; 1 when a file has no command line or the
plan fails.
"""
from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import h5py
import numpy as np

from reframe_checks.expected_duration import plan_command  # one way to turn a run into its plan

REPO = Path(__file__).resolve().parents[2]


def text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def modelled(mempath: str, command_line: str, snapshot: str, shape: list[str] | None = None) -> float:
    kept = plan_command(shlex.split(command_line)[1:])
    out = subprocess.run([mempath, *kept, "--from", snapshot, *(shape or [])], capture_output=True, text=True,
                         timeout=300)
    found = re.search(r"^EXPECT .*expected_s=([0-9.]+)", out.stdout, re.M)
    if out.returncode or not found:
        raise SystemExit(f"model_vs_measured: {' '.join(kept)} --from {snapshot}: {out.stderr.strip()[-300:]}")
    return float(found.group(1))


def measured(path: Path, bench: str, f: h5py.File) -> tuple[float, str]:
    for out in (path.parent / "rfm_job.out", path.with_suffix(".txt")):
        if out.is_file():
            found = re.search(rf"^ELAPSED {bench} .*elapsed_s=([0-9.]+)", out.read_text(errors="replace"), re.M)
            if found:
                return float(found.group(1)), "ELAPSED"
    table = f.get(f"{bench}/cases")
    if table is not None and "case_s" in table:
        return float(np.nansum(table["case_s"][:])), "sum case_s"
    raise SystemExit(f"model_vs_measured: {path}: no ELAPSED line beside it and no case_s column")


def groups(bench: str, f: h5py.File) -> dict[tuple, float]:
    table = f[f"{bench}/cases"]
    if "case_s" not in table:
        return {}
    cols = {k: [text(v) for v in table[k][:]] for k in ("pu_kind", "via", "alloc", "kernel") if k in table}
    seconds = table["case_s"][:]
    out: dict[tuple, float] = defaultdict(float)
    for i, s in enumerate(seconds):
        out[(bench, *(cols[k][i] for k in cols))] += float(s)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--mempath", default=str(REPO / "build" / "mempath"))
    parser.add_argument("--mempath-mpi", default=str(REPO / "build" / "mempath-mpi"))
    parser.add_argument("--cases", action="store_true", help="measured seconds per group of cases")
    args = parser.parse_args()
    rows, where = [], defaultdict(float)
    for folder in args.folders:
        for path in sorted(Path(folder).rglob("*.h5")):
            with h5py.File(path, "r") as f:
                command = text(f.attrs.get("command_line", ""))
                words = shlex.split(command)
                program = Path(words[0]).name if words else ""
                if len(words) < 2 or program not in ("mempath", "mempath-mpi"):
                    continue
                shape = None
                if program == "mempath-mpi":
                    bench = "mpi_bw" if words[1] == "bw" else words[1]
                    shape = ["--plan-ranks", str(int(f.attrs.get("mpi_ranks", 1))),
                             "--plan-nodes", str(int(f.attrs.get("mpi_nodes", 1)))]
                else:
                    bench = "bw" if words[1] == "bw" else words[1]
                if bench not in f:
                    bench = next((g for g in f if isinstance(f[g], h5py.Group) and "cases" in f[g]), bench)
                took, how = measured(path, bench, f)
                for key, s in groups(bench, f).items():
                    where[key] += s
            binary = args.mempath_mpi if program == "mempath-mpi" else args.mempath
            model = modelled(binary, command, args.snapshot, shape)
            rows.append((path.parent.name or path.name, " ".join(words[1:6]), took, how, model))
    print(f"{'file':<34} {'command':<44} {'measured_s':>10} {'modelled_s':>10} {'ratio':>6}")
    for name, cmd, took, how, model in rows:
        print(f"{name[:34]:<34} {cmd[:44]:<44} {took:>10.1f} {model:>10.1f} {model / took if took else float('nan'):>6.2f}")
    total_m, total_s = sum(r[2] for r in rows), sum(r[4] for r in rows)
    print(f"{'total':<79} {total_m:>10.1f} {total_s:>10.1f} {total_s / total_m if total_m else float('nan'):>6.2f}")
    if args.cases:
        print("\nmeasured seconds by group (sum of case_s):")
        for key, s in sorted(where.items(), key=lambda kv: -kv[1]):
            print(f"  {s:8.2f}  {' '.join(key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
