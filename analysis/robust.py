"""Robust spread shared by the night's verdicts (verdicts.py) and the history's trends
(history.py): a node is judged against the median and MAD of its kind, never the mean; and
the grouped median of the fleet table's spreads and of compare's samples."""
from __future__ import annotations

import numpy as np

MAD_SCALE = 1.4826  # MAD of a normal distribution x this = its standard deviation


def grouped_medians(group: np.ndarray, values: np.ndarray, groups: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group 0..groups-1 of ``values``: its count, the start of its run in the values
    sorted by (group, value) (NaN last in a group), and its median (NaN where empty); and
    those sorted values. Millions of samples at once: one stable sort by group (rows of a
    group mostly adjacent already), then each group's few values sorted as rows of a matrix,
    one call per distinct group size."""
    order = np.argsort(group, kind="stable")
    count = np.bincount(group, minlength=groups)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    ordered = values[order]
    for size in np.unique(count[count > 1]).tolist():
        rows = start[count == size][:, None] + np.arange(size)
        ordered[rows] = np.sort(ordered[rows], axis=1)
    median = np.full(groups, np.nan)
    has = count > 0
    low, high = start + (count - 1) // 2, start + count // 2
    median[has] = (ordered[low[has]] + ordered[high[has]]) / 2
    return count, start, median, ordered
