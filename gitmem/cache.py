"""Read cache under ``<git common dir>/tur/cache/``: parsed records, token counts, recall indexes.

Everything here is derived from git objects and can be deleted at any time (``tur cache
clear``); nothing is ever written to the working tree or to the memory ref. Keys are content
hashes (blob ids, tree ids, commit ids), so a cached value can never be out of date: a changed
record has a new blob id, a changed set of records a new ``memories`` tree id.

Files (each written to a temporary name and renamed into place, so readers never see half a
file):

``records-<tree>.bin``
    Every record of one ``memories`` tree: a *hot* section with, per record, its id, blob
    id and the few fields wake and recall read (enough for :class:`MemoryView`), then a
    *records* section with each record's YAML mapping, so that a full
    :class:`~gitmem.models.Memory` is ``Memory.model_validate(mapping)`` (exactly what
    :func:`gitmem.codec.load` does after parsing the YAML) without reading YAML. A new tree
    reuses the rows of the latest cached tree by (id, blob id) and parses only new blobs.
``tokens-<tree>-<encoding>.bin``
    Tokens of ``format_entry(record)`` per record, aligned with the records file.
``counts-<encoding>.bin``
    Token counts of other texts wake counts (headers, persona lines, the final text), keyed
    by a BLAKE2b digest of the text, so that a warm wake never loads the BPE tables.
``distances.bin``
    Commit distance from each observed SHA to HEAD, for one HEAD.
``persona.bin``
    The parsed ``persona.yaml`` mapping of one blob.
``recall-<tree>-<digest>.bin``
    A :class:`gitmem.recall.RecallIndex` (BM25 and trigram postings) of one candidate list.
``settings.bin``
    The validated ``.tur/config.yaml``, keyed by a digest of its bytes.
``verify.bin``
    Outcomes of anchor checks (see :class:`gitmem.staleness.VerifyCache`).
``objects.bin``
    Lookups of immutable objects, kept by :class:`gitmem.store.Store`.

Format: see :mod:`gitmem.cachefile` (a checked header and a marshal payload). The CRC is
checked before unmarshalling and the structure after, and a file from another version, or
damaged, is deleted and rebuilt with a one-line :class:`CacheNotice` that the caller shows
(the library never prints).
"""

from __future__ import annotations

import hashlib
import marshal
import threading
import zlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem import cachefile
from gitmem.cachefile import CACHE_FORMAT, Untrusted, paused_gc
from gitmem.decay import microseconds
from gitmem.errors import MalformedRecord
from gitmem.reader import Skipped, Snapshot, parse_record
from gitmem.vocabulary import MemoryType, RelationType, Status

if TYPE_CHECKING:
    from gitmem.models import Memory

__all__ = [
    "CACHE_FORMAT",
    "CacheInfo",
    "CacheNotice",
    "MemoryView",
    "RecordCache",
    "RecordTable",
    "RowViews",
    "cache_dir",
]

_KEEP_TREES = 3  # records files kept: the current tree and two before it
_FORMER_FILES = frozenset({"objects.json", "verify.json"})  # unchecked JSON of cache format 1
_MAX_COUNTS = 50_000  # memoised text token counts kept per encoding
# Models parsed while building a table that are kept for this process: enough for the usual
# few new records; a cold read of 100,000 records would otherwise hold 100,000 models
# (~400 MB) that wake and recall never use (they read views).
_KEEP_PARSED = 2048
_TYPES = {t.value: t for t in MemoryType}
_STATUSES = {s.value: s for s in Status}
_RELATIONS = {r.value: r for r in RelationType}
_fromiso = datetime.fromisoformat


def cache_dir(store: Any) -> Path:
    """``<git common dir>/tur/cache``: shared by all worktrees, never in a working tree."""
    return Path(store.common_dir) / "tur" / "cache"


@dataclass(frozen=True)
class CacheNotice(Skipped):
    """A cache file that was not trusted (damaged, or from another version) and is rebuilt.

    Travels with the skipped-blob warnings (``memory_id`` and ``blob_id`` are empty), so
    every command that reports those reports this too, on one stderr line.
    """

    def warning(self) -> str:
        """One line for stderr."""
        return f"warning: {self.reason}"


@dataclass(frozen=True)
class CacheInfo:
    """What ``tur cache info`` shows: the directory, its files and their total size."""

    path: Path
    files: tuple[tuple[str, int], ...]
    """(name, bytes) of every cache file, sorted by name."""

    @property
    def total_bytes(self) -> int:
        """Bytes of all files."""
        return sum(size for _, size in self.files)


# -- record stand-ins -------------------------------------------------------------------------


class _RelationView:
    __slots__ = ("target", "type")

    def __init__(self, kind: RelationType, target: str):
        self.type = kind
        self.target = target


