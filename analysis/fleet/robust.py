"""Robust spread shared by the night's verdicts (verdicts.py) and the history's trends
(history.py): a node is judged against the median and MAD of its kind, never the mean."""
from __future__ import annotations

MAD_SCALE = 1.4826  # MAD of a normal distribution x this = its standard deviation
