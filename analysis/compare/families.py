"""What compare compares: each family of src/core/families.def (its words, metric, unit,
direction and the table holding the metric) with what only compare needs: the sample
columns that split a case into parts, in the order a case's name shows them. Which cases
columns are a case's identity is families.def's too (each column's role). runs.py reads this
table only."""
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


_SAMPLE_KEYS = {"memcpy": ("part", "gpu"), "um": ("phase", "state", "preceded_by", "iterations")}

#: Every family that mempath writes, with its headline figure: the
#: metric the fleet, the report and the ReFrame checks judge it by (docs/schema.md).
FAMILIES: dict[str, Family] = {
    name: Family(f.what, f.metric, f.unit, f.higher_is_better, f.metric_table, _SAMPLE_KEYS.get(name, ()))
    for name, f in table.FAMILIES.items()}

#: Columns of no case's identity anywhere: the keys, derived values and outcomes of every table
#: of families.def. A column a file has that its family's cases table does not list (a later
#: or an earlier writer's) is identity unless its name is one of these.
_NEVER_IDENTITY = frozenset(c.name for t in table.TABLES for c in table.columns(t) if c.role != "identity")


def not_identity(family: str) -> frozenset[str]:
    """The cases columns of ``family`` that tell no two cases apart (families.def's role: a
    key, an outcome, or configuration derived from the others or the topology, which compare
    does not read: each column read costs about 0.1 ms a file, and a fleet is 10,000 files a
    side). Float columns are outcomes too, whatever their name (read.py)."""
    roles = {c.name: c.role for c in table.columns(f"{family}/cases")}
    return frozenset(name for name in roles.keys() | _NEVER_IDENTITY if roles.get(name, "") != "identity")


#: Identity columns added after the first files were written, with the value docs/schema.md
#: gives older files (a column name: that column's value). An added column without one here
#: is matched only where both sides have it (runs.identity_columns).
DEFAULTS: dict[tuple[str, str], object] = {
    ("memcpy", "dst_gpu"): -1,          # GPU<->GPU copies came later: older ones are host transfers
    ("memcpy", "chunk_bytes"): -1,      # staged copies came later
    ("gemm", "c_alloc"): "device",
    ("mpi_bw", "split"): 0,
}