class _RefutationView:
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class MemoryView:
    """A read-only stand-in for :class:`~gitmem.models.Memory` with what wake and recall read.

    Same values as the record: ``id``, ``type`` (:class:`MemoryType`), ``content``,
    ``confidence``, ``status`` (the effective :class:`Status`), ``blob_id``,
    ``half_life_days``, ``last_verified_at`` (and ``verified_us``, the same instant in
    microseconds), ``anchor_path``, ``relations``, :meth:`relation_targets`; ``refutation``
    (with ``reason``) or ``None``; ``provenance`` (with ``observed_at``, ``git_sha``,
    ``context_ref``) and ``decay`` (with ``half_life_days``, ``last_verified_at``,
    ``staleness_status``, ``reason``), each
    ``None`` when the record has none. To build one object per record, ``provenance`` and
    ``decay`` are the view itself (their fields are its attributes, and where names meet,
    e.g. ``last_verified_at``, the record's value is the part's value whenever the part
    exists), and timestamps become datetimes on first use. A view costs about a microsecond
    against about 30 for a validated model; :meth:`RecordTable.memory` gives the full record.
    """

    __slots__ = ("_decay", "_observed", "_prov", "_refuted", "_relations", "_verified",
                 "blob_id", "confidence", "content", "id", "row", "status", "type", "verified_us")

    def __init__(self, row: int, memory_id: str, blob_id: str, kind: MemoryType, content: str,
                 confidence: float, status: Status, prov: tuple | None, decay: tuple | None,
                 relations: tuple, refuted: str | None, verified_us: int | None = None):
        self.row = row
        self.verified_us = verified_us
        self.id = memory_id
        self.blob_id = blob_id
        self.type = kind
        self.content = content
        self.confidence = confidence
        self.status = status
        self._prov = prov
        self._decay = decay
        self._relations = relations
        self._refuted = refuted
        self._observed: datetime | None = None
        self._verified: datetime | None = None

    # -- the record's own fields ------------------------------------------------------------------

    @property
    def provenance(self) -> MemoryView | None:
        """The provenance part (this view) or ``None``."""
        return self if self._prov is not None else None

    @property
    def decay(self) -> MemoryView | None:
        """The decay part (this view) or ``None``."""
        return self if self._decay is not None else None

    @property
    def refutation(self) -> _RefutationView | None:
        """The refutation (with ``reason``) or ``None``."""
        return _RefutationView(self._refuted) if self._refuted is not None else None

    @property
    def last_verified_at(self) -> datetime | None:
        """As :attr:`Memory.last_verified_at` (and ``decay.last_verified_at``)."""
        if self._decay is not None:
            if self._verified is None:
                self._verified = _fromiso(self._decay[1])
            return self._verified
        return self.observed_at if self._prov is not None else None

    @property
    def half_life_days(self) -> float | None:
        """As :attr:`Memory.half_life_days` (and ``decay.half_life_days``)."""
        return self._decay[0] if self._decay is not None else None

    @property
    def anchor_path(self) -> str | None:
        """As :attr:`Memory.anchor_path`."""
        ref = self._prov[2] if self._prov is not None else None
        return ref.split("#", 1)[0] if ref else None

    @property
    def relations(self) -> list[_RelationView]:
        """Relations, each with ``type`` and ``target``."""
        return [_RelationView(_RELATIONS[k], t) for k, t in self._relations]

    def relation_targets(self, kind: RelationType | None = None) -> list[str]:
        """Ids this memory links to, optionally only links of one ``kind``."""
        return [t for k, t in self._relations if kind is None or k == kind]

    # -- provenance fields ------------------------------------------------------------------------

    @property
    def observed_at(self) -> datetime:
        """``provenance.observed_at``."""
        if self._observed is None:
            self._observed = _fromiso(self._prov[0])  # type: ignore[index]
        return self._observed

    @property
    def git_sha(self) -> str | None:
        """``provenance.git_sha``."""
        return self._prov[1]  # type: ignore[index]

    @property
    def context_ref(self) -> str | None:
        """``provenance.context_ref``."""
        return self._prov[2]  # type: ignore[index]

    # -- decay fields -----------------------------------------------------------------------------

    @property
    def staleness_status(self) -> Status:
        """``decay.staleness_status``."""
        return _STATUSES[self._decay[2]]  # type: ignore[index]

    @property
    def reason(self) -> str | None:
        """``decay.reason``."""
        return self._decay[3]  # type: ignore[index]

    def __repr__(self) -> str:
        return f"MemoryView({self.id!r})"


