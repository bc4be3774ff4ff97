"""Fuzzing of the Python readers of result files: the walk of analysis.results.h5file, io's
load_run and load_runs, and the fleet's analysis.fleet.table.load_cases_run (docs/testing.md).

Hypothesis draws the inputs, two ways:
- structured: a corpus file changed through h5py: root attributes replaced by values of any
  type (topology JSON that is not an object, non-UTF-8 bytes, arrays, NaN), columns of another
  type, length or shape, NaN/inf/negative values, soft and hard links to their own group,
  external links, tables outside any group;
- bytes: a corpus file's bytes flipped, overwritten, truncated or spliced.

The contract: each reader returns what it promises (a Run whose topology is an object, a
RunSet, an open file) or raises RunFileError/InputError with one line; never another
exception, never a hang. Each input is read in a forked child under a deadline, so a hang or
a crash is seen. A crash or hang on a byte-damaged file is counted apart as libhdf5's
(Debian's HDF5 1.10 crashes in its own code on some damaged files; the readers have no loop
of their own that a file's bytes steer); on a structured input it is a failure.

    python tests/fuzz/fuzz_readers.py --seconds 60 --seed 7 [--grow tests/fuzz/corpus/results]

Exit status 1 when any input broke the contract; each such input is saved (--crashes).
"""
from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import os
import re
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import h5py
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, seed as hypothesis_seed, strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from analysis.errors import InputError  # noqa: E402
from analysis.fleet.table import load_cases_run  # noqa: E402
from analysis.results import io  # noqa: E402
from analysis.results.h5file import walk  # noqa: E402

FUZZ = Path(__file__).resolve().parent
CORPUS = FUZZ / "corpus" / "results"
CRASHES = FUZZ / "crashes" / "results"
MAX_CORPUS_BYTES = 2 << 20  # tests/fuzz/corpus as a whole stays small enough to commit


# ---- the readers and their contract --------------------------------------------------------

def _check_run(run: Any) -> None:
    assert isinstance(run, io.Run), f"returned {type(run).__name__}, not a Run"
    assert isinstance(run.topology, dict), f"Run.topology is a {type(run.topology).__name__}, not an object"
    assert isinstance(run.attrs, dict) and isinstance(run.tables, dict)
    assert isinstance(run.node, str) and isinstance(run.host, str)


def _walk(path: Path) -> None:
    """The one walk every reader goes through: validation, then every table listed."""
    with walk(path) as root:
        for table in root.tables():
            table.table()


def _load_run(path: Path) -> None:
    _check_run(io.load_run(path))


def _load_runs_with_an_intact_file(path: Path) -> None:
    """The bad file among good ones (a fleet): rejected in one line, the rest read."""
    rejected: list[str] = []
    runs = io.load_runs([path, GOOD], rejected=rejected)
    assert all(isinstance(line, str) and "\n" not in line for line in rejected), rejected
    assert len(runs.runs) + len(rejected) == 2, (len(runs.runs), rejected)
    for run in runs.runs:
        _check_run(run)
    runs.hosts()


def _load_cases_run(path: Path) -> None:
    _check_run(load_cases_run(path))


READERS: dict[str, Callable[[Path], None]] = {
    "walk": _walk, "load_run": _load_run, "load_runs": _load_runs_with_an_intact_file, "load_cases_run": _load_cases_run,
}
GOOD = CORPUS / "pingpong.h5"  # an intact (and the smallest) file for load_runs' mix


def _read_all(path: Path) -> list[list[str]]:
    """[reader, kind, message] of every reader on ``path``: kind ok, refused or failed."""
    out = []
    for name, reader in READERS.items():
        try:
            reader(path)
            out.append([name, "ok", ""])
        except InputError as error:
            text = str(error)
            if not text or "\n" in text:
                out.append([name, "failed", f"{type(error).__name__} of {len(text.splitlines())} lines: {text[:300]!r}"])
            else:
                out.append([name, "refused", text])
        except AssertionError as error:
            out.append([name, "failed", f"contract: {error}"])
        except BaseException as error:  # noqa: BLE001 - any other exception is the finding
            tb = traceback.extract_tb(error.__traceback__)
            where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb)
                          if "analysis" in Path(f.filename).parts), "?")
            out.append([name, "failed", f"{type(error).__name__} at {where}: {str(error)[:300]}"])
    return out


