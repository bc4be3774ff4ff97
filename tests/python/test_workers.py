"""analysis/results/workers.py: files read in forked children, answers in order, a child's
exception raised here, and the collector as it was."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from analysis.results import workers


def _pids(chunk: list[int]) -> list[tuple[int, int]]:
    if 13 in chunk:
        raise ValueError("unlucky 13")
    return [(unit, os.getpid()) for unit in chunk]


def _merged(parts):
    return [answer for part in parts for answer in part]


def test_answers_come_in_order_from_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "CHUNK_FILES", 3)
    answers = workers.read_all(_pids, list(range(10)), 3, lambda u, why: [(u, why)], _merged)
    assert [unit for chunk in answers for unit, _ in chunk] == list(range(10))
    pids = {pid for chunk in answers for _, pid in chunk}
    assert os.getpid() not in pids and len(pids) == 4  # a child per chunk
    assert gc.isenabled()


def test_an_exception_in_a_child_is_raised_here() -> None:
    with pytest.raises(ValueError, match="unlucky 13"):
        workers.read_all(_pids, list(range(20)), 2, lambda u, why: [(u, why)], _merged)
    assert gc.isenabled()


def test_a_child_that_hangs_is_killed_and_its_units_read_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    monkeypatch.setenv("MEMPATH_READ_DEADLINE_S", "1")
    monkeypatch.setattr(workers, "CHUNK_FILES", 4)

    def read(chunk):
        if 5 in chunk:
            time.sleep(60)
        return [(unit, "read") for unit in chunk]
    start = time.monotonic()
    answers = workers.read_all(read, list(range(8)), 2, lambda u, why: [(u, why)], _merged)
    assert time.monotonic() - start < 30
    assert _merged(answers) == [(u, "read") for u in range(5)] + [
        (5, "reading it did not end within 1 s (the HDF5 library hangs on it)"), (6, "read"), (7, "read")]


def test_a_deadline_that_is_not_a_positive_number_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.errors import InputError
    for value in ("0", "-3", "soon", "inf", "nan"):
        monkeypatch.setenv("MEMPATH_READ_DEADLINE_S", value)
        with pytest.raises(InputError, match="valid: seconds > 0"):
            workers.read_all(_pids, [1], 1, lambda u, why: [(u, why)], _merged)
    monkeypatch.setenv("MEMPATH_READ_DEADLINE_S", "")
    assert workers.deadline() == workers.DEADLINE_S


def test_a_child_dies_with_its_parent(tmp_path) -> None:
    """A parent killed while its child loops (a job's time limit, Ctrl-C) leaves no child
    reading on: the child dies with it (PR_SET_PDEATHSIG)."""
    import signal
    import subprocess
    import sys
    import time
    pidfile = tmp_path / "child"
    script = f"""
import os, sys, time
from analysis.results import workers
def read(chunk):
    open({str(pidfile)!r}, "w").write(str(os.getpid()))
    while True:
        pass
workers.read_all(read, [1], 1, lambda u, why: why, lambda parts: parts)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2])  # the root: analysis
    try:
        for _ in range(200):
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.05)
        child = int(pidfile.read_text())
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        for _ in range(100):
            try:
                state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                return
            if state == "Z":  # dead, not yet reaped by whoever adopted it
                return
            time.sleep(0.05)
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its killed parent")
    finally:
        parent.kill()
