"""Read cache under ``<git common dir>/tur/cache/``: parsed records, token counts, recall indexes.

Everything here is derived from git objects and can be deleted at any time (``tur cache
clear``); nothing is ever written to the working tree or to the memory ref. Keys are the ids
git gives (blob ids, tree ids, commit ids) or digests of inputs, so a cached value can never
be out of date: a changed record has a new blob id, a changed set of records a new
``memories`` tree id.

Everything lives in one SQLite database (:mod:`gitmem.cache.db`): a row per record blob, and
memos of these kinds, each with the module that owns it:

``table`` (:mod:`~gitmem.cache.records`), keyed by ``memories`` tree
    The hot columns of every record of the tree (enough for :class:`MemoryView`), made from
    the latest table and the rows of the records that differ.
``tokens``, ``counts`` (:mod:`~gitmem.cache.tokens`)
    Token counts of entries per row, and of other texts by a BLAKE2b digest.
``recall`` (:mod:`~gitmem.cache.recall_index`), keyed by tree and candidate digest
    Recall indexes.
``statements`` (:mod:`~gitmem.cache.statements`), one memo
    The tree the statement rows are of: the live statements of one tree as rows of their own
    tables (postings by term, anchors by path), changed row by row by each write.
``wake`` (:mod:`~gitmem.cache.wakeplan`)
    The wake plan of one state, so that a warm wake reads neither table nor tokens.
``write``, keyed by commit
    The parent and the records of each commit this gitmem wrote (what the writers of old
    records carry over by: :meth:`RecordCache.written_since`).
``distances``, ``persona``, ``settings``, ``verify``, ``writers``, ``objects``
    Commit distances for one HEAD (:mod:`~gitmem.cache.distances`), the parsed persona, the
    validated settings (keyed inside by blob id and by a digest of the file), anchor-check
    outcomes, the writers of records stored without one, and the store's lookups of
    immutable objects (:class:`~gitmem.cache.db.ObjectMemo`, injected as ``Store.memo``):
    one memo each, under the empty key.

A database that is damaged or of another version, or a memo that does not load or has the
wrong shape, is deleted and rebuilt with a one-line :class:`CacheNotice` that the caller
shows (the library never prints).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from gitmem.cache.db import (
    CACHE_FORMAT,
    CacheDB,
    CacheInfo,
    CacheNotice,
    ObjectMemo,
    Untrusted,
    cache_dir,
)

if TYPE_CHECKING:
    from gitmem.cache.distances import Distances
    from gitmem.cache.reader import Snapshot
    from gitmem.cache.recall_index import RecallIndexes
    from gitmem.cache.records import Tables
    from gitmem.cache.staged import StagedRows
    from gitmem.cache.statements import StatementRows
    from gitmem.cache.table import RecordTable, RowViews
    from gitmem.cache.tokens import TokenCounts
    from gitmem.cache.views import MemoryLike, MemoryView
    from gitmem.record.models import Memory

__all__ = [
    "CACHE_FORMAT",
    "CacheInfo",
    "CacheNotice",
    "MemoryLike",
    "MemoryView",
    "ObjectMemo",
    "RecordCache",
    "RecordTable",
    "RowViews",
    "Untrusted",
    "cache_dir",
]

# A warm wake reads its plan from the database alone: the record tables and their views
# must not load with the package, so they load on first use.
_LAZY = {"MemoryLike": "views", "MemoryView": "views", "RecordTable": "table", "RowViews": "table"}


def __getattr__(name: str) -> Any:
    """Import :data:`__all__`'s record types on first use (PEP 562).

    Raises:
        AttributeError: ``name`` is not a name of this package.
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


_T = TypeVar("_T")


class _Part(Generic[_T]):
    """A part of :class:`RecordCache`, built on first use (under the cache's lock) and then kept.

    A descriptor without ``__set__``: once built, the part is an attribute of the instance.
    """

    def __init__(self) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, cache: RecordCache, owner: type | None = None) -> _T:
        found = cache.__dict__.get(self.name)
        if found is None:
            with cache._lock:
                found = cache.__dict__.get(self.name)
                if found is None:
                    found = cache.__dict__[self.name] = cache._new(self.name)
        return found


