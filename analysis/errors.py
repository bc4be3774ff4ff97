"""The one error kind the command line reports as bad input (one line, exit code 2)."""
from __future__ import annotations


class InputError(Exception):
    """An input file the analysis cannot use; the message names the file and the fix."""
