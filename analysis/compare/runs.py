"""``python -m analysis compare BASE RUN``: which cases moved beyond their run-to-run noise
(docs/analysis.md, "Comparison and regression").

A case is matched between BASE and RUN by its identity (the configuration columns of its
family's cases table, plus the sample columns that split one case, such as a transfer's
direction); its raw samples are compared with a two-sided Mann-Whitney U test, and it has
*moved* when p < alpha and the median changed by more than max(min_change, 2 x the larger
relative median absolute deviation of the two sample sets); with too few samples for the
test to reach alpha (3 against 3 cannot), the median change against that bound decides
alone. A move in the worse direction,
an ok case that now fails or is skipped, and an ok case that vanished are regressions.
A case with a NaN or infinite sample on either side is *invalid*: not a measurement, so
never compared as ok, and a regression too (negative samples are refused when loading).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import InputError
from ..results.io import RunSet, load_runs, shown
from ..render import tables


@dataclass(frozen=True)
class Family:
    metric: str                 # sample column compared
    unit: str
    higher_is_better: bool
    sample_keys: tuple[str, ...] = ()  # sample columns that are part of the identity


#: Every family with raw samples (docs/schema.md): the one place that says what is compared.
FAMILIES: dict[str, Family] = {
    "bw": Family("bandwidth_GBps", "GB/s", True),
    "memcpy": Family("bandwidth_GBps", "GB/s", True, ("part",)),
    "um": Family("bandwidth_GBps", "GB/s", True, ("phase", "state", "preceded_by", "iterations")),
    "allocmatrix": Family("bandwidth_GBps", "GB/s", True),
    "chase": Family("ns_per_access", "ns", False),
    "pingpong": Family("rtt_ns", "ns", False),
    "mpi_bw": Family("bandwidth_GBps", "GB/s", True),
    "stream": Family("bandwidth_GBps", "GB/s", True),
    "gemm": Family("tflops", "TFLOP/s", True),
    "llm": Family("tokens_per_s", "tokens/s", True),
}
#: Case columns that are outcomes, not configuration (floats are outcomes too).
OUTCOMES = {"case_id", "status", "reason", "reps", "placement", "dst_placement", "verified", "best_threads",
            "cublas_version", "weight_placement", "path_source", "run", "host", "threads_launched"}
#: Columns compare needs where a file holds the table (load_runs checks each file).
REQUIRED = {table: columns for family, spec in FAMILIES.items() for table, columns in
            ((f"{family}/cases", ("case_id", "status", "reason")),
             (f"{family}/samples", ("case_id", spec.metric)))}
MIN_SAMPLES = 3  # fewer, or too few to reach alpha: the median change against the noise decides


def mann_whitney(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """U of x and the two-sided p-value of scipy's test: exact where one side has at most 8
    samples and no value ties (the normal approximation is poor there: it puts 3 against 3
    at p = 0.08, where the least attainable p is 0.1), else the normal approximation
    corrected for ties and continuity."""
    result = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto")
    return float(result.statistic), float(result.pvalue)


def relative_mad(values: np.ndarray) -> float:
    med = float(np.median(values))
    return float(np.median(np.abs(values - med)) / abs(med)) if med else math.inf


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(path.rglob("*.h5"))
        if not found:
            raise InputError(f"{shown(path)} holds no .h5 result files; valid: a mempath .h5 file or a folder of them")
        return found
    if not path.exists():
        raise InputError(f"{shown(path)} does not exist; valid: a mempath .h5 file or a folder of them")
    return [path]


def _identity(cases: pd.DataFrame) -> list[str]:
    return [c for c in cases.columns if c not in OUTCOMES and cases[c].dtype.kind not in "fc"]


def _cases_and_samples(runs: RunSet, family: str, with_host: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    cases = runs.table(f"{family}/cases")
    samples = runs.table(f"{family}/samples")
    if cases.empty:
        return cases, samples
    ident = _identity(cases) + (["host"] if with_host else [])
    spec = FAMILIES[family]
    cases["key"] = [" ".join(f"{c}={v}" for c, v in zip(ident, row)) for row in cases[ident].itertuples(index=False)]
    if not samples.empty:
        keep = ["run", "case_id", spec.metric, *[k for k in spec.sample_keys if k in samples]]
        samples = samples[keep].merge(cases[["run", "case_id", "key"]], on=["run", "case_id"])
        for k in spec.sample_keys:
            if k in samples:
                samples["key"] = samples["key"] + f" {k}=" + samples[k].astype(str)
    return cases, samples


NOTED = ("failed", "missing", "invalid")  # verdicts told by a note, not by medians


def _not_finite(base: np.ndarray, run: np.ndarray) -> str:
    """Why the samples are not a measurement (NaN or infinite values), or ''."""
    counts = [(side, int((~np.isfinite(v)).sum()), len(v)) for side, v in (("BASE", base), ("RUN", run))]
    return "; ".join(f"{n} of {total} samples in {side} are NaN or infinite" for side, n, total in counts if n)


@dataclass
class Change:
    family: str
    key: str
    base: float
    run: float
    change: float
    noise: float
    p: float
    verdict: str  # improved, regressed, failed, missing, invalid
    unit: str
    note: str = ""

    def line(self) -> str:
        if self.verdict in NOTED:
            return f"REGRESSION {self.family} {self.key}: {self.note}"
        p = f", p={self.p:.1e}" if not math.isnan(self.p) else ", too few samples for a test at alpha"
        return (f"REGRESSION {self.family} {self.key}: median {self.base:.4g} -> {self.run:.4g} {self.unit} "
                f"({self.change * 100:+.1f} %, noise {self.noise * 100:.1f} %{p})")


def compare(base: RunSet, run: RunSet, alpha: float = 0.01, min_change: float = 0.03) -> tuple[list[Change], int]:
    """Every moved, failed or missing case, and how many cases were compared."""
    with_host = set(base.hosts()) == set(run.hosts())
    changes: list[Change] = []
    compared = 0
    for family, spec in FAMILIES.items():
        b_cases, b_samples = _cases_and_samples(base, family, with_host)
        r_cases, r_samples = _cases_and_samples(run, family, with_host)
        if b_cases.empty:
            continue
        r_status = r_cases.groupby("key")["status"].agg(lambda s: "ok" if (s == "ok").any() else s.iloc[0]) \
            if not r_cases.empty else pd.Series(dtype=object)
        r_reason = r_cases.groupby("key")["reason"].first() if not r_cases.empty else pd.Series(dtype=object)
        ok_keys = set(b_cases.loc[b_cases["status"] == "ok", "key"])
        for key in sorted(ok_keys):
            if key not in r_status.index:
                changes.append(Change(family, key, math.nan, math.nan, math.nan, math.nan, math.nan, "missing",
                                      spec.unit, "ok in BASE, absent from RUN"))
            elif r_status[key] != "ok":
                changes.append(Change(family, key, math.nan, math.nan, math.nan, math.nan, math.nan, "failed",
                                      spec.unit, f"was ok, now {r_status[key]}: {r_reason.get(key, '')}"))
        if b_samples.empty or r_samples.empty:
            continue
        b_groups = {k: g[spec.metric].to_numpy(float) for k, g in b_samples.groupby("key")}
        for key, g in r_samples.groupby("key"):
            if key not in b_groups:
                continue
            x, y = b_groups[key], g[spec.metric].to_numpy(float)
            if not len(x) or not len(y):
                continue
            if broken := _not_finite(x, y):
                changes.append(Change(family, key, math.nan, math.nan, math.nan, math.nan, math.nan, "invalid",
                                      spec.unit, broken))
                continue
            compared += 1
            mb, mr = float(np.median(x)), float(np.median(y))
            change = (mr - mb) / mb if mb else math.inf
            noise = 2 * max(relative_mad(x), relative_mad(y))
            # Can these sample counts reach alpha at all? (3 vs 3 cannot go below p = 0.1.)
            enough = len(x) >= MIN_SAMPLES and len(y) >= MIN_SAMPLES and \
                mann_whitney(np.arange(len(x), dtype=float), np.arange(len(x), len(x) + len(y), dtype=float))[1] < alpha
            p = mann_whitney(x, y)[1] if enough else math.nan
            if abs(change) <= max(min_change, noise) or (enough and p >= alpha):
                continue
            better = (change > 0) == spec.higher_is_better
            changes.append(Change(family, key, mb, mr, change, noise, p, "improved" if better else "regressed",
                                  spec.unit))
    return changes, compared


def table(changes: list[Change]) -> pd.DataFrame:
    return pd.DataFrame([{"family": c.family, "case": c.key, "base": c.base, "run": c.run, "unit": c.unit,
                          "change_pct": c.change * 100, "noise_pct": c.noise * 100, "p": c.p, "verdict": c.verdict,
                          "note": c.note} for c in changes],
                        columns=["family", "case", "base", "run", "unit", "change_pct", "noise_pct", "p", "verdict",
                                 "note"])


def markdown(changes: list[Change], compared: int) -> str:
    lines = [f"# Comparison: {compared} cases compared, {len(changes)} moved, failed or missing", ""]
    if not changes:
        return "\n".join(lines + ["Nothing moved beyond its noise.", ""])
    moved = table(changes)
    noted = moved["verdict"].isin(NOTED)

    def shown(column: str, fmt: str, suffix: str | pd.Series = "") -> pd.Series:
        return (moved[column].map(lambda v: format(v, fmt)) + suffix).where(~noted, "")

    cells = pd.DataFrame({
        "family": moved["family"], "case": moved["case"],
        "base": shown("base", ".4g", " " + moved["unit"]), "run": shown("run", ".4g", " " + moved["unit"]),
        "change": shown("change_pct", "+.1f", " %"), "noise": shown("noise_pct", ".1f", " %"),
        "p": shown("p", ".1e"),
        "verdict": moved["verdict"].where(~noted, moved["verdict"] + ": " + moved["note"])})
    return "\n".join(lines + tables.markdown(cells, right={2, 3, 4, 5, 6}))


def run_compare(base: Path, run: Path, alpha: float, min_change: float, output: Path | None,
                rejected: list[str]) -> int:
    """The command: prints the table, one REGRESSION line per case on stderr; exit 1 on any,
    InputError (exit 2) when no case could be compared. Unusable files go to ``rejected``."""
    if not 0 < alpha < 1 or min_change < 0:
        raise InputError(f"--alpha {alpha} / --min-change {min_change}: valid: 0 < alpha < 1, min-change >= 0")
    if output:  # before the work, so that an unusable folder costs nothing
        output.mkdir(parents=True, exist_ok=True)
    base_runs = load_runs(_files(base), REQUIRED, rejected)
    run_runs = load_runs(_files(run), REQUIRED, rejected)
    families = [f for f in FAMILIES if not base_runs.table(f"{f}/cases").empty]
    if not families:
        raise InputError(f"{shown(base)} holds no family with cases to compare; valid: mempath result files")
    changes, compared = compare(base_runs, run_runs, alpha, min_change)
    text = markdown(changes, compared)
    print(text)
    if output:
        (output / "compare.md").write_text(text)
        table(changes).to_csv(output / "compare.csv", index=False)
    bad = [c for c in changes if c.verdict != "improved"]
    for c in bad:
        print(c.line(), file=sys.stderr)
    if not bad and not compared:
        # "0 cases compared" must never pass as a good run.
        raise InputError(f"no case of {shown(run)} could be compared with {shown(base)}; valid: runs "
                         "that share at least one ok case with finite samples")
    return 1 if bad else 0
