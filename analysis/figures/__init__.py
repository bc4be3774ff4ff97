"""The figures and tables of the paper, each registered once as an item (render/items.py):
the paper (analysis/paper) draws every one of them, the node report (analysis/report) the
ones its list of item keys names. Below report and paper, so that both import it."""
from __future__ import annotations

from ..render.items import Item, registry


def every() -> list[Item]:
    """Every item of the paper, in its order (each module of this package registers its own)."""
    return registry(__name__)


def by_key(key: str) -> Item:
    """The item ``key`` (KeyError naming the keys there are where it is not one)."""
    found = {i.key: i for i in every()}
    if key not in found:
        raise KeyError(f"no item {key!r}; items: {', '.join(found)}")
    return found[key]
