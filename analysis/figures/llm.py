"""Fig. 17: LLM decode tokens/s by where the weights are (Llama-2 7B and 13B, fp16, 100 new
tokens after an empty prompt, as the paper), PyTorch's default allocator as the baseline,
and beside each placement the bound that reading every weight once per token over that
path allows, at the GPU's read bandwidth of that memory as mempath measured it in the same
set of files (results/gpu_reads.py). Weights are drawn under the memory their pages were
found in."""
from __future__ import annotations

import numpy as np
import pandas as pd

from matplotlib.axes import Axes

from ..model.roles import labelled, role, role_rank
from ..render.style import PAGE_IN, series
from ..results.cases import drawn_under
from ..results.gpu_reads import llm_bounds, step_bytes
from ..render.items import Comparison, Context, Drawn, Grid, faceted, item
from .published import DEF_LLM_RUN, hold, of, run_facts

PAPER_MODELS = ("llama-2-7b", "llama-2-13b")
PAPER_DTYPE, PAPER_NEW_TOKENS = "fp16", 100
COMMAND = ("mempath llm --model llama-2-7b --dtype fp16 --prompt-tokens empty "
           "--new-tokens 100 --placement default,hbm,numa:numa4,host,host-remote,numa:numa12,peer "
           "(and --model llama-2-13b)")
PLACEMENT_ORDER = ("default", "hbm", "host", "host-remote", "peer")


def _is_default(row: pd.Series) -> bool:
    return row["placement"] == "default" or row.get("torch_allocator") == "caching" or row["weight_alloc"] == "pytorch"


def _label(topology: dict, pu: str, row: pd.Series) -> str:
    where = labelled(topology, pu, row["drawn"])
    if _is_default(row):
        return f"default allocator, {where}"
    return f"{where}, {row['weight_alloc']}"


def _rank(topology: dict, pu: str, row: pd.Series) -> tuple:
    name = str(row["placement"])
    return (0 if _is_default(row) else 1, role_rank(role(topology, pu, row["drawn"])),
            PLACEMENT_ORDER.index(name) if name in PLACEMENT_ORDER else len(PLACEMENT_ORDER), name)


def _cases(ctx: Context) -> tuple[pd.DataFrame, list[str], bool]:
    """The decode cases to draw with ``drawn`` and ``pu``; notes; whether they are the
    paper's (Llama-2 7B/13B fp16) or, where none of those ran, the models the runs have."""
    cases = ctx.table("llm/cases")
    if "way" in cases:  # an offload sweep's cases are the offload figure's (llm_offload.py)
        cases = cases[cases["way"].fillna("") == ""]
    ok = cases[(cases["status"] == "ok") & np.isfinite(cases["median_tokens_per_s"].astype(float))].copy()
    notes: list[str] = []
    if ok.empty:
        return ok, notes, False
    ok["pu"] = [f"gpu{int(g)}" for g in ok["gpu"]]
    # The PyTorch pool reports no NUMA node: its weights are where the allocator put them.
    ok["drawn"] = [drawn_under(ctx.topologies.get(h, {}), m, a, "" if p == "gpu pool" else p)[0]
                   for m, a, p, h in zip(ok["weight_mem"], ok["weight_alloc"], ok["weight_placement"], ok["host"])]
    lost = ok[ok["drawn"] == ""]
    if not lost.empty:
        notes.append("Not drawn, weights of unknown placement: " + ", ".join(sorted(set(lost["placement"]))) + ".")
    moved = ok[(ok["drawn"] != "") & (ok["drawn"] != ok["weight_mem"])]
    if not moved.empty:
        notes.append("Drawn where the weights' pages were, not where asked: " + ", ".join(sorted({
            f"{r.placement} asked {r.weight_mem}, found {r.drawn}" for r in moved.itertuples()})) + ".")
    ok = llm_bounds(ctx.runs, ok[ok["drawn"] != ""], "drawn")
    paper = ok[ok["model"].isin(PAPER_MODELS) & (ok["dtype"] == PAPER_DTYPE)]
    return (paper, notes, True) if not paper.empty else (ok, notes, False)


@item("llm_decode", "Fig. 17", "LLM decode tokens/s by placement of the weights, with the bandwidth bound",
      "figure", ("llm/cases",), COMMAND, order=17)
