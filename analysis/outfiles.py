"""The one way the analysis writes a file: atomically, never through a planted link, and
CSV cells that a spreadsheet would evaluate neutralised.

- ``write_text``/``write_bytes``: the data goes to a new file created next to the target
  (O_CREAT|O_EXCL, so no existing file or link is opened), is flushed to disk, then
  ``os.replace``d over the target. A symbolic link planted at the target's name is
  replaced itself, never the file it points to; a reader sees the old file or the new one,
  never half of one; on a full disk (ENOSPC) or a refused write (EACCES) the old file
  stays as it was and the OSError names the target (``analysis`` prints it as one line,
  exit 2).
- ``write_csv``: a DataFrame as CSV through ``csv_cells``: a text cell starting with
  ``= + - @``, a tab or a carriage return gets a leading ``'`` (OWASP's CSV injection
  rule), so a spreadsheet shows it as text instead of running it as a formula. Numbers
  stay numbers (a negative number is a number, not a formula).
- ``save_figure``: a matplotlib figure through ``write_bytes``.
- ``folder``: a folder the analysis writes into, refused when it is a symbolic link.
"""
from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import secrets
from numbers import Number
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

#: OWASP (CSV Injection): cells starting with these are formulas to Excel, LibreOffice
#: and Google Sheets.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def folder(path: Path) -> Path:
    """``path``, a folder inside an output folder, created (with its parents); OSError
    where it is a symbolic link (planted there, it would send files elsewhere) or a file.
    The output folder itself is the user's to choose, a link or not."""
    path = Path(path)
    if path.is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link, not a folder", str(path))
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def replacing(path: Path, sync: bool = True) -> Iterator[Path]:
    """A new empty file beside ``path`` (O_EXCL: no file or link of that name is opened)
    for the caller to fill (by its name, e.g. h5py); on leaving the block it is flushed to
    disk (unless ``sync`` is False: throwaway files) and replaces ``path``, or is removed
    where the block raised. An OSError names ``path`` and leaves it as it was."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):  # a name taken by another writer: draw another
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            # 0o666 under the umask, as open() would give: a published report stays readable.
            os.close(os.open(temp, flags, 0o666))
            break
        except FileExistsError:
            continue
        except OSError as error:
            raise OSError(error.errno, error.strerror, str(path)) from None
    else:
        raise OSError(errno.EEXIST, "no free temporary name beside it", str(path))
    try:
        yield temp
        if sync:
            fd = os.open(temp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(temp, path)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module's docstring); returns ``path``."""
    with replacing(path) as temp:
        fd = os.open(temp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    return Path(path)


def write_text(path: Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see the module's docstring); returns ``path``."""
    return write_bytes(path, text.encode(encoding))


def csv_cell(value: Any) -> Any:
    """A cell as a spreadsheet may safely read it: text starting with ``= + - @``, a tab or
    a carriage return prefixed with ``'``; numbers, and text that is a plain number, as
    they are."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    try:
        if not math.isnan(float(value)):  # "-1.5" is a number, not a formula
            return value
    except ValueError:
        pass
    return "'" + value


def csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell (and column name) passed through ``csv_cell``."""
    text = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c].dtype)
            and not pd.api.types.is_datetime64_any_dtype(frame[c].dtype)
            and not pd.api.types.is_bool_dtype(frame[c].dtype)]
    out = frame.copy()
    for column in text:
        out[column] = frame[column].map(lambda v: v if isinstance(v, Number) else csv_cell(v))
    return out.set_axis([csv_cell(str(c)) if isinstance(c, str) else c for c in out.columns], axis=1)


def write_csv(frame: pd.DataFrame, path: Path, **options: Any) -> Path:
    """``frame`` as CSV at ``path`` (atomically, cells through ``csv_cells``); ``options``
    go to DataFrame.to_csv (``index`` defaults to False)."""
    options.setdefault("index", False)
    return write_text(path, csv_cells(frame).to_csv(**options))


def save_figure(fig: Any, path: Path, **options: Any) -> Path:
    """``fig.savefig`` into ``path`` atomically (the format from its suffix)."""
    path = Path(path)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=path.suffix.lstrip("."), **options)
    return write_bytes(path, buffer.getvalue())
