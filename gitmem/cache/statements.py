"""Statement indexes: the terms of every live memory's statement, one ``statements`` memo per tree.

What a write compares a new statement with (the near-duplicate warning of ``learn``): a
:class:`gitmem.context.similarity.StatementIndex` of the records of one ``memories`` tree that are
not refuted, so that the comparison counts postings instead of analysing every record.

An index is saved whole, keyed by its tree: its parts
(:meth:`~gitmem.context.similarity.StatementIndex.to_parts`) in one marshal payload, read back as
bytes that the index decodes as it uses them. A write derives the index of the tree it makes
from its parent's (:meth:`StatementIndexes.after_write`: only the statements it changed are
analysed) and saves it; a tree with no index gets one derived from the latest saved index by
the statements that differ, or built (:meth:`StatementIndexes.for_table`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted

__all__ = ["StatementIndexes"]

#: Indexes kept in memory (the tip's, and the one a write derives from).
_KEPT = 2
#: Above this share of changed statements, an index is built rather than derived.
_DERIVE_AT_MOST = 0.5
_KIND = "statements"


class _Parts:
    """The parts of a saved index, as :class:`~gitmem.context.similarity.StoredParts` reads them."""

    def __init__(self, parts: dict[str, bytes]) -> None:
        self._parts = parts

    def size(self, name: str) -> int:
        return len(self._parts[name])

    def read(self, name: str, start: int = 0, stop: int | None = None) -> bytes:
        part = self._parts[name]
        return part[start:stop] if start or stop is not None else part


class StatementIndexes:
    """:class:`~gitmem.context.similarity.StatementIndex` objects saved per ``memories`` tree.

    The payload is ``{"tree": tree, "version": StatementIndex.VERSION, "rows": n, "parts":
    {name: bytes}}``; one of another version is deleted as such, one of another tree (copied)
    or of the wrong structure deleted and reported, never used.

    Args:
        db: the cache database.
    """

    def __init__(self, db: CacheDB) -> None:
        self.db = db
        self._kept: dict[str, Any] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the database is cleared by the caller)."""
        self._kept.clear()

    def latest_held(self) -> str | None:
        """The tree of the index this process used or saved last, or ``None``."""
        return next(reversed(self._kept), None)

    def load(self, tree: str) -> Any:
        """The saved index of ``tree``, or ``None`` (absent, or untrusted: then deleted and reported)."""
        from gitmem.context.similarity import StatementIndex

        found = self._kept.get(tree)
        if found is not None:
            return found
        payload = self.db.get(_KIND, tree)
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict) or payload.get("tree") != tree:
                raise ValueError("saved for another tree")
            if payload.get("version") != StatementIndex.VERSION:
                raise Untrusted(f"index version {payload.get('version')!r}, not {StatementIndex.VERSION!r}",
                                foreign=True)
            parts = payload["parts"]
            if not isinstance(parts, dict) or not all(
                    isinstance(n, str) and isinstance(p, bytes) for n, p in parts.items()):
                raise ValueError("parts of the wrong type")
            index = StatementIndex.stored(payload["rows"], _Parts(parts))
        except Untrusted as exc:
            self.db.reject(_KIND, tree, exc)
            return None
        except (KeyError, TypeError, ValueError) as exc:
            self.db.reject(_KIND, tree, Untrusted(f"bad structure: {exc}"))
            return None
        return self._keep(tree, index)

    def for_table(self, table: Any, live: Mapping[str, str]) -> Any:
        """The index of ``table``'s tree, whose live statements are ``live`` (id -> content).

        Loaded; else derived from the latest saved index by the statements that differ;
        else built. Saved.
        """
        from gitmem.context.similarity import StatementIndex

        tree = table.tree
        index = self.load(tree)
        if index is not None:
            return index
        base = self._latest(tree)
        if base is not None:
            old = base.statements()
            changes: dict[str, str | None] = {i: c for i, c in live.items() if old.get(i) != c}
            changes.update((i, None) for i in old if i not in live)
            if len(changes) <= _DERIVE_AT_MOST * max(len(live), 1):
                return self._save(tree, base.derive(changes))
        return self._save(tree, StatementIndex.build(live.items()))

    def after_write(self, base: str, tree: str, changes: Mapping[str, str | None]) -> None:
        """Save ``tree``'s index derived from ``base``'s by ``changes``, when ``base``'s is saved.

        Args:
            base: the ``memories`` tree the write was built on.
            tree: the one it made.
            changes: id -> new statement, or ``None`` for a record removed or refuted.
        """
        index = self.load(base)
        if index is not None:
            self._save(tree, index.derive(index.changes(changes)))

    def _save(self, tree: str, index: Any) -> Any:
        """Save ``index`` as ``tree``'s and keep it in memory; return it."""
        from gitmem.context.similarity import StatementIndex

        rows, parts = index.to_parts()
        self.db.put(_KIND, tree, {"tree": tree, "version": StatementIndex.VERSION, "rows": rows,
                                  "parts": parts})
        return self._keep(tree, index)

    def _keep(self, tree: str, index: Any) -> Any:
        self._kept.pop(tree, None)
        self._kept[tree] = index
        while len(self._kept) > _KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> Any:
        """The most recently held or saved index but ``exclude``'s, or ``None``."""
        for kept in reversed(self._kept):
            if kept != exclude:
                return self._kept[kept]
        for tree in self.db.keys(_KIND)[:2]:
            if tree != exclude:
                found = self.load(tree)
                if found is not None:
                    return found
        return None
