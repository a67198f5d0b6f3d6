"""The records of a tree: one row per record blob, and the columns of each tree built from them.

Every record blob gitmem has written, or read in full, has a row in the database's
``record`` table, keyed by its blob id: its hot fields (:func:`row_of`) and its YAML mapping
(:func:`chunk_of`), so that a full :class:`~gitmem.record.models.Memory` is
``Memory.model_validate(mapping)`` without reading YAML. The write that makes a blob inserts
its row (:meth:`Tables.written`); a blob parsed only to make a table gets none (the table memo
holds its hot fields; its full record is read from git when first asked for, and saved then).

The columns of a whole ``memories`` tree (:class:`~gitmem.cache.table.RecordTable`) are a
``table`` memo keyed by the tree id, one marshal payload of zlib-compressed columns that a
warm read loads at once. A
tree with no memo is made from the latest table held or saved: the store lists the records
that differ between the two trees (``Store.record_changes``: only the shards that differ are
read), their rows are taken from the ``record`` table, and only blobs with no row are
parsed. A tree whose changed shards hold layout problems, or a first read, walks the whole
layout instead, with the same reuse of rows. The table made is saved, except one derived
without parsing from a base within :data:`DERIVED_UNSAVED` records of it and read for the
first time: that one is saved when its tree is asked for again (the wake right after a
``learn`` does not pay for a whole-column save that the next ``learn`` makes useless).
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Mapping
from itertools import chain, compress
from typing import TYPE_CHECKING, Any, cast

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.cache.reader import Skipped, Snapshot, parse_record
from gitmem.cache.table import COLUMNS, RecordTable
from gitmem.cache.views import RELATIONS, STATUSES, TYPES
from gitmem.errors import MalformedRecord, MissingObject
from gitmem.record.decay import microseconds

if TYPE_CHECKING:
    from gitmem.cache.staged import StagedRows
    from gitmem.record.models import Memory
    from gitmem.store import LayoutProblem

    Layout = tuple[Mapping[str, str], list[LayoutProblem]]
    """What ``Store.record_layout`` returns: ``({id: blob id}, problems)``."""

__all__ = ["HANDED_ROWS", "Tables", "check_columns", "chunk_of", "layout_skipped", "row_of",
           "table_from_payload"]

HANDED_ROWS = 512
"""Records a write hands over as models (:meth:`Tables.written`); a write of more stages them
(:class:`~gitmem.cache.staged.StagedRows`), so that memory does not grow with full records."""

KNOWN_KEPT = 64
"""Records this process wrote that are kept as models for the next table (the newest). The
usual write changes a few; the rows of the rest of a bulk write are read back from the rows
:meth:`Tables.written` saved, never parsed again."""

# Models parsed while building a table that are kept for this process: enough for the usual
# few new records; a cold read of 100,000 records would otherwise hold 100,000 models
# (~400 MB) that wake and recall never use (they read views).
_KEEP_PARSED = 2048
# A table this close to a saved one is derived from it in milliseconds; its whole-column save
# (~50 ms at 10,000 records) waits until the tree is asked for again (CacheDB.asked_before).
DERIVED_UNSAVED = 128
_NONE = type(None)
_KIND = "table"
# zlib level 1: a column of 100,000 texts in ~0.3 s, within ~15 % of the size level 6 gives
# in a third of the time (decompression costs the same at every level).
_LEVEL = 1


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
        tuple(memory.visibility),
    )


def _shared(row: tuple, strings: dict[str, str]) -> tuple:
    """``row`` (of :func:`row_of`) with the texts that repeat across records as one object each.

    The commit a memory was observed at, its agent, its decay reason and its writer repeat
    over thousands of records. marshal writes an object that is referenced more than once a
    single time and refers back to it after, so a table memo holds each such text once, and
    a table loaded from it holds one object for it, not one per record. ``strings`` maps
    each text met so far to its one object (a few hundred at most: not the unique texts).
    """
    prov, decay, author = row[4], row[5], row[10]
    if prov is not None:
        sha, agent = prov[1], prov[3]
        prov = (prov[0], sha if sha is None else strings.setdefault(sha, sha), prov[2],
                agent if agent is None else strings.setdefault(agent, agent), prov[4])
    if decay is not None and decay[3] is not None:
        decay = (*decay[:3], strings.setdefault(decay[3], decay[3]))
    if author is not None:
        author = strings.setdefault(author, author)
    return (*row[:4], prov, decay, *row[6:10], author, row[11])


def chunk_of(memory: Memory) -> bytes:
    """The marshalled mapping of a validated record, as its row holds it."""
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
    if not (types_of("vis") <= {tuple} and set(map(type, chain.from_iterable(columns["vis"]))) <= {str}):
        raise ValueError("visibility")
    for links in compress(columns["rels"], columns["rels"]):
        if any(len(link) != 2 or link[0] not in RELATIONS for link in links):
            raise ValueError("relations")


def _packed(values: list) -> bytes:
    """One column of a table memo: its marshal bytes, compressed with zlib."""
    return zlib.compress(marshal.dumps(values), _LEVEL)


def _unpacked(data: Any) -> Any:
    """The column :func:`_packed` made.

    Raises:
        TypeError, ValueError, EOFError, zlib.error: ``data`` is not what :func:`_packed` writes.
    """
    if not isinstance(data, bytes):
        raise TypeError("a column is not bytes")
    return marshal.loads(zlib.decompress(data))


def table_from_payload(payload: Any, tree: str) -> RecordTable:
    """Check the structure of a ``table`` memo of ``tree`` and wrap it.

    The memo is a dict of the tree, its ``bad`` and ``layout`` entries, and ``ids``,
    ``blobs`` and each column of :data:`COLUMNS` as :func:`_packed` bytes: a column of
    texts compresses 3-7 times, rows one by one hardly at all.

    Raises:
        TypeError, ValueError, KeyError, EOFError, zlib.error: the payload is not what this
            version writes.
    """
    if not isinstance(payload, dict) or payload.get("tree") != tree:
        raise ValueError("not the table of this tree")
    packed = payload["columns"]
    if not isinstance(packed, dict) or set(packed) != set(COLUMNS):
        raise ValueError("column set")
    ids, blobs = _unpacked(payload["ids"]), _unpacked(payload["blobs"])
    columns = {name: _unpacked(packed[name]) for name in COLUMNS}
    if not (isinstance(ids, list) and isinstance(blobs, list)):
        raise TypeError("ids, blobs and columns")
    n = len(ids)
    if len(blobs) != n or set(columns) != set(COLUMNS):
        raise ValueError("column set")
    if any(not isinstance(columns[name], list) or len(columns[name]) != n for name in COLUMNS):
        raise ValueError("column length")
    check_columns(columns)
    bad = [Skipped(str(a), str(b), str(c)) for a, b, c in payload["bad"]]
    layout = [layout_skipped(str(a), str(b), str(c)) for a, b, c in payload["layout"]]
    return RecordTable(tree, ids, blobs, columns, bad, layout)


def layout_skipped(path: str, object_id: str, reason: str) -> Skipped:
    """The :class:`Skipped` entry that names one layout problem (see ``Store.record_layout``)."""
    return Skipped("", object_id, reason, path=path)


_EMPTY = RecordTable(None, [], [], {name: [] for name in COLUMNS}, [])


class Tables:
    """The record table of the current tree: loaded, or made from another tree's and the rows.

    Holds one table in memory (the last tree asked for). Callers hold :attr:`db`'s lock.

    Args:
        store: the repository's :class:`~gitmem.store.Store` (``subtree_id``,
            ``record_layout``, ``record_changes``, ``read_blob``).
        db: the cache database.
        carried: called as ``carried(base, table, origin)`` after a new table reused rows
            of ``base``, ``origin[i]`` being the row of ``base`` that row ``i`` is (``-1``: a
            new one), so that the token counts carry over.
    """

    def __init__(self, store: Any, db: CacheDB,
                 carried: Callable[[RecordTable, RecordTable, array], None]) -> None:
        self.store = store
        self.db = db
        self._carried = carried
        self._tables: dict[str | None, RecordTable] = {}
        self._known: dict[str, Memory] = {}
        self.parses = 0
        """Record blobs this process parsed (YAML read) to make tables: a warm read adds none."""
        self.progress: Callable[[int, int], None] | None = None
        """Called as ``progress(parsed, to_parse)`` while a table is made."""

    def table(self, tip: str | None, layout: Layout | None = None,
              staged: StagedRows | None = None) -> RecordTable:
        """Every record at ``tip`` (a commit on the memory ref; ``None``: no records).

        Warm: one tree lookup and one memo. Otherwise made from the latest table (see the
        module docstring), rows written by ``staged`` taken as they are; ``layout`` is
        ``store.record_layout(tip)`` when the caller has it already.
        """
        tree = self.store.subtree_id(tip, "memories") if tip is not None else None
        found = self._tables.get(tree)
        if found is None:
            found = self.load(tree) if tree is not None else None
            if found is None:
                found = self.make(tip, tree, layout, staged)
            self._tables = {tree: found}
        if staged is not None:
            staged.close()
        return found

    def forget(self) -> None:
        """Drop the table held in memory (the database is cleared by the caller)."""
        self._tables.clear()

    def remember(self, blob_id: str, memory: Memory) -> None:
        """Take ``memory`` as the parse of ``blob_id`` in the next tables made by this process."""
        self._known[blob_id] = memory
        self._bound_known()

    def _bound_known(self) -> None:
        """Keep the newest :data:`KNOWN_KEPT` records written; the others' rows are saved.

        A long-running process (``tur mcp``) writes without end: an unbounded dict of whole
        records grew its memory with every write. A record dropped here is read from its
        saved row (or parsed) if a table ever needs it.
        """
        while len(self._known) > KNOWN_KEPT:
            del self._known[next(iter(self._known))]

    def written(self, changes: Mapping[str, tuple[str, Memory] | None]) -> None:
        """Save the row of every record a write made (id -> (blob id, record), ``None``: removed)."""
        rows = []
        for memory_id, change in changes.items():
            if change is not None:
                blob, memory = change
                self._known[blob] = memory
                rows.append((blob, memory_id, row_of(memory), chunk_of(memory)))
        self._bound_known()
        self.db.put_rows(rows)

    def load(self, tree: str) -> RecordTable | None:
        """The saved table of ``tree``; ``None`` when absent or untrusted (then deleted and reported)."""
        payload = self.db.get(_KIND, tree)
        if payload is None:
            return None
        try:
            table = table_from_payload(payload, tree)
        except (KeyError, TypeError, ValueError, IndexError, EOFError, zlib.error) as exc:
            self.db.reject(_KIND, tree, Untrusted(f"bad structure: {type(exc).__name__}"))
            return None
        table.fetch = self._fetcher(table)
        return table

    def latest_saved(self) -> str | None:
        """The tree of the table saved last (the base of the next table made), or ``None``."""
        return next(iter(self.db.keys(_KIND)), None)

    def latest_known(self) -> RecordTable | None:
        """The table held in memory, else the most recently saved one, or ``None``."""
        for table in self._tables.values():
            return table
        return self._latest(None)

    def _latest(self, exclude: str | None) -> RecordTable | None:
        for tree in self.db.keys(_KIND):
            if tree != exclude:
                table = self.load(tree)
                if table is not None:
                    return table
        return None

    def make(self, tip: str | None, tree: str | None, layout: Layout | None = None,
             staged: StagedRows | None = None) -> RecordTable:
        """Make, save and return the table of ``tip`` (whose ``memories`` tree is ``tree``).

        From the table held in memory or the latest saved one (the *base*): by the records
        the store says differ between the two trees when no layout problem is near them,
        else by a walk of ``tip``'s whole layout. A record whose (id, blob) the base holds
        keeps its row (or its ``bad`` entry); any other is taken from ``staged``, from the
        records this process wrote, from its saved row, or parsed.
        """
        held = next(iter(self._tables.values()), None)
        base = held if held is not None and held.tree not in (None, tree) else self._latest(tree)
        changes = None
        problems: list[LayoutProblem] = []
        if base is not None and tree is not None and base.tree is not None and not base.layout:
            changes = self.store.record_changes(base.tree, tree)
        if changes is None:
            if layout is None:
                layout = self.store.record_layout(tip) if tip is not None else ({}, [])
            entries, problems = layout
            base = base if base is not None and entries else _EMPTY
            changes = _differences(base, entries)
        assert base is not None
        parses = self.parses
        table, origin = self._apply(tree, base, changes, staged)
        table.layout = [layout_skipped(p.path, p.object_id, p.reason) for p in problems]
        if tree is not None:
            if base.tree is not None:
                self._carried(base, table, origin)
            derived = self.parses == parses and base.tree and len(changes) <= DERIVED_UNSAVED
            if not derived or self.db.asked_before(_KIND, tree):
                self.save(table)
        return table

    def _apply(self, tree: str | None, base: RecordTable, changes: Mapping[str, str | None],
               staged: StagedRows | None) -> tuple[RecordTable, array]:
        """The table of ``tree``: ``base``'s rows with ``changes`` (id -> new blob id, ``None``: gone).

        With it, the row of ``base`` each of its rows is (``-1``: a changed one).
        """
        # A first read: every entry is new, and the layout is taken as it is (no copy of 100,000 ids).
        wanted = cast("Mapping[str, str]", changes) if None not in changes.values() else {
            memory_id: blob for memory_id, blob in changes.items() if blob is not None}
        rows: dict[str, tuple] = {}
        if staged is not None:
            for memory_id, blob in wanted.items():
                got = staged.row(memory_id, blob)
                if got is not None:
                    rows[memory_id] = got
        saved = self.db.rows(b for i, b in wanted.items() if i not in rows)
        for memory_id, blob in wanted.items():
            found = saved.get(blob)
            if found is not None and found[0] == memory_id:
                rows[memory_id] = found[1]
        del saved
        parsed: dict[str, Memory] = {}
        bad: list[Skipped] = [s for s in base.bad if s.memory_id not in changes]
        parse = self._parser(len(wanted) - len(rows), parsed, bad)
        ids: list[str] = []
        blobs: list[str] = []
        columns: dict[str, list] = {name: [] for name in COLUMNS}
        kept: dict[int, Memory] = {}
        origin = array("i")
        previous = 0
        for memory_id in sorted(changes):
            r = bisect_left(base.ids, memory_id)
            origin.extend(range(previous, r))
            ids.extend(base.ids[previous:r])
            blobs.extend(base.blobs[previous:r])
            for name in COLUMNS:
                columns[name].extend(base.columns[name][previous:r])
            previous = r + int(r < len(base.ids) and base.ids[r] == memory_id)
            new = changes[memory_id]
            if new is None:
                continue
            # Parsed here, in the order of the table: each row goes into the columns at once,
            # so that a first read never holds the rows of every record beside the columns.
            row = rows.pop(memory_id, None) or parse(memory_id, new)
            if row is None:
                continue
            if memory_id in parsed:
                kept[len(ids)] = parsed[memory_id]
            origin.append(-1)
            ids.append(memory_id)
            blobs.append(new)
            for name, value in zip(COLUMNS, row, strict=True):
                columns[name].append(value)
        origin.extend(range(previous, len(base.ids)))
        ids.extend(base.ids[previous:])
        blobs.extend(base.blobs[previous:])
        for name in COLUMNS:
            columns[name].extend(base.columns[name][previous:])
        bad.sort(key=lambda s: s.memory_id)
        table = RecordTable(tree, ids, blobs, columns, bad, parsed=kept)
        table.fetch = self._fetcher(table)
        return table, origin

    def _parser(self, todo: int, parsed: dict[str, Memory],
                bad: list[Skipped]) -> Callable[[str, str], tuple | None]:
        """A function ``(memory id, blob id) -> row``: from a record this process wrote, or parsed.

        ``todo`` is how many it will be called for (for :attr:`progress`); the first
        :data:`_KEEP_PARSED` records parsed go to ``parsed``; a blob that is not a record goes
        to ``bad`` (the function returns ``None``). The rows made are not saved to the
        ``record`` table: the table memo saved next holds them (a first read of 100,000
        records would otherwise store every text three times, 100+ MB), and the full record
        of one of them is read again from git when first asked for (:meth:`_fetcher`).
        """
        report = self.progress
        shared: dict[str, str] = {}
        done = 0

        def parse(memory_id: str, blob: str) -> tuple | None:
            nonlocal done
            done += 1
            if report is not None and (done % 64 == 0 or done == todo):
                report(done, todo)
            known = self._known.get(blob)
            if known is not None and known.id == memory_id:
                memory = known
            else:
                self.parses += 1
                try:
                    memory, _ = parse_record(self.store, memory_id, blob)
                except MalformedRecord as exc:
                    bad.append(Skipped(memory_id, blob, exc.reason))
                    return None
                except MissingObject as exc:  # one unreadable object: named, the rest served
                    bad.append(Skipped(memory_id, blob, f"unreadable: {exc}"))
                    return None
            if len(parsed) < _KEEP_PARSED:
                parsed[memory_id] = memory
            return _shared(row_of(memory), shared)

        return parse

    def save(self, table: RecordTable) -> None:
        """Save the table memo of ``table``'s tree, and prune the rows (see :meth:`CacheDB.prune`)."""
        # Column by column: one column's marshal bytes at a time, never the whole table's.
        payload = {
            "tree": table.tree,
            "ids": _packed(table.ids),
            "blobs": _packed(table.blobs),
            "bad": [(s.memory_id, s.blob_id, s.reason) for s in table.bad],
            "layout": [(s.path, s.blob_id, s.reason) for s in table.layout],
            "columns": {name: _packed(table.columns[name]) for name in COLUMNS},
        }
        with self.db.batch():
            if self.db.put(_KIND, table.tree, payload):  # type: ignore[arg-type]
                self.db.prune(chain(table.blobs, (s.blob_id for s in table.bad)))

    # -- full records -----------------------------------------------------------------------------

    def _fetcher(self, table: RecordTable) -> Callable[[list[int]], None]:
        """The function that puts the full records of some rows of ``table`` in ``table.parsed``.

        From their saved rows; a row that is missing (pruned, cleared) or does not load is
        read again from git (and saved again; a damaged one is reported).

        Raises:
            MalformedRecord: a blob read again is not a valid record.
        """
        def fetch(rows: list[int]) -> None:
            from gitmem.record.models import Memory

            ids, blobs = table.ids, table.blobs
            found = self.db.mappings(blobs[r] for r in rows)
            again = []
            for r in rows:
                chunk = found.get(blobs[r])
                memory = None
                if chunk is not None:
                    try:
                        memory = Memory.model_validate(marshal.loads(chunk))
                    except Exception as exc:  # any damage: read from git
                        self.db.notice(f"gitmem cache row of {ids[r]} is damaged"
                                       f" ({type(exc).__name__}); rebuilding it")
                        memory = None
                    if memory is not None and memory.id != ids[r]:
                        self.db.notice(f"gitmem cache row of {ids[r]} holds {memory.id}; rebuilding it")
                        memory = None
                if memory is None:
                    memory, mapping = parse_record(self.store, ids[r], blobs[r])
                    self.parses += 1
                    again.append((blobs[r], ids[r], row_of(memory), marshal.dumps(mapping)))
                memory.bind_blob(blobs[r])
                table.parsed[r] = memory
            self.db.put_rows(again)

        return fetch

    def snapshot(self, tip: str | None) -> Snapshot:
        """All records at ``tip`` as :func:`gitmem.cache.reader.read_snapshot` returns them."""
        return self.table(tip).snapshot(tip)

    def memory(self, table: RecordTable, row: int) -> Memory:
        """The full record of ``row`` in ``table`` (see :meth:`_fetcher`).

        Raises:
            MalformedRecord: the blob, re-read, is no longer a valid record.
        """
        return table.memory(row)


def _differences(base: RecordTable, entries: Mapping[str, str]) -> Mapping[str, str | None]:
    """Id -> blob id of ``entries`` whose (id, blob) ``base`` does not hold; ``None`` for ids it lacks."""
    if not base.ids and not base.bad:
        return entries  # a first read: every entry is new (no copy of the whole layout)
    held = dict(zip(base.ids, base.blobs, strict=True))
    held.update((s.memory_id, s.blob_id) for s in base.bad)
    out: dict[str, str | None] = {i: b for i, b in entries.items() if held.get(i) != b}
    out.update((i, None) for i in held if i not in entries)
    return out
