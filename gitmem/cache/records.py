"""The records file of a tree, ``records-<tree>.bin``: building, checking, loading and saving it.

The file's payload holds the hot columns of every record (see
:class:`gitmem.cache.table.RecordTable`), its tail the *records section*: each record's YAML
mapping, marshalled, so that a full :class:`~gitmem.record.models.Memory` is
``Memory.model_validate(mapping)`` without reading YAML. A new tree reuses the rows of the
latest cached tree by (id, blob id) and parses only new blobs, or none when the records were
written by this process (:meth:`Tables.remember`).

A write knows exactly which records it changed: :meth:`Tables.derive` saves them as
``delta-<tree>-<base>.bin``, the rows of the new tree that differ from those of ``base``, a
tree whose records file is cached (the write's parent, or the base of the parent's own
delta: a delta is always one step from a records file). The write reads no record and no
records file for that. A reader of ``tree`` then applies the delta to the base's table
(:meth:`Tables.load`): the same table as a build from git, at the cost of the changed rows.
Both files are named by content hashes, and the delta names the base it applies to, so a
reader never combines the rows of two trees; a delta grown past :data:`COMPACT_ROWS` rows is
written out as the tree's own records file by its first reader.
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from itertools import chain, compress
from typing import TYPE_CHECKING, Any

from gitmem.cache.db import CacheDB, Section, Untrusted
from gitmem.cache.reader import Skipped, Snapshot, parse_record
from gitmem.cache.table import COLUMNS, RecordTable
from gitmem.cache.views import RELATIONS, STATUSES, TYPES
from gitmem.errors import MalformedRecord
from gitmem.record.decay import microseconds
from gitmem.record.ids import shard_of

if TYPE_CHECKING:
    from gitmem.cache.staged import StagedRows
    from gitmem.record.models import Memory
    from gitmem.store import LayoutProblem

    Layout = tuple[Mapping[str, str], list[LayoutProblem]]
    """What ``Store.record_layout`` returns: ``({id: blob id}, problems)``."""

__all__ = [
    "COMPACT_ROWS",
    "Tables",
    "check_columns",
    "delta_name",
    "layout_skipped",
    "records_name",
    "row_of",
    "table_from_payload",
]

# Models parsed while building a table that are kept for this process: enough for the usual
# few new records; a cold read of 100,000 records would otherwise hold 100,000 models
# (~400 MB) that wake and recall never use (they read views).
_KEEP_PARSED = 2048
_NONE = type(None)


COMPACT_ROWS = 512
"""Rows a delta may hold before its first reader writes the tree's own records file (also at
least an eighth of the table: applying a delta copies every column once)."""


def records_name(tree: str) -> str:
    """File name of the records of the ``memories`` tree ``tree``."""
    return f"records-{tree}.bin"


def delta_name(tree: str, base: str) -> str:
    """File name of the rows of the tree ``tree`` that differ from those of the tree ``base``."""
    return f"delta-{tree}-{base}.bin"


def _order_key(memory_id: str) -> tuple[str, str]:
    # A tree lists its records shard by shard, each by name: ``<id>.yaml`` sorts as its id,
    # since every character of an id sorts after ".".
    return shard_of(memory_id), memory_id


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
                                    prov.source_agent, prov.fingerprint),
        None if decay is None else (decay.half_life_days, decay.last_verified_at.isoformat(),
                                    decay.staleness_status.value, decay.reason),
        tuple((r.type.value, r.target) for r in memory.relations),
        None if memory.refutation is None else memory.refutation.reason,
        None if memory.last_verified_at is None else microseconds(memory.last_verified_at),
        tuple(memory.legacy_ids),
        memory.writer,
    )


def chunk_of(memory: Memory) -> bytes:
    """The marshalled mapping of a validated record, as the records section holds it."""
    # The model validates back to itself, so its JSON form stands for the YAML mapping.
    # Nones kept: an extra key written as `null` is part of the record.
    return marshal.dumps(memory.model_dump(mode="json"))


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
    if not (set(map(len, filter(None, columns["prov"]))) <= {5}
            and set(map(len, filter(None, columns["decay"]))) <= {4}):
        raise ValueError("provenance or decay shape")
    # Only the few non-empty tuples are walked in Python (compress picks them in C).
    if not (types_of("legacy") <= {tuple}
            and set(map(type, chain.from_iterable(columns["legacy"]))) <= {str}):
        raise ValueError("legacy ids")
    for links in compress(columns["rels"], columns["rels"]):
        if any(len(link) != 2 or link[0] not in RELATIONS for link in links):
            raise ValueError("relations")


def table_from_payload(payload: Any, tree: str, path: Section | None, end: int) -> RecordTable:
    """Check the structure of a records payload and wrap it.

    Args:
        payload: what the records file of ``tree`` at ``path`` holds.
        tree: the ``memories`` tree id the file is named for.
        path: where the records section is.
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


