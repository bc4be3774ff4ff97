"""Beyond the paper, the vLLM-on-GH200 thesis's question (issue 48): what each GB of weights
kept in host memory costs a decode, and which way of reaching it is best. Decode time per
token against the GB offloaded (the last layers, as vLLM's --cpu-offload-gb moves them), one
line per way (`mempath llm --offload`): read in place, streamed ahead into a ring of the GPU's
memory, vLLM's way (PyTorch's kernels reading them on demand); beside each of mempath's ways
its bound from the same case's measured paths, dashed. The all-HBM point is 0 GB."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ..model.roles import labelled
from ..render.items import Context, Drawn, Grid, faceted, item, mark
from ..render.style import COLUMN_IN, PAGE_IN, series

COMMAND = "mempath llm --model llama-2-7b --dtype fp16 --prompt-tokens empty --offload sweep"
WAYS = ("in-place", "streamed", "vllm")
WORDS = {"in-place": "read in place", "streamed": "streamed into a ring", "vllm": "vLLM's way (PyTorch, on demand)"}
PANEL = ["host", "gpu", "model", "dtype", "offload_to"]


def _points(ctx: Context) -> pd.DataFrame:
    cases = ctx.table("llm/cases")
    if cases.empty or "way" not in cases:
        return cases.iloc[0:0]
    ok = cases[(cases["status"] == "ok") & cases["way"].isin(WAYS)].copy()
    ok = ok[np.isfinite(ok["median_tokens_per_s"].astype(float))]
    if ok.empty:
        return ok
    # the memory the offloaded layers went to names a panel (0 GB: none went, any panel's)
    ok["offload_to"] = [f"{a}:{m}" if m else "" for a, m in zip(ok["offload_alloc"].fillna(""), ok["offload_mem"].fillna(""))]
    to = ok[ok["offload_to"] != ""].groupby(PANEL[:4])["offload_to"].agg(lambda s: s.mode().iloc[0])
    ok["offload_to"] = [t or to.get(tuple(k), "") for t, k in zip(ok["offload_to"], ok[PANEL[:4]].itertuples(index=False))]
    ok["gb"] = ok["offload_bytes"].astype(float) / 1e9
    ok["ms"] = 1e3 / ok["median_tokens_per_s"].astype(float)
    ok["bound_ms"] = 1e3 / ok["bound_tokens_per_s"].astype(float)
    return ok


@item("llm_offload", "Beyond the paper", "LLM decode with a share of the weights in host memory: time per token by way, against "
      "each way's bound", "figure", ("llm/cases",), COMMAND, order=17.5)
def llm_offload(ctx: Context) -> Drawn:
    points = _points(ctx)
    if points.empty:
        return Drawn(why_not=f"no offload case finished (`{COMMAND}`)")
    panels = list(dict.fromkeys(tuple(r) for r in points[PANEL].itertuples(index=False)))
    medians = (points.groupby([*PANEL, "way", "gb"], as_index=False)
               .agg(ms=("ms", "median"), bound_ms=("bound_ms", "median"), hbm=("hbm_GBps", "median"),
                    offload=("offload_GBps", "median"), h2d=("h2d_GBps", "median"), ring=("ring_slots", "max")))

    def draw(ax: Axes, panel: tuple) -> None:
        mine = medians[(medians[PANEL] == pd.Series(panel, index=PANEL)).all(axis=1)]
        for k, way in enumerate(WAYS):
            line = mine[mine["way"] == way].sort_values("gb")
            if line.empty:
                continue
            look = series(k)
            ax.plot(line["gb"], line["ms"], label=f"{WORDS[way]}, measured", color=look["color"],
                    marker=look["marker"], linestyle="-")
            mark(ax, f"{way} measured", offload_GB=line["gb"].to_list(), ms_per_token=line["ms"].to_list())
            if way != "vllm":  # vLLM's way reads what in place reads: the same bound
                ax.plot(line["gb"], line["bound_ms"], label=f"{WORDS[way]}, bound", color=look["color"],
                        linestyle="--", linewidth=0.8)
                mark(ax, f"{way} bound", offload_GB=line["gb"].to_list(), ms_per_token=line["bound_ms"].to_list())
        ax.set_xlabel("weights in host memory (GB)")
        ax.set_ylabel("decode time per token (ms)")
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.grid(True)

    def title(panel: tuple) -> str:
        host, gpu, model, dtype, to = panel
        return f"{host} gpu{int(gpu)}: {model} {dtype}" + (f", layers in {to}" if to else "")

    notes = ["Time per token: the decode's median tokens/s inverted (batch 1, CUDA events around the timed "
             "steps); the offloaded weights are the last layers, as vLLM's --cpu-offload-gb moves them. Bounds "
             "(dashed) from the same case's measured paths: in place, each memory's bytes over the GPU's read of "
             "it; streamed, the resident part and the copies of the offloaded layers overlapped through the ring "
             "(a copy waits for its slot's layer to be read), the last layer read after its copy; vLLM's way reads "
             "what in place reads. Left out of every bound: the kernels' own time between reads, and the "
             "attention's latency-bound reads of the KV cache beyond its bytes."]
    for panel in panels:
        mine = medians[(medians[PANEL] == pd.Series(panel, index=PANEL)).all(axis=1) & (medians["gb"] > 0)]
        if not mine.empty:
            host, gpu, mem = panel[0], f"gpu{int(panel[1])}", panel[4].partition(":")[2]
            paths = ctx.topologies.get(host, {}).get("paths", [])
            via = next((str(p.get("via")) for p in paths if p.get("pu") == gpu and p.get("mem") == mem), "")
            what = labelled(ctx.topologies.get(host, {}), gpu, mem) if mem else "host memory"
            notes.append(f"{title(panel)}: the offloaded bytes in {what}, {panel[4].partition(':')[0] or 'host'} "
                         f"memory over {via or 'its path'}, at "
                         f"{mine['offload'].median():,.0f} GB/s read in place and {mine['h2d'].median():,.0f} GB/s "
                         f"by the copy engines; the GPU's own memory at {mine['hbm'].median():,.0f} GB/s"
                         + (f"; rings of up to {int(mine['ring'].max())} layers." if mine['ring'].max() > 0 else "."))
    csv = medians.rename(columns={"gb": "offload_GB", "ms": "ms_per_token", "bound_ms": "bound_ms_per_token",
                                  "hbm": "hbm_GBps", "offload": "offload_GBps", "h2d": "h2d_GBps",
                                  "ring": "ring_slots"})
    return faceted(ctx, "llm_offload", points, "", lambda _: Grid(panels, draw, title,
                                                                    PAGE_IN if len(panels) > 1 else COLUMN_IN, 1.9,
                                                                    max_cols=2),
                   notes=notes, csv=(csv, list(csv.columns)))