def _row_of(memory: Memory) -> tuple:
    """The hot fields of a validated record, as plain marshal-able values."""
    prov = memory.provenance
    decay = memory.decay
    return (
        memory.type.value,
        memory.content,
        memory.confidence,
        memory.status.value,
        None if prov is None else (prov.observed_at.isoformat(), prov.git_sha, prov.context_ref),
        None if decay is None else (decay.half_life_days, decay.last_verified_at.isoformat(),
                                    decay.staleness_status.value, decay.reason),
        tuple((r.type.value, r.target) for r in memory.relations),
        None if memory.refutation is None else memory.refutation.reason,
        None if memory.last_verified_at is None else microseconds(memory.last_verified_at),
    )


_COLUMNS = ("type", "content", "conf", "status", "prov", "decay", "rels", "refuted", "verified")


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

    def __getitem__(self, position):  # noqa: ANN001, ANN204 - Sequence protocol
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
    """Every record of one ``memories`` tree, from the cache file or freshly parsed.

    Rows are sorted by id. ``bad`` lists the blobs that are not readable records;
    :attr:`entry_order` gives every entry (readable or not) in the tree's own order, as
    :meth:`gitmem.store.Store.entries` lists them.
    """

    tree: str | None
    ids: list[str]
    blobs: list[str]
    columns: dict[str, list]
    bad: list[Skipped]
    order: list[str]
    """Every entry's id (readable or not) in the tree's own order."""
    path: Path | None = None
    records_at: int = 0
    offsets: array = field(default_factory=lambda: array("q"))
    crcs: array = field(default_factory=lambda: array("I"))
    parsed: dict[int, Memory] = field(default_factory=dict)
    _views: list[MemoryView] | None = None
    _rows: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, memory_id: str) -> int | None:
        """Row of a readable record, or ``None``."""
        if self._rows is None:
            self._rows = {memory_id: i for i, memory_id in enumerate(self.ids)}
        return self._rows.get(memory_id)

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
            with paused_gc():
                self._views = self._build_views()
        return self._views

    def recall_selection(self, include_stale: bool) -> tuple[RowViews, dict[str, str]]:
        """:func:`gitmem.recall.select_candidates` of this table's views, from the columns.

        Equal to it (same candidates in the same order, same superseded map) without a view
        per record: the candidates are a :class:`RowViews` that builds views on access.
        """
        statuses, rels, ids = self.columns["status"], self.columns["rels"], self.ids
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

    def view(self, row: int) -> MemoryView:
        """The :class:`MemoryView` of one row (from the list when it was built)."""
        if self._views is not None:
            return self._views[row]
        c = self.columns
        return MemoryView(row, self.ids[row], self.blobs[row], _TYPES[c["type"][row]],
                          c["content"][row], c["conf"][row], _STATUSES[c["status"][row]],
                          c["prov"][row], c["decay"][row], c["rels"][row], c["refuted"][row],
                          c["verified"][row])

    def _build_views(self) -> list[MemoryView]:
        c = self.columns
        types, statuses, view = _TYPES, _STATUSES, MemoryView
        return [
            view(i, mid, blob, types[kind], content, conf, statuses[status], prov, decay, rels,
                 refuted, verified)
            for i, (mid, blob, kind, content, conf, status, prov, decay, rels, refuted, verified)
            in enumerate(zip(self.ids, self.blobs, c["type"], c["content"], c["conf"], c["status"],
                             c["prov"], c["decay"], c["rels"], c["refuted"], c["verified"],
                             strict=True))
        ]

    def memory(self, row: int) -> Memory:
        """The full record of ``row``, equal to a fresh parse of its blob.

        Raises:
            Untrusted: the stored mapping is damaged (the caller re-reads the blob).
        """
        found = self.parsed.get(row)
        if found is not None:
            return found
        if self.path is None:
            raise Untrusted("no records section")
        start, end = self.offsets[row], self.offsets[row + 1]
        memory = self._from_chunk(row, self._read_section(start, end - start))
        self.parsed[row] = memory
        return memory

    def memories(self) -> list[Memory]:
        """Every readable record as a full model, sorted by id.

        Raises:
            Untrusted: a stored mapping is damaged.
        """
        if len(self.parsed) < len(self.ids) and self.path is not None:
            section = self._read_section(0, -1)
            for row in range(len(self.ids)):
                if row not in self.parsed:
                    chunk = section[self.offsets[row]:self.offsets[row + 1]]
                    self.parsed[row] = self._from_chunk(row, chunk)
        return [self.parsed[row] for row in range(len(self.ids))]

    def _read_section(self, start: int, length: int) -> bytes:
        """``length`` bytes (``-1``: all) of the records section from ``start``.

        Raises:
            Untrusted: the file is gone (another process cleared or pruned the cache).
        """
        try:
            with open(self.path, "rb") as handle:  # type: ignore[arg-type]
                handle.seek(self.records_at + start)
                return handle.read(length)
        except OSError as exc:
            raise Untrusted(f"records file unreadable: {exc.strerror}") from None

    def _from_chunk(self, row: int, chunk: bytes) -> Memory:
        from gitmem.models import Memory

        if zlib.crc32(chunk) != self.crcs[row]:
            raise Untrusted(f"record {self.ids[row]} fails its checksum")
        try:
            memory = Memory.model_validate(marshal.loads(chunk))
        except Exception as exc:  # noqa: BLE001 - any failure means the file is not to be trusted
            raise Untrusted(f"record {self.ids[row]} does not load ({type(exc).__name__})") from None
        if memory.id != self.ids[row]:
            raise Untrusted(f"record {self.ids[row]} holds {memory.id}")
        memory._blob_id = self.blobs[row]
        return memory

    def snapshot(self, tip: str | None) -> Snapshot:
        """A :class:`~gitmem.reader.Snapshot` with full records, in the tree's entry order.

        Raises:
            Untrusted: a stored mapping is damaged.
        """
        records = self.memories()
        snap = Snapshot(tip=tip, skipped=list(self.bad))
        for memory_id, blob in self.entry_order():
            snap.blobs[memory_id] = blob
            row = self.row(memory_id)
            if row is not None:
                snap.records[memory_id] = records[row]
        return snap


