"""Many result files read by child processes, with a crash or a hang of the HDF5 library
confined to the file that causes it.

A damaged file can make libhdf5 itself die (SIGSEGV) or loop for ever (tests/fuzz keeps
such files); neither is an exception Python can catch, and a fleet or a nightly
``compare`` must still end and name the file. So every chunk of files is read in a forked
child process that sends its answer back through a pipe: a child that dies, or has not
answered within the deadline (then it is killed), fails its chunk, which is read again a
file at a time, so that only the file that fails alone is lost.

The fleet and compare read thousands of small files this way, several children at once.
Their garbage collector is off while they read (and in the parent while it gathers the
answers): reading makes no reference cycles, and the collector, walking millions of
young containers, cost a fifth of compare's time at fleet scale.
"""
from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InputError

Unit = TypeVar("Unit")
Answer = TypeVar("Answer")

#: Seconds a child may take over one chunk (a few hundred files: normally a second or two)
#: or one file before it is taken for hung. MEMPATH_READ_DEADLINE_S overrides it.
DEADLINE_S = 120.0
#: Files a child reads: enough that a child's start (a fork, one pickled answer) is small
#: against its reads, few enough that 2 children stay evenly busy.
CHUNK_FILES = 256
#: At most this many children at once: each holds its own caches (about 100 MB), and a
#: login node's hundred CPUs would cost more memory than they save time.
MAX_JOBS = 16


@dataclass(frozen=True)
class Lost:
    """A chunk or file whose child died or hung: why, in words that follow its name."""
    why: str


def default_jobs() -> int:
    """The children that read at once: the CPUs this process may run on, at most MAX_JOBS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_JOBS))


def deadline() -> float:
    """DEADLINE_S, or MEMPATH_READ_DEADLINE_S where set (InputError unless seconds > 0)."""
    text = os.environ.get("MEMPATH_READ_DEADLINE_S", "")
    if not text:
        return DEADLINE_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise InputError(f"MEMPATH_READ_DEADLINE_S={text!r}; valid: seconds > 0, e.g. 120 (unset: "
                         f"{DEADLINE_S:g})")
    return value


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off, then as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_all(read: Callable[[list[Unit]], Answer], units: Sequence[Unit], jobs: int | None,
             lost: Callable[[Unit, str], Answer],
             merge: Callable[[list[Answer]], Answer]) -> list[Answer]:
    """``read(chunk)`` of every chunk of CHUNK_FILES ``units``, in order, by ``jobs``
    children at once (default: default_jobs()). A chunk whose child died or hung is read
    again a unit at a time; a unit that fails alone is ``lost(unit, why)``, and the answers
    of the chunk's units are ``merge``d into the chunk's answer."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    chunks = [list(units[i:i + CHUNK_FILES]) for i in range(0, len(units), CHUNK_FILES)]
    with collector_paused():
        answers = in_children(read, chunks, jobs)
        for i, answer in enumerate(answers):
            if isinstance(answer, Lost):
                alone = in_children(read, [[unit] for unit in chunks[i]], jobs)
                answers[i] = merge([lost(unit, a.why) if isinstance(a, Lost) else a
                                    for unit, a in zip(chunks[i], alone)])
    return answers


def in_children(read: Callable[[list[Unit]], Answer], chunks: Sequence[list[Unit]],
                jobs: int) -> list[Answer | Lost]:
    """``read(chunk)`` of each chunk in a forked child of its own, at most ``jobs`` at once;
    Lost where the child died or did not answer within deadline(). Where this system
    cannot fork, the chunks are read here, unguarded."""
    if not hasattr(os, "fork"):
        return [read(chunk) for chunk in chunks]
    limit = deadline()
    answers: list[Answer | Lost | None] = [None] * len(chunks)
    running: dict[int, tuple[int, int, float, bytearray]] = {}  # fd: (chunk, pid, started, got)
    waiting = list(range(len(chunks)))[::-1]
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                i = waiting.pop()
                fd, pid = _fork(read, chunks[i])
                running[fd] = (i, pid, time.monotonic(), bytearray())
            _gather(running, answers, limit)
    finally:
        for fd, (_, pid, _, _) in running.items():  # interrupted (Ctrl-C): no child outlives us
            _end(fd, pid, kill=True)
    return answers  # type: ignore[return-value]


def _fork(read: Callable[[list[Unit]], Any], chunk: list[Unit]) -> tuple[int, int]:
    """A child reading ``chunk``; its answer, or the exception read() raised, comes pickled
    through the pipe it returns, as (True, answer) or (False, exception)."""
    fd_in, fd_out = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        os.close(fd_out)
        return fd_in, pid
    status = 1
    try:  # the child: never returns into the parent's code
        os.close(fd_in)
        _die_with(parent)
        gc.disable()
        try:
            data = pickle.dumps((True, read(chunk)), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 - the parent raises it
            try:
                data = pickle.dumps((False, error))
            except Exception:  # an exception that does not pickle: its text
                import traceback
                data = pickle.dumps((False, RuntimeError(traceback.format_exc())))
        with os.fdopen(fd_out, "wb") as out:
            out.write(data)
        status = 0
    finally:
        os._exit(status)


def _die_with(parent: int) -> None:
    """This child killed when its parent dies (Linux): a child looping in libhdf5 must not
    outlive a parent that was killed (Ctrl-C, a job's time limit, a fuzzer's deadline)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's finally is all there is
        return
    if os.getppid() != parent:  # it died before prctl
        os._exit(1)


def _gather(running: dict[int, tuple[int, int, float, bytearray]],
            answers: list[Any], limit: float) -> None:
    """Waits until some child sends, ends or passes the deadline; takes what it sent."""
    soonest = min(started for _, _, started, _ in running.values()) + limit
    ready, _, _ = select.select(list(running), [], [], max(0.0, soonest - time.monotonic()))
    for fd in ready:
        i, pid, _, got = running[fd]
        block = os.read(fd, 1 << 20)
        if block:
            got += block
            continue
        del running[fd]  # the end of the pipe: the child is done or dead
        if _end(fd, pid, kill=False) and got:
            ok, answer = pickle.loads(got)
            if not ok:
                raise answer
            answers[i] = answer
        else:
            answers[i] = Lost("the HDF5 library crashed reading it")
    now = time.monotonic()
    for fd, (i, pid, started, _) in list(running.items()):
        if now - started > limit:
            del running[fd]
            _end(fd, pid, kill=True)
            answers[i] = Lost(f"reading it did not end within {limit:g} s (the HDF5 library "
                              "hangs on it)")


def _end(fd: int, pid: int, kill: bool) -> bool:
    """Closes the pipe and reaps the child, killed first if ``kill``: whether it ended well."""
    os.close(fd)
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
