"""The runs an output was made from, as the report and the paper list them."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..results.io import RunSet
from .mdtext import code
from .tables import markdown


def _cuda(version: Any, none: str) -> str:
    """A CUDA version as 13.0; ``none`` says why there is none (0), "not recorded" where the
    file has no such attribute (a writer other than the binary's)."""
    if version is None or version == "":
        return "not recorded"
    version = int(version)
    return f"{version // 1000}.{version % 1000 // 10}" if version > 0 else none


def runs_table(runs: RunSet) -> list[str]:
    """The '## Runs' section: every run with its tool version, git revision, times, CUDA
    versions and command line, so each output names what it was made from."""
    table = pd.DataFrame({
        "run": [code(run.name) for run in runs.runs],
        "host": [run.node for run in runs.runs],
        **{name: [run.attrs.get(attr, "") for run in runs.runs] for name, attr in
           (("tool version", "tool_version"), ("git revision", "git_revision"),
            ("start (UTC)", "start_time"), ("end (UTC)", "end_time"))},
        # the driver is the node's, the runtime the one mempath was built with: a CUDA build on
        # a node without NVIDIA's driver has a runtime and no driver
        "CUDA driver": [_cuda(run.attrs.get("cuda_driver_version"), "no NVIDIA driver on the node")
                        for run in runs.runs],
        "CUDA runtime": [_cuda(run.attrs.get("cuda_runtime_version"), "none (built without CUDA)")
                         for run in runs.runs],
        "command": [code(run.attrs.get("command_line", "")) for run in runs.runs]}, dtype=object)
    return ["## Runs", ""] + markdown(table)
