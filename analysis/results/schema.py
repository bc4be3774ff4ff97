"""The columns every reader needs in each family's cases table (docs/schema.md):
``load_runs(paths, REQUIRED)`` names a file that lacks one in one line. Columns added by
later schema versions are not here: files written before them stay readable."""
from __future__ import annotations

from .cases import CASE_COLUMNS

#: Every column of each family's cases table (docs/schema.md) must be there, where a file
#: holds that table: a file that lacks one is named in one line, not a traceback.
REQUIRED = {
    "bw/cases": CASE_COLUMNS,
    "allocmatrix/cases": ('case_id', 'dst_alloc', 'dst_mem', 'dst_placement', 'max_GBps',
        'median_GBps', 'min_GBps', 'placement', 'reason', 'reps', 'size_bytes', 'src_alloc',
        'src_mem', 'status', 'verified'),
    "chase/cases": ('accesses', 'alloc', 'case_id', 'cpu', 'huge_page_fraction', 'huge_pages',
        'line_bytes', 'locality_bytes', 'median_cycles', 'median_ns', 'mem', 'min_ns', 'pattern',
        'placement', 'pu', 'reason', 'reps', 'size_bytes', 'status', 'verified', 'via'),
    "gemm/cases": ('a_alloc', 'a_mem', 'b_alloc', 'b_mem', 'best_TFLOPs', 'c_mem', 'case_id',
        'cublas_version', 'dtype', 'flops', 'fraction_of_peak', 'gpu', 'k', 'm', 'median_TFLOPs',
        'min_TFLOPs', 'n', 'operand_bytes', 'peak_TFLOPs', 'placement', 'reason', 'reps', 'status',
        'verified', 'via'),
    "llm/cases": ('batch', 'best_tokens_per_s', 'bound_tokens_per_s', 'case_id', 'cuda_graph',
        'dtype', 'fraction_of_bound', 'gpu', 'median_tokens_per_s', 'model', 'new_tokens',
        'params', 'path_GBps', 'path_source', 'placement', 'prompt_tokens', 'reason', 'reps',
        'status', 'verified', 'weight_alloc', 'weight_bytes', 'weight_mem', 'weight_placement'),
    "pingpong/cases": ('a', 'a_cpu', 'alloc', 'b', 'b_cpu', 'case_id', 'flag_bytes', 'max_ns',
        'mean_ns', 'median_ns', 'mem', 'min_ns', 'p05_ns', 'p95_ns', 'p99_ns', 'placement',
        'reason', 'round_trips', 'status', 'verified'),
    "stream/cases": ('alloc', 'array_bytes', 'best_GBps', 'best_threads', 'bytes', 'case_id',
        'elements', 'kernel', 'max_GBps', 'median_GBps', 'mem', 'min_GBps', 'placement', 'pu',
        'pu_kind', 'reason', 'reps', 'status', 'sweep', 'threads', 'verified', 'via'),
    "um/cases": ('alloc', 'case_id', 'experiment', 'gpu', 'mem', 'reason', 'size_bytes', 'status',
        'verified'),
}