class RecordCache:
    """The read cache of one repository (see the module docstring for what it holds).

    Not trusted: the database's version and every memo's structure are checked before use,
    and a bad one is deleted, rebuilt, and reported once by :meth:`take_notices`. A
    directory that cannot be written only makes every read cold.

    Args:
        store: the repository's :class:`~gitmem.store.Store`.
        root: the cache directory (default :func:`cache_dir`).
    """

    def __init__(self, store: Any, root: Path | None = None) -> None:
        self.store = store
        self.files = CacheDB(root if root is not None else cache_dir(store))
        self._lock = self.files.lock
        self._progress: Callable[[int, int], None] | None = None

    # Each part is built (and its module imported) on first use: a wake from its plan reads
    # token counts and settings only, not the records table and its views, nor any index.
    _tokens: _Part[TokenCounts] = _Part()
    _tables: _Part[Tables] = _Part()
    _distances: _Part[Distances] = _Part()
    _recall: _Part[RecallIndexes] = _Part()
    _statements: _Part[StatementRows] = _Part()

    def _new(self, part: str) -> Any:
        """A new part ``part`` (one of the attributes above), its module imported here."""
        files = self.files
        if part == "_tokens":
            from gitmem.cache.tokens import TokenCounts

            return TokenCounts(files)
        if part == "_tables":
            from gitmem.cache.records import Tables

            tables = Tables(self.store, files, carried=self._tokens.carry)
            tables.progress = self._progress
            return tables
        if part == "_distances":
            from gitmem.cache.distances import Distances

            return Distances(files)
        if part == "_recall":
            from gitmem.cache.recall_index import RecallIndexes

            return RecallIndexes(files)
        from gitmem.cache.statements import StatementRows

        return StatementRows(files)

    def _built(self, part: str) -> bool:
        """Whether the part ``part`` (an attribute name) has been built."""
        return part in self.__dict__

    def object_memo(self) -> ObjectMemo:
        """The memo of object lookups the store keeps in this database (inject it: ``store.memo``)."""
        from gitmem.store.memo import MISS

        return ObjectMemo(self.files, MISS)

    @classmethod
    def for_store(cls, store: Any) -> RecordCache:
        """The cache of ``store``'s repository, under :func:`cache_dir`."""
        return cls(store)

    def set_progress(self, progress: Callable[[int, int], None] | None) -> None:
        """Report ``progress(parsed, to_parse)`` while a records table is made from blobs."""
        self._progress = progress
        if self._built("_tables"):
            self._tables.progress = progress

    @contextmanager
    def eager(self) -> Iterator[None]:
        """Inside, every table and recall index made is saved at once (a warm-up's purpose).

        Outside, one derived cheaply from a saved one is saved when its tree is asked for a
        second time (:meth:`gitmem.cache.db.CacheDB.asked_before`).
        """
        before, self.files.eager = self.files.eager, True
        try:
            yield
        finally:
            self.files.eager = before

    @property
    def root(self) -> Path:
        """The cache directory."""
        return self.files.root

    # -- notices and payloads -----------------------------------------------------------------------

    def take_notices(self) -> list[CacheNotice]:
        """Return and forget the notices gathered so far, the store's too (each is shown once)."""
        return self.files.take_notices()

    def read_payload(self, key: str, kind: str) -> Any:
        """The payload of the memo ``key`` of ``kind``, or ``None``.

        ``None`` when absent or unreadable (then deleted, and a notice says so). The caller
        checks the payload's structure.
        """
        return self.files.get(kind, key)

    def write_payload(self, key: str, kind: str, payload: Any) -> None:
        """Save the memo ``key`` of ``kind`` (a plain marshal-able value)."""
        self.files.put(kind, key, payload)

    # -- records ------------------------------------------------------------------------------------

    def table(self, tip: str | None) -> RecordTable:
        """Every record at ``tip`` (a commit on the memory ref; ``None``: no records).

        Warm: one tree lookup and one memo. Otherwise made from the latest table and the
        rows of the records that differ (see :mod:`gitmem.cache.records`), and saved.
        """
        with self._lock:
            return self._tables.table(tip)

    @property
    def parses(self) -> int:
        """Record blobs this process parsed to make tables or full records (a warm read: none)."""
        return self._tables.parses if self._built("_tables") else 0

    def latest_statements(self) -> tuple[str, dict[str, str]] | None:
        """The tree the statement rows are of and their statements (id -> statement), or ``None``.

        The rows are brought to the newest tree known first (see :meth:`similar_statements`);
        ``None`` without rows or any table. For checks of the rows against the records.
        """
        with self._lock:
            tree = self._current_statements()
            return None if tree is None else (tree, self._statements.statements())

    def similar_statements(self, text: str, ref: str | None, skip: Iterable[str],
                           limit: int) -> tuple[str, list[str], list[str]] | None:
        """What a new statement may repeat: (tree, ids on overlapping lines, ids of near-duplicates).

        Looked up in the statement rows (:mod:`gitmem.cache.statements`), brought first to the
        newest tree known: theirs, or that of a table a reader saved since (moved by the records
        that differ), or built from the latest table. The ids on lines that meet ``ref``'s (none
        without ``ref``) are by id; the near-duplicates, at most ``limit`` of them, those of
        :func:`gitmem.context.similarity.find_similar` in its order, neither those nor ``skip``.
        Reads no record; ``None`` without rows or any table (nothing to compare with).
        """
        with self._lock:
            tree = self._current_statements()
            if tree is None:
                return None
            rows = self._statements
            found = rows.anchored(ref, skip) if ref else []
            return tree, found, rows.similar(text, {*skip, *found}, limit)

    def _current_statements(self) -> str | None:
        return self._statements.current(lambda: self._tables.latest_known(), lambda t: self._tables.load(t),
                                        self.store)

    def statements_of(self, tree: str, ids: Sequence[str]) -> tuple[str | None, ...]:
        """The statements of ``ids`` in the statement rows (``None`` for one not in them).

        Empty unless the rows are of ``tree``.
        """
        with self._lock:
            return self._statements.statements_of(tree, ids)

    def snapshot(self, tip: str | None) -> Snapshot:
        """All records at ``tip`` as :func:`gitmem.cache.reader.read_snapshot` returns them.

        Notices about untrusted cache entries come first in ``skipped``.

        Raises:
            MalformedRecord: a record's saved row was damaged and its blob is not a record.
        """
        with self._lock:
            snap = self._tables.snapshot(tip)
        snap.skipped = [*self.take_notices(), *snap.skipped]
        return snap

    def memory(self, table: RecordTable, row: int) -> Memory:
        """The full record of ``row`` in ``table``; re-read from git if its saved row is gone or damaged.

        Raises:
            MalformedRecord: the row was damaged and the blob is not a valid record.
        """
        with self._lock:
            return self._tables.memory(table, row)

    def after_commit(self, tip: str, updated: Mapping[str, Memory]) -> None:
        """Take the records this process wrote at commit ``tip``, and make the table of ``tip``.

        Each record is bound to its new blob id at ``tip`` (see :meth:`Memory.bind_blob`)
        and saved as that blob's row, so that no reader of this tip (in this process or any
        other) parses it. One walk of the tree at ``tip``; ids not in it are ignored.

        Args:
            tip: the commit just written on the memory ref.
            updated: id -> record, only records whose bytes at ``tip`` this process wrote
                (a record a concurrent writer changed instead must be left out).
        """
        layout = self.store.record_layout(tip)
        entries = layout[0]
        with self._lock:
            for memory_id, memory in updated.items():
                blob = entries.get(memory_id)
                if blob is not None:
                    memory.bind_blob(blob)
                    self._tables.remember(blob, memory)
            self._tables.table(tip, layout)

    def staged_rows(self) -> StagedRows:
        """An empty :class:`~gitmem.cache.staged.StagedRows` saving rows in this cache's database.

        For a write of many records: it hands each one over as it is written, then calls
        :meth:`after_bulk_write` (and closes it).
        """
        from gitmem.cache.records import chunk_of, row_of
        from gitmem.cache.staged import StagedRows

        return StagedRows(self.files, row_of, chunk_of)

    def after_bulk_write(self, tip: str, staged: StagedRows) -> None:
        """Make and save the table of ``tip``, with the rows of the records written from ``staged``.

        The rows of the latest table are reused by (id, blob id), then those of ``staged``
        by (id, blob id): a record a concurrent writer changed instead has another blob and
        is read from its saved row or parsed, as is anything else new.

        Args:
            tip: the commit just written on the memory ref.
            staged: the records the write produced (:meth:`staged_rows`).
        """
        layout = self.store.record_layout(tip)
        with self._lock:
            self._tables.table(tip, layout, staged)

    def after_write(self, parent: str | None, tip: str,
                    changes: Mapping[str, tuple[str, Memory] | None]) -> bool:
        """Save the row of every record a write made, and what it derives, in one transaction.

        No record and no table is read: the next reader of ``tip`` (in any process) makes
        its table from the latest one and these rows. The commit is noted (``write``) with
        its parent and the ids it wrote, for :meth:`written_since`; the statement rows move
        to the new tree by the records it changed, when they are of the parent's; and the store
        is asked which records differ between the latest saved table's tree and the new one
        (it remembers the answer for the next reader). Each record is bound to its new blob id.

        Args:
            parent: the commit the write was built on (its tip before the write).
            tip: the commit just written.
            changes: id -> (new blob id, the record as written), ``None`` for a removed
                record: every record the commit changed, and nothing else.

        Returns:
            Whether the rows were saved (``False``: the database cannot be written).
        """
        from gitmem.vocabulary import Status

        tree = self.store.subtree_id(tip, "memories")
        base = self.store.subtree_id(parent, "memories") if parent is not None else None
        with self._lock, self.files.batch():
            for change in changes.values():
                if change is not None:
                    change[1].bind_blob(change[0])
            self._tables.written(changes)
            saved = self.files.put("write", tip, (parent, tuple(sorted(changes))))
            if saved and base is not None and tree is not None and base != tree:
                self._statements.after_write(base, tree, {
                    i: None if c is None or c[1].status == Status.REFUTED else
                    (c[1].content, c[1].provenance.context_ref if c[1].provenance else None)
                    for i, c in changes.items()})
            latest = self._tables.latest_saved()
            if saved and latest is not None and tree is not None and latest != tree:
                # The next reader makes this tree's table from the latest one by the records
                # that differ: the store remembers them, so that reader loads no libgit2.
                self.store.record_changes(latest, tree)
            return saved

    def written_since(self, tip: str | None, since: str | None) -> set[str] | None:
        """The ids of the records gitmem's writes from ``since`` to ``tip`` changed, or ``None``.

        ``None`` unless every commit from ``tip`` back to ``since`` (following first
        parents) is a write this cache noted (:meth:`after_write`), at most ``KEEP["write"]``.
        """
        from gitmem.cache.db import KEEP

        ids: set[str] = set()
        at = tip
        with self._lock:
            for _ in range(KEEP["write"]):
                if at is None or since is None:
                    return None
                if at == since:
                    return ids
                noted = self.files.get("write", at)
                if not (isinstance(noted, tuple) and len(noted) == 2
                        and isinstance(noted[1], tuple) and all(isinstance(i, str) for i in noted[1])):
                    return None
                at = noted[0] if isinstance(noted[0], str) else None
                ids.update(noted[1])
        return None

    # -- token counts -------------------------------------------------------------------------------

    def token_column(self, table: RecordTable, encoding: str) -> array:
        """Tokens of ``format_entry`` of every row of ``table`` as committed, counting only rows not cached.

        Returns:
            One count per row (``array("i")``), in row order.

        Raises:
            TokenizerUnavailable: some row must be counted and the encoding cannot load.
        """
        with self._lock:
            return self._tokens.column(table, encoding)

    def counter(self, encoding: str) -> Callable[[str], int]:
        """A token counter for ``encoding`` that remembers counts across processes.

        Same results as :class:`gitmem.context.tokens.TokenCounter` (a count depends only on the
        text and the encoding); the BPE tables load only for a text never counted before.
        """
        with self._lock:
            return self._tokens.counter(encoding)

    # -- commit distances, persona, settings, recall indexes ----------------------------------------

    def distances(self, head: str) -> dict[str, int]:
        """Known commit distances (commits) from observed SHAs to ``head``; add new ones to it.

        The dict is this cache's own: entries added by the caller are saved by :meth:`flush`
        after :meth:`mark_distances`.
        """
        with self._lock:
            return self._distances.to(head)

    def mark_distances(self) -> None:
        """Note that the dict from :meth:`distances` gained entries (saved by :meth:`flush`)."""
        self._distances.mark()

    def previous_distances(self) -> tuple[str, dict[str, int], set[str]] | None:
        """The distances saved for another HEAD than the last :meth:`distances` asked for.

        (that HEAD, observed SHA -> commits, the SHAs whose distance counts commits HEAD
        is behind them); ``None`` when there are none.
        """
        with self._lock:
            return self._distances.previous()

    def note_behind(self, sha: str) -> None:
        """Note that the distance of ``sha`` to the HEAD of :meth:`distances` is a behind one."""
        with self._lock:
            self._distances.note_behind(sha)

    def persona(self, blob_id: str) -> dict | None:
        """The cached parsed persona of ``blob_id``, or ``None`` (the ``persona`` memo holds one)."""
        return self._one("persona", blob_id)

    def put_persona(self, blob_id: str, mapping: dict) -> None:
        """Remember the parsed persona of ``blob_id`` (a plain mapping)."""
        self.files.put("persona", "", {"key": blob_id, "value": mapping})

    def settings_for(self, data: bytes) -> dict[str, Any] | None:
        """The plain settings the config file ``data`` validated to before, or ``None``.

        The ``settings`` memo holds one, keyed by a BLAKE2b-128 digest of the file's bytes.
        """
        return self._one("settings", _digest(data))

    def put_settings(self, data: bytes, plain: dict[str, Any]) -> None:
        """Remember that the config file ``data`` validates to ``plain``."""
        self.files.put("settings", "", {"key": _digest(data), "value": plain})

    def _one(self, kind: str, key: Any) -> dict | None:
        payload = self.files.get(kind, "")
        if isinstance(payload, dict) and payload.get("key") == key and isinstance(payload.get("value"), dict):
            return payload["value"]
        return None

    def recall_index(self, tree: str | None) -> Callable[[Sequence[Any]], Any]:
        """A function ``candidates -> RecallIndex``, loading or building the index on disk.

        An index is keyed by the ``memories`` tree and a digest of the candidate ids, which
        fix every document's text.
        """
        return self._recall.provider(tree)

    # -- persistence and maintenance ----------------------------------------------------------------

    def flush(self) -> None:
        """Save token counts and distances gathered in this process (no-op when none)."""
        with self._lock:
            for part in ("_tokens", "_distances"):
                if self._built(part):
                    getattr(self, part).flush()

    def clear(self) -> int:
        """Delete the database (its files); return how many files were deleted. Nothing is lost."""
        with self._lock:
            for part in ("_tables", "_tokens", "_distances", "_recall"):
                if self._built(part):
                    getattr(self, part).forget()
            return self.files.clear()

    def info(self) -> CacheInfo:
        """The cache directory and its files (the database, and its ``-wal`` while open)."""
        return self.files.info()


def _digest(data: bytes) -> bytes:
    try:  # hashlib's own BLAKE2b: importing hashlib loads OpenSSL (~2 ms), which no read needs
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=16).digest()
