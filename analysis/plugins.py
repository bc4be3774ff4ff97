"""Packages whose modules register builders when imported (the report's sections, the
paper's items): import every module of one once, so its registry is complete."""
from __future__ import annotations

import importlib
import pkgutil


def import_all(package: str) -> None:
    """Import every module of ``package`` (a dotted name), skipping dunder modules."""
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not module.name.startswith("__"):
            importlib.import_module(f"{package}.{module.name}")
