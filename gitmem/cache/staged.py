"""Rows of records a bulk write is producing: their hot fields in memory, their mappings on disk.

A write that rewrites most records of a large store (a cold ``tur verify``) hands each record
here as soon as its new blob is written (:meth:`StagedRows.add`), and lets the model go: what
is kept per record is its row of hot fields (what the new tree's table holds anyway, and what
a :class:`~gitmem.cache.views.MemoryView` of it reads) and where its marshalled mapping is in
a spool file. Once the commit is made, the table of the new tree is built from the parent's
rows and these (:meth:`gitmem.cache.RecordCache.after_bulk_write`), parsing no blob this
process wrote, so that memory does not grow with the number of records rewritten.
"""

from __future__ import annotations

import io
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gitmem.cache.views import STATUSES, TYPES, MemoryView

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = ["Spool", "StagedRows"]


class Spool:
    """Bytes appended to an anonymous file in ``root`` (in memory when it cannot be made there).

    Each :meth:`write` returns where its bytes start; :meth:`read` gives them back and
    :meth:`blocks` gives everything written, in order, a block at a time.
    """

    def __init__(self, root: Path) -> None:
        handle: IO[bytes]
        try:
            root.mkdir(parents=True, exist_ok=True)
            # Deleted when closed, or when the process dies: nothing is left in the cache.
            handle = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by close()
        except OSError:
            handle = io.BytesIO()
        self._handle = handle
        self._appending = True  # a seek flushes the write buffer: only after a read
        self.size = 0

    def write(self, data: bytes) -> int:
        """Append ``data``; return its offset (bytes) in the spool."""
        at = self.size
        if not self._appending:
            self._handle.seek(at)
            self._appending = True
        self._handle.write(data)
        self.size += len(data)
        return at

    def read(self, start: int, length: int) -> bytes:
        """The ``length`` bytes written at ``start``."""
        self._appending = False
        self._handle.seek(start)
        return self._handle.read(length)

    def blocks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """Everything written, in order, in blocks of up to ``size`` bytes."""
        self._appending = False
        self._handle.seek(0)
        left = self.size
        while left > 0:
            block = self._handle.read(min(size, left))
            if not block:
                return
            left -= len(block)
            yield block

    def close(self) -> None:
        """Release the file (it is deleted)."""
        self._handle.close()


class StagedRows:
    """The records a bulk write has produced so far, by id (see the module docstring).

    Args:
        root: the cache directory, where the mappings are spooled.
        row_of: a record's hot row (:func:`gitmem.cache.records.row_of`).
        chunk_of: a record's marshalled mapping (:func:`gitmem.cache.records.chunk_of`).
    """

    def __init__(self, root: Path, row_of: Callable[[Memory], tuple],
                 chunk_of: Callable[[Memory], bytes]) -> None:
        self._spool = Spool(root)
        self._row_of, self._chunk_of = row_of, chunk_of
        self._rows: dict[str, tuple[str, tuple, int, int, int]] = {}

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
        chunk = self._chunk_of(memory)
        start = self._spool.write(chunk)
        self._rows[memory.id] = (blob, row, zlib.crc32(chunk), start, len(chunk))
        return _view(memory.id, blob, row)

    def row_blob(self, memory_id: str) -> str | None:
        """The blob id ``memory_id`` was staged as, or ``None``."""
        found = self._rows.get(memory_id)
        return found[0] if found is not None else None

    def row(self, memory_id: str, blob: str) -> tuple[tuple, int, bytes] | None:
        """(hot row, CRC-32 of the mapping, the marshalled mapping) of ``memory_id`` staged as ``blob``.

        ``None`` when it was not staged, or staged as another blob.
        """
        found = self._rows.get(memory_id)
        if found is None or found[0] != blob:
            return None
        _, row, crc, start, length = found
        return row, crc, self._spool.read(start, length)

    def close(self) -> None:
        """Forget every row and delete the spool."""
        self._rows.clear()
        self._spool.close()


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
    kind, content, conf, status, prov, decay, rels, refuted, verified, _legacy, author = row
    return MemoryView(-1, memory_id, blob, TYPES[kind], content, conf, STATUSES[status], prov, decay,
                      rels, refuted, verified, author)
