"""Figs. 15-16 and Table III: cuBLAS GEMM TFLOP/s by where A and B are (C always in the
multiplying GPU's own memory), as a matrix of A's memory x B's memory per data type at the
largest size (Fig. 15), against the matrix size (Fig. 16), and the best of the run beside
the H100 SXM's published peaks (Table III). Operands are drawn under the memory their
pages were in after the run, never the one asked for (managed memory migrates)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm

from .. import outfiles
from ..model.roles import ROLE_ORDER, labelled, role
from ..model.vocabulary import DEVICE_MEMORY, HBM
from ..render.style import PAGE_IN, colour_bar, heat_map, log_log, series
from ..render.tables import markdown, num
from ..results.cases import drawn_under
from ..results.kinds import ALLOC_ORDER
from ..render.items import Context, Drawn, Grid, faceted, item, mark, mark_cells
from .published import gemm_definition, hold, of, run_facts

DTYPES = ("fp16", "tf32", "fp32", "fp64")
ELEMENT_BYTES = {"fp16": 2, "tf32": 4, "fp32": 4, "fp64": 8}
TENSOR = {"fp16": "yes", "tf32": "yes", "fp32": "no", "fp64": "yes"}
PLACEMENT_COMMAND = "mempath gemm --all --ab independent --matrix-bytes 4GiB"
SCALING_COMMAND = "mempath gemm --all --dtype fp16,tf32,fp32,fp64 --size 1024,2048,4096,8192,16384"
PAPER_MATRIX_BYTES = 4e9


def _dtype_rank(dtype: str) -> int:
    return DTYPES.index(dtype) if dtype in DTYPES else len(DTYPES)


def gemm_cases(ctx: Context) -> tuple[pd.DataFrame, list[str]]:
    """The GEMM cases that ran with C in the multiplying GPU's own memory, with ``pu``
    (gpuN) and ``a_drawn``/``b_drawn`` (the memory each operand is drawn under); notes on
    what was left out."""
    cases = ctx.table("gemm/cases")
    notes: list[str] = []
    if cases.empty:
        return cases, notes
    ok = cases[(cases["status"] == "ok") & np.isfinite(cases["median_TFLOPs"].astype(float))].copy()
    ok["pu"] = [f"gpu{int(g)}" for g in ok["gpu"]]
    local_c = ok["c_mem"].fillna("") == ok["pu"]
    if (~local_c).any():
        notes.append(f"{int((~local_c).sum())} case(s) with C outside the GPU's own memory left out (the paper "
                     "keeps C in local HBM).")
    ok = ok[local_c]
    b_place = ok["b_placement"] if "b_placement" in ok else pd.Series(np.nan, index=ok.index)
    b_place = b_place.where(b_place.notna(), ok["placement"])  # files before B was placed apart
    ok["a_drawn"] = [drawn_under(ctx.topologies.get(h, {}), m, a, p)[0]
                     for m, a, p, h in zip(ok["a_mem"], ok["a_alloc"], ok["placement"], ok["host"])]
    ok["b_drawn"] = [drawn_under(ctx.topologies.get(h, {}), m, a, p)[0]
                     for m, a, p, h in zip(ok["b_mem"], ok["b_alloc"], b_place, ok["host"])]
    lost = ok[(ok["a_drawn"] == "") | (ok["b_drawn"] == "")]
    if not lost.empty:
        notes.append("Not drawn, operand pages of unknown or mixed placement (managed memory is drawn only "
                     "where it was found): " + ", ".join(sorted({f"A {r.a_alloc} {r.a_mem}, B {r.b_alloc} {r.b_mem}"
                                                                  for r in lost.itertuples()})) + ".")
    moved = ok[((ok["a_drawn"] != ok["a_mem"]) | (ok["b_drawn"] != ok["b_mem"]))
               & (ok["a_drawn"] != "") & (ok["b_drawn"] != "")]
    if not moved.empty:
        notes.append("Drawn where the pages were after the run, not where asked: " + ", ".join(sorted({
            f"{r.a_alloc} asked A {r.a_mem}, B {r.b_mem}: found A {r.a_drawn}, B {r.b_drawn}"
            for r in moved.itertuples()})) + ".")
    return ok[(ok["a_drawn"] != "") & (ok["b_drawn"] != "")], notes


def _entry_rank(topology: Mapping[str, Any], pu: str, entry: tuple[str, str]) -> tuple:
    mem, alloc = entry
    r = role(topology, pu, mem)
    digits = "".join(ch for ch in mem if ch.isdigit())
    return (ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER), int(digits or -1),
            ALLOC_ORDER.index(alloc) if alloc in ALLOC_ORDER else len(ALLOC_ORDER), alloc)


def _entry_labels(topology: Mapping[str, Any], pu: str, entries: list[tuple[str, str]]) -> list[str]:
    """``local HBM (numa4)``, with the allocator added where one memory has several."""
    several = {m for m, _ in entries if sum(1 for x, _ in entries if x == m) > 1}
    return [labelled(topology, pu, m) + (f", {a}" if m in several else "") for m, a in entries]


def _cell(value: float) -> str:
    """A cell's TFLOP/s in at most four characters (the cells are a fifth of an inch)."""
    if value >= 10:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}".lstrip("0")


