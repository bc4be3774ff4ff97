"""``python -m analysis report RUN.h5 [RUN2.h5 ...] -o DIR [--peaks FILE]``, ``compare BASE RUN``
(docs/analysis.md), ``fleet``, ``simulate`` (docs/fleet.md) and ``fleet-history``
(docs/fleet_history.md)."""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import ERRORS_LOG, InputError
from .fleet import history_cli as fleet_history_cli
from .results.io import load_runs, result_files, shown
from .model.peaks import load_overrides
from .report.placement import DEFAULT_ACTIVE_BYTES, parse_active_bytes
from .results.schema import REQUIRED


def _runs_and_folder(parser: argparse.ArgumentParser, metavar: str, what: str) -> None:
    """The input files and the report folder, alike for every command that writes a report."""
    parser.add_argument("runs", nargs="+", type=Path, metavar=metavar, help=what)
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                        help="report folder (created)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis",
                                     description="Analysis of mempath HDF5 results.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="tables, figures and summary.md of one node's runs",
                                 description="Write path_matrix.md/.csv, thread_scaling.png/.pdf, "
                                             "copy_heatmap.png/.pdf and summary.md into DIR; "
                                             "with /memcpy data also transfer_sweep and "
                                             "transfer_latency (.png/.pdf), transfers.md, "
                                             "path_table.md/.csv and placement.md/.csv.")
    _runs_and_folder(report, "RUN.h5", "mempath result files")
    report.add_argument("--peaks", type=Path, metavar="FILE",
                        help="JSON peaks overriding the model, e.g. "
                             '{"numa0": 300, "link:pcie": 64}')
    report.add_argument("--active-bytes", default=f"{DEFAULT_ACTIVE_BYTES:g}", metavar="BYTES",
                        help="bytes of active weights read per generated token for the LLM "
                             "placement table (default 21e9; units such as 21GB, 20GiB)")
    comp = commands.add_parser("compare", help="cases that moved beyond their noise between two sets of runs",
                               description="Match every case of BASE and RUN (files or folders of .h5), "
                                           "every family, compare the raw samples (Mann-Whitney U) and "
                                           "list what moved and what could not be compared; exit 1 on a "
                                           "regression, 2 on bad input or when nothing could be compared "
                                           "(docs/analysis.md).")
    comp.add_argument("base", type=Path, metavar="BASE", help="result file or folder: the reference")
    comp.add_argument("run", type=Path, metavar="RUN", help="result file or folder: the new runs")
    comp.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")
    comp.add_argument("--min-change", type=float, default=0.03,
                      help="smallest relative change of the median that counts (default 0.03)")
    comp.add_argument("--output", type=Path, metavar="DIR", help="also write compare.md and compare.csv here")
    paper = commands.add_parser("paper", help="every figure and table of the Alps GH200 paper from a run",
                                description="Draw one figure (PNG, PDF) per paper figure and one table "
                                            "(Markdown, CSV) per paper table into DIR, with paper.md and "
                                            "index.html naming the runs each came from, why an item was "
                                            "not drawn, and published values beside this run's "
                                            "(docs/paper.md).")
    _runs_and_folder(paper, "RUNS", "result files or folders of .h5 (the paper set's output folder)")
    _fleet_parsers(commands)
    fleet_history_cli.add_parser(commands)
    return parser


