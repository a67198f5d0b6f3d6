"""Statement indexes, ``similar-<tree>.bin``: the terms of every live memory's statement.

What a write compares a new statement with (the near-duplicate warning of ``learn``): a
:class:`gitmem.similarity.StatementIndex` of the records of one ``memories`` tree that are
not refuted, so that the comparison counts postings instead of analysing every record.

An index is saved whole (``similar-<tree>.bin``) or, after a write, as its change to a whole
one (``similar-<tree>-<base>.bin``: the statements changed or removed since ``<base>``'s,
cumulated over the writes since that one), which its reader applies to the whole index
(:meth:`StatementIndex.derive` analyses only those statements). At 100,000 memories a whole
index is about 15 MB; a change, a few hundred bytes. Past :data:`CHANGE_STATEMENTS`
statements a write saves the index whole again. Both are named by tree ids and the change
names its base, so a reader never applies a change to another tree's index;
:meth:`gitmem.cache.files.CacheFiles.prune` keeps the whole index a kept change needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitmem.cache.files import CacheFiles, Untrusted

__all__ = ["CHANGE_STATEMENTS", "StatementIndexes", "statements_name"]

#: Indexes kept in memory (the tip's, and the one a write derives from).
_KEPT = 2
#: Above this share of changed statements, an index is built rather than derived.
_DERIVE_AT_MOST = 0.5
#: Statements a saved change may hold (changed or removed since its whole index); past it a
#: write saves the index whole (every reader analyses the statements of the change).
CHANGE_STATEMENTS = 64


def statements_name(tree: str, base: str | None = None) -> str:
    """The file name of ``tree``'s statement index: whole, or its change to ``base``'s."""
    return f"similar-{tree}.bin" if base is None else f"similar-{tree}-{base}.bin"


class StatementIndexes:
    """:class:`~gitmem.similarity.StatementIndex` objects saved per ``memories`` tree.

    A whole index's payload is ``{"key": (tree, version), "index": StatementIndex.to_payload()}``,
    a change's ``{"key": (tree, version), "base": base tree, "changes": {id: statement or
    None}}``; one whose key is not the one asked for (a file copied from another tree) or of
    the wrong structure is deleted and reported, never used. A write derives the index of
    the tree it made from its parent's (:meth:`after_write`: only the statements it changed
    are analysed); a tree with no index gets one derived from the latest saved index by the
    statements that differ, or built (:meth:`for_table`).

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheFiles) -> None:
        self.files = files
        self._kept: dict[str, Any] = {}
        #: Tree -> how its index is saved: ``None`` whole, else the tree of the whole index
        #: its change applies to (kept in memory as a :class:`ChangedIndex` on that index).
        self._saved: dict[str, str | None] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the files are cleared by the caller)."""
        self._kept.clear()
        self._saved.clear()

    def saved(self, tree: str) -> bool:
        """Whether an index of ``tree`` is saved, whole or as a change (none is read)."""
        return tree in self._saved or self.files.path(statements_name(tree)).exists() \
            or bool(self.files.newest_first(f"similar-{tree}-*.bin"))

    def load(self, tree: str) -> Any:
        """The saved index of ``tree``, or ``None`` (absent, or untrusted: then deleted and reported).

        A :class:`~gitmem.similarity.StatementIndex`, or for a change a
        :class:`~gitmem.similarity.ChangedIndex` on the whole index it names; a change whose
        whole index is gone is not used (the caller derives or builds the index again).
        """
        found = self._kept.get(tree)
        if found is not None:
            return found
        index = self._load_whole(tree)
        if index is not None:
            return index
        for path in self.files.newest_first(f"similar-{tree}-*.bin"):
            index = self._load_change(tree, path.stem[len(f"similar-{tree}-"):])
            if index is not None:
                return index
        return None

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
        base_tree, base = self._latest(tree)
        if base_tree is not None and base is not None:
            old = base.statements()
            changes: dict[str, str | None] = {i: c for i, c in live.items() if old.get(i) != c}
            changes.update((i, None) for i in old if i not in live)
            if len(changes) <= _DERIVE_AT_MOST * max(len(live), 1):
                return self._save_derived(tree, base_tree, base, changes)
        return self._save_whole(tree, StatementIndex.build(live.items()))

    def after_write(self, base: str, tree: str, changes: Mapping[str, str | None]) -> None:
        """Save ``tree``'s index derived from ``base``'s by ``changes``, when ``base``'s is saved.

        Args:
            base: the ``memories`` tree the write was built on.
            tree: the one it made.
            changes: id -> new statement, or ``None`` for a record removed or refuted.
        """
        index = self.load(base)
        if index is not None:
            self._save_derived(tree, base, index, index.changes(changes))

    # -- reading and writing ------------------------------------------------------------------

    def _load_whole(self, tree: str) -> Any:
        """The index saved whole for ``tree`` (held in memory, or read), or ``None``."""
        from gitmem.similarity import StatementIndex

        kept = self._kept.get(tree)
        if isinstance(kept, StatementIndex) and tree in self._saved and self._saved[tree] is None:
            return kept
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
        self._saved[tree] = None
        return self._keep(tree, index)

    def _load_change(self, tree: str, base: str) -> Any:
        """``tree``'s index from its change to ``base``'s whole index, or ``None``."""
        from gitmem.similarity import ChangedIndex, StatementIndex

        name = statements_name(tree, base)
        payload = self.files.read_payload(name, "similar")
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict) or payload.get("key") != (tree, StatementIndex.VERSION) \
                    or payload.get("base") != base or base == tree:
                raise ValueError("made for another tree, base or version")
            changes = payload["changes"]
            if not isinstance(changes, dict) or not all(
                    isinstance(i, str) and (c is None or isinstance(c, str)) for i, c in changes.items()):
                raise ValueError("changes of the wrong type")
        except (KeyError, TypeError, ValueError) as exc:
            self.files.reject(self.files.path(name), Untrusted(f"bad structure: {exc}"))
            return None
        whole = self._load_whole(base)
        if whole is None:
            return None  # pruned or cleared: the caller derives the index again
        self._saved[tree] = base
        return self._keep(tree, ChangedIndex(whole, changes))

    def _save_derived(self, tree: str, parent: str, index: Any, changes: Mapping[str, str | None]) -> Any:
        """Save ``index`` (``parent``'s) derived by ``changes`` as ``tree``'s; return the new index.

        As a change to the whole index ``index`` is or changes, when that one is saved and
        the change stays within :data:`CHANGE_STATEMENTS`; else whole.
        """
        from gitmem.similarity import ChangedIndex, StatementIndex

        base = self._saved.get(parent, "")
        whole: StatementIndex | None = None
        if base is None and isinstance(index, StatementIndex):
            base, whole, merged = parent, index, dict(changes)
        elif base and isinstance(index, ChangedIndex):
            whole, merged = index.base, {**index.changed, **changes}
        if whole is not None and base != tree and len(merged) <= CHANGE_STATEMENTS:
            payload = {"key": (tree, StatementIndex.VERSION), "base": base, "changes": merged}
            if self.files.write(statements_name(tree, base), "similar", payload):
                self._saved[tree] = base
            return self._keep(tree, ChangedIndex(whole, merged))
        derived = index.derive(changes)
        return self._save_whole(tree, derived.whole() if isinstance(derived, ChangedIndex) else derived)

    def _save_whole(self, tree: str, index: Any) -> Any:
        """Write ``index`` (a whole one) as ``tree``'s and keep it in memory; return it."""
        from gitmem.similarity import StatementIndex

        payload = {"key": (tree, StatementIndex.VERSION), "index": index.to_payload()}
        if self.files.write(statements_name(tree), "similar", payload):
            self._saved[tree] = None
        return self._keep(tree, index)

    def _keep(self, tree: str, index: Any) -> Any:
        self._kept.pop(tree, None)
        self._kept[tree] = index
        while len(self._kept) > _KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> tuple[str | None, Any]:
        """The most recently saved index but ``exclude``'s, and its tree; or ``(None, None)``."""
        for kept in reversed(self._kept):  # held in memory and saved: what a change can be saved to
            if kept != exclude and kept in self._saved:
                return kept, self._kept[kept]
        for path in self.files.newest_first("similar-*.bin")[:2]:
            tree = path.stem.split("-", 2)[1]
            if tree != exclude:
                found = self.load(tree)
                if found is not None:
                    return tree, found
        for kept in reversed(self._kept):  # not saved (the directory cannot be written)
            if kept != exclude:
                return kept, self._kept[kept]
        return None, None