def _delta_of(payload: Any, tree: str, base: str, tail: bytes) -> dict[str, tuple | None]:
    """The rows of a delta payload (id -> (blob, row, crc, chunk), or ``None``: removed).

    Raises:
        TypeError, ValueError, KeyError, IndexError: not a delta of ``tree`` on ``base``.
    """
    if not isinstance(payload, dict) or (payload.get("tree"), payload.get("base")) != (tree, base):
        raise ValueError("not the delta of this tree and base")
    ids, blobs, rows = payload["ids"], payload["blobs"], payload["rows"]
    crcs, lengths = array("I"), array("q")
    crcs.frombytes(payload["crcs"])
    lengths.frombytes(payload["lengths"])
    n = len(ids)
    if not (isinstance(ids, list) and isinstance(blobs, list) and isinstance(rows, list)
            and len(blobs) == n == len(rows) == len(crcs) == len(lengths)
            and sum(lengths) == len(tail)):
        raise ValueError("delta shape")
    kept = [r for r in rows if r is not None]
    if any(not isinstance(r, tuple) or len(r) != len(COLUMNS) for r in kept):
        raise ValueError("delta rows")
    check_columns({name: [r[k] for r in kept] for k, name in enumerate(COLUMNS)})
    out: dict[str, tuple | None] = {}
    at = 0
    for memory_id, blob, row, crc, length in zip(ids, blobs, rows, crcs, lengths, strict=True):
        if not isinstance(memory_id, str):
            raise TypeError("delta id")
        chunk = tail[at:at + length]
        at += length
        if row is None:
            out[memory_id] = None
            continue
        if not isinstance(blob, str) or zlib.crc32(chunk) != crc:
            raise ValueError(f"delta row {memory_id}")
        out[memory_id] = (blob, row, crc, chunk)
    return out


