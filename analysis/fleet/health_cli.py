"""``python -m analysis healthcheck judge|reference|kind-reference`` (docs/healthcheck.md)."""
from __future__ import annotations

import argparse
from pathlib import Path

from . import health
from ..errors import InputError
from ..results.io import shown
from .score import Options


def add_parser(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser("healthcheck", help="a node's check of itself (slurm/healthcheck.sh)",
                                description="The verdict of slurm/healthcheck.sh's run, and the "
                                            "references it judges by (docs/healthcheck.md).")
    actions = check.add_subparsers(dest="action", required=True)
    judge = actions.add_parser("judge", help="ok or drain, with the reason",
                               description="Prints each figure against its reference and a last "
                                           "line 'HEALTH ok', 'HEALTH drain REASON' or, where only "
                                           "figures failed and one RUN_DIR was given, 'HEALTH retest "
                                           "REASON' (measure again, then judge both). Exit 0 ok, 1 "
                                           "drain or retest, 2 bad input.")
    judge.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR",
                       help="the folder of the check's result files (a second: its retest; each "
                            "case's best figure is judged)")
    judge.add_argument("--node", required=True, help="the node's Slurm name")
    judge.add_argument("--gres-gpus", type=int, metavar="N", help="GPUs Slurm's gres gives the node")
    judge.add_argument("--gres-type", default="", metavar="TYPE", help="their gres type (h100, gh200)")
    judge.add_argument("--reference", type=Path, metavar="FILE",
                       help="node references (healthcheck reference)")
    judge.add_argument("--kinds", type=Path, default=health.KINDS, metavar="FILE",
                       help="GPU kinds' references (default: the shipped analysis/fleet/data/health_kinds.json; "
                            "'none': not used)")
    judge.add_argument("--log", type=Path, metavar="CSV", help="append one row for this check")
    judge.add_argument("--mode", default="health", choices=("health", "prolog", "epilog"))
    judge.add_argument("--elapsed", type=float, default=0.0, metavar="S", help="the check's seconds so far")
    judge.add_argument("-k", type=float, default=4.0, help="robust z threshold (default 4, the fleet's)")
    judge.add_argument("--min-change", type=float, default=0.05,
                       help="smallest relative deficit that fails (default 0.05, the fleet's)")
    ref = actions.add_parser("reference", help="each node's reference from the fleet history",
                             description=f"Each node's median and MAD per path over its last NIGHTS "
                                         f"nights (a figure of fewer than {health.MIN_NIGHTS} nights "
                                         "is left out). Run it after each night's fleet-history "
                                         "append; healthcheck.sh reads the file it writes.")
    ref.add_argument("--db", required=True, type=Path, help="the fleet history (fleet-history append)")
    ref.add_argument("--nights", type=int, default=30, help="nights up to the newest (default 30)")
    ref.add_argument("-o", "--output", required=True, type=Path, metavar="FILE")
    kinds = actions.add_parser("kind-reference", help="GPU kinds' references from recorded runs",
                               description="Per GPU model and GPU path, the median and MAD over the "
                                           "runs, each figure naming its runs.")
    kinds.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="a node's folder of result files")
    kinds.add_argument("-o", "--output", required=True, type=Path, metavar="FILE")


def run(args: argparse.Namespace, rejected: list[str]) -> int:
    if args.action == "reference":
        count = health.node_reference(args.db, args.output, args.nights)
        print(f"analysis: health reference of {count} node(s) in {shown(args.output)}")
        return 0
    if args.action == "kind-reference":
        count = health.kind_reference(args.runs, args.output)
        print(f"analysis: {count} GPU kind reference figure(s) in {shown(args.output)}")
        return 0
    return _judge(args)


def _judge(args: argparse.Namespace) -> int:
    if args.gres_gpus is not None and args.gres_gpus < 0:
        raise InputError(f"--gres-gpus {args.gres_gpus}; valid: a count >= 0")
    options = Options(args.k, args.min_change)
    notes = []
    nodes = {}
    if args.reference:  # a reference that cannot be read: presence and conditions still checked
        try:
            nodes = health.load_reference(args.reference)
        except InputError as error:
            notes.append(f"{error}; checked without it")
    kinds = {}
    if str(args.kinds) != "none":
        try:
            kinds = health.load_reference(args.kinds)
        except InputError as error:
            notes.append(f"{error}; checked without it")
    table, recorded, topology = health.read_run(*args.runs)
    verdict = health.verdict(table, recorded, topology, args.node, args.gres_gpus, args.gres_type,
                             nodes, kinds, options)
    for line in [*notes, *verdict.notes]:
        print(f"healthcheck: {args.node}: note: {line}")
    for figure in verdict.figures:
        print(f"healthcheck: {args.node}: {figure}")
    if verdict.retest and len(args.runs) == 1:
        print(f"HEALTH retest {verdict.reason()}")
        return 1
    if args.log:
        health.append_log(args.log, verdict, args.mode, args.elapsed)
    print("HEALTH ok" if verdict.ok else f"HEALTH drain {verdict.reason()}")
    return 0 if verdict.ok else 1
