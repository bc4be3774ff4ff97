"""The columns every reader needs in each family's tables (docs/schema.md):
``load_runs(paths, REQUIRED)`` names a file that lacks one in one line. They are the
required rows of src/core/families.def (results/families.py); columns added by later schema
versions are not required, so files written before them stay readable."""
from __future__ import annotations

from .families import TABLES, required

#: Every required column of each table (docs/schema.md) must be there, where a file holds
#: that table: a file that lacks one is named in one line, not a traceback.
REQUIRED: dict[str, tuple[str, ...]] = {table: required(table) for table in TABLES if required(table)}
