"""What compare compares: one row per family of docs/schema.md, and nothing per family
elsewhere (runs.py reads this table only)."""
from __future__ import annotations

from dataclasses import dataclass


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


#: Every family that mempath (and llm_placement.py) writes, with its headline figure: the
#: metric the fleet, the report and the ReFrame checks judge it by (docs/schema.md).
FAMILIES: dict[str, Family] = {
    "bw": Family("bandwidth", "bandwidth_GBps", "GB/s", True),
    "memcpy": Family("transfers", "bandwidth_GBps", "GB/s", True, sample_keys=("part", "gpu")),
    "um": Family("unified memory", "bandwidth_GBps", "GB/s", True,
                 sample_keys=("phase", "state", "preceded_by", "iterations")),
    "allocmatrix": Family("allocator matrix", "bandwidth_GBps", "GB/s", True),
    "chase": Family("latency", "ns_per_access", "ns", False),
    "pingpong": Family("ping-pong", "rtt_ns", "ns", False),
    "atomics": Family("atomics", "Mops", "Mop/s", True),
    "stream": Family("STREAM", "bandwidth_GBps", "GB/s", True),
    "gemm": Family("GEMM", "tflops", "TFLOP/s", True),
    # The placement of an LLM case or a collective is the name asked (hbm, host, peer),
    # not where pages were found: part of what the case is.
    "llm": Family("LLM decode", "tokens_per_s", "tokens/s", True, identity=("placement",)),
    "mpi_bw": Family("MPI", "bandwidth_GBps", "GB/s", True),
    # nccl writes no samples: one bus bandwidth a case, over --iters collectives.
    "nccl": Family("NCCL", "busbw_GBps", "GB/s", True, table="cases", identity=("placement",)),
}

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