def forked(work: Callable[[], Any], deadline_s: float, stdout_too: bool = False) -> Any:
    """``work()``'s JSON result, computed in a forked child (its stderr, and its stdout with
    ``stdout_too``, kept for the report); a string ("crash: ...", "hang: ...") when the child
    died or ran past the deadline. Both fuzzers run their readers through it."""
    rfd, wfd = os.pipe()
    err = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # the child: no return from here
        try:
            os.close(rfd)
            os.dup2(err.fileno(), 2)
            if stdout_too:
                os.dup2(err.fileno(), 1)
            faulthandler.enable(file=sys.stderr)
            os.write(wfd, json.dumps(work()).encode())
        finally:
            os._exit(0)
    os.close(wfd)
    chunks, end, hung = [], time.monotonic() + deadline_s, False
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([rfd], [], [], left)[0]:
            hung = True
            break
        chunk = os.read(rfd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rfd)
    if hung:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    stderr = err.read().decode("utf-8", "replace")[-2000:]
    err.close()
    if hung:
        return f"hang: no answer in {deadline_s:g} s"
    if os.WIFSIGNALED(status):
        return f"crash: signal {signal.Signals(os.WTERMSIG(status)).name}\n{stderr}"
    if not chunks:
        return f"crash: exit status {os.waitstatus_to_exitcode(status)}\n{stderr}"
    return json.loads(b"".join(chunks))


def run_child(path: Path, deadline_s: float) -> list[list[str]] | str:
    """The readers' outcomes on ``path``, read in a forked child (``forked``)."""
    return forked(lambda: _read_all(path), deadline_s)


def signature(reader: str, kind: str, message: str, path: Path) -> str:
    """What an outcome is like: the message without the file's name, numbers and quotes."""
    text = message.replace(str(path), "").replace(path.name, "")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)
    return f"{reader}:{kind}:{re.sub(r'[0-9]+', '#', text)[:200]}"


# ---- inputs ---------------------------------------------------------------------------------

def corpus_files(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.glob("*.h5") if p.is_file())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10)

# Root attribute values of every kind h5py writes.
attribute_values = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.booleans().map(np.bool_),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.binary(max_size=40).map(np.bytes_),                       # fixed-length, maybe not UTF-8
    st.binary(min_size=1, max_size=40).map(lambda b: np.array(b, dtype=h5py.vlen_dtype(bytes))),
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),   # JSON of any type
    st.lists(st.integers(-5, 5), min_size=0, max_size=4).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.text(max_size=5), min_size=1, max_size=3).map(lambda v: np.array(v, dtype=h5py.string_dtype())),
    st.just(h5py.Empty("f8")),
)
ROOT_KEYS = ["schema_version", "tool", "topology", "host", "start_time", "synthetic", "gpu_uuids",
             "arch", "command", "cuda_driver", "=HYPERLINK(\"x\")"]

column_values = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6).map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.floats(-1e300, 0, allow_nan=False), min_size=1, max_size=6).map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.integers(-2**63, 2**63 - 1), max_size=6).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.binary(max_size=10), max_size=6).map(lambda v: np.array(v, dtype=h5py.vlen_dtype(bytes))),
    st.lists(st.text(max_size=10), max_size=6).map(lambda v: np.array(v, dtype=h5py.string_dtype())),
    st.lists(st.binary(max_size=6), min_size=1, max_size=6).map(lambda v: np.array(v, dtype="S6")),
    st.integers(0, 3).map(lambda n: np.zeros((n, 2))),            # 2-D
    st.floats(allow_nan=True).map(np.float64),                    # a scalar
    st.lists(st.booleans(), max_size=4).map(lambda v: np.array(v, dtype=bool)),
    st.lists(st.complex_numbers(allow_nan=True), min_size=1, max_size=3).map(lambda v: np.array(v, dtype=np.complex128)),
)

