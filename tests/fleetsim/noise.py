"""The run-to-run noise of one node, per class of path, fitted from repeated real runs and
drawn by the simulator (docs/fleet.md, "Noise from real runs").

A residual is log(value of a case in one run / median of that case over the node's other
runs): leave-one-out, so no run is compared with itself (a plain median of 7 runs puts one
residual of every case at exactly 0 and makes the noise look smaller; leaving it out makes
it look slightly larger, the safe side for a false-positive study). The residuals of a
class are kept as empirical quantiles, the extreme ones included, so heavy tails survive;
the simulator draws by inverting them. Each class also keeps the median spread of its
repetitions within a run (table.SPREAD), which the simulator gives its samples.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import InputError
from analysis.fleet.load import first_pass_files
from analysis.fleet.table import SPREAD, fleet_columns, load_cases_run
from analysis.results.io import RunFileError, shown
from analysis.robust import MAD_SCALE

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = 1
#: Probabilities at which a class's residual quantiles are stored: dense in the tails.
PROBABILITIES = [0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6,
                 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 1.0]
#: A class with fewer residuals (one case in 7 runs) borrows its family's (then every residual's) shape.
MIN_RESIDUALS = 7
#: Families of the classes: where a class lacks data, the family's pooled shape is used.
FAMILY_OF = {"bw cpu": "bw", "bw gpu": "bw", "copy cpu": "copy", "copy gpu": "copy",
             "memcpy": "memcpy", "chase cpu": "chase", "chase gpu": "chase",
             "pingpong cpu-cpu": "pingpong", "pingpong cpu-gpu": "pingpong",
             "pingpong gpu-gpu": "pingpong"}


def _kind(token: str) -> str:
    return "gpu" if token.startswith("gpu") else "cpu"


def class_of(family: str, path: str) -> str:
    """The noise class of a fleet-table path: family and the kind of processor(s) that run it."""
    fields = dict(f.split("=", 1) for f in path.split()[1:] if "=" in f)
    if family == "bw":
        op = "copy" if path.split()[1] == "copy" else "bw"
        return f"{op} {_kind(fields.get('pu', ''))}"
    if family == "chase":
        return f"chase {_kind(fields.get('pu', ''))}"
    if family == "pingpong":
        a, b = sorted((_kind(fields.get("a", "")), _kind(fields.get("b", ""))))
        return f"pingpong {a}-{b}"
    return family


def residuals(runs: Sequence[Path], rejected: list[str]) -> pd.DataFrame:
    """One row per (host, path, run) with its leave-one-out log residual and the case's
    within-run spread; RUNS are folders (or files), one a repeated run."""
    parts = []
    for index, run in enumerate(runs):
        for path in first_pass_files([run]):
            try:
                columns = fleet_columns(load_cases_run(path))
            except RunFileError as error:
                rejected.append(str(error))
                continue
            frame = pd.DataFrame({k: columns[k] for k in ("night", "node", "node_kind", "family",
                                                          "path", "value", "status", SPREAD)})
            parts.append(frame.assign(run=index))
    if not parts:
        raise InputError("--noise-from: no usable mempath result file among RUNS; valid: "
                         "folders of repeated runs, RUN_i/<host>/*.h5")
    table = pd.concat(parts, ignore_index=True)
    table = table[(table["status"] == "ok") & np.isfinite(table["value"]) & (table["value"] > 0)]
    table = table.drop_duplicates(["node", "path", "run"])
    table["log"] = np.log(table["value"].to_numpy(dtype=float))
    keys = ["node", "path"]
    table["runs"] = table.groupby(keys)["log"].transform("size")
    table = table[table["runs"] >= 3].copy()
    if table.empty:
        raise InputError("--noise-from: no case of one host ran ok in 3 or more of the RUNS; "
                         "valid: at least 3 repeated runs of the same node")
    table["residual"] = _loo(table, keys)
    table["class"] = [class_of(f, p) for f, p in zip(table["family"], table["path"])]
    return table


def _loo(table: pd.DataFrame, keys: list[str]) -> pd.Series:
    """log value - log median of the case's other runs, per row."""
    out = pd.Series(np.nan, index=table.index)
    for _, group in table.groupby(keys, sort=False)["log"]:
        values = group.to_numpy()
        others = np.array([np.median(np.delete(values, i)) for i in range(len(values))])
        out.loc[group.index] = values - others
    return out


def _shape(resid: np.ndarray, spreads: np.ndarray, cases: int, runs: int) -> dict[str, Any]:
    q = np.quantile(resid, PROBABILITIES)
    spread = spreads[np.isfinite(spreads)]
    return {"residuals": int(len(resid)), "cases": int(cases), "runs": int(runs),
            "sigma": float(MAD_SCALE * np.median(np.abs(resid - np.median(resid)))),
            "std": float(np.std(resid)), "p01": float(q[PROBABILITIES.index(0.01)]),
            "p99": float(q[PROBABILITIES.index(0.99)]),
            "max_abs": float(np.max(np.abs(resid))),
            "quantiles": [round(float(v), 6) for v in q],
            "rep_spread": float(np.median(spread)) if len(spread) else None}


