"""``python -m analysis fleet-history append|trend|baseline-store|baseline-get``
(docs/fleet_history.md)."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from . import history as fleet_history
from .load import load_fleet
from .trends import write_trends
from ..errors import InputError
from ..results.io import shown


def add_parser(commands: argparse._SubParsersAction) -> None:
    history = commands.add_parser("fleet-history", help="every night's fleet results in one DuckDB file",
                                  description="Append nights of node results to an embedded DuckDB "
                                              "file and query per-node trends (docs/fleet_history.md).")
    actions = history.add_subparsers(dest="action", required=True)
    append = _action(actions, "append", "history file (created)",
                     help="store the runs of one night (replaces that night's rows of those nodes)",
                     description="Exit 0; 1 when a node is failed (docs/fleet.md: a broken file, a "
                                 "failed case, an impossible value; its rows stored with status "
                                 "failed, the others as they are); 2 on bad input.")
    append.add_argument("--night", help="YYYY-MM-DD to file the runs under (default: each run's start_time)")
    append.add_argument("runs", nargs="+", type=Path, metavar="RUNS",
                        help="mempath result files or folders of them (as analysis fleet takes), "
                             "or the fleet.parquet that analysis fleet -o DIR wrote")
    store = _action(actions, "baseline-store", "history file (created)",
                    help="keep a good night's result files as the nightly baseline",
                    description="The *.h5 files below NIGHT_DIR replace the stored baseline of "
                                "--series, with --night (slurm/nightly.sh). Exit 0; 1 when the "
                                "database could not be written (it stays as it was); 2 on bad input.")
    store.add_argument("--series", required=True, help="which nightly (e.g. its folder)")
    store.add_argument("--night", required=True, help="the night the files come from")
    store.add_argument("folder", type=Path, metavar="NIGHT_DIR", help="folder of the night's result files")
    get = _action(actions, "baseline-get", "history file",
                  help="write the stored nightly baseline into a new folder",
                  description="Exit 0 and the line 'analysis: baseline night=NIGHT files=N in DIR'; "
                              "2 when there is none (one line).")
    get.add_argument("--series", required=True, help="which nightly")
    get.add_argument("-o", "--output", required=True, type=Path, metavar="DIR", help="a new folder")
    trend = _action(actions, "trend", "history file",
                    help="trend.csv, slow_degradation.csv and worst_trends.png/.pdf")
    trend.add_argument("--node", help="only this node")
    trend.add_argument("--nights", type=int, default=90, help="nights up to the newest one (default 90)")
    trend.add_argument("--min-drop", type=float, default=0.05,
                       help="loss over the window that counts as degrading (default 0.05)")
    trend.add_argument("--synthetic", action="store_true", help="include simulator rows")
    trend.add_argument("-o", "--output", required=True, type=Path, metavar="DIR", help="folder (created)")


def _action(actions: argparse._SubParsersAction, name: str, db_help: str, **texts: str) -> argparse.ArgumentParser:
    """An action of fleet-history: each works on the history file, --db."""
    action = actions.add_parser(name, **texts)
    action.add_argument("--db", required=True, type=Path, help=db_help)
    return action


def run(args: argparse.Namespace, rejected: list[str]) -> int:
    action = {"append": _append, "trend": _trend, "baseline-store": _baseline_store,
              "baseline-get": _baseline_get}[args.action]
    try:
        return action(args, rejected)
    except fleet_history.HistoryWriteError as error:  # the disk, not the input
        rejected.append(str(error))
        return 1


#: A night's name as nightly.sh makes it (20261124T020000) or a date: letters, digits, ._:-
_NIGHT_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z._:-]{0,63}")


def _baseline_store(args: argparse.Namespace, rejected: list[str]) -> int:
    if not _NIGHT_NAME.fullmatch(args.night):
        raise InputError(f"--night {args.night!r}; valid: up to 64 letters, digits and ._:- "
                         "(the night folder's name, e.g. 20261124T020000)")
    count = fleet_history.store_baseline(args.db, args.series, args.night, args.folder)
    print(f"analysis: baseline night={args.night} files={count} of {shown(args.folder)} "
          f"stored in {shown(args.db)}")
    return 0


def _baseline_get(args: argparse.Namespace, rejected: list[str]) -> int:
    if args.output.exists() or args.output.is_symlink():
        raise InputError(f"{shown(args.output)} exists; valid: a new folder")
    night, count = fleet_history.load_baseline(args.db, args.series, args.output)
    print(f"analysis: baseline night={night} files={count} in {shown(args.output)}")
    return 0


def _append(args: argparse.Namespace, rejected: list[str]) -> int:
    if args.night is not None:  # before thousands of files are read
        fleet_history.check_night(args.night)
    tables = [p for p in args.runs if p.suffix == ".parquet"]
    if tables and len(tables) < len(args.runs):
        raise InputError("give either result files and folders or one fleet.parquet, not both; "
                         "valid: RUN.h5/FOLDER... or DIR/fleet.parquet")
    if tables:
        # One unreadable table is named and the others are still stored; a refused write
        # (HistoryWriteError: the disk) ends the command, the next file would meet the same.
        written, stored = 0, []
        for path in tables:
            try:
                written += fleet_history.append_parquet(args.db, path, args.night)
            except fleet_history.HistoryWriteError:
                raise
            except InputError as error:
                rejected.append(str(error))
            else:
                stored.append(path)
        if stored:
            print(f"analysis: {written} rows of {', '.join(map(shown, stored))} appended to "
                  f"{shown(args.db)}")
        if rejected:
            return 2
        failed = sorted({n for path in tables for n in fleet_history.failed_nodes(path)})
        if failed:
            print(f"analysis: error: {len(failed)} node(s) failed, their rows stored with "
                  f"status failed: {', '.join(failed[:3])}" + (", ..." if len(failed) > 3
                                                               else ""), file=sys.stderr)
            return 1
        return 0
    from . import integrity
    notes: list[str] = []
    broken: list[tuple[Path, str]] = []
    table = load_fleet(args.runs, rejected, notes, night=args.night, nights=True, broken=broken)
    # The rules of `analysis fleet` (integrity.py), night by night: a failed node's rows are
    # stored with status failed and no value. A file that cannot be read has no night: its
    # node is failed in each night of this append.
    plans = integrity.load_plans(args.runs, notes)
    nights = [table] if table["night"].nunique() < 2 else [
        part for _, part in table.groupby("night", sort=True)]
    found = [integrity.problems(part, broken, plans) for part in nights]
    refused = refused_rows(table, broken)
    rows = pd.concat([integrity.held_back(part, f["node"]) for part, f in zip(nights, found)]
                     + ([refused] if len(refused) else []))
    written = fleet_history.append(args.db, rows[list(fleet_history.COLUMNS)])
    print(f"analysis: {written} rows of {table['node'].nunique()} nodes appended to "
          f"{shown(args.db)}")
    for note in notes:
        print(f"analysis: note: {note}", file=sys.stderr)
    first = pd.concat(found).drop_duplicates("node").set_index("node")["reason"]
    if len(first):
        names = list(first.index)
        print(f"analysis: error: {len(names)} node(s) failed, their rows stored with status "
              "failed and no value: " + "; ".join(f"{n}: {first[n]}" for n in names[:3])
              + ("; ..." if len(names) > 3 else ""), file=sys.stderr)
        return 1
    return 0


def refused_rows(table: pd.DataFrame, broken: list[tuple[Path, str]]) -> pd.DataFrame:
    """A failed row for each refused file (unreadable, no date in start_time, a topology
    that does not hold) of a node without any row of that night: the history records that
    the node was there (docs/fleet_history.md), status failed and no value, its path the
    file's name. A refused file has no night of its own: its node is failed in each night
    of the append."""
    from . import integrity
    known = set(table["node"].unique())
    kinds = table.drop_duplicates("node").set_index("node")["node_kind"]
    rows = []
    for path, _ in broken:
        node = integrity.host_of(path, known)
        for night, part in table.groupby("night", sort=True):
            if node in set(part["node"]):
                continue
            rows.append({"night": night, "node": node, "node_kind": str(kinds.get(node, "unknown")),
                         "family": "file", "path": integrity.file_name(path), "component": "node",
                         "metric": "file", "value": float("nan"), "status": "failed", "higher_is_better": True,
                         "synthetic": False, "gpu_uuids": ""})
    return pd.DataFrame(rows, columns=list(fleet_history.COLUMNS))


def _trend(args: argparse.Namespace, rejected: list[str]) -> int:
    table, slow = write_trends(args.db, args.output, args.nights, args.min_drop, args.synthetic,
                               args.node)
    print(f"analysis: {len(table)} series, {len(slow)} losing more than {args.min_drop:.0%} "
          f"in {shown(args.output)}")
    return 0
