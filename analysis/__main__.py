"""``python -m analysis report RUN.h5 [RUN2.h5 ...] -o DIR [--peaks FILE]`` and
``python -m analysis compare BASE RUN`` (docs/analysis.md)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .compare import run_compare
from .errors import InputError
from . import fleet_history_cli
from .io import load_runs, shown
from .peaks import load_overrides
from .placement import DEFAULT_ACTIVE_BYTES, parse_active_bytes
from .report import REQUIRED, write_report


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
    report.add_argument("runs", nargs="+", type=Path, metavar="RUN.h5", help="mempath result files")
    report.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                        help="report folder (created)")
    report.add_argument("--peaks", type=Path, metavar="FILE",
                        help="JSON peaks overriding the model, e.g. "
                             '{"numa0": 300, "link:pcie": 64}')
    report.add_argument("--active-bytes", default=f"{DEFAULT_ACTIVE_BYTES:g}", metavar="BYTES",
                        help="bytes of active weights read per generated token for the LLM "
                             "placement table (default 21e9; units such as 21GB, 20GiB)")
    comp = commands.add_parser("compare", help="cases that moved beyond their noise between two sets of runs",
                               description="Match every case of BASE and RUN (files or folders of .h5), "
                                           "compare the raw samples (Mann-Whitney U) and list what moved; "
                                           "exit 1 on a regression, 2 on bad input or when no case "
                                           "could be compared (docs/analysis.md).")
    comp.add_argument("base", type=Path, metavar="BASE", help="result file or folder: the reference")
    comp.add_argument("run", type=Path, metavar="RUN", help="result file or folder: the new runs")
    comp.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")
    comp.add_argument("--min-change", type=float, default=0.03,
                      help="smallest relative change of the median that counts (default 0.03)")
    comp.add_argument("--output", type=Path, metavar="DIR", help="also write compare.md and compare.csv here")
    fleet_history_cli.add_parser(commands)
    return parser


def _report(args: argparse.Namespace, rejected: list[str]) -> int:
    active_bytes = parse_active_bytes(args.active_bytes)
    overrides = load_overrides(args.peaks) if args.peaks else {}
    runs = load_runs(args.runs, REQUIRED, rejected)
    report = write_report(runs, args.output, overrides, active_bytes, rejected)
    print(f"analysis: report in {shown(report.out)} ({len(report.files)} files)")
    for missing in [*report.notes, *report.missing]:
        print(f"analysis: note: {missing}")
    return 0


def _compare(args: argparse.Namespace, rejected: list[str]) -> int:
    return run_compare(args.base, args.run, args.alpha, args.min_change, args.output, rejected)


COMMANDS = {"report": _report, "compare": _compare, "fleet-history": fleet_history_cli.run}


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 ok, 1 a regression (compare), 2 bad input or nothing to compare; every
    bad input is one ``analysis: error:`` line on stderr, never a traceback."""
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
