"""The records of one tree as columns: :class:`RecordTable`, and :class:`RowViews` of some rows.

:class:`RecordTable` holds the hot fields of every record (what wake, recall, status and
``list`` read) as parallel columns, builds :class:`~gitmem.cache.views.MemoryView` stand-ins
from them, and finds a record's full mapping in the records file on demand.
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.cache.db import Section, Untrusted
from gitmem.cache.reader import Skipped, Snapshot
from gitmem.cache.views import STATUSES, TYPES, MemoryView
from gitmem.vocabulary import RelationType, Status

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = ["COLUMNS", "RecordTable", "RowViews"]

COLUMNS = ("type", "content", "conf", "status", "prov", "decay", "rels", "refuted", "verified", "legacy",
           "author")
"""The hot columns of a table, one value per record (see :func:`gitmem.cache.records.row_of`)."""


class RowViews(Sequence):
    """Some rows of a :class:`RecordTable` as a sequence of :class:`MemoryView`, built on access.

    ``ids`` and ``contents`` come from the columns, so that indexing or keying all of them
    builds no view.
    """

    def __init__(self, table: RecordTable, rows: list[int]) -> None:
        self.table = table
        self.rows = rows
        self._built: dict[int, MemoryView] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, position):
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self.rows)))]
        found = self._built.get(position)
        if found is None:
            found = self._built[position] = self.table.view(self.rows[position])
        return found

    @property
    def ids(self) -> list[str]:
        """The memory id of each row."""
        ids = self.table.ids
        return [ids[r] for r in self.rows]

    @property
    def contents(self) -> list[str]:
        """The content of each row."""
        content = self.table.columns["content"]
        return [content[r] for r in self.rows]

    @property
    def observed(self) -> list[str | None]:
        """``provenance.observed_at`` of each row as ISO 8601 text (``None``: no provenance)."""
        prov = self.table.columns["prov"]
        return [None if prov[r] is None else prov[r][0] for r in self.rows]


# -- the records of one tree ----------------------------------------------------------------------


@dataclass
class RecordTable:
    """Every record of one ``memories`` tree, from the records file or freshly parsed.

    Rows are sorted by id; ``columns`` maps each name of :data:`COLUMNS` to one value per
    row. ``bad`` lists the blobs that are not readable records; :attr:`entry_order` gives
    every entry (readable or not) in the tree's own order, as
    :meth:`gitmem.store.Store.entries` lists them. ``path`` is the records file (``None``:
    not written), whose records section starts at byte ``records_at``; row *i*'s mapping is
    bytes ``offsets[s]:offsets[s + 1]`` of it, where ``s`` is ``origin[i]`` (``i`` when
    ``origin`` is ``None``), with CRC-32 ``crcs[i]``. A table derived from another by a
    write (:mod:`gitmem.cache.records`) reads the rows it shares with that table from that
    table's file and holds the mappings of the rows the write changed in ``overlay``.
    ``parsed`` holds the full records already built, by row.
    """

    tree: str | None
    ids: list[str]
    blobs: list[str]
    columns: dict[str, list]
    bad: list[Skipped]
    order: list[str]
    """Every entry's id (readable or not) in the tree's own order."""
    layout: list[Skipped] = field(default_factory=list)
    """Entries under ``memories/`` that are not records where their id says (never read)."""
    path: Section | None = None
    records_at: int = 0
    offsets: array = field(default_factory=lambda: array("q"))
    crcs: array = field(default_factory=lambda: array("I"))
    parsed: dict[int, Memory] = field(default_factory=dict)
    local: dict[int, str] = field(default_factory=dict)
    """This clone's working-tree overlay: row -> why uncommitted changes make it stale (set by
    the read path on every read, never saved; see ``gitmem.api.records.Records.table``)."""
    origin: array | None = None
    """Row of the records section each row's mapping is in (``-1``: in ``overlay``)."""
    overlay: dict[int, bytes] = field(default_factory=dict)
    """Mappings (marshalled) of rows not in the records section, by row."""
    base: str | None = None
    """The tree whose records file this table's rows are read from, when it is derived."""
    since: tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None = None
    """For a derived table, when its delta says: the commits from the one whose tree is
    :attr:`base` to this table's (each the parent of the next), and the ids of the records
    each of the later ones wrote; else ``None``."""
    _views: list[MemoryView] | None = None
    _rows: dict[str, int] | None = None
    _legacy: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, memory_id: str) -> int | None:
        """Row of a readable record, or ``None``."""
        if self._rows is None:
            self._rows = {memory_id: i for i, memory_id in enumerate(self.ids)}
        return self._rows.get(memory_id)

    def legacy_index(self) -> dict[str, list[str]]:
        """Each legacy id (``legacy_id`` of imported records) -> the ids that carry it (built once)."""
        if self._legacy is None:
            index: dict[str, list[str]] = {}
            for row, names in enumerate(self.columns["legacy"]):
                for name in names:
                    index.setdefault(name, []).append(self.ids[row])
            self._legacy = index
        return self._legacy

    def entry_order(self) -> list[tuple[str, str]]:
        """(id, blob id) of every entry, readable or not, in the tree's own order.

        Raises:
            Untrusted: the stored order names an id the table does not hold.
        """
        blob_of = dict(zip(self.ids, self.blobs, strict=True))
        blob_of.update((s.memory_id, s.blob_id) for s in self.bad)
        try:
            return [(mid, blob_of[mid]) for mid in self.order]
        except KeyError as exc:
            raise Untrusted(f"entry order names unknown id {exc}") from None

    def views(self) -> list[MemoryView]:
        """A :class:`MemoryView` per readable record, sorted by id (built once)."""
        if self._views is None:
            self._views = self._build_views()
        return self._views

    def recall_selection(self, include_stale: bool) -> tuple[RowViews, dict[str, str]]:
        """:func:`gitmem.context.recall.select_candidates` of this table's views, from the columns.

        Equal to it (same candidates in the same order, same superseded map) without a view
        per record: the candidates are a :class:`RowViews` that builds views on access.
        """
        statuses, rels, ids = self.statuses(), self.columns["rels"], self.ids
        refuted, stale, supersedes = Status.REFUTED.value, Status.STALE.value, RelationType.SUPERSEDES.value
        live = [r for r, status in enumerate(statuses) if status != refuted]
        superseded: dict[str, str] = {}
        # Rows are sorted by id: walking them backwards leaves the smallest superseding id.
        for r in reversed(live):
            if rels[r] and statuses[r] != stale:
                for kind, target in rels[r]:
                    if kind == supersedes and target != ids[r]:
                        superseded[target] = ids[r]
        if not include_stale:
            live = [r for r in live if statuses[r] != stale and ids[r] not in superseded]
        return RowViews(self, live), superseded

    def statuses(self) -> list[str]:
        """The status column with the working-tree overlay (:attr:`local`) applied."""
        column = self.columns["status"]
        if not self.local:
            return column
        out = list(column)
        refuted, stale = Status.REFUTED.value, Status.STALE.value
        for row in self.local:
            if out[row] != refuted:
                out[row] = stale
        return out

    def set_local(self, local: dict[int, str]) -> None:
        """Apply this clone's working-tree overlay (row -> reason); views are rebuilt if it changed."""
        if local != self.local:
            self.local = local
            self._views = None

    def values(self, row: int) -> tuple:
        """The hot fields of ``row``, in :data:`COLUMNS` order (as :func:`gitmem.cache.records.row_of`)."""
        columns = self.columns
        return tuple(columns[name][row] for name in COLUMNS)

    def view(self, row: int, local: bool = True) -> MemoryView:
        """The :class:`MemoryView` of one row (from the list when it was built).

        ``local=False``: as committed, without this clone's working-tree overlay.
        """
        if self._views is not None and (local or row not in self.local):
            return self._views[row]
        c = self.columns
        return MemoryView(row, self.ids[row], self.blobs[row], TYPES[c["type"][row]],
                          c["content"][row], c["conf"][row], STATUSES[c["status"][row]],
                          c["prov"][row], c["decay"][row], c["rels"][row], c["refuted"][row],
                          c["verified"][row], c["author"][row],
                          self.local.get(row) if local else None)

    def committed_views(self) -> list[MemoryView]:
        """:meth:`views` without this clone's working-tree overlay: every row as committed.

        What ``verify`` judges (it finds the working-tree reasons itself); built anew.
        """
        if not self.local:
            return self.views()
        return self._build_views({})

    def _build_views(self, local: dict[int, str] | None = None) -> list[MemoryView]:
        c = self.columns
        types, statuses, view = TYPES, STATUSES, MemoryView
        local = self.local if local is None else local
        return [
            view(i, mid, blob, types[kind], content, conf, statuses[status], prov, decay, rels,
                 refuted, verified, author, local.get(i) if local else None)
            for i, (mid, blob, kind, content, conf, status, prov, decay, rels, refuted, verified,
                    author)
            in enumerate(zip(self.ids, self.blobs, c["type"], c["content"], c["conf"], c["status"],
                             c["prov"], c["decay"], c["rels"], c["refuted"], c["verified"],
                             c["author"], strict=True))
        ]

    def memory(self, row: int) -> Memory:
        """The full record of ``row``, equal to a fresh parse of its blob.

        Raises:
            Untrusted: the stored mapping is damaged (the caller re-reads the blob).
        """
        found = self.parsed.get(row)
        if found is not None:
            return found
        chunk = self.overlay.get(row)
        if chunk is None:
            if self.path is None:
                raise Untrusted("no records section")
            s = row if self.origin is None else self.origin[row]
            chunk = self.read_section(self.offsets[s], self.offsets[s + 1] - self.offsets[s])
        memory = self._from_chunk(row, chunk)
        self.parsed[row] = memory
        return memory

    def chunks(self) -> list[bytes] | None:
        """The marshalled mapping of every row, in row order (one read of the section).

        ``None`` when a row's mapping is nowhere (no records file, or it is gone).
        """
        if not self.ids:
            return []
        section = b""
        if len(self.overlay) < len(self.ids):
            if self.path is None:
                return None
            try:
                section = self.read_section(0, -1)
            except Untrusted:
                return None
        offsets, origin, overlay = self.offsets, self.origin, self.overlay
        out = []
        for row in range(len(self.ids)):
            chunk = overlay.get(row)
            if chunk is None:
                s = row if origin is None else origin[row]
                chunk = section[offsets[s]:offsets[s + 1]]
            out.append(chunk)
        return out

    @contextmanager
    def reading_chunks(self) -> Iterator[Callable[[int], bytes | None]]:
        """A function: row -> its marshalled mapping, or ``None`` when it cannot be read.

        Reads the records file through one buffered handle, open while the context lasts:
        rows asked for in order cost one pass over the file, and no more than a block of it
        is held at a time (unlike :meth:`chunks`).
        """
        handle: Any = None
        if len(self.overlay) < len(self.ids) and self.path is not None:
            try:
                handle = self.path.open()
            except OSError:
                handle = None
        offsets, origin, overlay, at = self.offsets, self.origin, self.overlay, self.records_at

        def chunk(row: int) -> bytes | None:
            found = overlay.get(row)
            if found is not None or handle is None:
                return found
            s = row if origin is None else origin[row]
            length = offsets[s + 1] - offsets[s]
            try:
                handle.seek(at + offsets[s])
                data = handle.read(length)
            except OSError:
                return None
            return data if len(data) == length else None

        try:
            yield chunk
        finally:
            if handle is not None:
                handle.close()

    def memories(self) -> list[Memory]:
        """Every readable record as a full model, sorted by id.

        Raises:
            Untrusted: a stored mapping is damaged or gone.
        """
        if len(self.parsed) < len(self.ids):
            chunks = self.chunks()
            if chunks is None:
                raise Untrusted("records file unreadable")
            for row in range(len(self.ids)):
                if row not in self.parsed:
                    self.parsed[row] = self._from_chunk(row, chunks[row])
        return [self.parsed[row] for row in range(len(self.ids))]

    def read_section(self, start: int, length: int) -> bytes:
        """``length`` bytes (``-1``: all) of the records section from ``start``.

        Raises:
            Untrusted: the file is gone (another process cleared or pruned the cache).
        """
        try:
            handle = self.path.open()  # type: ignore[union-attr]
            try:
                handle.seek(self.records_at + start)
                return handle.read(length)
            finally:
                handle.close()
        except OSError as exc:
            raise Untrusted(f"records entry unreadable: {exc}") from None

    def _from_chunk(self, row: int, chunk: bytes) -> Memory:
        from gitmem.record.models import Memory

        if zlib.crc32(chunk) != self.crcs[row]:
            raise Untrusted(f"record {self.ids[row]} fails its checksum")
        try:
            memory = Memory.model_validate(marshal.loads(chunk))
        except Exception as exc:
            raise Untrusted(f"record {self.ids[row]} does not load ({type(exc).__name__})") from None
        if memory.id != self.ids[row]:
            raise Untrusted(f"record {self.ids[row]} holds {memory.id}")
        memory.bind_blob(self.blobs[row])
        return memory

    def shown(self, row: int) -> Memory:
        """The full record of ``row`` as this clone shows it: marked by the overlay when it is.

        Raises:
            Untrusted: as :meth:`memory`.
        """
        return self.memory(row).with_local(self.local.get(row))

    def snapshot(self, tip: str | None) -> Snapshot:
        """A :class:`~gitmem.cache.reader.Snapshot` with full records, in the tree's entry order.

        Raises:
            Untrusted: a stored mapping is damaged.
        """
        records = self.memories()
        snap = Snapshot(tip=tip, skipped=[*self.layout, *self.bad])
        for memory_id, blob in self.entry_order():
            snap.blobs[memory_id] = blob
            row = self.row(memory_id)
            if row is not None:
                snap.records[memory_id] = records[row]
        return snap
