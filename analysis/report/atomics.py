"""Report section for `mempath atomics`: each GPU's fetch-and-add throughput on counters
in each memory, one row per case of every run, with the GPU's host-native-atomics
attribute beside it: without it (PCIe GPUs) atomics on host memory are not atomic with
respect to the CPU's, so a host-memory figure is read beside that column, not alone.
"""
from __future__ import annotations

import pandas as pd

from ..render.items import Context, item
from .sections import Part
from ..render.tables import markdown, num

NATIVE = {1: "yes", 0: "no"}


def _status(row) -> str:
    return row.status + (f": {row.reason}" if row.reason else "")


def lines(cases: pd.DataFrame) -> list[str]:
    """The table of every case (`run` and `host` columns where there are several)."""
    if cases.empty:
        return []
    many_runs, many_hosts = cases["run"].nunique() > 1, cases["host"].nunique() > 1
    header = (["run"] * many_runs + ["host"] * many_hosts
              + ["GPU", "memory", "allocator", "via", "scope", "counters", "median Mop/s",
                 "host-native atomics", "verified", "status"])
    rows = [[r.run] * many_runs + [r.host] * many_hosts
            + [r.pu, r.mem, r.alloc, r.via, r.scope, int(r.counters), num(r.median_Mops, 2),
               NATIVE.get(int(r.host_native_atomics), ""), "yes" if int(r.verified) else "no", _status(r)]
            for r in cases.itertuples()]
    return markdown(header, rows, right={header.index("counters"), header.index("median Mop/s")})


@item("atomics", "", "Atomic throughput", "section", ("atomics/cases",), "", order=35)
def _section(ctx: Context) -> Part:
    cases = ctx.runs.table("atomics/cases")
    part = Part(lines=lines(cases))
    if not cases.empty and (cases["host_native_atomics"] == 0).any():
        part.lines += ["_Host-native atomics \"no\" (CUDA's hostNativeAtomicSupported = 0, PCIe GPUs): that GPU's "
                       "atomics on host memory are not atomic with respect to the CPU's, unlike over NVLink-C2C._", ""]
    return part