def fit(runs: Sequence[Path], rejected: list[str]) -> dict[str, Any]:
    """The noise model of RUNS (schema in docs/fleet.md)."""
    table = residuals(runs, rejected)
    runs_per_class = table.groupby("class")["run"].nunique()
    classes: dict[str, Any] = {}
    for name, group in table.groupby("class"):
        if len(group) >= MIN_RESIDUALS:
            classes[name] = _shape(group["residual"].to_numpy(), group[SPREAD].to_numpy(),
                                   group["path"].nunique(), runs_per_class[name])
    pooled = {}
    for family, group in table.assign(f=table["class"].map(FAMILY_OF).fillna(table["family"])
                                      ).groupby("f"):
        if len(group) >= MIN_RESIDUALS:
            pooled[family] = _shape(group["residual"].to_numpy(), group[SPREAD].to_numpy(),
                                    group["path"].nunique(), group["run"].nunique())
    pooled["all"] = _shape(table["residual"].to_numpy(), table[SPREAD].to_numpy(),
                           table["path"].nunique(), table["run"].nunique())
    return {"schema": SCHEMA, "what": "mempath fleet noise: leave-one-out log residuals of "
            "repeated runs of one node, per class (tests/fleetsim/noise.py)",
            "source": _source(table, runs), "probabilities": PROBABILITIES,
            "classes": classes, "families": pooled}


def _source(table: pd.DataFrame, runs: Sequence[Path]) -> dict[str, Any]:
    return {"runs": len(runs), "folders": [shown(Path(r)) for r in runs],
            "hosts": sorted(table["node"].unique().tolist()),
            "node_kinds": sorted(table["node_kind"].unique().tolist()),
            "nights": sorted(table["night"].unique().tolist()),
            "cases": int(table["path"].nunique()), "residuals": int(len(table))}


def load_model(spec: str | Path) -> dict[str, Any]:
    """--noise: a model file, or the name of a committed one (tests/fleetsim/data/noise_NAME.json)."""
    path = Path(spec)
    if not path.is_file():
        path = DATA / f"noise_{spec}.json"
    try:
        model = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        known = sorted(p.stem[len("noise_"):] for p in DATA.glob("noise_*.json"))
        raise InputError(f"--noise {spec}: cannot read a noise model ({error}); valid: a JSON "
                         f"file of python -m tests.fleetsim --noise-from, or one of: "
                         f"{', '.join(known) or 'none committed'}") from None
    if not (isinstance(model, dict) and model.get("schema") == SCHEMA
            and isinstance(model.get("families"), dict) and "all" in model["families"]):
        raise InputError(f"--noise {spec}: not a noise model of schema {SCHEMA} (with "
                         "families.all); valid: the output of python -m tests.fleetsim --noise-from")
    return model


class Noise:
    """Draws of a model's residuals for a fixed list of case classes, x ``scale``."""

    def __init__(self, model: dict[str, Any], classes: Sequence[str], scale: float = 1.0):
        if not scale > 0:
            raise InputError(f"--noise-scale {scale:g}: valid: a number > 0 (2 doubles the noise)")
        self.model, self.scale = model, scale
        self.probabilities = np.asarray(model["probabilities"], dtype=float)
        shapes = [self.shape(c) for c in classes]
        self._shapes = {i: s for i, s in enumerate({id(s): s for s in shapes}.values())}
        index = {id(s): i for i, s in self._shapes.items()}
        self.index = np.asarray([index[id(s)] for s in shapes], dtype=np.int64)
        self.quantiles = np.asarray([s["quantiles"] for s in self._shapes.values()], dtype=float)
        spreads = [s.get("rep_spread") for s in shapes]
        self.rep_spread = np.asarray([np.nan if v is None else v for v in spreads], dtype=float)

    def shape(self, name: str) -> dict[str, Any]:
        """A class's shape, else its family's, else every residual's."""
        if name in self.model.get("classes", {}):
            return self.model["classes"][name]
        return self.model["families"].get(FAMILY_OF.get(name, name), self.model["families"]["all"])

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One log residual per case (inverse of the empirical distribution), x scale."""
        u = rng.random(len(self.index))
        out = np.empty(len(self.index))
        for i, row in enumerate(self.quantiles):
            chosen = self.index == i
            out[chosen] = np.interp(u[chosen], self.probabilities, row)
        return out * self.scale


def summary(model: dict[str, Any]) -> str:
    """The fitted numbers, one line a class (for the report and docs)."""
    lines = []
    for title, group in (("class", model.get("classes", {})), ("family", model["families"])):
        for name, s in group.items():
            spread = s.get("rep_spread")
            lines.append(f"{title} {name}: n={s['residuals']} ({s['cases']} cases x "
                         f"{s['runs']} runs) sigma={s['sigma']:.4f} std={s['std']:.4f} "
                         f"p01={s['p01']:+.4f} p99={s['p99']:+.4f} max|r|={s['max_abs']:.4f} "
                         f"rep_spread={'-' if spread is None else f'{spread:.4f}'}")
    return "\n".join(lines)