def llm_decode(ctx: Context) -> Drawn:
    ok, notes, paper_models = _cases(ctx)
    if ok.empty:
        return Drawn(why_not=f"no LLM decode case finished; measured by `{COMMAND}`", notes=notes)
    keys = ["host", "pu", "model", "dtype", "new_tokens", "prompt_tokens", "batch"]
    groups = list(dict.fromkeys(tuple(r) for r in ok[keys].itertuples(index=False)))
    groups.sort(key=lambda g: (PAPER_MODELS.index(g[2]) if g[2] in PAPER_MODELS else len(PAPER_MODELS), g))
    several_hosts = len({g[0] for g in groups}) > 1
    rows_of = {}
    for group in groups:
        part = ok[(ok[keys] == pd.Series(group, index=keys)).all(axis=1)]
        topology = ctx.topologies.get(group[0], {})
        part = part.assign(step_weights=[step_bytes(r) - max(float(getattr(r, "kv_read_bytes", -1) or -1), 0.0)
                                         for r in part.itertuples()],
                           step_kv=[max(float(getattr(r, "kv_read_bytes", -1) or -1), 0.0) for r in part.itertuples()])
        agg = (part.groupby(["placement", "weight_alloc", "drawn"], sort=False, as_index=False)
               .agg(tokens=("median_tokens_per_s", "median"), bound=("bound_tokens_per_s", "median"),
                    path=("bound_from", "first"), weights=("step_weights", "median"), kv=("step_kv", "median"),
                    **({"torch_allocator": ("torch_allocator", "first")} if "torch_allocator" in part else {})))
        agg = agg.assign(**{c: agg.get(c, "") for c in ("torch_allocator",)})
        rows_of[group] = sorted((r for _, r in agg.iterrows()), key=lambda r: _rank(topology, group[1], r))
    shown: list[list[str]] = [[]]  # the y labels of the panel before

    def draw(ax: Axes, group: tuple) -> None:
        host, pu = group[:2]
        rows = rows_of[group]
        y = np.arange(len(rows))[::-1]
        measured = [float(r["tokens"]) for r in rows]
        bound = [float(r["bound"]) for r in rows]
        ax.barh(y + 0.19, measured, height=0.36, label="measured (median)", **_bar(0))
        ax.barh(y - 0.19, np.nan_to_num(bound), height=0.36, label="bound: measured read GB/s / bytes a step reads",
                **_bar(1))
        top = max([*measured, *[b for b in bound if np.isfinite(b)]])
        for yi, m, b in zip(y, measured, bound):
            ax.text(m + 0.01 * top, yi + 0.19, f"{m:.3g}", va="center", fontsize=7)
            ax.text((b if np.isfinite(b) else 0) + 0.01 * top, yi - 0.19, f"{b:.3g}" if np.isfinite(b) else "no bound",
                    va="center", fontsize=7)
        labels = [_label(ctx.topologies.get(host, {}), pu, r) for r in rows]
        # Panels side by side name the same placements once, at the left: two columns of long
        # labels left the right panel's title past the page.
        ax.set_yticks(y, labels if ax.get_subplotspec().colspan.start == 0 or labels != shown[-1] else [])
        shown.append(labels)
        ax.set_xlim(0, top * 1.2)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.grid(True, axis="x")
        ax.set_xlabel("tokens/s (batch 1 decode)")

    def title(group: tuple) -> str:
        host, pu, model, dtype, new, prompt, batch = group
        return (f"{host}: " * several_hosts + f"{model} {dtype}, {int(new)} tokens"
                + (f", {int(prompt)}-token prompt" if int(prompt) > 1 else "")
                + (f", batch {int(batch)}" if int(batch) != 1 else ""))

    most = max(len(r) for r in rows_of.values())
    csv = pd.DataFrame(
        [{"host": g[0], "gpu": g[1], "model": g[2], "dtype": g[3], "placement": r["placement"],
          "weight_alloc": r["weight_alloc"], "weights_on": r["drawn"], "tokens_per_s": r["tokens"],
          "bound_tokens_per_s": r["bound"], "bound_from": r["path"], "step_weight_bytes": r["weights"],
          "step_kv_bytes": r["kv"]}
         for g in groups for r in rows_of[g]])
    notes = ["Decode after an empty prompt (the BOS token alone) unless a panel names its prompt. "
             "Tokens/s: new tokens after the first over the decode time (CUDA events around the decode steps), "
             "median over repetitions and runs. Bound: each decode step reads the weights once and the KV cache "
             "of the positions before it, so tokens/s <= batch x the GPU's read GB/s of the weights' memory / "
             "those bytes (the weights a step reads: every matrix but an untied embedding table, of which a step "
             "reads one row; the KV cache averaged over the timed steps; both in llm_decode.csv; files before "
             "issue 39 count every weight byte and no KV cache), that GB/s measured by "
             "mempath in these same files (a GPU kernel's read of the memory, else a copy into the GPU). "
             "Weights are random values of the model's shapes and dtype (no checkpoint is loaded), made once on "
             "the decoding GPU and copied into the memory named (built in place there before issue 39), named "
             "by the memory their pages were found in, seen from the decoding GPU; everything else (KV cache, "
             "activations) in the GPU's own memory."] + notes
    unbound = sorted({f"{r['placement']} ({r['drawn']})" for rows in rows_of.values() for r in rows if not r["path"]})
    if unbound:
        notes.append("No bound drawn for " + ", ".join(unbound) + ": these files hold no mempath read of that "
                     "memory by the GPU (the paper set's bandwidth steps measure it: MempathPaperBandwidthGpu).")
    why = []
    if not paper_models:
        instead = sorted({f"{g[2]} {g[3]}" for g in groups})
        why.append(f"the paper's Llama-2 7B and 13B in fp16 did not run (shown instead: {', '.join(instead)}); "
                   f"`{COMMAND}`")
    else:
        absent = [m for m in PAPER_MODELS if m not in set(ok["model"])]
        if absent:
            why.append(f"{', '.join(absent)} did not run: `{COMMAND}`")
        other_tokens = sorted({int(g[4]) for g in groups} - {PAPER_NEW_TOKENS})
        if other_tokens:
            notes.append(f"The paper generates {PAPER_NEW_TOKENS} tokens; these runs: "
                         f"{', '.join(str(t) for t in sorted({int(g[4]) for g in groups}))}.")
    cases = ctx.table("llm/cases")
    failed = cases[cases["model"].isin({g[2] for g in groups}) & (cases["status"] != "ok")].fillna({"reason": ""})
    if not failed.empty:
        notes.append("Not measured: " + "; ".join(dict.fromkeys(
            f"{r.model} {r.placement} ({r.status}: {r.reason or 'no reason given'})" for r in failed.itertuples())) + ".")
    if not any(_is_default(r) for rows in rows_of.values() for r in rows):
        why.append("the default-allocator baseline (placement default) did not run")
    return faceted(ctx, "llm_decode", ok, "", lambda _: Grid(groups, draw, title, PAGE_IN, 0.7 + 0.28 * most, max_cols=2),
                   notes=notes, csv=(csv, list(csv.columns)), why_not="; ".join(why),
                   comparisons=_peak_comparisons(ctx))


