"""``python -m analysis compare BASE RUN``: which cases moved beyond their run-to-run noise
(docs/analysis.md, "Comparison and regression").

Every family of families.FAMILIES is compared on its one metric. A case is matched between
BASE and RUN by its identity (the configuration columns of its family's cases table that
both sides hold, families.DEFAULTS filling a column that older files lack, plus the sample
columns that split one case, such as a transfer's part); its raw samples are compared with
a two-sided Mann-Whitney U test, and it has *moved* when p < alpha and the median changed
by more than max(min_change, 2 x the larger relative median absolute deviation of the two
sample sets); with too few samples for the test to reach alpha (3 against 3 cannot), the
median change against that bound decides alone. A move in the worse direction, an ok case
that now fails or is skipped, and an ok case that vanished are regressions. A case with a
NaN or infinite sample on either side is *invalid*: not a measurement, so never compared as
ok, and a regression too (negative samples are refused when loading).

Only a case ok on both sides with samples on both sides is compared; every other case is
listed as not compared, with why (skipped or failed in BASE, absent from one side, no
samples). Everything is computed on whole columns at once: a fleet of 10,000 nodes against
10,000 is over a million cases.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from .. import outfiles
from ..errors import InputError
from ..model import causes
from ..robust import grouped_medians
from ..render import tables
from ..results.io import shown
from .families import DEFAULTS, FAMILIES, Family
from .read import CAUSES, Side, Table, files_of, read_side

MIN_SAMPLES = 3  # fewer, or too few to reach alpha: the median change against the noise decides
#: Not-compared cases listed on stdout; compare.md and compare.csv (--output) list all.
LISTED = 40


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


@lru_cache(maxsize=None)
def can_reach(n1: int, n2: int, alpha: float) -> bool:
    """Whether n1 against n2 samples can give p < alpha at all (3 vs 3 cannot go below 0.1)."""
    return n1 >= MIN_SAMPLES and n2 >= MIN_SAMPLES and \
        mann_whitney(np.arange(n1, dtype=float), np.arange(n1, n1 + n2, dtype=float))[1] < alpha


NOTED = ("failed", "missing", "invalid")  # verdicts told by a note, not by medians


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
    cause: str = ""  # what RUN's recorded conditions show (cause_text); "" where it recorded none

    def line(self) -> str:
        said = f"; {self.cause}" if self.cause else ""
        if self.verdict in NOTED:
            return f"REGRESSION {self.family} {self.key}: {self.note}{said}"
        p = f", p={self.p:.1e}" if not math.isnan(self.p) else ", too few samples for a test at alpha"
        return (f"REGRESSION {self.family} {self.key}: median {self.base:.4g} -> {self.run:.4g} {self.unit} "
                f"({self.change * 100:+.1f} %, noise {self.noise * 100:.1f} %{p}){said}")


def cause_text(run: list | None, base: list | None) -> str:
    """Beside a regression: the causes RUN's conditions show that BASE's did not (each a
    causes.Cause); NOTHING where RUN recorded conditions and none is new; "" where RUN
    recorded none (nothing is said, never a guess)."""
    if run is None:
        return ""
    seen = {(c.rule, c.part) for c in base or []}
    new = [c for c in run if (c.rule, c.part) not in seen]
    if new:
        return causes.words(new)
    if run:
        return f"{causes.NOTHING} (BASE showed the same: {causes.words(run)})"
    return causes.NOTHING


def _key_causes(table: Table, key: np.ndarray, keys: int) -> list:
    """Per key: the causes of its first case row whose file recorded conditions, else None."""
    found: list = [None] * keys
    if CAUSES not in table.columns:
        return found
    for k, value in zip(key.tolist(), table.column(CAUSES, fill=None)):
        if value is not None and found[k] is None:
            found[k] = value
    return found


@dataclass
class Outcome:
    """What compare found: the moved, failed or missing cases, how many were compared (per
    family too), and every case it could not compare with why."""

    changes: list[Change] = field(default_factory=list)
    compared: int = 0
    per_family: dict[str, int] = field(default_factory=dict)
    not_compared: list[tuple[str, str, str]] = field(default_factory=list)  # family, case, why
    notes: list[str] = field(default_factory=list)


# ---- identity -------------------------------------------------------------------------

def identity_columns(family: str, sides: tuple[Table, Table]) -> tuple[list[str], list[str]]:
    """The identity columns of ``family`` over both sides, and those left out: a column
    some files lack is kept where families.DEFAULTS gives its value for them, else left
    out, so that a baseline written before a column was added still matches."""
    spec = FAMILIES[family]
    skip = {"case_id", "status", "reason", CAUSES} | ({spec.metric} if spec.table == "cases" else set())
    names = [n for n in dict.fromkeys(n for t in sides for n in t.columns) if n not in skip]
    kept, dropped = [], []
    for name in names:
        everywhere = all(t.present(name).all() for t in sides)
        (kept if everywhere or (family, name) in DEFAULTS else dropped).append(name)
    return kept, dropped


def _filled(family: str, table: Table, name: str) -> np.ndarray:
    default = DEFAULTS.get((family, name))
    if isinstance(default, str) and default.startswith("="):  # another column's value
        values = table.column(name, fill=None)
        other = table.column(default[1:], fill=None)
        return np.where(pd.isna(values), other, values) if len(values) else values
    return table.column(name, fill=default)


def _codes(columns: list[np.ndarray]) -> np.ndarray:
    """One integer per distinct row of ``columns`` (equal rows, equal codes)."""
    rows = len(columns[0]) if columns else 0
    code = np.zeros(rows, dtype=np.int64)
    for values in columns:
        part, uniques = pd.factorize(values, use_na_sentinel=False)
        if len(uniques) and int(code.max(initial=0)) + 1 > (2**62) // max(len(uniques), 1):
            code = pd.factorize(code)[0].astype(np.int64)
        code = code * max(len(uniques), 1) + part
    return pd.factorize(code)[0].astype(np.int64) if rows else code


@dataclass
class Keys:
    """The cases of both sides as key numbers: ``key[side]`` per case row; ``columns`` the
    identity columns (and ``host`` where both sides ran on the same hosts); ``rows`` one
    case row per key, for its name."""

    key: tuple[np.ndarray, np.ndarray]
    names: list[str]
    values: dict[str, np.ndarray]  # per identity column, over base rows then run rows
    first: np.ndarray              # per key: a row (over base then run) that names it
    #: Per column, each value's ``column=value`` text: tens of thousands of cases are named
    #: (listed as not compared) from a few distinct values.
    shown: dict[str, dict[object, str]] = field(default_factory=dict)

    def name(self, key: int) -> str:
        row = self.first[key]
        parts = []
        for column in self.names:
            value = self.values[column][row]
            memo = self.shown.setdefault(column, {})
            text = memo.get(value)
            if text is None:
                text = memo[value] = f"{column}={_shown(value)}"
            parts.append(text)
        return " ".join(parts)


def _shown(value: object) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _keys(family: str, base: Side, run: Side, with_host: bool) -> tuple[Keys, list[str]]:
    tables = (base.cases[family], run.cases[family])
    names, dropped = identity_columns(family, tables)
    values = {n: np.concatenate([_filled(family, t, n) for t in tables]) for n in names}
    if with_host:
        hosts = [np.asarray(s.hosts, dtype=object)[t.files()] for s, t in zip((base, run), tables)]
        values["host"] = np.concatenate(hosts)
        names = [*names, "host"]
    code = _codes([values[n] for n in names]) if names else \
        np.zeros(sum(sum(t.rows) for t in tables), dtype=np.int64)
    split = sum(tables[0].rows)
    _, first = np.unique(code, return_index=True)
    return Keys((code[:split], code[split:]), names, values, first), dropped


# ---- samples ---------------------------------------------------------------------------

@dataclass
class Stats:
    """Per unit (a case, or one part of it) of one side: count, non-finite count, median,
    relative MAD, and the sorted samples (``start`` of each unit's run of them)."""

    count: np.ndarray
    bad: np.ndarray
    median: np.ndarray
    rmad: np.ndarray
    start: np.ndarray
    values: np.ndarray


def _stats(unit: np.ndarray, values: np.ndarray, units: int) -> Stats:
    finite = np.isfinite(values)
    bad = np.bincount(unit[~finite], minlength=units)
    count, start, median, ordered = grouped_medians(unit, values, units)
    sorted_unit = np.repeat(np.arange(units), count)
    _, _, mad, _ = grouped_medians(sorted_unit, np.abs(ordered - median[sorted_unit]), units)
    with np.errstate(divide="ignore", invalid="ignore"):
        rmad = np.where(median != 0, mad / np.abs(median), np.inf)
    return Stats(count, bad, median, rmad, start, ordered)


def _p_values(b: Stats, r: Stats, units: np.ndarray) -> np.ndarray:
    """mann_whitney(x, y)[1] of each unit, many at once: units of equal sample counts go
    through scipy as one 2-D call, split where scipy's per-pair choice of method differs."""
    p = np.full(len(units), np.nan)
    n1, n2 = b.count[units], r.count[units]
    for a, c in set(zip(n1.tolist(), n2.tolist())):
        where = np.flatnonzero((n1 == a) & (n2 == c))
        x = b.values[b.start[units[where]][:, None] + np.arange(a)]
        y = r.values[r.start[units[where]][:, None] + np.arange(c)]
        both = np.sort(np.concatenate([x, y], axis=1), axis=1)
        ties = (np.diff(both, axis=1) == 0).any(axis=1)
        for tied in (False, True):
            rows = ties == tied
            if rows.any():
                method = "asymptotic" if tied or (a > 8 and c > 8) else "exact"
                p[where[rows]] = stats.mannwhitneyu(x[rows], y[rows], alternative="two-sided",
                                                    method=method, axis=1).pvalue
    return p


# ---- the comparison --------------------------------------------------------------------

def compare(base: Side, run: Side, alpha: float = 0.01, min_change: float = 0.03) -> Outcome:
    """Every moved, failed, missing or invalid case, the number compared, what was not."""
    out = Outcome()
    with_host = set(base.hosts) == set(run.hosts)
    if not with_host:
        only = [(side, sorted(set(a.hosts) - set(b.hosts))) for side, a, b in (("BASE", base, run), ("RUN", run, base))]
        out.notes.append("the hosts differ, so cases are matched without the host (the samples of all hosts "
                         "of a side pooled): " + "; ".join(
                             f"{len(h)} only in {side} ({', '.join(h[:5])}{', ...' if len(h) > 5 else ''})"
                             for side, h in only if h))
    for family, spec in FAMILIES.items():
        if not (sum(base.cases[family].rows) or sum(run.cases[family].rows)):
            continue
        before = len(out.changes), out.compared
        _family(family, spec, base, run, with_host, alpha, min_change, out)
        out.per_family[family] = out.compared - before[1]
    for name in sorted(set(base.unknown) | set(run.unknown)):
        out.not_compared.append((name, "every case", f"table {name}/cases: compare knows no "
                                 f"such family (it knows {', '.join(FAMILIES)})"))
    return out


def _first(key: np.ndarray, values: np.ndarray, keys: int, fill: object = "") -> np.ndarray:
    """Per key: ``values`` of its first row (``fill`` where it has none)."""
    out = np.full(keys, fill, dtype=object)
    if len(key):
        uniq, index = np.unique(key, return_index=True)
        out[uniq] = values[index]
    return out


def _family(family: str, spec: Family, base: Side, run: Side, with_host: bool, alpha: float,
            min_change: float, out: Outcome) -> None:
    keys, dropped = _keys(family, base, run, with_host)
    n = len(keys.first)
    sides = (base, run)
    status, reason, present, ok = [], [], [], []
    for side, key in zip(sides, keys.key):
        table = side.cases[family]
        st = table.column("status")
        status.append(_first(key, st, n))
        reason.append(_first(key, table.column("reason", fill=""), n))
        present.append(np.bincount(key, minlength=n) > 0)
        ok_rows = key[st == "ok"]
        ok.append(np.bincount(ok_rows, minlength=n) > 0)
        # "ok" wins: a case ok in one file of a side is ok there
        status[-1][ok[-1]] = "ok"
    ambiguous = np.zeros(n, dtype=bool)
    if dropped:  # a key that now covers several cases of one file cannot be matched
        for side, key in zip(sides, keys.key):
            files = side.cases[family].files()
            pairs = pd.DataFrame({"f": files, "k": key})
            ambiguous[pairs.loc[pairs.duplicated(keep=False), "k"].to_numpy()] = True
    (b_present, r_present), (b_ok, r_ok) = present, ok
    said = [_key_causes(side.cases[family], key, n) for side, key in zip(sides, keys.key)]

    def cause_of(k: int) -> str:
        return cause_text(said[1][k], said[0][k])

    def listed(mask: np.ndarray, why) -> None:
        for k in np.flatnonzero(mask):
            out.not_compared.append((family, keys.name(k), why(k)))

    listed(ambiguous, lambda k: "matches several cases of one file once "
           f"{', '.join(dropped)} (absent from some files) are left out")
    live = ~ambiguous
    for k in np.flatnonzero(live & b_ok & ~r_present):
        out.changes.append(Change(family, keys.name(k), *[math.nan] * 5, "missing", spec.unit,
                                  "ok in BASE, absent from RUN"))
    for k in np.flatnonzero(live & b_ok & r_present & ~r_ok):
        out.changes.append(Change(family, keys.name(k), *[math.nan] * 5, "failed", spec.unit,
                                  f"was ok, now {status[1][k]}: {reason[1][k]}", cause_of(k)))
    listed(live & b_present & ~b_ok, lambda k: f"{status[0][k]} in BASE"
           + (f" ({reason[0][k]})" if reason[0][k] else "")
           + (f", {status[1][k]} in RUN" if r_present[k] else ", absent from RUN"))
    listed(live & ~b_present & r_present, lambda k: f"absent from BASE ({status[1][k]} in RUN)")
    both = live & b_ok & r_ok
    _samples(family, spec, sides, keys, both, alpha, min_change, out, cause_of)


def _side_samples(family: str, spec: Family, side: Side, key: np.ndarray, both: np.ndarray,
                  sample_keys: list[str]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Key, value and sample-key columns of the samples of ok case rows whose key is
    compared (samples of a skipped or failed row are not a measurement of the case)."""
    cases = side.cases[family]
    if spec.table == "cases":  # the one figure of the case is its sample
        rows = np.flatnonzero((cases.column("status") == "ok") & both[key])
        return key[rows], cases.column(spec.metric)[rows].astype(float), []
    table = side.samples[family]
    none = (np.array([], dtype=np.int64), np.array([]), [np.array([], dtype=object)] * len(sample_keys))
    if not sum(table.rows) or not len(key):
        return none
    row, matched = _case_rows(cases, table)
    keep = np.flatnonzero(matched)
    keep = keep[(cases.column("status")[row[keep]] == "ok") & both[key[row[keep]]]]
    value = table.column(spec.metric)[keep].astype(float)
    parts = [table.column(k, fill="")[keep] for k in sample_keys]
    return key[row[keep]], value, parts


def _case_rows(cases: Table, samples: Table) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: the row of its case (same file, same case_id) and whether there is one."""
    case_ids = cases.column("case_id").astype(np.int64)
    sample_ids = samples.column("case_id").astype(np.int64)
    low = min(case_ids.min(initial=0), sample_ids.min(initial=0))
    span = max(case_ids.max(initial=0), sample_ids.max(initial=0)) - low + 1
    if span * (len(cases.rows) + 1) < 2**62:  # one integer per (file, case_id)
        case_code = cases.files().astype(np.int64) * span + (case_ids - low)
        sample_code = samples.files().astype(np.int64) * span + (sample_ids - low)
    else:  # case ids far apart (no writer does that): number the pairs instead
        both = _codes([np.concatenate([cases.files(), samples.files()]),
                       np.concatenate([case_ids, sample_ids])])
        case_code, sample_code = both[:len(case_ids)], both[len(case_ids):]
    order = np.argsort(case_code, kind="stable")
    where = np.minimum(np.searchsorted(case_code[order], sample_code), len(order) - 1)
    row = order[where]
    return row, case_code[row] == sample_code


def _samples(family: str, spec: Family, sides: tuple[Side, Side], keys: Keys, both: np.ndarray,
             alpha: float, min_change: float, out: Outcome, cause_of=lambda k: "") -> None:
    present = [[k for k in spec.sample_keys if s.samples[family].present(k).all()] for s in sides]
    sample_keys = [k for k in spec.sample_keys if all(k in p for p in present)]
    drawn = [_side_samples(family, spec, s, k, both, sample_keys) for s, k in zip(sides, keys.key)]
    split = len(drawn[0][0])
    columns = [np.concatenate([drawn[0][0], drawn[1][0]])] + \
        [np.concatenate([drawn[0][2][i], drawn[1][2][i]]) for i in range(len(sample_keys))]
    unit = _codes(columns) if split or len(drawn[1][0]) else np.array([], dtype=np.int64)
    units = int(unit.max()) + 1 if len(unit) else 0
    unit_key = np.zeros(units, dtype=np.int64)
    unit_key[unit] = columns[0]
    first_sample = np.full(units, -1, dtype=np.int64)
    uniq, index = np.unique(unit, return_index=True)
    first_sample[uniq] = index
    part_values = [np.concatenate([d[2][i] for d in drawn]) for i in range(len(sample_keys))]

    def unit_name(u: int) -> str:
        name = keys.name(int(unit_key[u]))
        return name + "".join(f" {k}={_shown(v[first_sample[u]])}" for k, v in zip(sample_keys, part_values))

    b = _stats(unit[:split], np.concatenate([drawn[0][1]]), units)
    r = _stats(unit[split:], drawn[1][1], units)
    # Keys compared on both sides but without samples on one: not comparable.
    has = [np.bincount(d[0], minlength=len(both)) > 0 for d in drawn]
    for k in np.flatnonzero(both & ~(has[0] & has[1])):
        where = " and ".join(s for s, h in (("BASE", has[0][k]), ("RUN", has[1][k])) if not h)
        out.not_compared.append((family, keys.name(k), f"ok but no samples in {where}"))
    if not units:
        return
    keyed = has[0][unit_key] & has[1][unit_key]
    b_has, r_has = b.count > 0, r.count > 0
    for u in np.flatnonzero(keyed & (b_has != r_has)):
        out.not_compared.append((family, unit_name(u), f"samples only in {'BASE' if b_has[u] else 'RUN'}"))
    paired = np.flatnonzero(keyed & b_has & r_has)
    invalid = (b.bad[paired] > 0) | (r.bad[paired] > 0)
    for u in paired[invalid]:
        note = "; ".join(f"{bad} of {count} samples in {s} are NaN or infinite" for s, bad, count in
                         (("BASE", b.bad[u], b.count[u]), ("RUN", r.bad[u], r.count[u])) if bad)
        out.changes.append(Change(family, unit_name(u), *[math.nan] * 5, "invalid", spec.unit, note))
    units_ok = paired[~invalid]
    out.compared += len(units_ok)
    mb, mr = b.median[units_ok], r.median[units_ok]
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(mb != 0, (mr - mb) / mb, np.inf)
    noise = 2 * np.maximum(b.rmad[units_ok], r.rmad[units_ok])
    beyond = np.abs(change) > np.maximum(min_change, noise)
    enough = np.array([can_reach(int(x), int(y), alpha) for x, y in
                       zip(b.count[units_ok], r.count[units_ok])], dtype=bool) \
        if beyond.any() else np.zeros(len(units_ok), dtype=bool)
    p = np.full(len(units_ok), np.nan)
    test = beyond & enough
    if test.any():
        p[test] = _p_values(b, r, units_ok[test])
    moved = beyond & (~enough | (p < alpha))
    for i in np.flatnonzero(moved):
        better = (change[i] > 0) == spec.higher_is_better
        out.changes.append(Change(family, unit_name(units_ok[i]), float(mb[i]), float(mr[i]),
                                  float(change[i]), float(noise[i]), float(p[i]),
                                  "improved" if better else "regressed", spec.unit,
                                  cause="" if better else cause_of(int(unit_key[units_ok[i]]))))


# ---- output ----------------------------------------------------------------------------

def table(changes: list[Change], not_compared: list[tuple[str, str, str]] = ()) -> pd.DataFrame:
    """compare.csv: every moved, failed, missing or invalid case, then every case not
    compared (verdict ``not compared``, why in ``note``)."""
    rows = [{"family": c.family, "case": c.key, "base": c.base, "run": c.run, "unit": c.unit,
             "change_pct": c.change * 100, "noise_pct": c.noise * 100, "p": c.p, "verdict": c.verdict,
             "note": c.note, "cause": c.cause} for c in changes]
    rows += [{"family": f, "case": k, "base": math.nan, "run": math.nan, "unit": FAMILIES[f].unit if f in FAMILIES else "",
              "change_pct": math.nan, "noise_pct": math.nan, "p": math.nan, "verdict": "not compared",
              "note": why, "cause": ""} for f, k, why in not_compared]
    return pd.DataFrame(rows, columns=["family", "case", "base", "run", "unit", "change_pct", "noise_pct", "p",
                                       "verdict", "note", "cause"])


def _why(text: str) -> str:
    """The kind of a not-compared reason, for the count table (its words before details)."""
    return text.split(" (")[0].split(":")[0]


def markdown(outcome: Outcome, listed: int | None = None) -> str:
    """The comparison as Markdown; ``listed``: at most this many not-compared cases (all
    where None)."""
    changes, skipped = outcome.changes, outcome.not_compared
    lines = [f"# Comparison: {outcome.compared} cases compared, {len(changes)} moved, failed or missing, "
             f"{len(skipped)} not compared", ""]
    lines += [f"Note: {note}." for note in outcome.notes] + ([""] if outcome.notes else [])
    if outcome.per_family:
        lines += ["Compared per family: " + ", ".join(
            f"{FAMILIES[f].what} ({f}) {n}" for f, n in outcome.per_family.items()) + ".", ""]
    if not changes:
        lines += ["Nothing moved beyond its noise.", ""]
    else:
        moved = table(changes)
        noted = moved["verdict"].isin(NOTED)

        def cell(column: str, fmt: str, suffix: str | pd.Series = "") -> pd.Series:
            return (moved[column].map(lambda v: format(v, fmt)) + suffix).where(~noted, "")

        cells = pd.DataFrame({
            "family": moved["family"], "case": moved["case"],
            "base": cell("base", ".4g", " " + moved["unit"]), "run": cell("run", ".4g", " " + moved["unit"]),
            "change": cell("change_pct", "+.1f", " %"), "noise": cell("noise_pct", ".1f", " %"),
            "p": cell("p", ".1e"),
            "verdict": moved["verdict"].where(~noted, moved["verdict"] + ": " + moved["note"])})
        if (moved["cause"] != "").any():  # what RUN's recorded conditions show (analysis/model/causes.py)
            cells["cause"] = moved["cause"]
        lines += tables.markdown(cells, right={2, 3, 4, 5, 6})
    if skipped:
        lines += [f"## Not compared ({len(skipped)})", ""]
        counts = pd.DataFrame(skipped, columns=["family", "case", "why"])
        counts["kind"] = counts["why"].map(_why)
        summary = counts.groupby(["family", "kind"], sort=False).size().reset_index()
        lines += tables.markdown(pd.DataFrame({"family": summary["family"], "why": summary["kind"],
                                               "cases": summary[0].astype(str)}), right={2})
        shown_rows = skipped if listed is None else skipped[:listed]
        lines += tables.markdown(pd.DataFrame(shown_rows, columns=["family", "case", "why"]))
        if len(shown_rows) < len(skipped):
            lines += [f"(the first {len(shown_rows)} of {len(skipped)}; compare.md and compare.csv of "
                      "--output DIR list all)", ""]
    return "\n".join(lines)


def run_compare(base: Path, run: Path, alpha: float, min_change: float, output: Path | None,
                rejected: list[str], jobs: int | None = None) -> int:
    """The command: prints the table, one REGRESSION line per case on stderr; exit 1 on any,
    InputError (exit 2) when no case could be compared. Unusable files go to ``rejected``."""
    if not 0 < alpha < 1 or min_change < 0:
        raise InputError(f"--alpha {alpha} / --min-change {min_change}: valid: 0 < alpha < 1, min-change >= 0")
    if output:  # before the work, so that an unusable folder costs nothing
        output.mkdir(parents=True, exist_ok=True)
    sides = []
    for path in (base, run):
        side = read_side(files_of(path), jobs)
        rejected += side.rejected
        if not side.files:
            if len(side.rejected) == 1:
                raise InputError(rejected.pop())
            raise InputError(f"none of the {len(side.rejected)} files of {shown(path)} is usable (each "
                             "named above); valid: mempath result files (docs/schema.md)")
        sides.append(side)
    outcome = compare(sides[0], sides[1], alpha, min_change)
    outcome.changes.sort(key=lambda c: (list(FAMILIES).index(c.family), c.key))
    print(markdown(outcome, LISTED))
    if output:
        outfiles.write_text(output / "compare.md", markdown(outcome))
        outfiles.write_csv(table(outcome.changes, outcome.not_compared), output / "compare.csv")
    bad = [c for c in outcome.changes if c.verdict != "improved"]
    for c in bad:
        print(c.line(), file=sys.stderr)
    if not bad and not outcome.compared:
        # "0 cases compared" must never pass as a good run.
        kinds = pd.Series([_why(w) for _, _, w in outcome.not_compared], dtype=object).value_counts()
        said = ", ".join(f"{n} {k}" for k, n in kinds.items()) or "no cases in either"
        raise InputError(f"nothing comparable: no case of {shown(run)} could be compared with {shown(base)} "
                         f"({said}; listed on stdout); valid: runs that share at least one case ok on "
                         "both sides with finite samples")
    return 1 if bad else 0
