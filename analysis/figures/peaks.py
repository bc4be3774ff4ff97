"""Fig. 3 as a table: the theoretical peak of every processor x memory path of the node,
the link or memory that limits it and the source of that figure; assumptions marked, as
every "% of peak" built on them is."""
from __future__ import annotations

import pandas as pd

from .. import outfiles
from ..model.peaks import ASSUMED_MARK, ASSUMED_NOTE
from ..model.roles import labelled
from ..render.tables import markdown, num
from ..render.items import Context, Drawn, item


@item("theoretical_peaks", "Fig. 3", "Theoretical peak of every path, with its source", "table",
      ("bw/cases", "chase/cases", "memcpy/cases", "gemm/cases", "um/cases", "stream/cases"),
      "mempath topo (any run carries the topology)", order=3)
def theoretical_peaks(ctx: Context) -> Drawn:
    rows = []
    for host, topology in ctx.topologies.items():
        model = ctx.models[host]
        for path in topology.get("paths", []):
            peak = model.path(path["pu"], path["mem"])
            parts = " + ".join(f"{c.name} {num(c.gbps, 0)}" if c.gbps else f"{c.name} unknown"
                               for c in model.capacities(path["pu"], path["mem"]))
            rows.append({"host": host, "processor": path["pu"],
                         "memory": labelled(topology, path["pu"], path["mem"]),
                         "via": path["via"],
                         "peak GB/s": (num(peak.gbps, 0) + (f" {ASSUMED_MARK}" if peak.assumed else ""))
                         if peak.gbps else "unknown",
                         "limited by": peak.limit or "", "capacities on the way (GB/s)": parts,
                         "source": peak.citation or (peak.source or "no figure")})
    frame = pd.DataFrame(rows, dtype=object)
    if frame.empty:
        return Drawn(why_not="the runs' topologies list no path")
    if len(ctx.topologies) == 1:
        frame = frame.drop(columns="host")
    csv = ctx.out / "theoretical_peaks.csv"
    outfiles.write_csv(frame, csv)
    notes = ["Peak of a path = the slowest link or memory on its way, one direction, decimal GB/s "
             "(docs/analysis.md, \"Theoretical peaks\")."]
    if frame["peak GB/s"].astype(str).str.contains(ASSUMED_MARK).any():
        notes.append(ASSUMED_NOTE)
    return Drawn(files=[csv], table=markdown(frame), notes=notes, runs=[r.name for r in ctx.runs.runs])