@item("gemm_placement", "Fig. 15", "GEMM TFLOP/s by the memories of A and B, C in local HBM", "figure",
      ("gemm/cases",), PLACEMENT_COMMAND, order=15)
def gemm_placement(ctx: Context) -> Drawn:
    ok, found = gemm_cases(ctx)
    return faceted(ctx, "gemm_placement", _most_placed(ok), "no GEMM case finished with C in the GPU's memory; "
                   f"measured by `{PLACEMENT_COMMAND}`", lambda largest: _placement_grid(ctx, largest, found), found)


def _most_placed(ok: pd.DataFrame) -> pd.DataFrame:
    """Per data type the size with the most (A, B) placements, the largest of those: a size
    sweep in HBM alone (Fig. 16's run) must not hide the placement matrix at its own size."""
    if ok.empty:
        return ok
    pairs = ok.groupby(["host", "pu", "dtype", "n"])[["a_drawn", "a_alloc", "b_drawn", "b_alloc"]].apply(
        lambda g: len(g.drop_duplicates())).rename("pairs").reset_index()
    pairs = pairs.sort_values(["pairs", "n"]).groupby(["host", "pu", "dtype"]).tail(1)
    return ok.merge(pairs[["host", "pu", "dtype", "n"]], on=["host", "pu", "dtype", "n"])


