"""``python -m analysis report RUN.h5 [RUN2.h5 ...] -o DIR [--peaks FILE]``, ``compare BASE RUN``
(docs/analysis.md), ``paper`` (docs/paper.md), ``fleet``, ``fleet-summary`` (docs/fleet.md) and
``fleet-history`` (docs/fleet_history.md). The fleet simulator is a tool of the repository
(``python -m tests.fleetsim``), not a command of the installed analysis."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import ERRORS_LOG, InputError
from .fleet import health_cli
from .fleet import history_cli as fleet_history_cli
from .results.io import load_runs, result_files, shown
from .model.peaks import load_overrides
from .report.placement import DEFAULT_ACTIVE_BYTES, parse_active_bytes
from .results.schema import REQUIRED


def _writer(commands: argparse._SubParsersAction, name: str, metavar: str, what: str,
            **texts: str) -> argparse.ArgumentParser:
    """A command that writes a report: report, paper and fleet take their input files and
    the report folder alike."""
    parser = commands.add_parser(name, **texts)
    parser.add_argument("runs", nargs="+", type=Path, metavar=metavar, help=what)
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                        help="report folder (created)")
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis",
                                     description="Analysis of mempath HDF5 results.")
    commands = parser.add_subparsers(dest="command", required=True)
    report = _writer(commands, "report", "RUN.h5", "mempath result files",
                     help="tables, figures and summary.md of one node's runs",
                     description="Write path_matrix.md/.csv, thread_scaling.png/.pdf, "
                                 "copy_heatmap.png/.pdf and summary.md into DIR; "
                                 "with /memcpy data also transfer_sweep and "
                                 "transfer_latency (.png/.pdf), transfers.md, "
                                 "path_table.md/.csv and placement.md/.csv.")
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
    _writer(commands, "paper", "RUNS", "result files or folders of .h5 (the paper set's output folder)",
            help="every figure and table of the Alps GH200 paper from a run",
            description="Draw one figure (PNG, PDF) per paper figure and one table "
                        "(Markdown, CSV) per paper table into DIR, with paper.md and "
                        "index.html naming the runs each came from, why an item was "
                        "not drawn, and published values beside this run's "
                        "(docs/paper.md).")
    _fleet_parsers(commands)
    fleet_history_cli.add_parser(commands)
    health_cli.add_parser(commands)
    return parser


def _fleet_parsers(commands: argparse._SubParsersAction) -> None:
    fleet = _writer(commands, "fleet", "RUNS", "result files or folders",
                    help="degraded nodes of a fleet (docs/fleet.md)",
                    description="Compare every node with the fleet of its kind: "
                                "nodes.csv, flagged.json, summary.md, heatmap.png "
                                "and retest.json (the flagged cases to re-run) "
                                "in DIR (with --history also the night's trends). "
                                "Exit 0 when every node could be judged "
                                "(degraded, suspect or not); 1 when a node is "
                                "failed or missing (the rest is still analysed "
                                "and written); 2 on bad input.")
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


def _fleet_summary(args: argparse.Namespace, rejected: list[str]) -> int:
    from .fleet.load import write_summary
    for folder in args.folders:
        print(f"analysis: fleet summary {shown(write_summary(folder))}")
    return 0


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


COMMANDS = {"report": _report, "paper": _paper, "compare": _compare, "fleet": _fleet,
            "fleet-summary": _fleet_summary, "fleet-history": fleet_history_cli.run,
            "healthcheck": health_cli.run}


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
