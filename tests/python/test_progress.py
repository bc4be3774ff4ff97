"""The progress counter of long runs: `[i/N] ... ETA` on stderr when it is a terminal (or
with --progress), nothing in logs (ReFrame, CI) or with --no-progress (docs/cli.md)."""
from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

from conftest import run, summaries

ARGS = ["bw", "--all", "--op", "read", "--threads", "all", "--size", "16MiB", "--in-cache",
        "--reps", "2", "--warmup", "0"]
COUNTER = re.compile(r"[\r\n]\[(\d+)/(\d+)\] cpu0 (LP)?DDR(, \w+)? read(  ETA (\d+ s|\d+ min|\?))?")


def on_a_terminal(binary: Path, *args: str) -> tuple[str, str]:
    """stdout through a pipe, stderr on a pseudo-terminal: what a person at a shell sees."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(binary), *args], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    err = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = proc.communicate(timeout=600)[0]
    os.close(leader)
    assert proc.returncode == 0, err
    return out.decode(), err.decode()


def test_counter_on_a_terminal(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out, err = on_a_terminal(mempath_cpu_bin, *ARGS, "--output", str(tmp_path / "t.h5"))
    counts = [(int(m[1]), int(m[2])) for m in COUNTER.finditer(err)]
    total = len(summaries(out))
    assert counts == [(i, total) for i in range(1, total + 1)]
    assert "ETA" in err and "MEMPATH" not in err
    assert "\r[" not in out  # the summary lines stay clean


def test_no_counter_without_a_terminal(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    proc = run(mempath_cpu_bin, *ARGS, "--output", str(tmp_path / "p.h5"))
    assert "\r" not in proc.stderr and "ETA" not in proc.stderr


def test_flags_force_it_on_and_off(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    # run() reads text: its universal newlines turn the carriage returns into \n.
    forced = run(mempath_cpu_bin, *ARGS, "--progress", "--output", str(tmp_path / "f.h5"))
    assert COUNTER.search(forced.stderr)
    _, err = on_a_terminal(mempath_cpu_bin, *ARGS, "--no-progress", "--output", str(tmp_path / "n.h5"))
    assert not COUNTER.search(err) and "ETA" not in err


def test_both_flags_are_bad_input(mempath_cpu_bin: Path) -> None:
    proc = run(mempath_cpu_bin, *ARGS, "--progress", "--no-progress", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "exclude each other" in proc.stderr


def test_a_case_of_several_rows_is_said_once_as_the_report_says_each(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """The counter says a case in the report's words (core/case_words.hpp): a STREAM case
    writes a row per kernel, whose words differ in the kernel alone. The words come before
    the case runs: a repetition too short to time on a fast host (a failed case) says them too."""
    proc = run(mempath_cpu_bin, "stream", "--size", "1MiB", "--in-cache", "--threads", "1", "--reps", "1",
               "--progress", "--output", str(tmp_path / "s.h5"), check_rc=None)
    assert re.search(r"\[1/1\] cpu0 STREAM copy/scale/add/triad on numa\d+ \(numa\)", proc.stderr), proc.stderr
