"""The records of one tree as columns: :class:`RecordTable`, and :class:`RowViews` of some rows.

:class:`RecordTable` holds the hot fields of every record (what wake, recall, status and
``list`` read) as parallel columns, builds :class:`~gitmem.cache.views.MemoryView` stand-ins
from them, and gives a record's full model on demand (from its row in the database).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import not_
from typing import TYPE_CHECKING

from gitmem.cache.reader import Skipped, Snapshot
from gitmem.cache.views import STATUSES, TYPES, MemoryView
from gitmem.vocabulary import RelationType, Status

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = ["COLUMNS", "RecordTable", "RowViews"]

COLUMNS = ("type", "content", "conf", "status", "prov", "decay", "rels", "refuted", "verified", "legacy",
           "author", "vis")
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
    """Every record of one ``memories`` tree, as columns.

    Rows are sorted by id; ``columns`` maps each name of :data:`COLUMNS` to one value per
    row. ``bad`` lists the blobs that are not readable records; :meth:`entry_order` gives
    every entry (readable or not) in the tree's own order. ``parsed`` holds the full
    records already built, by row; ``fetch`` (set by :class:`gitmem.cache.records.Tables`)
    builds more of them.
    """

    tree: str | None
    ids: list[str]
    blobs: list[str]
    columns: dict[str, list]
    bad: list[Skipped]
    layout: list[Skipped] = field(default_factory=list)
    """Entries under ``memories/`` that are not records where their id says (never read)."""
    parsed: dict[int, Memory] = field(default_factory=dict)
    fetch: Callable[[list[int]], None] | None = None
    """Puts the full records of the rows given in :attr:`parsed` (raises ``MalformedRecord``)."""
    local: dict[int, str] = field(default_factory=dict)
    """This clone's working-tree overlay: row -> why uncommitted changes make it stale (set by
    the read path on every read, never saved; see ``gitmem.api.records.Records.table``)."""
    _views: list[MemoryView] | None = None
    _selections: dict[bool, tuple[list[int], dict[str, str]]] = field(default_factory=dict)
    """:meth:`recall_selection`'s rows and superseded map, by ``include_stale`` (overlay-dependent)."""
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

        A tree lists its records shard by shard, each by name: ``<id>.yaml`` sorts as its
        id, since every character of an id sorts after ".".
        """
        from gitmem.record.ids import shard_of

        entries = [*zip(self.ids, self.blobs, strict=True), *((s.memory_id, s.blob_id) for s in self.bad)]
        return sorted(entries, key=lambda e: (shard_of(e[0]), e[0]))

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
        found = self._selections.get(include_stale)
        if found is None:
            found = self._selections[include_stale] = self._selection(include_stale)
        return RowViews(self, found[0]), found[1]

    def _selection(self, include_stale: bool) -> tuple[list[int], dict[str, str]]:
        """The rows and superseded map of :meth:`recall_selection` (one pass shared by both kinds)."""
        everyone = self._selections.get(True)
        if everyone is None:
            everyone = self._selections[True] = self._everyone(self.statuses())
        if include_stale:
            return everyone
        live, superseded = everyone
        statuses, ids, stale = self.statuses(), self.ids, Status.STALE.value
        live = list(compress(live, map(stale.__ne__, map(statuses.__getitem__, live))))
        if superseded:
            replaced = map(superseded.__contains__, map(ids.__getitem__, live))
            live = list(compress(live, map(not_, replaced)))
        return live, superseded

    def _everyone(self, statuses: list[str]) -> tuple[list[int], dict[str, str]]:
        """Rows not refuted, and superseded id -> the smallest id superseding it (not stale)."""
        rels, ids = self.columns["rels"], self.ids
        refuted, stale, supersedes = Status.REFUTED.value, Status.STALE.value, RelationType.SUPERSEDES.value
        # C passes over the columns (compress, map): no Python frame per row.
        live = list(compress(range(len(statuses)), map(refuted.__ne__, statuses)))
        superseded: dict[str, str] = {}
        # Rows are sorted by id: walking them backwards leaves the smallest superseding id.
        for r in reversed(list(compress(live, map(rels.__getitem__, live)))):  # those with relations
            if statuses[r] != stale:
                for kind, target in rels[r]:
                    if kind == supersedes and target != ids[r]:
                        superseded[target] = ids[r]
        return live, superseded

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
            self._selections.clear()

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
                          self.local.get(row) if local else None, c["vis"][row])

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
                 refuted, verified, author, local.get(i) if local else None, vis)
            for i, (mid, blob, kind, content, conf, status, prov, decay, rels, refuted, verified,
                    author, vis)
            in enumerate(zip(self.ids, self.blobs, c["type"], c["content"], c["conf"], c["status"],
                             c["prov"], c["decay"], c["rels"], c["refuted"], c["verified"],
                             c["author"], c["vis"], strict=True))
        ]

    def memory(self, row: int) -> Memory:
        """The full record of ``row``, equal to a fresh parse of its blob.

        Raises:
            MalformedRecord: its saved row was gone or damaged, and the blob is not a record.
        """
        found = self.parsed.get(row)
        if found is None:
            self._fetch([row])
            found = self.parsed[row]
        return found

    def memories(self) -> list[Memory]:
        """Every readable record as a full model, sorted by id (see :meth:`memory`)."""
        missing = [row for row in range(len(self.ids)) if row not in self.parsed]
        if missing:
            self._fetch(missing)
        return [self.parsed[row] for row in range(len(self.ids))]

    def _fetch(self, rows: list[int]) -> None:
        if self.fetch is None:
            raise RuntimeError("a table without its rows")
        self.fetch(rows)

    def shown(self, row: int) -> Memory:
        """The full record of ``row`` as this clone shows it: marked by the overlay when it is.

        Raises:
            MalformedRecord: as :meth:`memory`.
        """
        return self.memory(row).with_local(self.local.get(row))

    def snapshot(self, tip: str | None) -> Snapshot:
        """A :class:`~gitmem.cache.reader.Snapshot` with full records, in the tree's entry order.

        Raises:
            MalformedRecord: as :meth:`memory`.
        """
        records = self.memories()
        snap = Snapshot(tip=tip, skipped=[*self.layout, *self.bad])
        for memory_id, blob in self.entry_order():
            snap.blobs[memory_id] = blob
            row = self.row(memory_id)
            if row is not None:
                snap.records[memory_id] = records[row]
        return snap