def _placement_grid(ctx: Context, largest: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 15's heat maps and caption (``found``: gemm_cases' notes)."""
    notes = list(found)
    cells = largest.groupby(["host", "pu", "dtype", "a_drawn", "a_alloc", "b_drawn", "b_alloc"])[
        "median_TFLOPs"].median()
    keys = sorted({(h, p, d) for h, p, d, *_ in cells.index},
                  key=lambda k: (list(ctx.topologies).index(k[0]) if k[0] in ctx.topologies else 0, k[1],
                                 _dtype_rank(k[2])))
    several = len({(h, p) for h, p, _ in keys}) > 1
    entries_of = {}
    for host, pu, dtype in keys:
        part = cells.loc[host, pu, dtype]
        topology = ctx.topologies.get(host, {})
        entries = {(m, a) for m, a, *_ in part.index} | {(m, a) for _, _, m, a in part.index}
        entries_of[host, pu, dtype] = sorted(entries, key=lambda e: _entry_rank(topology, pu, e))
    most = max(len(e) for e in entries_of.values())
    values = cells.to_numpy(float)
    norm = LogNorm(values.min(), max(values.max(), values.min() * 1.01))
    images = []
    sizes = {key: int(largest.loc[(largest["host"] == key[0]) & (largest["pu"] == key[1])
                                  & (largest["dtype"] == key[2]), "n"].max()) for key in keys}

    def draw(ax: Axes, key: tuple[str, str, str]) -> None:
        host, pu, dtype = key
        topology = ctx.topologies.get(host, {})
        entries = entries_of[key]
        grid = np.full((len(entries), len(entries)), np.nan)
        for (am, aa, bm, ba), value in cells.loc[key].items():
            grid[entries.index((am, aa)), entries.index((bm, ba))] = value
        # Rows named by role; columns, the same entries in the same order, by name alone.
        labels = _entry_labels(topology, pu, entries)
        short = [m + (f" {a}" if "," in label else "") for (m, a), label in zip(entries, labels)]
        mark_cells(ax, dtype, grid, labels, short, ("A_in", "B_in", "TFLOPs"))
        images.append(heat_map(ax, grid, norm, _cell, labels, short, "A in", "B in", aspect="auto"))

    def title(key: tuple[str, str, str]) -> str:
        n = sizes[key]
        return f"{key[0]} {key[1]} " * several + f"{key[2]}, n = {n}\n({_matrix(key[2], n) / 1e9:.2g} GB/matrix)"

    def finish(fig, axes: list[Axes]) -> None:
        colour_bar(fig, images[-1], axes, "TFLOP/s (median)")

    caption = ["C = A x B, square n x n, cuBLAS; C always in the multiplying GPU's own memory; median TFLOP/s "
               "(2n^3 / time) over repetitions and runs, per data type at the size with the most placements "
               "(the largest of those); memories "
               "named by their role seen from that GPU; grey: the pair was not measured."]
    matrices = [_matrix(key[2], n) for key, n in sizes.items()]
    if min(matrices) < 0.9 * PAPER_MATRIX_BYTES:
        notes.append(f"The paper's matrices are 4 GB each; the largest here are "
                     f"{', '.join(sorted({f'{s / 1e9:.2g} GB' for s in matrices}))}: `{PLACEMENT_COMMAND}`.")
    why = ""
    if all(am == bm and aa == ba for _, _, _, am, aa, bm, ba in cells.index):
        why = ("A and B placed apart (the off-diagonal cells): these files have A and B always together; "
               f"`{PLACEMENT_COMMAND}` places them independently")
    # Rows of 7 pt text, under them the columns' names rotated (their longest sets the height).
    longest = max(len(m + a) + 1 for entries in entries_of.values() for m, a in entries)
    return Grid(keys, draw, title, PAGE_IN, 0.25 * most + 0.06 * longest + 0.8, max_cols=2, finish=finish,
                legend=False, caption=lambda: [*caption, *notes], why_not=why, processor=lambda key: (key[0], key[1]))


def _matrix(dtype: str, n: int) -> int:
    """The bytes of one n x n matrix of ``dtype``."""
    return n * n * ELEMENT_BYTES.get(dtype, 4)


def _fixed_placement(topology: Mapping[str, Any], pu: str, part: pd.DataFrame) -> tuple[str, str] | None:
    """The placement Fig. 16 holds fixed: A and B both in the GPU's own memory (device
    memory or local HBM), the one measured at the most sizes, device memory first."""
    mine = part[(part["a_drawn"] == part["b_drawn"]) & (part["a_alloc"] == part["b_alloc"])]
    own = mine[[role(topology, pu, m) in (DEVICE_MEMORY, f"local {HBM}") for m in mine["a_drawn"]]]
    if own.empty:
        return None
    counts = own.groupby(["a_drawn", "a_alloc"])["n"].nunique()
    best = sorted(counts.index, key=lambda e: (-counts[e], e[1] != "device", _entry_rank(topology, pu, e)))
    return best[0]


@item("gemm_scaling", "Fig. 16", "GEMM TFLOP/s against matrix size: per data type, per placement", "figure",
      ("gemm/cases",), SCALING_COMMAND, order=16)
def gemm_scaling(ctx: Context) -> Drawn:
    ok, found = gemm_cases(ctx)
    together = ok[(ok["a_drawn"] == ok["b_drawn"]) & (ok["a_alloc"] == ok["b_alloc"])] if not ok.empty else ok
    why_empty = ("no GEMM case finished with C in the GPU's memory" if ok.empty else
                 "no GEMM case with A and B in one memory") + f"; measured by `{SCALING_COMMAND}`"
    return faceted(ctx, "gemm_scaling", together, why_empty, lambda together: _scaling_grid(ctx, ok, together, found),
                   found)


def _scaling_grid(ctx: Context, ok: pd.DataFrame, together: pd.DataFrame, found: list[str]) -> Grid:
    """Fig. 16's panels and caption (``ok``: every case, whose sizes are the ticks;
    ``found``: gemm_cases' notes)."""
    lines = together.groupby(["host", "pu", "dtype", "a_drawn", "a_alloc", "n"])["median_TFLOPs"].median()
    groups = list(dict.fromkeys((h, p) for h, p, *_ in lines.index))
    several = len(groups) > 1
    layout: list[tuple[str, str, str]] = []  # (host, pu, "" for the fixed placement, else a dtype)
    fixed = {}
    for host, pu in groups:
        topology = ctx.topologies.get(host, {})
        place = _fixed_placement(topology, pu, together[(together["host"] == host) & (together["pu"] == pu)])
        if place is not None:
            fixed[host, pu] = place
            layout.append((host, pu, ""))
        dtypes = sorted({d for h, p, d, *_ in lines.index if (h, p) == (host, pu)}, key=_dtype_rank)
        layout += [(host, pu, d) for d in dtypes]
    # One style per label over the figure: the data types first, then the placements.
    labels: list[str] = [d for d in DTYPES]
    single_size = []
    names_of = {}
    for host, pu in groups:
        topology = ctx.topologies.get(host, {})
        entries = sorted({(m, a) for h, p, _, m, a, _ in lines.index if (h, p) == (host, pu)},
                         key=lambda e: _entry_rank(topology, pu, e))
        names_of[host, pu] = dict(zip(entries, _entry_labels(topology, pu, entries)))

    def plot(ax, line: pd.Series, label: str) -> None:
        if label not in labels:
            labels.append(label)
        ax.plot(line.index.to_numpy(float), line.to_numpy(float), label=label, **series(labels.index(label)))
        mark(ax, label, n=line.index.to_numpy(int), TFLOPs=line.to_numpy(float))

    def draw(ax: Axes, panel: tuple[str, str, str]) -> None:
        host, pu, dtype = panel
        names = names_of[host, pu]
        if not dtype:
            mem, alloc = fixed[host, pu]
            for d in sorted({d for h, p, d, m, a, _ in lines.index if (h, p, m, a) == (host, pu, mem, alloc)},
                            key=_dtype_rank):
                plot(ax, lines.loc[host, pu, d, mem, alloc], d)
        else:
            entries = [e for e in names if (host, pu, dtype, *e) in lines.index.droplevel("n")]
            for mem, alloc in entries:
                line = lines.loc[host, pu, dtype, mem, alloc]
                if len(line) == 1:
                    single_size.append(f"{pu} {dtype} {names[mem, alloc]}")
                plot(ax, line, f"A, B in {names[mem, alloc]}")
        ticks = sorted({int(n) for n in ok["n"]})
        log_log(ax, ticks, [f"{t / 1024:.3g}k" if t >= 1024 else str(t) for t in ticks], "n (m = n = k)",
                "TFLOP/s (median)", rotation=90)

    def title(panel: tuple[str, str, str]) -> str:
        host, pu, dtype = panel
        what = f"A, B in {names_of[host, pu][fixed[host, pu]]}" if not dtype else dtype
        return f"{host} {pu}: " * several + what

    caption = ["First panel of a GPU: A and B fixed in its own memory, one line per data type; the others: one "
               "data type, one line per placement of A and B together (pairs placed apart are in Fig. 15). C "
               "always in the GPU's own memory; median TFLOP/s over repetitions and runs; log-log axes."]
    why = "" if fixed else ("the fixed placement (A and B in the GPU's own memory) did not run; "
                            f"`{SCALING_COMMAND}` measures it")
    return Grid(layout, draw, title, PAGE_IN, 2.0, why_not=why, caption=lambda: [
        *caption, *found, *(["One size only (a point): " + "; ".join(single_size) + "."] if single_size else [])])


