"""Work that several test files do alike, done once per pytest run.

The test command runs pytest-xdist with ``--dist loadfile``: a module fixture is made once
per file, but two files that render the same input with the same options (the paper of a
recorded set, the listing of ReFrame's checks on one configuration) each did it in their
own worker, a render of 10 to 20 s of a 2-core VM's time every time. ``once`` does such work
once per run, into a folder beside the workers' temporary folders: the first worker to ask
does it under a lock, the others wait on the lock and then read what it left. A test reads
what is shared and never writes into it (one that changes an output copies it first).

The folder is the run's base temporary folder (the parent of each worker's), so a new run
starts afresh; ``conftest._shared_root`` sets it before any test runs."""
from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

_root: Path | None = None


def set_root(folder: Path) -> None:
    global _root
    _root = folder


def once(key: Sequence[str], make: Callable[[Path], None]) -> Path:
    """The folder that ``make(folder)`` filled, made by the first caller of this ``key`` in
    the run; a ``make`` that raised leaves nothing, so the next caller tries again."""
    assert _root is not None, "conftest._shared_root sets the folder before any test"
    name = hashlib.sha1("\0".join(key).encode()).hexdigest()[:16]
    folder, done = _root / "shared" / name, _root / "shared" / f"{name}.done"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(_root / "shared" / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def completed(folder: Path, proc: subprocess.CompletedProcess | None = None) -> subprocess.CompletedProcess:
    """``proc`` kept in ``folder`` (with it) or read back from there (without): a command's
    exit status and output, as every test that shares it sees them."""
    kept = folder / "completed.json"
    if proc is not None:
        kept.write_text(json.dumps({"args": [str(a) for a in proc.args], "returncode": proc.returncode,
                                    "stdout": proc.stdout, "stderr": proc.stderr}))
    saved = json.loads(kept.read_text())
    return subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"])


def analysis_once(*args: str | Path) -> tuple[subprocess.CompletedProcess, Path]:
    """``python -m analysis ARGS -o OUT`` (conftest.analysis_cli) once per run: its result
    and OUT, which the tests that share it only read."""
    from conftest import analysis_cli

    def make(folder: Path) -> None:
        completed(folder, analysis_cli(*args, "-o", folder / "out"))
    folder = once(["analysis", *map(str, args)], make)
    return completed(folder), folder / "out"
