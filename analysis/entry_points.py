"""Console scripts of the pip distribution (pyproject.toml): ``mempath-report ARGS`` is
``python -m analysis report ARGS``; ``mempath-analysis`` is ``__main__.main`` itself."""
from __future__ import annotations

import sys

from .__main__ import main


def report() -> int:
    return main(["report", *sys.argv[1:]])
