"""The records file of a tree, ``records-<tree>.bin``: building, checking, loading and saving it.

The file's payload holds the hot columns of every record (see
:class:`gitmem.cache.table.RecordTable`), its tail the *records section*: each record's YAML
mapping, marshalled, so that a full :class:`~gitmem.models.Memory` is
``Memory.model_validate(mapping)`` without reading YAML. A new tree reuses the rows of the
latest cached tree by (id, blob id) and parses only new blobs, or none when the records were
written by this process (:meth:`Tables.remember`).
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.cache.files import CacheFiles, Untrusted, paused_gc
from gitmem.cache.table import COLUMNS, RecordTable
from gitmem.cache.views import RELATIONS, STATUSES, TYPES
from gitmem.decay import microseconds
from gitmem.errors import MalformedRecord
from gitmem.reader import Skipped, Snapshot, parse_record

if TYPE_CHECKING:
    from gitmem.models import Memory
    from gitmem.store import LayoutProblem

    Layout = tuple[Mapping[str, str], list[LayoutProblem]]
    """What ``Store.record_layout`` returns: ``({id: blob id}, problems)``."""

__all__ = ["Tables", "check_columns", "layout_skipped", "records_name", "row_of", "table_from_payload"]

# Models parsed while building a table that are kept for this process: enough for the usual
# few new records; a cold read of 100,000 records would otherwise hold 100,000 models
# (~400 MB) that wake and recall never use (they read views).
_KEEP_PARSED = 2048
_NONE = type(None)


def records_name(tree: str) -> str:
    """File name of the records of the ``memories`` tree ``tree``."""
    return f"records-{tree}.bin"


def row_of(memory: Memory) -> tuple:
    """The hot fields of a validated record as plain marshal-able values, in :data:`COLUMNS` order."""
    prov = memory.provenance
    decay = memory.decay
    return (
        memory.type.value,
        memory.content,
        memory.confidence,
        memory.status.value,
        None if prov is None else (prov.observed_at.isoformat(), prov.git_sha, prov.context_ref,
                                    prov.source_agent),
        None if decay is None else (decay.half_life_days, decay.last_verified_at.isoformat(),
                                    decay.staleness_status.value, decay.reason),
        tuple((r.type.value, r.target) for r in memory.relations),
        None if memory.refutation is None else memory.refutation.reason,
        None if memory.last_verified_at is None else microseconds(memory.last_verified_at),
        tuple(memory.legacy_ids),
        memory.writer,
    )


def check_columns(columns: dict[str, list]) -> None:
    """Check every hot value's type and vocabulary (a few milliseconds for 100,000 rows).

    Raises:
        ValueError: a value this version never writes.
    """
    def types_of(name: str) -> set[type]:
        return set(map(type, columns[name]))

    if not set(columns["type"]) <= TYPES.keys() or not set(columns["status"]) <= STATUSES.keys():
        raise ValueError("type or status column")
    if not (types_of("content") <= {str} and types_of("conf") <= {float, int}
            and types_of("prov") <= {tuple, _NONE} and types_of("decay") <= {tuple, _NONE}
            and types_of("rels") <= {tuple} and types_of("refuted") <= {str, _NONE}
            and types_of("verified") <= {int, _NONE} and types_of("author") <= {str, _NONE}):
        raise ValueError("column value types")
    if not (set(map(len, filter(None, columns["prov"]))) <= {4}
            and set(map(len, filter(None, columns["decay"]))) <= {4}):
        raise ValueError("provenance or decay shape")
    if not (types_of("legacy") <= {tuple}
            and all(type(name) is str for names in columns["legacy"] for name in names)):
        raise ValueError("legacy ids")
    for links in columns["rels"]:
        if links and any(len(link) != 2 or link[0] not in RELATIONS for link in links):
            raise ValueError("relations")


def table_from_payload(payload: Any, tree: str, path: Path, end: int) -> RecordTable:
    """Check the structure of a records payload and wrap it.

    Args:
        payload: what the records file of ``tree`` at ``path`` holds.
        tree: the ``memories`` tree id the file is named for.
        path: the records file.
        end: byte offset in ``path`` where the records section starts (after the payload).

    Raises:
        TypeError, ValueError, KeyError: the payload is not what this version writes.
    """
    if not isinstance(payload, dict) or payload.get("tree") != tree:
        raise ValueError("not the records of this tree")
    ids, blobs, columns = payload["ids"], payload["blobs"], payload["columns"]
    if not (isinstance(ids, list) and isinstance(blobs, list) and isinstance(columns, dict)):
        raise TypeError("ids, blobs and columns")
    n = len(ids)
    if len(blobs) != n or set(columns) != set(COLUMNS):
        raise ValueError("column set")
    if any(not isinstance(columns[name], list) or len(columns[name]) != n for name in COLUMNS):
        raise ValueError("column length")
    check_columns(columns)
    offsets, crcs = array("q"), array("I")
    offsets.frombytes(payload["offsets"])
    crcs.frombytes(payload["crcs"])
    if len(offsets) != n + 1 or len(crcs) != n:
        raise ValueError("offsets")
    bad = [Skipped(str(a), str(b), str(c)) for a, b, c in payload["bad"]]
    layout = [layout_skipped(str(a), str(b), str(c)) for a, b, c in payload["layout"]]
    order = payload["order"]
    if not isinstance(order, list) or len(order) != n + len(bad):
        raise ValueError("entry order")
    return RecordTable(tree, ids, blobs, columns, bad, order, layout, path=path, records_at=end,
                       offsets=offsets, crcs=crcs)


def layout_skipped(path: str, object_id: str, reason: str) -> Skipped:
    """The :class:`Skipped` entry that names one layout problem (see ``Store.record_layout``)."""
    return Skipped("", object_id, reason, path=path)


def _records_section(table: RecordTable) -> bytes:
    """The whole records section of ``table``'s file (``b""``: none, or unreadable)."""
    if table.path is None or not table.ids:
        return b""
    try:
        return table.read_section(0, -1)
    except Untrusted:
        return b""


