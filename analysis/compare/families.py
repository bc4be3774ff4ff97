"""What compare compares: each family of src/core/families.def (its words, metric, unit,
direction and the table holding the metric) with what only compare needs: the sample
columns that split a case into parts and the outcome columns that are configuration in
that family. runs.py reads this table only."""
from __future__ import annotations

from dataclasses import dataclass

from ..results import families as table


@dataclass(frozen=True)
class Family:
    what: str                   # the family in words, for the output
    metric: str                 # the compared column
    unit: str
    higher_is_better: bool
    #: Where the metric's values are: ``samples`` (one row a repetition, compared with the
    #: Mann-Whitney test) or ``cases`` (one figure a case: the change alone decides).
    table: str = "samples"
    sample_keys: tuple[str, ...] = ()   # sample columns that split one case into parts
    identity: tuple[str, ...] = ()      # OUTCOMES names that are configuration in this family


_SAMPLE_KEYS = {"memcpy": ("part", "gpu"), "um": ("phase", "state", "preceded_by", "iterations")}
# The placement of an LLM case or a collective is the name asked (hbm, host, peer), not
# where pages were found: part of what the case is.
_IDENTITY = {"llm": ("placement",), "nccl": ("placement",)}

#: Every family that mempath (and llm_placement.py) writes, with its headline figure: the
#: metric the fleet, the report and the ReFrame checks judge it by (docs/schema.md).
FAMILIES: dict[str, Family] = {
    name: Family(f.what, f.metric, f.unit, f.higher_is_better, f.metric_table,
                 _SAMPLE_KEYS.get(name, ()), _IDENTITY.get(name, ()))
    for name, f in table.FAMILIES.items()}

#: Case columns that are outcomes of a run, not its configuration (float columns are
#: outcomes too, whatever their name): where pages were, whether data checked, what the
#: run chose or found. A case is identified by its other columns.
OUTCOMES = frozenset({
    "case_id", "status", "reason", "reps", "verified", "run", "host",
    "placement", "dst_placement", "b_placement", "weight_placement", "first_placement", "placed",
    "best_threads", "saturation_bytes", "calls_per_rep", "blocks", "threads_launched",
    "noise_threads", "noise_bytes", "host_native_atomics", "cublas_version",
    "path_source", "path_case", "decode_mode", "decode_fallback", "peak_small_bytes",
    "peak_large_bytes",
})

#: Configuration columns computed from other identity columns or from the node's topology
#: (docs/schema.md): they tell no two cases apart that the others do not, so they are not
#: read (each column read costs about 0.1 ms a file, and a fleet is 10,000 files a side).
DERIVED = frozenset({
    "pu_kind",                    # from pu
    "bytes",                      # size x passes (x 2 for a copy, x streams for a transfer)
    "via", "b_via",               # the path class: pu, mem and the topology
    "gpus", "all_gpus", "gpu_label",  # memcpy: from gpu and dst_gpu (-1: every GPU)
    "accesses",                   # chase: from size and line
    "elements",                   # stream: array_bytes / 8
    "operand_bytes", "flops",     # gemm: from m, n, k and dtype
    "ops",                        # atomics: threads x ops_per_thread
    "node_bytes", "rank_bytes",   # mpi_bw, nccl: size x pairs, size / ranks
})

#: Identity columns added after the first files were written, with the value docs/schema.md
#: gives older files (a column name: that column's value). An added column without one here
#: is matched only where both sides have it (runs.identity_columns).
DEFAULTS: dict[tuple[str, str], object] = {
    ("memcpy", "dst_gpu"): -1,          # GPU<->GPU copies came later: older ones are host transfers
    ("memcpy", "chunk_bytes"): -1,      # staged copies came later
    ("gemm", "c_alloc"): "device",
    ("mpi_bw", "split"): 0,
}