def _hopper_132(topology: Mapping[str, Any], pu: str) -> str:
    """The GPU's model where it is a Hopper of 132 SMs (H100 SXM, GH200, H200: Table III's
    peaks hold), else ''."""
    proc = next((p for p in topology.get("processors", []) if p.get("name") == pu), {})
    if str(proc.get("cc")) == "9.0" and int(proc.get("sm_count") or 0) == 132:
        return str(proc.get("model", pu))
    return ""


@item("gemm_peaks", "Table III", "GEMM peaks: the H100 SXM's published TFLOP/s beside this run's best", "table",
      ("gemm/cases",), SCALING_COMMAND, order=14.5)
def gemm_peaks(ctx: Context) -> Drawn:
    ok, notes = gemm_cases(ctx)
    paper = {p.key.split(".")[1]: p for p in of("table3.") if not p.key.startswith("table3.datasheet.")}
    sheet = {p.key.split(".")[2]: p for p in of("table3.datasheet.")}
    datasheet = {"fp16": f"{sheet['fp16_sparse'].value:g} with sparsity ({sheet['fp16_sparse'].value / 2:g} dense)",
                 "tf32": f"{sheet['tf32_sparse'].value:g} with sparsity ({sheet['tf32_sparse'].value / 2:g} dense)",
                 "fp32": f"{sheet['fp32'].value:g}",
                 "fp64": f"{sheet['fp64_tensor'].value:g} tensor core ({sheet['fp64'].value:g} without)"}
    rows, comparisons = [], []
    groups = list(dict.fromkeys(zip(ok["host"], ok["pu"]))) if not ok.empty else []
    several = len(groups) > 1
    for host, pu in groups or [("", "")]:
        topology = ctx.topologies.get(host, {})
        mine = ok[(ok["host"] == host) & (ok["pu"] == pu)] if host else ok
        model = _hopper_132(topology, pu) if host else ""
        for dtype in DTYPES:
            part = mine[mine["dtype"] == dtype] if not mine.empty else mine
            row = {"host": host, "data type": dtype.upper(), "tensor core": TENSOR[dtype],
                   "paper, Table III (TFLOP/s)": f"{paper[dtype].value:g}",
                   "H100 SXM datasheet (TFLOP/s)": datasheet[dtype],
                   "mempath's peak model (TFLOP/s)": "", "this run's best (TFLOP/s)": "not measured",
                   "best case": "", "run / paper": ""}
            if not part.empty:
                per_case = part.groupby(["n", "a_drawn", "a_alloc", "b_drawn", "b_alloc"])["median_TFLOPs"].median()
                (n, am, aa, bm, ba), best = per_case.idxmax(), float(per_case.max())
                where = labelled(topology, pu, am) + (f", {aa}" if aa != "device" else "")
                where_b = labelled(topology, pu, bm) + (f", {ba}" if ba != "device" else "")
                case = f"{pu}, n = {int(n)}, A in {where}" + (f", B in {where_b}" if (am, aa) != (bm, ba) else
                                                               ", B too")
                peak = part["peak_TFLOPs"].astype(float)
                row.update({"mempath's peak model (TFLOP/s)": num(peak.median(), 0) if peak.notna().any() else "",
                            "this run's best (TFLOP/s)": num(best, 1), "best case": case})
                held = hold("gemm_peaks", paper[dtype], best, f"{host} " * several + f"{model or pu}: best "
                            f"{dtype.upper()} GEMM, median TFLOP/s ({case})",
                            run_facts(topology, pu, definition=gemm_definition(dtype)))
                comparisons.append(held)
                # The ratio only for the same quantity, as the comparison table (published.hold)
                row["run / paper"] = (f"{best / paper[dtype].value:.2f}" if held.comparable
                                      else "context: " + "; ".join(held.differs))
            rows.append(row)
    frame = pd.DataFrame(rows, dtype=object)
    if not several:
        frame = frame.drop(columns="host")
    csv = ctx.out / "gemm_peaks.csv"
    outfiles.write_csv(frame, csv)
    notes = [f"Paper: Table III, the H100 SXM's advertised dense peaks; datasheet: {sheet['fp32'].source}; mempath's peak model: SMs x the maximum "
             "SM clock x operations per SM and clock (the gemm table's peak_TFLOPs). This run's best: the "
             "highest median over every size and placement with C in the GPU's memory.",
             "Run / paper only where the run's GPU is the class Table III gives (H100 SXM, GH200); for others "
             "the row says what differs (context, no ratio)."] + notes
    missing = [d for d in DTYPES if ok.empty or (ok["dtype"] == d).sum() == 0]
    why = (f"{', '.join(d.upper() for d in missing)} not measured: `{SCALING_COMMAND}`" if missing else "")
    return Drawn(files=[csv], table=markdown(frame), notes=notes, comparisons=comparisons,
                 runs=ctx.runs_of(ok), why_not=why)
