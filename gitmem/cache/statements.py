"""Statement indexes, ``similar-<tree>.bin``: the terms of every live memory's statement.

What a write compares a new statement with (the near-duplicate warning of ``learn``): a
:class:`gitmem.similarity.StatementIndex` of the records of one ``memories`` tree that are
not refuted, so that the comparison counts postings instead of analysing every record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitmem.cache.files import CacheFiles, Untrusted

__all__ = ["StatementIndexes", "statements_name"]

#: Indexes kept in memory (the tip's, and the one a write derives from).
_KEPT = 2
#: Above this share of changed statements, an index is built rather than derived.
_DERIVE_AT_MOST = 0.5


def statements_name(tree: str) -> str:
    """The file name of ``tree``'s statement index."""
    return f"similar-{tree}.bin"


class StatementIndexes:
    """:class:`~gitmem.similarity.StatementIndex` objects saved per ``memories`` tree.

    The payload is ``{"key": (tree, version), "index": StatementIndex.to_payload()}``; one
    whose key is not the one asked for (a file copied from another tree) is deleted and
    reported, never used. A write derives the index of the tree it made from its parent's
    (:meth:`after_write`: only the statements it changed are analysed); a tree with no
    index gets one derived from the latest saved index by the statements that differ, or
    built (:meth:`for_table`).

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheFiles) -> None:
        self.files = files
        self._kept: dict[str, Any] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the files are cleared by the caller)."""
        self._kept.clear()

    def load(self, tree: str) -> Any:
        """The saved index of ``tree``, or ``None`` (absent, or untrusted: then deleted and reported)."""
        from gitmem.similarity import StatementIndex

        found = self._kept.get(tree)
        if found is not None:
            return found
        name = statements_name(tree)
        payload = self.files.read_payload(name, "similar")
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict) or payload.get("key") != (tree, StatementIndex.VERSION):
                raise ValueError("built for another tree or version")
            index = StatementIndex.from_payload(payload["index"])
        except (KeyError, TypeError, ValueError) as exc:
            self.files.reject(self.files.path(name), Untrusted(f"bad structure: {exc}"))
            return None
        return self._keep(tree, index)

    def save(self, tree: str, index: Any) -> Any:
        """Write ``index`` as ``tree``'s and keep it in memory; return it."""
        from gitmem.similarity import StatementIndex

        self.files.write_payload(statements_name(tree), "similar",
                                 {"key": (tree, StatementIndex.VERSION), "index": index.to_payload()})
        return self._keep(tree, index)

    def for_table(self, table: Any, live: Mapping[str, str]) -> Any:
        """The index of ``table``'s tree, whose live statements are ``live`` (id -> content).

        Loaded; else derived from the latest saved index by the statements that differ;
        else built. Saved.
        """
        from gitmem.similarity import StatementIndex

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
                return self.save(tree, base.derive(changes))
        return self.save(tree, StatementIndex.build(live.items()))

    def after_write(self, base: str, tree: str, changes: Mapping[str, str | None]) -> None:
        """Save ``tree``'s index derived from ``base``'s by ``changes``, when ``base``'s is saved.

        Args:
            base: the ``memories`` tree the write was built on.
            tree: the one it made.
            changes: id -> new statement, or ``None`` for a record removed or refuted.
        """
        index = self.load(base)
        if index is not None:
            self.save(tree, index.derive(changes))

    def _keep(self, tree: str, index: Any) -> Any:
        self._kept.pop(tree, None)
        self._kept[tree] = index
        while len(self._kept) > _KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> Any:
        """The most recently saved index but ``exclude``'s, or ``None``."""
        for kept in reversed(self._kept):
            if kept != exclude:
                return self._kept[kept]
        for path in self.files.newest_first("similar-*.bin")[:2]:
            tree = path.stem.split("-", 1)[1]
            if tree != exclude:
                found = self.load(tree)
                if found is not None:
                    return found
        return None
