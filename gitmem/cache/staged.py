"""Rows of records a bulk write is producing: saved as they come, their hot fields kept in memory.

A write that rewrites most records of a large store (a cold ``tur verify``) hands each record
here as soon as its new blob is written (:meth:`StagedRows.add`), and lets the model go: its
row (hot fields and mapping) goes to the database's ``record`` table, a few hundred at a
time, and only the hot fields stay in memory (what the new tree's table holds anyway, and
what a :class:`~gitmem.cache.views.MemoryView` of it reads). Once the commit is made, the
table of the new tree is made from the parent's rows and these
(:meth:`gitmem.cache.RecordCache.after_bulk_write`), parsing no blob this process wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitmem.cache.views import STATUSES, TYPES, MemoryView

if TYPE_CHECKING:
    from gitmem.cache.db import CacheDB
    from gitmem.record.models import Memory

__all__ = ["StagedRows"]

_BATCH = 256


class StagedRows:
    """The records a bulk write has produced so far, by id (see the module docstring).

    Args:
        db: the cache database the rows are saved in.
        row_of: a record's hot row (:func:`gitmem.cache.records.row_of`).
        chunk_of: a record's marshalled mapping (:func:`gitmem.cache.records.chunk_of`).
    """

    def __init__(self, db: CacheDB, row_of: Callable[[Memory], tuple],
                 chunk_of: Callable[[Memory], bytes]) -> None:
        self._db = db
        self._row_of, self._chunk_of = row_of, chunk_of
        self._rows: dict[str, tuple[str, tuple]] = {}
        self._pending: list[tuple[str, str, tuple, bytes]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._rows

    def add(self, memory: Memory, blob: str, like: tuple | None = None) -> MemoryView:
        """Take ``memory`` as written in ``blob``; return a view of it (the model can go).

        ``like`` is the row the record had before: the values it keeps (its content, most
        often its provenance) are shared with that row rather than held twice. Adding an id
        again replaces its row.
        """
        row = self._row_of(memory)
        if like is not None:
            row = tuple(map(_shared, row, like))
        self._rows[memory.id] = (blob, row)
        self._pending.append((blob, memory.id, row, self._chunk_of(memory)))
        if len(self._pending) >= _BATCH:
            self.flush()
        return _view(memory.id, blob, row)

    def flush(self) -> None:
        """Save the rows added since the last flush."""
        if self._pending:
            self._db.put_rows(self._pending)
            self._pending = []

    def row_blob(self, memory_id: str) -> str | None:
        """The blob id ``memory_id`` was staged as, or ``None``."""
        found = self._rows.get(memory_id)
        return found[0] if found is not None else None

    def row(self, memory_id: str, blob: str) -> tuple | None:
        """The hot row of ``memory_id`` staged as ``blob``; ``None`` when not staged, or as another blob."""
        found = self._rows.get(memory_id)
        if found is None or found[0] != blob:
            return None
        self.flush()  # its mapping is then in the database too
        return found[1]

    def close(self) -> None:
        """Save what is pending and forget every row."""
        self.flush()
        self._rows.clear()


def _shared(new: object, old: object) -> object:
    """``old`` when it equals ``new`` (same type), a tuple sharing the equal parts, else ``new``."""
    if type(new) is not type(old):
        return new
    if new == old:
        return old
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old):
        return tuple(o if type(n) is type(o) and n == o else n for n, o in zip(new, old, strict=True))
    return new


def _view(memory_id: str, blob: str, row: tuple) -> MemoryView:
    """A :class:`MemoryView` of a staged row (its ``row`` is -1: it is in no table)."""
    kind, content, conf, status, prov, decay, rels, refuted, verified, _legacy, author, vis = row
    return MemoryView(-1, memory_id, blob, TYPES[kind], content, conf, STATUSES[status], prov, decay,
                      rels, refuted, verified, author, visibility=vis)
