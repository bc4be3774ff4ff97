"""``python -m tests.fleetsim --nodes N -o DIR ...``: a synthetic fleet for `analysis fleet`;
``--retest RETEST.json --from SIMDIR -o SIMDIR/retest``: its retest pass (docs/fleet.md).
Exit 0, or 2 with one ``fleetsim: error:`` line a problem (never a traceback)."""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.errors import InputError
from analysis.results.io import shown

#: More nodes than any fleet holds: a typo (2^63) would otherwise plan for hours, then fail.
MAX_SIM_NODES = 1_000_000


def _parser() -> argparse.ArgumentParser:
    sim = argparse.ArgumentParser(prog="python -m tests.fleetsim",
                                  description="Write N synthetic nodes (root attribute "
                                              "synthetic=1) and DIR/truth.json; with --retest, "
                                              "the retest pass of a simulated fleet (docs/fleet.md).")
    sim.add_argument("--nodes", type=int, metavar="N")
    sim.add_argument("--fixture", default="gh200_quad", help="topology (default gh200_quad)")
    sim.add_argument("--faults", default="", metavar="SPEC",
                     help="KIND:COUNT[@SIZE[/SIZE...]],... with KIND hbm, c2c, channel, nvlink, "
                          "interconnect, memcpy, latency, noisy, numa, failed, partial, "
                          "truncated, nofile")
    sim.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                     help="a new or empty folder (old node files would join the fleet)")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--night", default="2026-11-24", help="date of the runs (YYYY-MM-DD)")
    sim.add_argument("--layout", default="node", choices=("node", "preset"),
                     help="node: one file a node (DIR/<host>.h5); preset: the vetting preset's "
                          "files (DIR/<host>/bw.h5, copy/<pu>.h5, ..., plan.json)")
    sim.add_argument("--noise", metavar="MODEL",
                     help="run-to-run noise: a model JSON or a committed one (h100); default "
                          "lognormal")
    sim.add_argument("--noise-from", nargs="+", type=Path, metavar="RUN",
                     help="fit the noise from repeated real runs of one node, RUN_i/<host>/*.h5 "
                          "(one folder a run); the model is written to DIR/noise.json")
    sim.add_argument("--noise-scale", type=float, default=1.0,
                     help="multiply the noise (2 doubles it; default 1)")
    sim.add_argument("--jobs", type=int, help="processes writing files (default: the CPUs)")
    sim.add_argument("--summaries", action="store_true",
                     help="with --layout preset: each node's fleet-summary.json too, as "
                          "vet_node.sh writes it")
    sim.add_argument("--retest", type=Path, metavar="RETEST.json",
                     help="with --from SIMDIR: re-draw the listed nodes' cases into DIR")
    sim.add_argument("--from", dest="source", type=Path, metavar="SIMDIR",
                     help="the simulated fleet a --retest re-measures")
    sim.add_argument("--rounds", type=int, default=3,
                     help="with --retest: rounds of the retest pass (vet_node.sh's "
                          "VET_RETEST_ROUNDS; default 3)")
    return sim


def check_simulate_args(nodes: int, seed: int, night: str) -> None:
    """The numbers and date, checked before the simulator plans anything."""
    if not 1 <= nodes <= MAX_SIM_NODES:
        raise InputError(f"--nodes {nodes} is out of range; valid: 1 to {MAX_SIM_NODES:,}")
    if seed < 0:  # numpy's generators take no negative seed
        raise InputError(f"--seed {seed} is negative; valid: an integer >= 0")
    try:  # strptime alone takes 2026-2-3; the fixed shape keeps file names sortable
        valid = bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", night)) and bool(
            dt.datetime.strptime(night, "%Y-%m-%d"))
    except ValueError:
        valid = False
    if not valid:
        raise InputError(f"--night {night!r} is not a calendar date; valid: YYYY-MM-DD, "
                         "e.g. 2026-11-24") from None


def _simulate(args: argparse.Namespace, rejected: list[str]) -> None:
    from .sim import simulate, simulate_retest  # after the checks: numpy, h5py, the analysis
    if args.retest or args.source:
        if not (args.retest and args.source) or args.nodes is not None:
            raise InputError("--retest RETEST.json and --from SIMDIR go together, without "
                             "--nodes; valid: --retest DIR/retest.json --from SIMDIR "
                             "-o SIMDIR/retest")
        written = simulate_retest(args.retest, args.source, args.output, args.rounds)
        print(f"fleetsim: retest of {len(written)} synthetic nodes ({sum(written.values())} "
              f"cases) in {shown(args.output)}")
        return
    if args.nodes is None:
        raise InputError("--nodes N is required (or --retest with --from); valid: a positive "
                         "number of nodes")
    if args.summaries and args.layout != "preset":
        raise InputError("--summaries: valid with --layout preset only (a node's folder)")
    check_simulate_args(args.nodes, args.seed, args.night)
    truth = simulate(args.nodes, args.fixture, args.faults, args.output, args.seed, args.night,
                     args.layout, args.noise, args.noise_from, args.noise_scale, args.jobs,
                     rejected, args.summaries)
    print(f"fleetsim: {args.nodes} synthetic nodes ({len(truth['faults'])} faulty, layout "
          f"{args.layout}, noise {truth['noise']}) in {shown(args.output)}; truth in truth.json")


def main(argv: Sequence[str] | None = None) -> int:
    """0, or 2 with each problem (a fitted run left out, bad input, an unwritable folder)
    as one line on stderr."""
    args = _parser().parse_args(argv)
    rejected: list[str] = []
    try:
        _simulate(args, rejected)
    except InputError as error:
        rejected.append(str(error))
    except OSError as error:
        rejected.append(f"{shown(error.filename or args.output)}: {error.strerror or error}; "
                        "valid: a writable -o folder")
    for line in rejected:
        print(f"fleetsim: error: {line}", file=sys.stderr)
    return 2 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