class Tables:
    """The record table of the current tree, loaded from its file or built and saved.

    Holds one table in memory (the last tree asked for). Callers hold :attr:`files`'s lock.

    Args:
        store: the repository's :class:`~gitmem.store.Store` (``subtree_id``, ``entries``,
            ``read_blob``).
        files: the cache directory.
        carried: called as ``carried(base, table)`` after a new table reused rows of
            ``base`` (the token counts carry over).
    """

    def __init__(self, store: Any, files: CacheFiles,
                 carried: Callable[[RecordTable, RecordTable], None]) -> None:
        self.store = store
        self.files = files
        self._carried = carried
        self._tables: dict[str | None, RecordTable] = {}
        self._known: dict[str, Memory] = {}
        self.progress: Callable[[int, int], None] | None = None
        """Called as ``progress(parsed, to_parse)`` while :meth:`build` parses blobs."""

    def table(self, tip: str | None, layout: Layout | None = None) -> RecordTable:
        """Every record at ``tip`` (a commit on the memory ref; ``None``: no records).

        Warm: one tree lookup and one file read. Otherwise the rows of the latest cached
        tree are reused by (id, blob id), new blobs are parsed, and the file is written.
        ``layout`` is ``store.record_layout(tip)`` when the caller has it already.
        """
        tree = self.store.subtree_id(tip, "memories") if tip is not None else None
        found = self._tables.get(tree)
        if found is None:
            found = self.load(tree) if tree is not None else None
            if found is None:
                found = self.build(tip, tree, layout)
            self._tables = {tree: found}
        return found

    def rebuild(self, tip: str | None, tree: str | None) -> RecordTable:
        """Build the table of ``tip`` again from git and the other trees' files (after damage)."""
        self._tables.clear()
        table = self.build(tip, tree)
        self._tables = {tree: table}
        return table

    def forget(self) -> None:
        """Drop the table held in memory (the files are cleared by the caller)."""
        self._tables.clear()

    def remember(self, blob_id: str, memory: Memory) -> None:
        """Take ``memory`` as the parse of ``blob_id`` in every table built by this process."""
        self._known[blob_id] = memory

    def snapshot(self, tip: str | None) -> Snapshot:
        """All records at ``tip`` as :func:`gitmem.reader.read_snapshot` returns them.

        A damaged records section is reported, and the table is built again from git.
        """
        table = self.table(tip)
        try:
            return table.snapshot(tip)
        except Untrusted as exc:
            if table.path is not None:
                self.files.reject(table.path, exc)
            return self.rebuild(tip, table.tree).snapshot(tip)

    def memory(self, table: RecordTable, row: int) -> Memory:
        """The full record of ``row`` in ``table``; re-read from git if the file is damaged.

        Raises:
            MalformedRecord: the blob, re-read, is no longer a valid record.
        """
        try:
            return table.memory(row)
        except Untrusted as exc:
            if table.path is not None:
                self.files.reject(table.path, exc)
                table.path = None
            memory, _ = parse_record(self.store, table.ids[row], table.blobs[row])
            table.parsed[row] = memory
            return memory

    def load(self, tree: str) -> RecordTable | None:
        """The table in the records file of ``tree``; ``None`` when absent or untrusted."""
        name = records_name(tree)
        got = self.files.read(name, "records")
        if got is None:
            return None
        payload, end = got
        try:
            return table_from_payload(payload, tree, self.files.path(name), end)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self.files.reject(self.files.path(name), Untrusted(f"bad structure: {type(exc).__name__}"))
            return None

    def latest_known(self) -> RecordTable | None:
        """The table held in memory, else the most recently written one on disk, or ``None``."""
        for table in self._tables.values():
            return table
        return self.latest(None)

    def latest(self, exclude: str | None) -> RecordTable | None:
        """The table of the most recently written records file but ``exclude``'s, or ``None``."""
        for path in self.files.newest_first("records-*.bin"):
            tree = path.stem.removeprefix("records-")
            if tree != exclude:
                table = self.load(tree)
                if table is not None:
                    return table
        return None

    def build(self, tip: str | None, tree: str | None, layout: Layout | None = None) -> RecordTable:
        """Build, save and return the table of ``tip`` (whose ``memories`` tree is ``tree``).

        Rows of the latest cached tree are reused by (id, blob id); other blobs are parsed
        (or taken from :meth:`remember`). Malformed blobs become ``bad`` entries, entries
        that are not records where their id says ``layout`` ones.
        """
        if layout is None:
            layout = self.store.record_layout(tip) if tip is not None else ({}, [])
        entries, problems = layout
        base = self.latest(tree) if entries else None
        reuse: dict[tuple[str, str], int] = {}
        base_bad: dict[tuple[str, str], str] = {}
        section = b""
        if base is not None:
            reuse = {(mid, blob): i for i, (mid, blob) in enumerate(zip(base.ids, base.blobs, strict=True))}
            base_bad = {(s.memory_id, s.blob_id): s.reason for s in base.bad}
            section = _records_section(base)
            if not section and base.ids:
                base, reuse = None, {}
        ids: list[str] = []
        blobs: list[str] = []
        chunks: list[bytes] = []
        crcs = array("I")
        bad: list[Skipped] = []
        columns: dict[str, list] = {name: [] for name in COLUMNS}
        parsed: dict[int, Memory] = {}
        tick = self._ticker(entries, reuse, base_bad)
        with paused_gc():
            for memory_id in sorted(entries):
                blob = entries[memory_id]
                key = (memory_id, blob)
                if key in base_bad:
                    bad.append(Skipped(memory_id, blob, base_bad[key]))
                    continue
                old = reuse.get(key)
                if old is not None and base is not None:
                    chunk = section[base.offsets[old]:base.offsets[old + 1]]
                    row = tuple(base.columns[name][old] for name in COLUMNS)
                    crc = base.crcs[old]
                    if old in base.parsed:
                        parsed[len(ids)] = base.parsed[old]
                else:
                    tick()
                    try:
                        memory, mapping = self._known_or_parsed(memory_id, blob)
                    except MalformedRecord as exc:
                        bad.append(Skipped(memory_id, blob, exc.reason))
                        continue
                    if len(parsed) < _KEEP_PARSED:
                        parsed[len(ids)] = memory
                    chunk = marshal.dumps(mapping)
                    row = row_of(memory)
                    crc = zlib.crc32(chunk)
                ids.append(memory_id)
                blobs.append(blob)
                chunks.append(chunk)
                crcs.append(crc)
                for name, value in zip(COLUMNS, row, strict=True):
                    columns[name].append(value)
        offsets = array("q", [0])
        for chunk in chunks:
            offsets.append(offsets[-1] + len(chunk))
        table = RecordTable(tree, ids, blobs, columns, bad, list(entries),
                            [layout_skipped(p.path, p.object_id, p.reason) for p in problems],
                            offsets=offsets, crcs=crcs, parsed=parsed)
        if tree is not None:
            self.save(table, chunks)
            if base is not None:
                self._carried(base, table)
            self.files.prune(tree)
        return table

    def _ticker(self, entries: Mapping[str, str], reuse: Mapping[tuple[str, str], int],
                bad: Mapping[tuple[str, str], str]) -> Callable[[], None]:
        """A function to call before each blob :meth:`build` parses; it reports to :attr:`progress`."""
        report = self.progress
        if report is None:
            return _nothing
        todo = sum(1 for key in entries.items() if key not in reuse and key not in bad)
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if done % 64 == 0 or done == todo:
                report(done, todo)

        return tick

    def _known_or_parsed(self, memory_id: str, blob: str) -> tuple[Memory, dict]:
        """A record this process wrote (see :meth:`remember`), or one parsed from its blob."""
        known = self._known.get(blob)
        if known is not None and known.id == memory_id:
            # The model validates back to itself, so its JSON form stands for the YAML mapping.
            # Nones kept: an extra key written as `null` is part of the record.
            return known, known.model_dump(mode="json")
        return parse_record(self.store, memory_id, blob)

    def save(self, table: RecordTable, chunks: list[bytes]) -> None:
        """Write the records file of ``table`` (whose records section is ``chunks``).

        On success ``table.path`` and ``table.records_at`` point into the new file.
        """
        payload = {
            "tree": table.tree,
            "ids": table.ids,
            "blobs": table.blobs,
            "bad": [(s.memory_id, s.blob_id, s.reason) for s in table.bad],
            "order": table.order,
            "layout": [(s.path, s.blob_id, s.reason) for s in table.layout],
            "offsets": table.offsets.tobytes(),
            "crcs": table.crcs.tobytes(),
            "columns": table.columns,
        }
        name = records_name(table.tree)  # type: ignore[arg-type]
        written = self.files.write(name, "records", payload, chunks)
        if written:  # the records section starts after the header and the hot payload
            table.path, table.records_at = self.files.path(name), written


def _nothing() -> None:
    return None