# One structural change: (what, its arguments).
changes = st.one_of(
    st.tuples(st.just("set_attr"), st.sampled_from(ROOT_KEYS) | st.text(min_size=1, max_size=8), attribute_values),
    st.tuples(st.just("del_attr"), st.sampled_from(ROOT_KEYS)),
    st.tuples(st.just("column"), st.integers(0, 10_000), column_values),
    st.tuples(st.just("del_column"), st.integers(0, 10_000)),
    st.tuples(st.just("column_attr"), st.integers(0, 10_000), attribute_values),
    st.tuples(st.just("link"), st.integers(0, 10_000),
              st.sampled_from(["soft_self", "soft_root", "hard_root", "hard_parent", "dangling",
                               "external_missing", "external_self", "external_devzero", "soft_chain"])),
    st.tuples(st.just("group"), st.sampled_from(["top_dataset", "empty_group", "deep", "odd_name", "table_of_groups"])),
)


def _datasets(handle: h5py.File) -> list[str]:
    names: list[str] = []
    handle.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(names)


def _groups(handle: h5py.File) -> list[str]:
    names = ["/"]
    handle.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Group) else None)
    return sorted(names)


def apply_change(handle: h5py.File, change: tuple, path: Path) -> None:
    what, *args = change
    if what == "set_attr":
        key, value = args
        if key in handle.attrs:
            del handle.attrs[key]
        handle.attrs[key] = value
    elif what == "del_attr":
        if args[0] in handle.attrs:
            del handle.attrs[args[0]]
    elif what in ("column", "del_column", "column_attr"):
        names = _datasets(handle)
        if not names:
            return
        name = names[args[0] % len(names)]
        if what == "column_attr":
            handle[name].attrs["units"] = args[1]
            return
        del handle[name]
        if what == "column":
            handle[name] = args[1]
    elif what == "link":
        groups = _groups(handle)
        group = handle[groups[args[0] % len(groups)]]
        kind = args[1]
        link = "fuzz_link"
        if kind == "soft_self":
            group[link] = h5py.SoftLink(group.name)
        elif kind == "soft_root":
            group[link] = h5py.SoftLink("/")
        elif kind == "hard_root":
            group[link] = handle["/"]
        elif kind == "hard_parent":
            group[link] = group.parent
        elif kind == "dangling":
            group[link] = h5py.SoftLink("/no/such/thing")
        elif kind == "soft_chain":
            group["a"] = h5py.SoftLink(f"{group.name.rstrip('/')}/b")
            group["b"] = h5py.SoftLink(f"{group.name.rstrip('/')}/a")
        elif kind == "external_missing":
            group[link] = h5py.ExternalLink("/nonexistent/other.h5", "/")
        elif kind == "external_self":
            group[link] = h5py.ExternalLink(str(path), "/")
        else:
            group[link] = h5py.ExternalLink("/dev/zero", "/")
    else:
        kind = args[0]
        if kind == "top_dataset":
            handle["loose"] = np.arange(3)
        elif kind == "empty_group":
            handle.create_group("empty")
        elif kind == "deep":
            handle.create_group("/".join(["d"] * 40))["x"] = np.arange(2)
        elif kind == "odd_name":
            handle.create_group("..")["=cmd|' /C calc'!A0"] = np.array(["=1+1"], dtype=h5py.string_dtype())
        else:
            handle.create_group("bw/cases/sub")["x"] = np.arange(2)


byte_changes = st.lists(
    st.tuples(st.sampled_from(["flip", "set", "int", "truncate", "splice", "delete", "insert"]),
              st.floats(0, 1, exclude_max=True), st.integers(0, 2**64 - 1)),
    min_size=1, max_size=4)


