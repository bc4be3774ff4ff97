"""The one error kind the command line reports as bad input (one line, exit code 2), and the
one record of a part of the output that failed while the rest was written (exit code 1)."""
from __future__ import annotations

import os
import traceback
from pathlib import Path


class InputError(Exception):
    """An input file the analysis cannot use; the message names the file and the fix."""


ERRORS_LOG = "errors.log"


def record_failure(out: Path, part: str, err: BaseException) -> str:
    """Append ``err``'s trace to ``out``/errors.log; return the one line that names it."""
    line = f"{part}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".rstrip(": ")
    log = out / ERRORS_LOG
    if log.is_symlink():  # planted in the output folder: appending would write through it
        log.unlink()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
    with os.fdopen(fd, "a", encoding="utf-8") as text:
        text.write(f"--- {line}\n{''.join(traceback.format_exception(err))}\n")
    return line
