"""Scoring the fleet table: per (node kind, path, metric) the fleet median and MAD across
nodes; a node's value is an outlier when its robust z = (value - median) / (1.4826 MAD) is
beyond -k in the bad direction AND its deficit exceeds a minimum relative change (a MAD of
a very uniform fleet would otherwise flag harmless 1 % differences), or when it is below a
reference floor. A case that failed or was skipped where most of the fleet ran it is
flagged too."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..results.io import shown
from ..robust import MAD_SCALE
from .table import SPREAD


@dataclass


class Options:
    k: float = 4.0
    min_change: float = 0.05
    floors: Mapping[str, Mapping[str, float]] | None = None  # node_kind -> path -> floor

    def __post_init__(self) -> None:
        if not (self.k > 0 and 0 <= self.min_change < 1):
            raise InputError(f"-k {self.k:g} --min-change {self.min_change:g}: valid: k > 0 "
                             "and 0 <= min-change < 1 (a fraction, 0.05 = 5 %)")


def load_floors(path: Path) -> dict[str, dict[str, float]]:
    """--reference: JSON {node_kind: {path: floor}} (a value below its floor is flagged)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{shown(path)}: cannot read the reference ({error}); valid: JSON "
                         '{"NODE_KIND": {"PATH": FLOOR, ...}}') from None
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and all(isinstance(f, (int, float)) for f in v.values())
            for v in data.values()):
        raise InputError(f"{shown(path)}: the reference must be JSON "
                         '{"NODE_KIND": {"PATH": FLOOR, ...}} with numeric floors')
    return {kind: {p: float(f) for p, f in paths.items()} for kind, paths in data.items()}


def score(table: pd.DataFrame, options: Options) -> pd.DataFrame:
    """Add fleet_median, mad, z, deviation and flag to every row (vectorised per group)."""
    keys = ["node_kind", "path", "metric"]
    groups = table.groupby(keys, sort=False)["value"]
    table = table.assign(fleet_median=groups.transform("median"))
    if SPREAD in table:  # the case's typical scatter of repetitions on a node of the kind
        table["fleet_spread"] = table.groupby(keys, sort=False)[SPREAD].transform("median")
    spread = (table["value"] - table["fleet_median"]).abs()
    table["mad"] = spread.groupby([table[k] for k in keys], sort=False).transform("median")
    return judge(table, options)


def judge(table: pd.DataFrame, options: Options, ran: pd.Series | None = None) -> pd.DataFrame:
    """z, deviation and flag of each row against its fleet_median and mad columns: the
    fleet's own (score) or the first pass's for a retest value (retest.py); ``ran``: the
    fraction of the kind that ran each row's case where the rows are not that fleet."""
    sign = np.where(table["higher_is_better"].to_numpy(dtype=bool), 1.0, -1.0)
    scale = z_scale(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["z"] = sign * (table["value"] - table["fleet_median"]).to_numpy() / scale
        table["deviation"] = (table["value"] / table["fleet_median"] - 1.0).to_numpy()
    worse = sign * table["deviation"].to_numpy() < -options.min_change
    table["flag"] = np.where(worse & (table["z"].to_numpy() < -options.k), "outlier", "")
    _floor_flags(table, options)
    _lost_flags(table, ran)
    return table


def z_scale(table: pd.DataFrame) -> np.ndarray:
    """The z scale of each row: the fleet's spread of the case (1.4826 MAD across nodes)
    and the case's typical spread of repetitions on one node (``fleet_spread``: the median
    over the kind's nodes of SPREAD, relative, x the value) added in quadrature, so that a
    case whose repetitions scatter everywhere is judged against that scatter. The node's
    own scatter is not used: a node whose repetitions scatter more than its kind's would
    widen its own threshold and escape, when its scatter is itself a symptom. Where no
    node's spread is known (one repetition, older files) the fleet's alone."""
    fleet = MAD_SCALE * table["mad"].to_numpy(dtype=float)
    if "fleet_spread" not in table:
        return fleet
    own = np.abs(table["fleet_spread"].to_numpy(dtype=float) * table["value"].to_numpy(dtype=float))
    return np.sqrt(fleet ** 2 + np.nan_to_num(own, nan=0.0) ** 2)


def _floor_flags(table: pd.DataFrame, options: Options) -> None:
    if not options.floors:
        return
    floors = pd.Series({(k, p): f for k, paths in options.floors.items() for p, f in paths.items()})
    floor = pd.MultiIndex.from_frame(table[["node_kind", "path"]]).map(floors.to_dict())
    floor = np.asarray(floor, dtype=float)
    higher = table["higher_is_better"].to_numpy(dtype=bool)
    below = np.where(higher, table["value"] < floor, table["value"] > floor)
    table.loc[below & (table["flag"] == ""), "flag"] = "below reference"


def ran_fraction(table: pd.DataFrame) -> pd.Series:
    """Per row, the fraction of its node kind whose case ran (status ok)."""
    return (table["status"] == "ok").groupby([table["node_kind"], table["path"]]).transform("mean")


def _lost_flags(table: pd.DataFrame, ran: pd.Series | None = None) -> None:
    """A case that did not run where most of the fleet ran it."""
    ran = ran_fraction(table) if ran is None else ran
    lost = (table["status"] != "ok") & (ran > 0.5)
    table.loc[lost, "flag"] = np.where(table.loc[lost, "status"] == "failed", "failed", "not run")
