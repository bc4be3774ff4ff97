"""The allocators as src/core/kinds.def lists them, for the checks: which need CUDA (a check
of one runs on `+nvgpu` partitions only), which are page-locked, and the class a copy
engine sees of each.

Read from the table itself with the standard library, as the analysis reads it
(analysis/results/kinds.py; tests/python/test_reframe.py holds the two readings equal): the
checks import nothing of the analysis, since a centre's ReFrame has no analysis package
beside it. A clone has the table in src/core/; `cmake --install` puts it in
PREFIX/share/mempath, this folder's parent there.
"""
from __future__ import annotations

import re
from pathlib import Path

_ABOVE = Path(__file__).resolve().parent.parent
#: The table: a clone's, else the installed copy.
KINDS_DEF = next((p for p in (_ABOVE / 'src' / 'core' / 'kinds.def', _ABOVE / 'kinds.def') if p.is_file()),
                 _ABOVE / 'kinds.def')
#: An allocator's columns after enum, name, API and letter (kinds.def's header says why each exists).
_FLAGS = ('gpu_owned', 'pageable', 'page_locked', 'host_touched', 'gpu_memory', 'needs_cuda')


def _allocators(path: Path) -> dict[str, dict[str, bool]]:
    """{name: {flag: bool}} of each `MEMPATH_ALLOC(...)` row, in table order."""
    rows = {}
    for line in path.read_text().splitlines():
        match = re.fullmatch(r'MEMPATH_ALLOC\((.*)\)', line.strip())
        if not match:
            continue
        fields = [f.strip() for f in match[1].split(',')]
        if len(fields) != 4 + len(_FLAGS):
            raise ImportError(f'{path}: {line.strip()!r} has {len(fields)} fields; valid: {4 + len(_FLAGS)}')
        rows[fields[1].strip('"')] = dict(zip(_FLAGS, (f == '1' for f in fields[4:])))
    return rows


def _copy_class(row: dict[str, bool]) -> str:
    """What a copy engine sees of the pages: the host's pageable ones, page-locked ones,
    memory that migrates (managed), the GPU's own (device)."""
    if row['pageable']:
        return 'pageable'
    if row['page_locked']:
        return 'pagelocked'
    return 'device' if row['gpu_owned'] else 'managed'


_TABLE = _allocators(KINDS_DEF)
_ORDER = ('pageable', 'pagelocked', 'managed', 'device')

#: Every allocator of mempath, a copy class at a time (each in kinds.def's order): the
#: `%alloc=` values of a sweep.
ALLOCATORS = tuple(sorted(_TABLE, key=lambda a: _ORDER.index(_copy_class(_TABLE[a]))))
#: What a copy engine sees of each allocator: pageable, pagelocked, managed or device.
ALLOC_CLASS = {a: _copy_class(_TABLE[a]) for a in ALLOCATORS}
#: The allocators that call the CUDA runtime.
CUDA_ALLOCATORS = tuple(a for a in ALLOCATORS if _TABLE[a]['needs_cuda'])
#: Host allocators whose pages are page-locked: copy engines reach them directly.
PAGE_LOCKED = tuple(a for a in ALLOCATORS if _TABLE[a]['page_locked'])
#: Host allocators, whose pages stay where they were put (no GPU memory, no migration).
HOST_ALLOCATORS = tuple(a for a in ALLOCATORS if not _TABLE[a]['gpu_memory'])