def _bar(i: int) -> dict[str, object]:
    return {"color": series(i)["color"], "hatch": ("", "//")[i], "edgecolor": "black", "linewidth": 0.4}


def _peak_comparisons(ctx: Context) -> list[Comparison]:
    """The paper's peak memory of small and large allocations against the run's, for the
    Llama-2 models decoded through mempath's allocator (the paper's own allocator's figures)."""
    cases = ctx.table("llm/cases")
    if cases.empty or "peak_large_bytes" not in cases:
        return []
    ok = cases[(cases["status"] == "ok") & (cases["dtype"] == PAPER_DTYPE)]
    if "torch_allocator" in ok:
        # mempath's own decode: through its allocator in PyTorch before issue 48, without PyTorch since
        ok = ok[ok["torch_allocator"].fillna("").isin(["pluggable", ""])]
    out = []
    for model in PAPER_MODELS:
        mine = ok[ok["model"] == model]
        for which, scale in (("small", 1e6), ("large", 1e9)):
            column = f"peak_{which}_bytes"
            values = mine[column].astype(float) if column in mine else pd.Series(dtype=float)
            values = values[values >= 0]
            published = of(f"fig17.{model}.peak_{which}")
            if values.empty or not published:
                continue
            p = published[0]
            host, gpu = str(mine["host"].iloc[0]), f"gpu{int(mine['gpu'].iloc[0])}"
            out.append(hold("llm_decode", p, float(values.median()) / scale,
                            f"{p.quantity} (mempath's allocator, median over placements)",
                            run_facts(ctx.topologies.get(host, {}), gpu, definition=DEF_LLM_RUN)))
    return out
