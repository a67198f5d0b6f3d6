"""Recall indexes: the BM25 and field postings of one candidate list, one ``recall`` memo each."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.cache.table import RowViews

__all__ = ["KEPT", "RecallIndexes"]

#: Indexes kept in memory: the candidate lists of one tip with and without stale memories, and
#: the stale ones alone (what a recall counts as held back, :func:`gitmem.api.stale.held_back`).
KEPT = 3
_BASES_TRIED = 2
_KIND = "recall"


class RecallIndexes:
    """:class:`gitmem.context.recall.RecallIndex` objects saved per candidate list.

    An index is keyed by ``<memories tree>:<digest>``, a digest of the candidate ids (which
    fix every document's text) and of :attr:`RecallIndex.VERSION` (which fixes the analysis).
    The payload is ``{"key": (tree, digest, version), "index": RecallIndex.to_payload()}``;
    one whose key is not the one asked for is deleted and reported, never used. A missing
    index is derived from the most recently saved one
    (:meth:`gitmem.context.recall.RecallIndex.derive`: after a write, only the memories it
    changed are indexed) and saved whole when asked for a second time
    (:meth:`~gitmem.cache.db.CacheDB.asked_before`), or built and saved. The last
    :data:`KEPT` indexes provided are also kept in memory, so that a long-running process
    (``tur mcp``) recalling again at the same tip reads nothing.

    Args:
        db: the cache database.
    """

    def __init__(self, db: CacheDB) -> None:
        self.db = db
        self._kept: dict[str, Any] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the database is cleared by the caller)."""
        self._kept.clear()

    def provider(self, tree: str | None) -> Callable[[Sequence[Any]], Any]:
        """A function ``candidates -> RecallIndex``, loading, deriving or building (and saving) the index.

        ``candidates`` is a :class:`RowViews` or a sequence of records (anything with ``id``
        and ``content``). With ``tree`` ``None`` (no records) nothing is saved. A saved index
        of the wrong structure is deleted, reported and built again.
        """
        from gitmem.context.recall import RecallIndex, index_columns

        def provide(candidates: Sequence[Any]) -> RecallIndex:
            listed = candidates.ids if isinstance(candidates, RowViews) else [m.id for m in candidates]
            keyed = "\n".join([RecallIndex.VERSION, *listed]).encode()
            digest = hashlib.blake2b(keyed, digest_size=12).hexdigest()
            name = f"{tree}:{digest}" if tree else None
            if name is not None and name in self._kept:
                return self._kept[name]
            if name is not None:
                loaded = self._load(name, (tree, digest, RecallIndex.VERSION))
                if loaded is not None and loaded.size == len(candidates):
                    return self._keep(name, loaded).bind(listed)
                if loaded is not None:
                    self.db.reject(_KIND, name, Untrusted("bad structure: index of another document list"))
            columns: Mapping[str, Sequence[Any]]
            if isinstance(candidates, RowViews):
                texts = candidates.contents
                columns = _row_columns(candidates)
            else:
                texts, columns = [m.content for m in candidates], index_columns(candidates)
            base = self._latest(name) if name is not None else None
            index = (base.derive(listed, texts, **columns) if base is not None
                     else RecallIndex.build(texts, ids=listed, **columns))
            if name is not None:
                # Derived from a saved index, it is cheap to derive again: saved (~6 MB at
                # 10,000 memories) once asked for twice.
                if base is None or self.db.asked_before(_KIND, name):
                    self.db.put(_KIND, name, {"key": (tree, digest, RecallIndex.VERSION),
                                              "index": index.to_payload()})
                self._keep(name, index)
            return index.bind(listed)

        return provide

    def _load(self, name: str, key: tuple | None) -> Any:
        """The index saved as ``name`` (for ``key``, when given), or ``None``.

        A bad one is deleted and reported when ``key`` is given (when the caller asked for
        that index; as a base to derive from, one of another version is passed over).
        """
        from gitmem.context.recall import RecallIndex

        payload = self.db.get(_KIND, name)
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict) or (key is not None and payload.get("key") != key):
                raise ValueError("built for another tree or candidate list")
            return RecallIndex.from_payload(payload["index"])
        except (KeyError, TypeError, ValueError) as exc:
            if key is not None:
                self.db.reject(_KIND, name, Untrusted(f"bad structure: {exc}"))
            return None

    def _keep(self, name: str, index: Any) -> Any:
        self._kept[name] = index
        while len(self._kept) > KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> Any:
        """The index held in memory or saved most recently but ``exclude``, to derive a new one from."""
        for kept_name in reversed(self._kept):  # held in memory (``tur mcp``): nothing to read
            if kept_name != exclude:
                return self._kept[kept_name]
        for name in self.db.keys(_KIND)[:_BASES_TRIED]:
            if name != exclude:
                found = self._load(name, None)
                if found is not None:
                    return found
        return None


def _row_columns(rows: RowViews) -> dict[str, Sequence[Any]]:
    """What :func:`gitmem.context.recall.index_columns` gives of records, from the table's columns.

    The author is the record's own ``author`` field (``None`` for records that predate it:
    their neighbours are found among the other unknown authors' memories).
    """
    prov, author = rows.table.columns["prov"], rows.table.columns["author"]
    picked = rows.rows
    return {"observed": rows.observed,
            "authors": [author[r] for r in picked],
            "refs": [None if prov[r] is None else prov[r][2] for r in picked]}
