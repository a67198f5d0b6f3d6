"""Names given to pygit2: one string object per value (works around a pygit2 reference leak)."""

from __future__ import annotations

import sys

__all__ = ["tree_name"]


def tree_name(name: str) -> str:
    """``name`` (a path or entry name) as the one string object of its value, for pygit2.

    pygit2 1.21 keeps a reference to every ``str`` given to ``Tree[...]``, ``in tree``,
    ``tree / name`` and ``TreeBuilder.get``/``insert``/``remove`` (a reference leak in its
    path conversion), so a new string object per lookup stays alive for good: a long-running
    process (``tur mcp``, the watcher) held a few paths more after every write. Looking up
    with the interned string turns that into a reference count on one object per distinct
    name. Every pygit2 lookup by name in :mod:`gitmem.store` goes through here.
    """
    return sys.intern(name)