def apply_bytes(data: bytes, ops: list, other: bytes) -> bytes:
    buf = bytearray(data)
    for op, where, value in ops:
        if not buf:
            buf = bytearray(other[: value % (len(other) + 1)])
            continue
        at = int(where * len(buf))
        if op == "flip":
            buf[at] ^= 1 << (value % 8)
        elif op == "set":
            buf[at] = value % 256
        elif op == "int":
            width = 1 << (value % 4)
            chosen = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 2**63 - 1, 2**64 - 1][value % 9]
            chunk = (chosen & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            buf[at:at + width] = chunk[: len(buf) - at]
        elif op == "truncate":
            del buf[at:]
        elif op == "splice":
            buf = buf[:at] + other[value % (len(other) + 1):]
        elif op == "delete":
            del buf[at:at + 1 + value % 256]
        else:
            buf[at:at] = value.to_bytes(8, "little")[: 1 + value % 8]
    return bytes(buf)


# ---- the run -------------------------------------------------------------------------------

class Fuzzer:
    """One fuzzing session: the inputs' outcomes, failures found, corpus grown."""

    def __init__(self, corpus: list[Path], work: Path, crashes: Path | None, grow: Path | None,
                 deadline_s: float, known: dict[str, str] | None = None) -> None:
        self.known = known or {}
        self.known_found = 0
        self.corpus, self.work, self.crashes, self.grow = corpus, work, crashes, grow
        self.deadline_s = deadline_s
        self.seen: set[str] = set()
        self.failures: dict[str, str] = {}
        self.libhdf5: dict[str, str] = {}
        self.counts = {"ok": 0, "refused": 0, "failed": 0, "libhdf5": 0}
        self.corpus_bytes = sum(p.stat().st_size for p in corpus)
        self.added = 0

    def _save(self, path: Path, folder: Path, prefix: str = "") -> Path:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        to = folder / f"{prefix}{digest}.h5"
        if not to.exists():
            shutil.copyfile(path, to)
        return to

    def check(self, path: Path, how: str, structured: bool) -> None:
        """Reads ``path`` with every reader and records what happened."""
        outcome = run_child(path, self.deadline_s)
        if isinstance(outcome, str):
            head = outcome.splitlines()[0]
            if not structured:  # libhdf5's own crash or loop on damaged bytes
                self.counts["libhdf5"] += 1
                key = f"libhdf5:{head}"
                if key not in self.libhdf5:
                    saved = self._save(path, self.crashes, "libhdf5-") if self.crashes else None
                    self.libhdf5[key] = f"libhdf5 {how}: {head}" + (f"; saved: {saved}" if saved else "")
                    print(self.libhdf5[key] + " (libhdf5's bug, not counted)", flush=True)
                return
            outcome = [[name, "failed", outcome] for name in READERS]
        new = False
        for reader, kind, message in outcome:
            self.counts[kind] += 1
            sig = signature(reader, kind, message, path)
            if kind == "failed":
                entry = next((name for name, what in self.known.items() if what and what in message), None)
                if entry:
                    self.known_found += 1
                    if sig not in self.seen:
                        print(f"known {reader} {how}: {message.splitlines()[0]} (as known reproducer {entry}, "
                              "not counted)", flush=True)
                    self.seen.add(sig)
                    continue
                if sig not in self.failures:
                    saved = self._save(path, self.crashes) if self.crashes else None
                    line = f"FAIL {reader} {how}: {message.splitlines()[0] if message else ''}"
                    if saved:
                        line += f"\n  saved: {saved}\n  reproduce: python tests/fuzz/fuzz_readers.py --one {saved}"
                    self.failures[sig] = line
                    print(line, flush=True)
                continue
            new |= sig not in self.seen
            self.seen.add(sig)
        size = path.stat().st_size
        if new and self.grow and self.corpus_bytes + size <= MAX_CORPUS_BYTES and path.stat().st_size:
            kept = self._save(path, self.grow, "grown-")
            self.corpus_bytes += size
            self.corpus.append(kept)
            self.added += 1

    def structured(self, index: int, edits: list, round_seed: int) -> None:
        source = self.corpus[index % len(self.corpus)]
        path = self.work / "structured.h5"
        shutil.copyfile(source, path)
        try:
            with h5py.File(path, "r+") as handle:
                for change in edits:
                    apply_change(handle, change, path)
        except (OSError, ValueError, TypeError, KeyError, RuntimeError):
            return  # h5py would not write this change: not an input
        self.check(path, f"structured from {source.name} (round seed {round_seed}): {edits!r}"[:600], True)

    def bytewise(self, index: int, other: int, ops: list, round_seed: int) -> None:
        source = self.corpus[index % len(self.corpus)]
        path = self.work / "bytes.h5"
        path.write_bytes(apply_bytes(source.read_bytes(), ops,
                                     self.corpus[other % len(self.corpus)].read_bytes()))
        self.check(path, f"bytes from {source.name} (round seed {round_seed})", False)


def read_known(path: Path | None) -> dict[str, str]:
    """tests/fuzz/known.txt's python lines: NAME -> WHAT (docs/testing.md)."""
    known: dict[str, str] = {}
    for line in (path.read_text().splitlines() if path else []):
        words = line.split("#")[0].split()
        if len(words) >= 2 and words[0] == "python":
            known[words[1]] = " ".join(words[2:])
    return known


def fuzz(seconds: float, seed: int, corpus_dirs: list[Path], crashes: Path | None,
         grow: Path | None, deadline_s: float, examples: int, replay: Path | None = None,
         known_file: Path | None = None) -> int:
    corpus = corpus_files(corpus_dirs)
    if not corpus:
        print(f"fuzz_readers: no *.h5 in {', '.join(map(str, corpus_dirs))}", file=sys.stderr)
        return 2
    print(f"fuzz_readers: seed {seed}, {seconds:g} s, {len(corpus)} corpus files "
          f"(reproduce: --seed {seed}; each round prints its own seed)", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mempath_fuzz_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as tmp:
        known = read_known(known_file)
        fuzzer = Fuzzer(corpus, Path(tmp), crashes, grow, deadline_s, known)
        for path in sorted(replay.glob("*.h5")) if replay else []:  # earlier failures: fixed now?
            if path.name in known:
                print(f"known, skipped: {path}", flush=True)
                continue
            fuzzer.check(path, f"reproducer {path}", True)
        for path in list(corpus):  # the corpus as it is: every file must keep the contract
            fuzzer.check(path, f"corpus file {path}", True)
        common = settings(max_examples=examples, database=None, deadline=None, derandomize=False,
                          phases=[Phase.generate], suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
        rounds = 0
        while time.monotonic() - started < seconds:
            round_seed = seed * 1_000_003 + rounds
            rounds += 1

            @hypothesis_seed(round_seed)
            @common
            @given(st.integers(0, 10_000), st.lists(changes, min_size=1, max_size=4))
            def structured(index: int, edits: list) -> None:
                fuzzer.structured(index, edits, round_seed)

            @hypothesis_seed(round_seed)
            @common
            @given(st.integers(0, 10_000), st.integers(0, 10_000), byte_changes)
            def bytewise(index: int, other: int, ops: list) -> None:
                fuzzer.bytewise(index, other, ops, round_seed)

            structured()
            if time.monotonic() - started < seconds:
                bytewise()
    c = fuzzer.counts
    print(f"fuzz_readers: seed {seed}, {rounds} rounds in {time.monotonic() - started:.0f} s: "
          f"{c['ok']} read, {c['refused']} refused in one line, {c['failed']} failed "
          f"({len(fuzzer.failures)} distinct), {c['libhdf5']} inputs crashed or hung libhdf5 "
          f"({len(fuzzer.libhdf5)} distinct); {len(fuzzer.seen)} behaviours, {fuzzer.added} files "
          f"added to {grow or 'no corpus (no --grow)'}"
          + (f"; {fuzzer.known_found} outcomes as known reproducers" if fuzzer.known_found else ""), flush=True)
    return 1 if fuzzer.failures else 0


def one(path: Path) -> int:
    """Every reader on one file, in this process: a reproducer's outcome, or its traceback."""
    for reader, kind, message in _read_all(path):
        print(f"{reader}: {kind}{': ' + message if message else ''}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=None, help="default: from the time (printed)")
    parser.add_argument("--corpus", type=Path, action="append", help=f"default: {CORPUS}")
    parser.add_argument("--crashes", type=Path, default=None, help="save failing inputs here")
    parser.add_argument("--grow", type=Path, default=None,
                        help="keep inputs with a new behaviour here (e.g. tests/fuzz/corpus/results)")
    parser.add_argument("--deadline", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--examples", type=int, default=20, help="examples of each kind a round")
    parser.add_argument("--one", type=Path, help="read this one file in this process and stop")
    parser.add_argument("--replay", type=Path, help="reproducers that must pass (tests/fuzz/crashes/results)")
    parser.add_argument("--known", type=Path, help="known failures to skip (tests/fuzz/known.txt)")
    args = parser.parse_args(argv)
    if args.one:
        return one(args.one)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    return fuzz(args.seconds, seed, args.corpus or [CORPUS], args.crashes, args.grow, args.deadline,
                args.examples, args.replay, args.known)


if __name__ == "__main__":
    sys.exit(main())
