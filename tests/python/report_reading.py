"""What a person reading a report would stumble on, as checks a test can fail on (issue 47):
a section or paragraph repeated word for word (the conditions of one node once per run), a
loader's or Python's error text instead of words, a table whose cells are all empty (a
governor table on a host without cpufreq). ``faults`` lists them for a report's index.md."""
from __future__ import annotations

import re

#: Error texts of the system or of Python that a report must put in words.
RAW_ERRORS = re.compile(r"cannot open shared object file|No such file or directory|Traceback \(most recent|"
                        r"\[Errno \d+\]|\b(?:Key|Value|Type|Attribute|Index|OS|Runtime|Lookup)Error\b|"
                        r"\bexception\b", re.I)
#: A paragraph shorter than this may repeat (a caption's "[PNG](...)" line, "None.").
LONGEST_REPEAT = 80


def _blocks(text: str) -> list[str]:
    return [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every heading: its text up to the next heading."""
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]


def _tables(text: str) -> list[list[list[str]]]:
    """Each pipe table's body rows as lists of cells (the header and rule left out)."""
    found, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            found.append(rows[2:])
            rows = []
    return found


def repeated(text: str) -> list[str]:
    """Sections whose bodies are the same words, and paragraphs of LONGEST_REPEAT or more
    characters that stand in the report more than once."""
    faults, bodies = [], {}
    for heading, body in _sections(text):
        if body and not body.startswith("#"):
            if body in bodies:
                faults.append(f"{heading!r} repeats {bodies[body]!r} word for word")
            bodies.setdefault(body, heading)
    seen = set()
    for block in _blocks(text):
        if block.startswith(("#", "|", "![", "[")) or len(block) < LONGEST_REPEAT:
            continue
        if block in seen:
            faults.append(f"a paragraph stands twice: {block[:120]!r}")
        seen.add(block)
    return faults


def raw_errors(text: str) -> list[str]:
    return [f"an error's raw text: {line.strip()[:160]!r}" for line in text.splitlines() if RAW_ERRORS.search(line)]


def empty_tables(text: str) -> list[str]:
    """Tables whose every cell past the first column (the row's name) is empty."""
    return [f"a table with every cell empty: {rows[0]!r}" for rows in _tables(text)
            if rows and all(not cell for row in rows for cell in row[1:])]


def faults(text: str) -> list[str]:
    return repeated(text) + raw_errors(text) + empty_tables(text)