def _fleet_parsers(commands: argparse._SubParsersAction) -> None:
    fleet = commands.add_parser("fleet", help="degraded nodes of a fleet (docs/fleet.md)",
                                description="Compare every node with the fleet of its kind: "
                                            "nodes.csv, flagged.json, summary.md, heatmap.png "
                                            "and retest.json (the flagged cases to re-run) "
                                            "in DIR (with --history also the night's trends). "
                                            "Exit 0 when every node could be judged "
                                            "(degraded, suspect or not); 1 when a node is "
                                            "failed or missing (the rest is still analysed "
                                            "and written); 2 on bad input.")
    _runs_and_folder(fleet, "RUNS", "result files or folders")
    fleet.add_argument("--reference", type=Path, metavar="FILE",
                       help='JSON floors {"NODE_KIND": {"PATH": FLOOR}}')
    fleet.add_argument("--expect-nodes", type=Path, metavar="FILE",
                       help="host names, one a line: those without a file are 'missing'")
    fleet.add_argument("--retest", type=Path, nargs="+", metavar="DIR",
                       help="the retest pass (OUTDIR/retest, vet_node.sh with VET_RETEST): a "
                            "flagged node is degraded where it confirms, else suspect")
    fleet.add_argument("-k", type=float, default=4.0, help="robust z threshold (default 4)")
    fleet.add_argument("--min-change", type=float, default=0.05,
                       help="smallest relative deficit flagged (default 0.05)")
    fleet.add_argument("--history", type=Path, metavar="DB",
                       help="append the night to this DuckDB file (created) and add per-node "
                            "trends and slowly degrading nodes (docs/fleet_history.md)")
    fleet.add_argument("--nights", type=int,
                       help="with --history: trend window, nights up to the newest (default 90)")
    fleet.add_argument("--min-drop", type=float,
                       help="with --history: loss over the window that counts as degrading "
                            "(default 0.05)")
    summ = commands.add_parser("fleet-summary", help="one node's fleet rows beside its files",
                               description="Write NODE_DIR/fleet-summary.json: the rows the fleet "
                                           "analysis takes from the node's result files, with each "
                                           "file's size and time, so that `analysis fleet` reads one "
                                           "file a node (vet_node.sh runs it last; docs/fleet.md).")
    summ.add_argument("folders", nargs="+", type=Path, metavar="NODE_DIR",
                      help="a node's result folder (OUTDIR/<host> of vet_node.sh)")
    sim = commands.add_parser("simulate", help="synthetic node files for tests and benchmarks",
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


def _fleet(args: argparse.Namespace, rejected: list[str]) -> int:
    from .fleet.outputs import History
    from .fleet.score import Options, load_floors
    from .fleet.verdicts import load_expected, run_fleet
    floors = load_floors(args.reference) if args.reference else None
    expected = load_expected(args.expect_nodes) if args.expect_nodes else []
    window = {k: v for k, v in (("nights", args.nights), ("min_drop", args.min_drop))
              if v is not None}
    if window and not args.history:
        raise InputError("--nights and --min-drop are options of --history DB; valid: "
                         "give --history DB with them, or neither")
    history = History(args.history, **window) if args.history else None
    notes: list[str] = []
    nodes, files = run_fleet(args.runs, args.output, Options(args.k, args.min_change, floors),
                             expected, rejected, notes, history, args.retest)
    counts = nodes["verdict"].value_counts()
    print(f"analysis: fleet report in {shown(args.output)}: " + ", ".join(
        f"{int(counts.get(v, 0))} {v}"
        for v in ("healthy", "suspect", "degraded", "failed", "missing")))
    for note in notes:
        print(f"analysis: note: {note}", file=sys.stderr)
    failed, missing = int(counts.get("failed", 0)), int(counts.get("missing", 0))
    if failed or missing:  # the node could not be judged: never a quiet exit 0
        print(f"analysis: error: {failed} node(s) failed, {missing} missing of {len(nodes)}; "
              f"why in {shown(args.output / 'nodes.csv')} (reason)", file=sys.stderr)
        return 1
    return 0


def _simulate(args: argparse.Namespace, rejected: list[str]) -> int:
    from .fleet.sim import simulate, simulate_retest
    if args.retest or args.source:
        if not (args.retest and args.source) or args.nodes is not None:
            raise InputError("--retest RETEST.json and --from SIMDIR go together, without "
                             "--nodes; valid: simulate --retest DIR/retest.json --from SIMDIR "
                             "-o SIMDIR/retest")
        written = simulate_retest(args.retest, args.source, args.output, args.rounds)
        print(f"analysis: retest of {len(written)} synthetic nodes ({sum(written.values())} "
              f"cases) in {shown(args.output)}")
        return 0
    if args.nodes is None:
        raise InputError("--nodes N is required (or --retest with --from); valid: a positive "
                         "number of nodes")
    if args.summaries and args.layout != "preset":
        raise InputError("--summaries: valid with --layout preset only (a node's folder)")
    check_simulate_args(args.nodes, args.seed, args.night)
    truth = simulate(args.nodes, args.fixture, args.faults, args.output, args.seed, args.night,
                     args.layout, args.noise, args.noise_from, args.noise_scale, args.jobs,
                     rejected, args.summaries)
    print(f"analysis: {args.nodes} synthetic nodes ({len(truth['faults'])} faulty, layout "
          f"{args.layout}, noise {truth['noise']}) in {shown(args.output)}; truth in truth.json")
    return 0


def _fleet_summary(args: argparse.Namespace, rejected: list[str]) -> int:
    from .fleet.load import write_summary
    for folder in args.folders:
        print(f"analysis: fleet summary {shown(write_summary(folder))}")
    return 0


#: More nodes than any fleet holds: a typo (2^63) would otherwise plan for hours, then fail.
MAX_SIM_NODES = 1_000_000


def check_simulate_args(nodes: int, seed: int, night: str) -> None:
    """simulate's numbers and date, checked before the simulator plans anything."""
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


def _report(args: argparse.Namespace, rejected: list[str]) -> int:
    active_bytes = parse_active_bytes(args.active_bytes)
    from .report.write import write_report  # here: compare and the fleet do without matplotlib
    overrides = load_overrides(args.peaks) if args.peaks else {}
    runs = load_runs(args.runs, REQUIRED, rejected)
    report = write_report(runs, args.output, overrides, active_bytes, rejected)
    print(f"analysis: report in {shown(report.out)} ({len(report.files)} files)")
    for missing in [*report.notes, *report.missing]:
        print(f"analysis: note: {missing}")
    return _failed(report.out, report.failed)


def _paper(args: argparse.Namespace, rejected: list[str]) -> int:
    from .paper.write import write_paper
    runs = load_runs(_result_files(args.runs), REQUIRED, rejected)
    paper = write_paper(runs, args.output)
    drawn = sum(1 for d in paper.drawn.values() if d.files)
    print(f"analysis: paper in {shown(paper.out)}: {drawn} of {len(paper.items)} items drawn; "
          f"index.html and paper.md list them")
    for missing in paper.missing:
        print(f"analysis: note: {missing}")
    return _failed(paper.out, paper.failed)


def _failed(out: Path, failed: Sequence[str]) -> int:
    """1 where a part raised (its line on stderr, its trace in errors.log), the rest written."""
    for line in failed:
        print(f"analysis: error: {line} (not written; trace in {shown(out / ERRORS_LOG)})", file=sys.stderr)
    return 1 if failed else 0


def _result_files(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a folder stands for the .h5 files under it (a paper set's output)."""
    files = result_files(paths)
    if not files:
        raise InputError(f"no .h5 file under {', '.join(shown(p) for p in paths)}; valid: mempath "
                         "result files or folders holding them")
    return files


def _compare(args: argparse.Namespace, rejected: list[str]) -> int:
    from .compare.runs import run_compare
    return run_compare(args.base, args.run, args.alpha, args.min_change, args.output, rejected)


COMMANDS = {"report": _report, "paper": _paper, "compare": _compare, "fleet": _fleet, "simulate": _simulate,
            "fleet-summary": _fleet_summary, "fleet-history": fleet_history_cli.run}


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 ok, 1 a regression (compare) or a part of a report or paper that raised
    (the rest written, the trace in its errors.log), 2 bad input or nothing to compare; every
    error is one ``analysis: error:`` line on stderr, never a traceback."""
    args = _parser().parse_args(argv)
    rejected: list[str] = []  # files left out; the good ones are still analysed
    try:
        code = COMMANDS[args.command](args, rejected)
    except InputError as error:
        code = 2
        rejected.append(str(error))
    except OSError as error:  # reading result files is checked in io: mostly the output
        code = 2
        rejected.append(f"{shown(error.filename or args.output)}: {error.strerror or error}; "
                        "valid: a writable --output folder (or a path where one can be created)")
    for line in rejected:
        print(f"analysis: error: {line}", file=sys.stderr)
    return code or (2 if rejected else 0)


if __name__ == "__main__":
    sys.exit(main())