# -- the cache ------------------------------------------------------------------------------------


class RecordCache:
    """The read cache of one repository (see the module docstring for the files).

    Not trusted: every file is checked (version stamp, length, CRC, structure) before use,
    and a bad one is deleted, rebuilt, and reported once in :attr:`notices`. A directory that
    cannot be written only makes every read cold.

    Args:
        store: the repository's :class:`~gitmem.store.Store`.
        root: the cache directory (default :func:`cache_dir`).
    """

    def __init__(self, store: Any, root: Path | None = None) -> None:
        self.store = store
        self.root = root if root is not None else cache_dir(store)
        self.notices: list[CacheNotice] = []
        self._lock = threading.RLock()
        self._tables: dict[str | None, RecordTable] = {}
        self._tokens: dict[tuple[str, str], array] = {}
        self._dirty_tokens: set[tuple[str, str]] = set()
        self._counts: dict[str, dict[bytes, int]] = {}
        self._dirty_counts: set[str] = set()
        self._distances: tuple[str, dict[str, int]] | None = None
        self._dirty_distances = False
        self._writable = True
        self._told_foreign = False
        self._pending: dict[str, Memory] = {}

    @classmethod
    def for_store(cls, store: Any) -> RecordCache:
        """The cache of ``store``'s repository, under :func:`cache_dir`."""
        return cls(store)

    # -- notices and raw files ------------------------------------------------------------------

    def take_notices(self) -> list[CacheNotice]:
        """Return and forget the notices gathered so far (each is shown once)."""
        with self._lock:
            take = getattr(self.store, "take_untrusted_cache_files", None)
            for path, exc in take() if take is not None else ():
                self._untrusted(path, exc)
            taken, self.notices = self.notices, []
        return taken

    def _notice(self, text: str) -> None:
        self.notices.append(CacheNotice("", "", text))

    def _untrusted(self, path: Path, exc: Untrusted) -> None:
        # After an upgrade every file is from the old version: one line says so, not one a file.
        if not (exc.foreign and self._told_foreign):
            what = "was written by another version" if exc.foreign else "is damaged"
            self._notice(f"gitmem cache file {path.name} {what} ({exc.reason}); rebuilding it")
            self._told_foreign = self._told_foreign or exc.foreign
        with suppress(OSError):
            path.unlink()

    def _read(self, path: Path, kind: str) -> tuple[Any, int] | None:
        """Payload of ``path`` and the offset just after it; ``None`` when absent or untrusted."""
        try:
            return cachefile.read(path, kind)
        except Untrusted as exc:
            self._untrusted(path, exc)
            return None

    def _write(self, path: Path, kind: str, payload: Any, tail: Iterable[bytes] = ()) -> int:
        """Write a cache file; return the offset just after the payload (0: not written)."""
        if not self._writable:
            return 0
        try:
            return cachefile.write(path, kind, payload, tail)
        except OSError as exc:
            self._writable = False
            self._notice(f"cannot write the gitmem cache in {self.root} ({exc}); reads stay cold")
            return 0

    def read_payload(self, name: str, kind: str) -> Any:
        """The payload of the cache file ``name`` of ``kind``, or ``None``.

        ``None`` when the file is absent or untrusted; an untrusted one is deleted and a
        notice says so.
        """
        with self._lock:
            got = self._read(self.root / name, kind)
        return got[0] if got is not None else None

    def write_payload(self, name: str, kind: str, payload: Any) -> None:
        """Write the cache file ``name`` of ``kind`` (a plain marshal-able value)."""
        with self._lock:
            self._write(self.root / name, kind, payload)

    # -- records -----------------------------------------------------------------------------------

    def table(self, tip: str | None) -> RecordTable:
        """Every record at ``tip`` (a commit on the memory ref; ``None``: no records).

        Warm: one tree lookup and one file read. Otherwise the rows of the latest cached
        tree are reused by (id, blob id), new blobs are parsed, and the file is written.
        """
        tree = self.store.subtree_id(tip, "memories") if tip is not None else None
        with self._lock:
            found = self._tables.get(tree)
            if found is None:
                found = self._load_table(tree) if tree is not None else None
                if found is None:
                    found = self._build_table(tip, tree)
                self._tables = {tree: found}
            return found

    def _records_path(self, tree: str) -> Path:
        return self.root / f"records-{tree}.bin"

    def _load_table(self, tree: str) -> RecordTable | None:
        path = self._records_path(tree)
        got = self._read(path, "records")
        if got is None:
            return None
        payload, end = got
        try:
            table = _table_from_payload(payload, tree, path, end)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self._untrusted(path, Untrusted(f"bad structure: {type(exc).__name__}"))
            return None
        return table

    def _latest_table(self, exclude: str | None) -> RecordTable | None:
        try:
            files = sorted(self.root.glob("records-*.bin"), key=lambda p: p.stat().st_mtime,
                           reverse=True)
        except OSError:
            return None
        for path in files:
            tree = path.stem.removeprefix("records-")
            if tree != exclude:
                table = self._load_table(tree)
                if table is not None:
                    return table
        return None

    def _build_table(self, tip: str | None, tree: str | None) -> RecordTable:
        entries = self.store.entries(tip) if tree is not None else {}
        base = self._latest_table(tree) if entries else None
        reuse: dict[tuple[str, str], int] = {}
        base_bad: dict[tuple[str, str], str] = {}
        section = b""
        if base is not None:
            reuse = {(mid, blob): i for i, (mid, blob) in enumerate(zip(base.ids, base.blobs, strict=True))}
            base_bad = {(s.memory_id, s.blob_id): s.reason for s in base.bad}
            section = _records_section(base)
            if not section and base.ids:
                base, reuse = None, {}
        ids, blobs, chunks, crcs, bad = [], [], [], array("I"), []
        columns: dict[str, list] = {name: [] for name in _COLUMNS}
        parsed: dict[int, Memory] = {}
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
                    row = tuple(base.columns[name][old] for name in _COLUMNS)
                    crc = base.crcs[old]
                    if old in base.parsed:
                        parsed[len(ids)] = base.parsed[old]
                else:
                    try:
                        memory, mapping = self._known_or_parsed(memory_id, blob)
                    except MalformedRecord as exc:
                        bad.append(Skipped(memory_id, blob, exc.reason))
                        continue
                    if len(parsed) < _KEEP_PARSED:
                        parsed[len(ids)] = memory
                    chunk = marshal.dumps(mapping)
                    row = _row_of(memory)
                    crc = zlib.crc32(chunk)
                ids.append(memory_id)
                blobs.append(blob)
                chunks.append(chunk)
                crcs.append(crc)
                for name, value in zip(_COLUMNS, row, strict=True):
                    columns[name].append(value)
        offsets = array("q", [0])
        for chunk in chunks:
            offsets.append(offsets[-1] + len(chunk))
        table = RecordTable(tree, ids, blobs, columns, bad, list(entries),
                            offsets=offsets, crcs=crcs, parsed=parsed)
        if tree is not None:
            self._save_table(table, chunks)
            if base is not None:
                self._carry_tokens(base, table)
            self._prune(tree)
        return table

    def _known_or_parsed(self, memory_id: str, blob: str) -> tuple[Memory, dict]:
        """A record this process wrote (see :meth:`put`), or one parsed from its blob."""
        known = self._pending.get(blob)
        if known is not None and known.id == memory_id:
            # The model validates back to itself, so its JSON form stands for the YAML mapping.
            # Nones kept: an extra key written as `null` is part of the record.
            return known, known.model_dump(mode="json")
        return parse_record(self.store, memory_id, blob)

    def _save_table(self, table: RecordTable, chunks: list[bytes]) -> None:
        payload = {
            "tree": table.tree,
            "ids": table.ids,
            "blobs": table.blobs,
            "bad": [(s.memory_id, s.blob_id, s.reason) for s in table.bad],
            "order": table.order,
            "offsets": table.offsets.tobytes(),
            "crcs": table.crcs.tobytes(),
            "columns": table.columns,
        }
        path = self._records_path(table.tree)  # type: ignore[arg-type]
        written = self._write(path, "records", payload, chunks)
        if written:  # the records section starts after the header and the hot payload
            table.path, table.records_at = path, written

    def _prune(self, keep: str) -> None:
        try:
            files = sorted(self.root.glob("records-*.bin"), key=lambda p: p.stat().st_mtime,
                           reverse=True)
            paths = list(self.root.iterdir())
        except OSError:
            return
        trees = [p.stem.removeprefix("records-") for p in files]
        keep_trees = {keep, *[t for t in trees if t != keep][: _KEEP_TREES - 1]}
        for path in paths:
            name = path.name
            # <prefix><tree id>[-<more>].bin; a tree id is 40 or (SHA-256) 64 hex digits.
            stale = name in _FORMER_FILES or any(
                name.startswith(prefix)
                and name[len(prefix):].split("-", 1)[0].removesuffix(".bin") not in keep_trees
                for prefix in ("records-", "tokens-", "recall-"))
            if stale:
                with suppress(OSError):
                    path.unlink()

    # -- the reader's interfaces ------------------------------------------------------------------

    def snapshot(self, tip: str | None) -> Snapshot:
        """All records at ``tip`` as :func:`gitmem.reader.read_snapshot` returns them."""
        with self._lock:
            table = self.table(tip)
            try:
                snap = table.snapshot(tip)
            except Untrusted as exc:
                if table.path is not None:
                    self._untrusted(table.path, exc)
                self._tables.clear()
                table = self._build_table(tip, table.tree)
                self._tables = {table.tree: table}
                snap = table.snapshot(tip)
        snap.skipped = [*self.take_notices(), *snap.skipped]
        return snap

    def memory(self, table: RecordTable, row: int) -> Memory:
        """The full record of ``row`` in ``table``; re-read from git if the cache is damaged."""
        try:
            return table.memory(row)
        except Untrusted as exc:
            if table.path is not None:
                self._untrusted(table.path, exc)
                table.path = None
            memory, _ = parse_record(self.store, table.ids[row], table.blobs[row])
            table.parsed[row] = memory
            return memory

    def put(self, blob_id: str, memory: Memory) -> None:
        """Remember a record parsed from ``blob_id`` for this process."""
        with self._lock:
            self._pending[blob_id] = memory

    # -- token counts ------------------------------------------------------------------------------

    def _tokens_path(self, tree: str, encoding: str) -> Path:
        return self.root / f"tokens-{tree}-{_safe(encoding)}.bin"

    def _token_array(self, table: RecordTable, encoding: str) -> array:
        key = (table.tree or "", encoding)
        counts = self._tokens.get(key)
        if counts is None:
            counts = array("i", [-1]) * len(table)
            if table.tree is not None:
                got = self._read(self._tokens_path(table.tree, encoding), "tokens")
                if got is not None:
                    loaded = array("i")
                    try:
                        loaded.frombytes(got[0])
                    except (TypeError, ValueError):
                        loaded = array("i")
                    if len(loaded) == len(table):
                        counts = loaded
            self._tokens[key] = counts
        return counts

    def _carry_tokens(self, base: RecordTable, table: RecordTable) -> None:
        # Token counts of the blobs a new tree shares with the last one carry over, so that
        # one learned memory costs one count, not a tokenizer load and 10,000 counts.
        prefix = f"tokens-{base.tree}-"
        try:
            names = [p.name for p in self.root.glob(prefix + "*.bin")]
        except OSError:
            return
        rows = {(mid, blob): i for i, (mid, blob) in enumerate(zip(base.ids, base.blobs, strict=True))}
        for name in names:
            encoding = name[len(prefix):-len(".bin")]
            old = self._token_array(base, encoding)
            new = array("i", [-1]) * len(table)
            for i, key in enumerate(zip(table.ids, table.blobs, strict=True)):
                j = rows.get(key)
                if j is not None:
                    new[i] = old[j]
            self._tokens[(table.tree or "", encoding)] = new
            self._dirty_tokens.add((table.tree or "", encoding))

    def token_column(self, table: RecordTable, encoding: str) -> array:
        """Tokens of ``format_entry`` of every row of ``table``, counting only rows not cached.

        Raises:
            TokenizerUnavailable: some row must be counted and the encoding cannot load.
        """
        with self._lock:
            counts = self._token_array(table, encoding)
            if -1 in counts:
                from gitmem.render import format_entry
                from gitmem.tokens import TokenCounter

                counter = TokenCounter(encoding)
                for row, value in enumerate(counts):
                    if value < 0:
                        counts[row] = counter(format_entry(table.view(row)))
                self._dirty_tokens.add((table.tree or "", encoding))
            return counts

    def counter(self, encoding: str) -> Callable[[str], int]:
        """A token counter for ``encoding`` that remembers counts across processes.

        Same results as :class:`gitmem.tokens.TokenCounter` (a count depends only on the
        text and the encoding); the BPE tables load only for a text never counted before.
        """
        from gitmem.tokens import TokenCounter

        base = TokenCounter(encoding)
        with self._lock:
            memo = self._counts.get(encoding)
            if memo is None:
                got = self._read(self.root / f"counts-{_safe(encoding)}.bin", "counts")
                memo = got[0] if got is not None and isinstance(got[0], dict) else {}
                self._counts[encoding] = memo

        def count(text: str) -> int:
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            value = memo.get(key)
            if not isinstance(value, int):
                value = memo[key] = base(text)
                self._dirty_counts.add(encoding)
            return value

        return count

    # -- commit distances and persona ------------------------------------------------------------

    def distances(self, head: str) -> dict[str, int]:
        """Known commit distances (commits) from observed SHAs to ``head``; add new ones to it.

        The dict is this cache's own: entries added by the caller are saved by :meth:`flush`.
        """
        with self._lock:
            if self._distances is None or self._distances[0] != head:
                got = self._read(self.root / "distances.bin", "distances")
                known: dict[str, int] = {}
                if got is not None and isinstance(got[0], dict) and got[0].get("head") == head:
                    table = got[0].get("d")
                    if isinstance(table, dict):
                        known = {k: v for k, v in table.items()
                                 if isinstance(k, str) and isinstance(v, int)}
                self._distances = (head, known)
            return self._distances[1]

    def mark_distances(self) -> None:
        """Note that the dict from :meth:`distances` gained entries (saved by :meth:`flush`)."""
        self._dirty_distances = True

    def persona(self, blob_id: str) -> dict | None:
        """The cached parsed persona of ``blob_id``, or ``None``."""
        got = self._read(self.root / "persona.bin", "persona")
        if got is not None and isinstance(got[0], dict) and got[0].get("blob") == blob_id:
            mapping = got[0].get("mapping")
            return mapping if isinstance(mapping, dict) else None
        return None

    def put_persona(self, blob_id: str, mapping: dict) -> None:
        """Remember the parsed persona of ``blob_id``."""
        self._write(self.root / "persona.bin", "persona", {"blob": blob_id, "mapping": mapping})

    # -- validated settings (a gitmem.config.SettingsMemo) -----------------------------------------

    def settings_for(self, data: bytes) -> dict[str, Any] | None:
        """The plain settings the config file ``data`` validated to before, or ``None``."""
        got = self._read(self.root / "settings.bin", "settings")
        if got is not None and isinstance(got[0], dict) and got[0].get("digest") == _digest(data):
            plain = got[0].get("settings")
            return plain if isinstance(plain, dict) else None
        return None

    def put_settings(self, data: bytes, plain: dict[str, Any]) -> None:
        """Remember that the config file ``data`` validates to ``plain``."""
        self._write(self.root / "settings.bin", "settings", {"digest": _digest(data), "settings": plain})

    # -- recall indexes ------------------------------------------------------------------------------

    def recall_index(self, tree: str | None) -> Callable[[Sequence[Any]], Any]:
        """A function ``candidates -> RecallIndex``, loading or building the index on disk.

        An index is keyed by the ``memories`` tree and a digest of the candidate ids, which
        fix every document's text, and of :attr:`RecallIndex.VERSION`, which fixes the analysis.
        """
        from gitmem.recall import RecallIndex, observed_times

        def provide(candidates: Sequence[Any]) -> RecallIndex:
            listed = candidates.ids if isinstance(candidates, RowViews) else [m.id for m in candidates]
            ids = "\n".join([RecallIndex.VERSION, *listed]).encode()
            digest = hashlib.blake2b(ids, digest_size=12).hexdigest()
            path = self.root / f"recall-{tree}-{digest}.bin" if tree else None
            if path is not None:
                got = self._read(path, "recall")
                if got is not None:
                    try:
                        return RecallIndex.from_payload(got[0], len(candidates))
                    except (KeyError, TypeError, ValueError) as exc:
                        self._untrusted(path, Untrusted(f"bad structure: {exc}"))
            if isinstance(candidates, RowViews):
                index = RecallIndex.build(candidates.contents, candidates.observed)
            else:
                index = RecallIndex.build([m.content for m in candidates], observed_times(candidates))
            if path is not None:
                self._write(path, "recall", index.to_payload())
            return index

        return provide

    # -- persistence and maintenance ---------------------------------------------------------------

    def flush(self) -> None:
        """Save token counts and distances gathered in this process (no-op when none)."""
        with self._lock:
            for tree, encoding in sorted(self._dirty_tokens):
                counts = self._tokens.get((tree, encoding))
                if tree and counts is not None:
                    self._write(self._tokens_path(tree, encoding), "tokens", counts.tobytes())
            self._dirty_tokens.clear()
            for encoding in sorted(self._dirty_counts):
                memo = self._counts[encoding]
                if len(memo) > _MAX_COUNTS:  # keep the newest (dicts keep insertion order)
                    memo = dict(list(memo.items())[-_MAX_COUNTS // 2:])
                    self._counts[encoding] = memo
                self._write(self.root / f"counts-{_safe(encoding)}.bin", "counts", memo)
            self._dirty_counts.clear()
            if self._dirty_distances and self._distances is not None:
                head, known = self._distances
                self._write(self.root / "distances.bin", "distances", {"head": head, "d": known})
                self._dirty_distances = False

    def clear(self) -> int:
        """Delete every cache file; return how many were deleted. Nothing is lost."""
        removed = 0
        with self._lock:
            self._tables.clear()
            self._tokens.clear()
            self._counts.clear()
            self._distances = None
            try:
                paths = list(self.root.iterdir())
            except OSError:
                return 0
            for path in paths:
                if path.is_file():  # the directory is ours: everything in it is derived
                    try:
                        path.unlink()
                        removed += 1
                    except OSError:
                        pass
        return removed

    def info(self) -> CacheInfo:
        """The cache directory and its files."""
        try:
            files = tuple(sorted((p.name, p.stat().st_size) for p in self.root.iterdir()
                                 if p.is_file()))
        except OSError:
            files = ()
        return CacheInfo(self.root, files)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in name)


def _records_section(table: RecordTable) -> bytes:
    if table.path is None or not table.ids:
        return b""
    try:
        with open(table.path, "rb") as handle:
            handle.seek(table.records_at)
            return handle.read()
    except OSError:
        return b""


_NONE = type(None)


def _check_columns(columns: dict[str, list]) -> None:
    """Check every hot value's type and vocabulary (a few milliseconds for 100,000 rows).

    Raises:
        ValueError: a value this version never writes.
    """
    def types_of(name: str) -> set[type]:
        return set(map(type, columns[name]))

    if not set(columns["type"]) <= _TYPES.keys() or not set(columns["status"]) <= _STATUSES.keys():
        raise ValueError("type or status column")
    if not (types_of("content") <= {str} and types_of("conf") <= {float, int}
            and types_of("prov") <= {tuple, _NONE} and types_of("decay") <= {tuple, _NONE}
            and types_of("rels") <= {tuple} and types_of("refuted") <= {str, _NONE}
            and types_of("verified") <= {int, _NONE}):
        raise ValueError("column value types")
    if not (set(map(len, filter(None, columns["prov"]))) <= {3}
            and set(map(len, filter(None, columns["decay"]))) <= {4}):
        raise ValueError("provenance or decay shape")
    for links in columns["rels"]:
        if links and any(len(link) != 2 or link[0] not in _RELATIONS for link in links):
            raise ValueError("relations")


def _table_from_payload(payload: Any, tree: str, path: Path, end: int) -> RecordTable:
    """Check the structure of a records payload and wrap it.

    Raises:
        TypeError, ValueError, KeyError: the payload is not what this version writes.
    """
    if not isinstance(payload, dict) or payload.get("tree") != tree:
        raise ValueError("not the records of this tree")
    ids, blobs, columns = payload["ids"], payload["blobs"], payload["columns"]
    if not (isinstance(ids, list) and isinstance(blobs, list) and isinstance(columns, dict)):
        raise TypeError("ids, blobs and columns")
    n = len(ids)
    if len(blobs) != n or set(columns) != set(_COLUMNS):
        raise ValueError("column set")
    if any(not isinstance(columns[name], list) or len(columns[name]) != n for name in _COLUMNS):
        raise ValueError("column length")
    _check_columns(columns)
    offsets, crcs = array("q"), array("I")
    offsets.frombytes(payload["offsets"])
    crcs.frombytes(payload["crcs"])
    if len(offsets) != n + 1 or len(crcs) != n:
        raise ValueError("offsets")
    bad = [Skipped(str(a), str(b), str(c)) for a, b, c in payload["bad"]]
    order = payload["order"]
    if not isinstance(order, list) or len(order) != n + len(bad):
        raise ValueError("entry order")
    return RecordTable(tree, ids, blobs, columns, bad, order, path=path, records_at=end,
                       offsets=offsets, crcs=crcs)
