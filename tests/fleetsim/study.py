"""The detection study on the simulator: false positives before and after the
confirm pass, recall per fault class and size, broken files named.

    python -m tests.fleetsim.study -o DIR [--nodes 2688] [--seeds 1,2] [--noise h100]
        [--scales 1,2] [--sizes 0.10,0.05] [--per-fault 20] [--layout preset] [--jobs N]
        [--rounds 3]

For each seed and noise scale: the simulator (the faults below on distinct nodes,
the rest healthy) -> ``analysis fleet`` (pass 1, writes retest.json) -> the simulator's
``--retest`` (fresh noise for the listed cases of the listed nodes, faults kept) ->
``analysis fleet --retest`` (pass 2, the verdicts). Each step is the CLI's own code
(analysis.__main__.main), so the study measures what an operator would run. Printed and
written to DIR/study.md and DIR/study.json:

- false positives: healthy nodes (no fault in truth.json) whose verdict is degraded, failed
  or missing; before the confirm pass (pass 1, every flag is "degraded") and after it
  (pass 2; a `suspect` is not condemned and is counted apart);
- recall: per fault kind (path class) and size, the faulty nodes called degraded with a
  flag on their fault (a flagged path whose component crosses the faulty one); a faulty
  node called degraded for other paths only (noise) is counted apart;
- broken files: nodes with a partial, truncated or missing file (and failed nodes) whose
  verdict is failed or missing and whose reason names the file; none may be healthy.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import outfiles
from analysis.errors import InputError

VALUE_FAULTS = ("hbm", "channel", "c2c", "nvlink", "interconnect", "memcpy", "latency")
FILE_FAULTS = ("partial", "truncated", "nofile")
CONDEMNED = ("degraded", "failed", "missing")


def fault_spec(per_fault: int, sizes: Sequence[float]) -> str:
    """Every value fault kind at every size, ``per_fault`` nodes each, and the file faults."""
    items = [f"{kind}:{per_fault * len(sizes)}@{'/'.join(f'{s:g}' for s in sizes)}"
             for kind in VALUE_FAULTS]
    files = max(1, per_fault // 2)
    items += [f"{kind}:{files}" for kind in FILE_FAULTS]
    return ",".join([*items, "failed:2"])


def _cli(argv: Sequence[str]) -> tuple[int, str]:
    """analysis.__main__.main(argv): its exit code and stderr (argparse's exits included)."""
    from analysis.__main__ import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse: an option this fleet does not have
            code = int(exit_.code or 0)
    return code, err.getvalue()


def _nodes(folder: Path) -> pd.DataFrame | None:
    path = folder / "nodes.csv"
    return pd.read_csv(path, dtype=str, keep_default_na=False).set_index("node") \
        if path.is_file() else None


def _flagged(folder: Path) -> list[dict[str, Any]]:
    path = folder / "flagged.json"
    return json.loads(path.read_text()) if path.is_file() else []


def on_component(fault: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a flagged row of the fault's node lies on the fault: its component crosses
    the faulty one (a memcpy fault: a memcpy row of that GPU). A node flagged only
    elsewhere was found by chance, by noise, not by its fault."""
    for row in rows:
        if row.get("node") != fault["node"]:
            continue
        if fault["kind"] == "memcpy":
            if str(row.get("path", "")).startswith("memcpy ") and \
                    f"gpus={fault['component'][3:]} " in str(row.get("path", "")):
                return True
        elif fault["component"] in str(row.get("component", "")).split("+"):
            return True
    return False


def judge(truth: Mapping[str, Any], first: pd.DataFrame, second: pd.DataFrame | None,
          flagged_first: Sequence[Mapping[str, Any]] = (),
          flagged_second: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The study's numbers of one fleet from its truth and the two passes' nodes.csv and
    flagged.json. Recall counts a faulty node called degraded with a flag on its fault
    (on_component); one called degraded for other paths only is counted apart."""
    faults = {f["node"]: f for f in truth["faults"]}
    healthy = [n for n in truth["nodes"] if n not in faults]
    final = second if second is not None else first

    def verdict(table: pd.DataFrame, node: str) -> str:
        return str(table.at[node, "verdict"]) if node in table.index else "absent"

    result: dict[str, Any] = {"nodes": len(truth["nodes"]), "healthy": len(healthy)}
    result["fp_before"] = sum(verdict(first, n) in CONDEMNED for n in healthy)
    result["fp_after"] = sum(verdict(final, n) in CONDEMNED for n in healthy) \
        if second is not None else None
    result["suspect_after"] = sum(verdict(final, n) == "suspect" for n in healthy) \
        if second is not None else None
    recall: dict[str, dict[str, list[int]]] = {}
    for node, fault in faults.items():
        if fault["kind"] not in VALUE_FAULTS:
            continue
        label = fault["kind"] + (f" ({fault['path_class']})" if fault["kind"] == "latency" else "")
        cell = recall.setdefault(label, {}).setdefault(f"{fault['size']:g}", [0, 0, 0, 0])
        cell[0] += verdict(first, node) == "degraded" and on_component(fault, flagged_first)
        cell[1] += second is not None and verdict(second, node) == "degraded" \
            and on_component(fault, flagged_second)
        cell[2] += 1
        elsewhere = second if second is not None else first
        cell[3] += verdict(elsewhere, node) == "degraded" and not on_component(
            fault, flagged_second if second is not None else flagged_first)
    result["recall"] = recall
    broken = []
    for node, fault in faults.items():
        if fault["kind"] in (*FILE_FAULTS, "failed"):
            v = verdict(final, node)
            reason = str(final.at[node, "reason"]) if node in final.index else ""
            named = v in ("failed", "missing") and (not fault.get("detail") or fault["kind"] == "failed"
                                                    or fault["detail"] in reason
                                                    or v == "missing")
            broken.append({"node": node, "kind": fault["kind"], "file": fault.get("detail", ""),
                           "verdict": v, "named": bool(named), "reason": reason})
    result["broken"] = broken
    return result


def run_one(out: Path, nodes: int, seed: int, scale: float, noise: str, spec: str,
            layout: str, jobs: int | None, rounds: int = 3) -> dict[str, Any]:
    """One fleet: simulate, fleet, retest, fleet --retest; the numbers and what went wrong."""
    from .sim import simulate, simulate_retest
    sim, first, second = out / "sim", out / "fleet", out / "fleet_retest"
    truth = simulate(nodes, "gh200_quad", spec, sim, seed, layout=layout,
                     noise=noise or None, noise_scale=scale, jobs=jobs)
    expect = out / "nodes.txt"
    outfiles.write_text(expect, "\n".join(truth["nodes"]) + "\n")
    notes = []
    code, err = _cli(["fleet", str(sim), "-o", str(first), "--expect-nodes", str(expect)])
    notes.append(f"pass 1 exit {code}")
    nodes_1 = _nodes(first)
    if nodes_1 is None:
        raise InputError(f"analysis fleet wrote no nodes.csv: {err.strip()[:300]}")
    nodes_2 = None
    retest = first / "retest.json"
    if retest.is_file():
        simulate_retest(retest, sim, sim / "retest", rounds)
        code, err = _cli(["fleet", str(sim), "--retest", str(sim / "retest"), "-o", str(second),
                          "--expect-nodes", str(expect)])
        notes.append(f"pass 2 exit {code}")
        nodes_2 = _nodes(second) if code in (0, 1) else None
        if nodes_2 is None:
            notes.append(f"pass 2 gave no verdicts: {err.strip()[:300]}")
    else:
        notes.append("analysis fleet wrote no retest.json: no confirm pass (before-confirm "
                     "numbers only)")
    result = judge(truth, nodes_1, nodes_2, _flagged(first),
                   _flagged(second) if nodes_2 is not None else [])
    result.update(seed=seed, scale=scale, noise=noise or "lognormal", notes=notes)
    return result


def _pct(part: int | None, whole: int) -> str:
    return "n/a" if part is None else f"{part} ({100 * part / max(whole, 1):.2f} %)"


def report(results: Sequence[Mapping[str, Any]]) -> str:
    """The study's Markdown: one section per (seed, scale)."""
    lines = ["# Detection study (tests.fleetsim.study)", ""]
    for r in results:
        lines += [f"## seed {r['seed']}, noise {r['noise']} x{r['scale']:g}, {r['nodes']} nodes",
                  "", f"- false positives before confirm: {_pct(r['fp_before'], r['healthy'])} "
                  f"of {r['healthy']} healthy",
                  f"- false positives after confirm: {_pct(r['fp_after'], r['healthy'])}; "
                  f"suspect (not condemned): {_pct(r['suspect_after'], r['healthy'])}",
                  f"- {'; '.join(r['notes'])}", "",
                  "| fault | size | recall before confirm | recall after confirm | "
                  "degraded for other paths only |", "|---|---|---|---|---|"]
        for label, sizes in sorted(r["recall"].items()):
            for size, (before, after, n, other) in sorted(sizes.items(),
                                                          key=lambda kv: -float(kv[0])):
                confirmed = f"{after}/{n}" if r["fp_after"] is not None else "n/a"
                lines.append(f"| {label} | {float(size) * 100:g} % | {before}/{n} | "
                             f"{confirmed} | {other} |")
        named = sum(b["named"] for b in r["broken"])
        healthy = sum(b["verdict"] == "healthy" for b in r["broken"])
        lines += ["", f"Broken or missing files named: {named}/{len(r['broken'])}; called "
                  f"healthy: {healthy}", ""]
        lines += [f"- {b['node']} {b['kind']} {b['file']}: {b['verdict']} ({b['reason'][:100]})"
                  for b in r["broken"] if not b["named"]]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fleetsim.study",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                        help="a new or empty folder: one subfolder per seed and scale")
    parser.add_argument("--nodes", type=int, default=2688)
    parser.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    parser.add_argument("--noise", default="h100", help="noise model (default h100; '' lognormal)")
    parser.add_argument("--scales", default="1,2", help="noise scales (default 1,2)")
    parser.add_argument("--sizes", default="0.10,0.05", help="fault sizes (default 0.10,0.05)")
    parser.add_argument("--per-fault", type=int, default=20,
                        help="faulty nodes per fault kind and size (default 20)")
    parser.add_argument("--layout", default="preset", choices=("node", "preset"))
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the retest pass (vet_node.sh's VET_RETEST_ROUNDS; default 3)")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
        scales = [float(s) for s in args.scales.split(",")]
        sizes = [float(s) for s in args.sizes.split(",")]
    except ValueError:
        print("study: error: --seeds, --scales and --sizes are comma-separated numbers",
              file=sys.stderr)
        return 2
    spec = fault_spec(args.per_fault, sizes)
    results = []
    try:
        for seed in seeds:
            for scale in scales:
                out = args.output / f"seed{seed}_x{scale:g}"
                out.mkdir(parents=True, exist_ok=False)
                results.append(run_one(out, args.nodes, seed, scale, args.noise, spec,
                                       args.layout, args.jobs, args.rounds))
    except (InputError, FileExistsError) as error:
        print(f"study: error: {error}", file=sys.stderr)
        return 2
    text = report(results)
    outfiles.write_text(args.output / "study.md", text)
    outfiles.write_text(args.output / "study.json", json.dumps(
        {"faults": spec, "layout": args.layout, "rounds": args.rounds, "results": results},
        indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