def apply_delta(base: RecordTable, tree: str, changes: Mapping[str, tuple | None],
                since: tuple[tuple[str, ...], tuple[tuple[str, ...], ...]] | None = None,
                ) -> RecordTable:
    """The table of ``tree``: the rows of ``base`` with ``changes`` (see :func:`_delta_of`).

    Unchanged rows keep reading their mappings from ``base``'s file; changed ones are held
    in the new table's overlay. Costs one copy of each column and the changed rows.

    Raises:
        ValueError: ``base`` is itself derived (a delta applies to a records file's table).
    """
    if base.origin is not None or base.overlay:
        raise ValueError("a delta applies to the table of a records file")
    spans: list[tuple[int, int, str]] = []  # (base row, rows of base it replaces, id)
    for memory_id in sorted(changes):
        r = bisect_left(base.ids, memory_id)
        spans.append((r, int(r < len(base.ids) and base.ids[r] == memory_id), memory_id))
    ids: list[str] = []
    blobs: list[str] = []
    columns: dict[str, list] = {name: [] for name in COLUMNS}
    origin, crcs = array("i"), array("I")
    overlay: dict[int, bytes] = {}
    previous = 0
    for r, replaced, memory_id in spans:
        ids.extend(base.ids[previous:r])
        blobs.extend(base.blobs[previous:r])
        for name in COLUMNS:
            columns[name].extend(base.columns[name][previous:r])
        origin.extend(range(previous, r))
        crcs.extend(base.crcs[previous:r])
        previous = r + replaced
        change = changes[memory_id]
        if change is None:
            continue
        blob, row, crc, chunk = change
        overlay[len(ids)] = chunk
        ids.append(memory_id)
        blobs.append(blob)
        for name, value in zip(COLUMNS, row, strict=True):
            columns[name].append(value)
        origin.append(-1)
        crcs.append(crc)
    ids.extend(base.ids[previous:])
    blobs.extend(base.blobs[previous:])
    for name in COLUMNS:
        columns[name].extend(base.columns[name][previous:])
    origin.extend(range(previous, len(base.ids)))
    crcs.extend(base.crcs[previous:])
    # Rows the base could not read, unless the write replaced or removed them.
    bad = [s for s in base.bad if s.memory_id not in changes]
    order = [i for i in base.order if i not in changes or changes[i] is not None]
    listed = set(order) if any(c is not None for c in changes.values()) else set()
    for memory_id in sorted((i for i, c in changes.items() if c is not None and i not in listed),
                            key=_order_key):
        order.insert(bisect_left(order, _order_key(memory_id), key=_order_key), memory_id)
    return RecordTable(tree, ids, blobs, columns, bad, order, list(base.layout), path=base.path,
                       records_at=base.records_at, offsets=base.offsets, crcs=crcs,
                       origin=origin, overlay=overlay, base=base.tree,
                       since=since)


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

    def __init__(self, store: Any, files: CacheDB,
                 carried: Callable[[RecordTable, RecordTable], None]) -> None:
        self.store = store
        self.files = files
        self._carried = carried
        self._tables: dict[str | None, RecordTable] = {}
        self._known: dict[str, Memory] = {}
        self.progress: Callable[[int, int], None] | None = None
        """Called as ``progress(parsed, to_parse)`` while :meth:`build` parses blobs."""

    def table(self, tip: str | None, layout: Layout | None = None,
              staged: StagedRows | None = None) -> RecordTable:
        """Every record at ``tip`` (a commit on the memory ref; ``None``: no records).

        Warm: one tree lookup and one file read. Otherwise the rows of the latest cached
        tree are reused by (id, blob id), new blobs are parsed (or taken from ``staged``),
        and the file is written. ``layout`` is ``store.record_layout(tip)`` when the caller
        has it already.
        """
        tree = self.store.subtree_id(tip, "memories") if tip is not None else None
        found = self._tables.get(tree)
        if found is None:
            found = self.load(tree) if tree is not None else None
            if found is None:
                found = self.build(tip, tree, layout, staged)
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
        """All records at ``tip`` as :func:`gitmem.cache.reader.read_snapshot` returns them.

        A damaged records section is reported, and the table is built again from git.
        """
        table = self.table(tip)
        try:
            return table.snapshot(tip)
        except Untrusted as exc:
            if table.path is not None:
                self.files.reject(table.path.name, exc)
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
                self.files.reject(table.path.name, exc)
                table.path = None
            memory, _ = parse_record(self.store, table.ids[row], table.blobs[row])
            table.parsed[row] = memory
            return memory

    def load(self, tree: str) -> RecordTable | None:
        """The table of ``tree`` from its records file or its delta; ``None`` when neither is usable.

        A bad file is deleted and reported. A delta is applied to its base's table; one
        that has grown past :data:`COMPACT_ROWS` rows is then saved as a records file.
        """
        table = self.load_records(tree)
        if table is not None:
            return table
        for name in self.files.newest_first(f"delta-{tree}-*.bin"):
            base = name.removesuffix(".bin")[len(f"delta-{tree}-"):]
            changes, since = self._read_delta(tree, base)
            table = self.load_records(base) if changes is not None else None
            # A write can change what a layout problem is (a planted second record becomes
            # the only one): with any, the tree is read.
            if table is None or changes is None or table.layout:
                continue
            table = apply_delta(table, tree, changes, since)
            for row in table.overlay:  # records this process wrote: no parse
                known = self._known.get(table.blobs[row])
                if known is not None and known.id == table.ids[row]:
                    table.parsed[row] = known
            if len(changes) > max(COMPACT_ROWS, len(table) // 8):
                chunks = table.chunks()
                if chunks is not None:
                    self.save(table, chunks)
            return table
        return None

    def load_records(self, tree: str) -> RecordTable | None:
        """The table in the records file of ``tree``; ``None`` when absent or untrusted."""
        name = records_name(tree)
        got = self.files.read(name, "records")
        if got is None:
            return None
        payload, end = got
        try:
            return table_from_payload(payload, tree, Section(self.files, name, "records"), end)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self.files.reject(name, Untrusted(f"bad structure: {type(exc).__name__}"))
            return None

    def _read_delta(self, tree: str, base: str) -> tuple[dict[str, tuple | None] | None, Any]:
        """The rows of ``delta-<tree>-<base>.bin``, and its commits and the ids each wrote.

        Rows ``None``: absent or untrusted (deleted). Commits (see :attr:`RecordTable.since`)
        ``None``: not recorded.
        """
        name = delta_name(tree, base)
        path = name
        got = self.files.open(name, "delta")
        if got is None:
            return None, None
        payload, end, handle = got
        try:
            try:
                handle.seek(end)
                tail = handle.read()
            finally:
                handle.close()
            changes = _delta_of(payload, tree, base, tail)
        except OSError:
            return None, None
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self.files.reject(path, Untrusted(f"bad structure: {type(exc).__name__}"))
            return None, None
        since = payload.get("since")
        if not (isinstance(since, tuple) and len(since) == 2
                and isinstance(since[0], tuple) and isinstance(since[1], tuple)
                and len(since[0]) == len(since[1]) + 1
                and all(isinstance(c, str) for c in since[0])
                and all(isinstance(ids, tuple) and all(isinstance(i, str) for i in ids)
                        for ids in since[1])):
            since = None
        return changes, since

    def derive(self, parent: str | None, tree: str | None,
               changes: Mapping[str, tuple[str, Memory] | None],
               commits: tuple[str, str] | None = None) -> bool:
        """Save the rows a write changed as the delta of ``tree`` (see the module docstring).

        Reads no record and no records file: only the parent's delta, when the parent's
        table is itself a delta (then the new delta holds both, on the same base).

        Args:
            parent: the ``memories`` tree the write was built on (``None``: none).
            tree: the ``memories`` tree it wrote.
            changes: id -> (new blob id, the record as written), or ``None`` when removed;
                every record the write changed, and nothing else.
            commits: the commit the write was built on and the one it wrote, when known
                (kept in the delta, from the first commit whose tree is its base: what
                :meth:`gitmem.api.records.Records.writers` carries over by).

        Returns:
            Whether a delta was written (``False``: the parent's table is not cached, has
            layout problems, or the tree's table is cached already).
        """
        if parent is None or tree is None or parent == tree:
            return False
        if self.files.exists(records_name(tree)) or \
                self.files.newest_first(f"delta-{tree}-*.bin"):
            return False
        rows: dict[str, tuple | None] = {}
        before = None
        if self.files.exists(records_name(parent)):
            base = parent
        else:
            found = self.files.newest_first(f"delta-{parent}-*.bin")
            base = found[0].removesuffix(".bin")[len(f"delta-{parent}-"):] if found else ""
            earlier, before = self._read_delta(parent, base) if base else (None, None)
            if earlier is None:
                return False
            rows.update(earlier)
        since = None
        if commits is not None:
            if base == parent:
                since = ((commits[0], commits[1]), (tuple(sorted(changes)),))
            elif before is not None and before[0][-1] == commits[0]:
                # One chain of commits from the base's: else the delta names none.
                since = ((*before[0], commits[1]), (*before[1], tuple(sorted(changes))))
        for memory_id, change in changes.items():
            if change is None:
                rows[memory_id] = None
            else:
                blob, memory = change
                chunk = chunk_of(memory)
                rows[memory_id] = (blob, row_of(memory), zlib.crc32(chunk), chunk)
                self._known[blob] = memory
        ids = sorted(rows)
        kept = [rows[i] for i in ids]
        chunks = [r[3] if r is not None else b"" for r in kept]
        payload = {
            "tree": tree,
            "base": base,
            "ids": ids,
            "blobs": [r[0] if r is not None else None for r in kept],
            "rows": [r[1] if r is not None else None for r in kept],
            "crcs": array("I", [r[2] if r is not None else 0 for r in kept]).tobytes(),
            "lengths": array("q", map(len, chunks)).tobytes(),
        }
        if since is not None:
            payload["since"] = since
        if not self.files.write(delta_name(tree, base), "delta", payload, chunks):
            return False
        self.files.prune(tree)
        return True

    def latest_tree(self) -> str | None:
        """The tree :meth:`latest_known` would give the table of (by file name, reading none), or ``None``."""
        for tree in self._tables:
            return tree
        for name in self.files.newest_first("records-*.bin", "delta-*.bin"):
            return name.removesuffix(".bin").split("-", 2)[1]
        return None

    def latest_known(self) -> RecordTable | None:
        """The table held in memory, else the most recently written one on disk, or ``None``."""
        for table in self._tables.values():
            return table
        return self.latest(None)

    def latest(self, exclude: str | None) -> RecordTable | None:
        """The table of the most recently written records or delta file but ``exclude``'s, or ``None``."""
        for name in self.files.newest_first("records-*.bin", "delta-*.bin"):
            tree = name.removesuffix(".bin").split("-", 2)[1]
            if tree != exclude:
                table = self.load(tree)
                if table is not None:
                    return table
        return None

    def build(self, tip: str | None, tree: str | None, layout: Layout | None = None,
              staged: StagedRows | None = None) -> RecordTable:
        """Build, save and return the table of ``tip`` (whose ``memories`` tree is ``tree``).

        Rows of another tree's table (:meth:`_base_for`) are reused by (id, blob id), then
        rows ``staged`` by a bulk write by (id, blob id) (``staged`` is closed once they are taken); other
        blobs are parsed (or taken from :meth:`remember`). Malformed blobs become ``bad``
        entries, entries that are not records where their id says ``layout`` ones. The
        mappings go to a spool file as they come and are copied into the records file at
        the end: memory holds the hot columns, not the records section.
        """
        from gitmem.cache.staged import Spool

        if layout is None:
            layout = self.store.record_layout(tip) if tip is not None else ({}, [])
        entries, problems = layout
        base = self._base_for(tree) if entries else None
        reused = _reuser(base)
        base_bad: dict[tuple[str, str], str] = {}
        if base is not None:
            base_bad = {(s.memory_id, s.blob_id): s.reason for s in base.bad}
        ids: list[str] = []
        blobs: list[str] = []
        sink = Spool(self.files.root)
        offsets = array("q", [0])
        crcs = array("I")
        bad: list[Skipped] = []
        columns: dict[str, list] = {name: [] for name in COLUMNS}
        parsed: dict[int, Memory] = {}
        tick = self._ticker(entries, reused, base_bad, staged)
        with _chunks_of(base) as base_chunk:
            for memory_id in sorted(entries):
                blob = entries[memory_id]
                key = (memory_id, blob)
                if key in base_bad:
                    bad.append(Skipped(memory_id, blob, base_bad[key]))
                    continue
                old = reused(memory_id, blob)
                chunk = base_chunk(old) if old is not None else None
                got = staged.row(memory_id, blob) if staged is not None and chunk is None else None
                if chunk is not None and base is not None and old is not None:
                    row = base.values(old)
                    crc = base.crcs[old]
                    if old in base.parsed:
                        parsed[len(ids)] = base.parsed[old]
                elif got is not None:
                    row, crc, chunk = got
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
                sink.write(chunk)
                offsets.append(offsets[-1] + len(chunk))
                crcs.append(crc)
                for name, value in zip(COLUMNS, row, strict=True):
                    columns[name].append(value)
        if staged is not None:
            staged.close()  # its rows are in the table now
        table = RecordTable(tree, ids, blobs, columns, bad, list(entries),
                            [layout_skipped(p.path, p.object_id, p.reason) for p in problems],
                            offsets=offsets, crcs=crcs, parsed=parsed)
        try:
            if tree is not None:
                if base is not None:
                    self._carried(base, table)
                # The base's rows are copied: it need not be held while the file is written.
                del base, reused
                self._tables = {}
                self.save(table, sink.blocks())
                self.files.prune(tree)
        finally:
            sink.close()
        return table

    def _base_for(self, tree: str | None) -> RecordTable | None:
        """The table whose rows a build of ``tree`` reuses, or ``None``.

        The one held in memory (the parent's, after a write) rather than a second copy of
        it, else the latest on disk.
        """
        held = next(iter(self._tables.values()), None)
        return held if held is not None and held.tree not in (None, tree) else self.latest(tree)

    def _ticker(self, entries: Mapping[str, str], reused: Callable[[str, str], int | None],
                bad: Mapping[tuple[str, str], str], staged: StagedRows | None = None,
                ) -> Callable[[], None]:
        """A function to call before each blob :meth:`build` parses; it reports to :attr:`progress`."""
        report = self.progress
        if report is None:
            return _nothing
        todo = sum(1 for key in entries.items() if reused(*key) is None and key not in bad
                   and (staged is None or staged.row_blob(key[0]) != key[1]))
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

    def save(self, table: RecordTable, chunks: Iterable[bytes]) -> None:
        """Write the records file of ``table`` (whose records section is ``chunks``, joined).

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
            table.path, table.records_at = Section(self.files, name, "records"), 0


def _nothing() -> None:
    return None


def _reuser(base: RecordTable | None) -> Callable[[str, str], int | None]:
    """A function: (id, blob id) -> the row of ``base`` that holds that record, or ``None``.

    Rows are sorted by id, so a lookup is a bisection: no index of the base is built.
    """
    if base is None:
        return lambda _id, _blob: None
    ids, blobs = base.ids, base.blobs

    def reused(memory_id: str, blob: str) -> int | None:
        r = bisect_left(ids, memory_id)
        return r if r < len(ids) and ids[r] == memory_id and blobs[r] == blob else None

    return reused


@contextmanager
def _chunks_of(table: RecordTable | None) -> Iterator[Callable[[int], bytes | None]]:
    """:meth:`RecordTable.reading_chunks` of ``table``; with none, a function that finds nothing."""
    if table is None:
        yield lambda _row: None
        return
    with table.reading_chunks() as chunk:
        yield chunk
