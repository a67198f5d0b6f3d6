"""The read cache's one SQLite database: ``<git common dir>/tur/cache/cache.sqlite``.

Two tables, and those of the statement rows. ``record(blob, id, row, mapping)``: a row per
record blob gitmem wrote or read in full, keyed by the blob id, with its hot fields (``row``,
see :func:`gitmem.cache.records.row_of`) and its YAML mapping, both :mod:`marshal` payloads;
the write that made a blob inserts its row (a blob only parsed to make a table has none: the
table memo holds its hot fields). ``memo(kind, key, value, used_at)``: structures
derived from a tree or a state (the columns of a tree's records, token columns, recall
indexes, wake plans...), keyed by tree or commit ids or a digest of their inputs, so that a
value can never be out of date, and pruned by count per kind (:data:`KEEP`), newest first.
``statement``, ``statement_term``, ``statement_df``, ``statement_span``: the live statements
of one tree, their postings and anchors (:mod:`gitmem.cache.statements`), changed row by row
by each write. marshal because it is the fastest loader in the standard library for such
data and never calls code while loading; its format is tied to the Python version, which is
therefore part of the stamp checked on opening.

WAL journal mode (readers never wait for a writer, a writer waits ``busy_timeout`` for
another) and ``PRAGMA user_version`` (= :data:`CACHE_FORMAT`). A database that is damaged
(any :class:`sqlite3.DatabaseError`) or of another version is deleted and started again
with one :class:`CacheNotice`; a directory that cannot be written makes every read cold.
"""

from __future__ import annotations

import marshal
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from gitmem.cache.reader import Skipped
from gitmem.version import __version__

__all__ = ["CACHE_FORMAT", "DB_NAME", "KEEP", "CacheDB", "CacheInfo", "CacheNotice", "Untrusted", "cache_dir"]

CACHE_FORMAT = 13  # 9: statement rows; 10: wake plans keyed on who git says wrote each record;
# 11: a visibility column (the agents a memory is for); 12: table columns zlib-compressed, no
# record row for a blob a read parsed (the table memo holds it); 13: recall indexes by term rows
"""``PRAGMA user_version`` of the database."""
DB_NAME = "cache.sqlite"
KEEP = {"table": 3, "tokens": 6, "recall": 6, "recall-body": 6, "write": 64, "asked": 64, "paths": 3}
"""Memos of each kind kept, the most recently written: each write of a kind deletes the older
ones (other kinds hold one memo each)."""
_BUSY_MS = 10_000
_CHUNK = 4096
"""Blob ids looked up in one query."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memo (
    kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, used_at INTEGER NOT NULL,
    PRIMARY KEY (kind, key));
CREATE INDEX IF NOT EXISTS memo_age ON memo (kind, used_at);
CREATE TABLE IF NOT EXISTS record (
    blob TEXT PRIMARY KEY, id TEXT NOT NULL, row BLOB NOT NULL, mapping BLOB NOT NULL);
""" + """
-- Statement rows (gitmem/cache/statements.py): the live statements of one memories tree
-- (named by the ``statements`` memo), updated row by row by the write that changes them.
-- ``statement``: a row per live memory (texts as UTF-8), its terms (a JSON array) and its anchor
-- (``path``, with ``first_line``/``last_line`` NULL for a whole file). ``statement_term``:
-- the postings, by term and the statement's number of terms. ``statement_df``: how many
-- rows have each term. ``statement_span``: per path, a bound on ``last_line - first_line``.
CREATE TABLE IF NOT EXISTS statement (
    row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, content BLOB NOT NULL, ref BLOB,
    terms TEXT NOT NULL, size INTEGER NOT NULL, path BLOB, first_line INTEGER, last_line INTEGER);
CREATE INDEX IF NOT EXISTS statement_anchor ON statement (path, first_line, last_line, id);
CREATE TABLE IF NOT EXISTS statement_term (
    term TEXT NOT NULL, size INTEGER NOT NULL, row INTEGER NOT NULL,
    PRIMARY KEY (term, size, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS statement_df (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS statement_span (path BLOB PRIMARY KEY, span INTEGER NOT NULL) WITHOUT ROWID;
-- Wake plans (gitmem.cache.wakeplan): the rows of a plan, one per showable memory, in the
-- order of their stream (a tier and a decay class), keyed by the plan's number.
CREATE TABLE IF NOT EXISTS wake_row (
    plan INTEGER NOT NULL, stream INTEGER NOT NULL, pos INTEGER NOT NULL,
    grp_end INTEGER NOT NULL, key REAL NOT NULL, least_tokens INTEGER NOT NULL,
    least_chars INTEGER NOT NULL, least_short INTEGER NOT NULL, least_short_chars INTEGER NOT NULL,
    most_long INTEGER NOT NULL, degree INTEGER NOT NULL,
    id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, conf REAL NOT NULL, half,
    verified INTEGER, distance INTEGER, tokens INTEGER NOT NULL, short_tokens INTEGER NOT NULL,
    chars INTEGER NOT NULL, entry TEXT NOT NULL, short TEXT, entry_chars INTEGER NOT NULL,
    short_chars INTEGER NOT NULL, blob TEXT NOT NULL, author TEXT, trusted INTEGER NOT NULL,
    PRIMARY KEY (plan, stream, pos)) WITHOUT ROWID;
-- Recall indexes (gitmem.cache.recall_index): per index (its ``recall`` memo's key) a row per
-- BM25 term (field 0) and field term (field 1): its document frequency with neighbours and
-- its postings (document numbers and counts, ``array("i")`` bytes).
CREATE TABLE IF NOT EXISTS recall_term (
    idx TEXT NOT NULL, field INTEGER NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
    numbers BLOB NOT NULL, counts BLOB NOT NULL,
    PRIMARY KEY (idx, field, term)) WITHOUT ROWID;
-- The anchor path index (gitmem.cache.paths): rows of a tree's table anchored to each path.
CREATE TABLE IF NOT EXISTS anchor_path (
    tree TEXT NOT NULL, path TEXT NOT NULL, row INTEGER NOT NULL,
    PRIMARY KEY (tree, path, row)) WITHOUT ROWID;
"""


def cache_dir(store: Any) -> Path:
    """``<git common dir>/tur/cache``: shared by all worktrees, never in a working tree.

    Args:
        store: anything with a ``common_dir`` path (a :class:`gitmem.store.Store`).
    """
    return Path(store.common_dir) / "tur" / "cache"


def stamp() -> str:
    """``<format> <gitmem version> py<major>.<minor> m<marshal version>``: what a payload needs."""
    v = sys.version_info
    return f"{CACHE_FORMAT} {__version__} py{v[0]}.{v[1]} m{marshal.version}"


class Untrusted(Exception):
    """A cached value that must not be used; ``reason`` says why (one line).

    Attributes:
        reason: e.g. ``"bad structure: column texts"``.
        foreign: written by another gitmem, Python or format version (not damaged).
    """

    def __init__(self, reason: str, foreign: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.foreign = foreign


class CacheNotice(Skipped):
    """A cache entry that was not trusted (damaged, or from another version) and is rebuilt.

    Travels with the skipped-blob warnings (``memory_id`` and ``blob_id`` are empty), so
    every command that reports those reports this too, on one stderr line.
    """

    def warning(self) -> str:
        """One line for stderr."""
        return f"warning: {self.reason}"


class CacheInfo(NamedTuple):
    """What ``tur cache info`` shows: the directory, its files and their total size."""

    path: Path
    files: tuple[tuple[str, int], ...]
    """(name, bytes) of every cache file, sorted by name."""

    @property
    def total_bytes(self) -> int:
        """Bytes of all files."""
        return sum(size for _, size in self.files)


class CacheDB:
    """The cache database of one directory: memo entries, notices, pruning, clearing.

    Never raises for a bad or missing database: a damaged one is deleted and started again
    with a notice (see :meth:`take_notices`), and once the directory proves unwritable every
    write is skipped (reads stay cold) with one notice. :attr:`lock` (re-entrant) is shared
    by every part of the cache that keeps state; the connection is used under it only.

    Args:
        root: the cache directory (created on the first use).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / DB_NAME
        self.lock = threading.RLock()
        self._notices: list[CacheNotice] = []
        self._conn: sqlite3.Connection | None = None
        self._usable = True
        self._writable = True
        self._told_foreign = False
        self.eager = False
        """Save every memo derived, also one asked for the first time (:meth:`asked_before`)."""

    # -- notices ----------------------------------------------------------------------------------

    def take_notices(self) -> list[CacheNotice]:
        """Return and forget the notices gathered so far (each is shown once)."""
        with self.lock:
            taken, self._notices = self._notices, []
        return taken

    def notice(self, text: str) -> None:
        """Add a notice of one line (``text`` without the ``warning:`` prefix)."""
        with self.lock:
            self._notices.append(CacheNotice("", "", text))

    def reject(self, kind: str, key: str, exc: Untrusted) -> None:
        """Delete the untrusted entry ``key`` of ``kind`` and say so (once for all of another version)."""
        with self.lock:
            if not (exc.foreign and self._told_foreign):
                what = "was written by another version" if exc.foreign else "is damaged"
                name = f"{kind} {key[:40]}" if key else kind
                self.notice(f"gitmem cache entry {name} {what} ({exc.reason}); rebuilding it")
                self._told_foreign = self._told_foreign or exc.foreign
            self._run("DELETE FROM memo WHERE kind = ? AND key = ?", (kind, key), write=True)

    # -- the connection ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection | None:
        """The open connection, opening (and when needed rebuilding) the database; ``None``: unusable."""
        if self._conn is not None or not self._usable:
            return self._conn
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = self._open()
        except sqlite3.DatabaseError as exc:
            self._drop(f"gitmem cache database {self.file.name} is damaged ({exc}); rebuilding it")
            try:
                conn = self._open()
            except (sqlite3.Error, OSError) as again:
                self._unusable(again)
                return None
        except (sqlite3.Error, OSError) as exc:
            self._unusable(exc)
            return None
        self._conn = conn
        # Closed when the cache goes, or at exit: the last connection to close folds the WAL
        # back into the database and deletes it, so a cache at rest is one file.
        weakref.finalize(self, conn.close)
        return conn

    def _open(self) -> sqlite3.Connection:
        """Connect, check the version and stamp, create the schema.

        Raises:
            sqlite3.DatabaseError: the file is not a database or is damaged.
            sqlite3.OperationalError, OSError: it cannot be opened.
        """
        conn = sqlite3.connect(self.file, timeout=_BUSY_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            # A cache needs no durability, only consistency: in WAL mode NORMAL syncs at
            # checkpoints only (a power cut loses the last commits, rebuilt from git), so a
            # learn's few writes do not each wait for the disk.
            conn.execute("PRAGMA synchronous = NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            found = None
            if version == CACHE_FORMAT:
                row = conn.execute("SELECT value FROM memo WHERE kind = 'meta' AND key = 'stamp'").fetchone()
                found = marshal.loads(row[0]) if row is not None else None
            if version != 0 and found != stamp():
                conn.close()
                what = found if found is not None else f"format {version}"
                self._drop(f"gitmem cache database {self.file.name} was written by another version"
                           f" ({what} is not {stamp()}); rebuilding it")
                conn = sqlite3.connect(self.file, timeout=_BUSY_MS / 1000, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
                conn.execute("PRAGMA synchronous = NORMAL")
                version = 0
            if version == 0:
                self._remove_files_of_earlier_formats()
                with suppress(sqlite3.OperationalError):  # read-only: reads stay cold
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("BEGIN IMMEDIATE")
                    if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                        for statement in filter(str.strip, _SCHEMA.split(";")):
                            conn.execute(statement)
                        conn.execute("INSERT OR REPLACE INTO memo VALUES ('meta', 'stamp', ?, 0)",
                                     (marshal.dumps(stamp()),))
                        conn.execute(f"PRAGMA user_version = {CACHE_FORMAT}")
                    conn.execute("COMMIT")
                conn.execute("SELECT 1 FROM memo LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _remove_files_of_earlier_formats(self) -> None:
        # Formats 1-6 were one file per entry (``*.bin``, ``*.json``): dead weight once the database exists.
        with suppress(OSError):
            for path in self.root.iterdir():
                if path.suffix in (".bin", ".json") and path.is_file():
                    with suppress(OSError):
                        path.unlink()

    def _drop(self, text: str) -> None:
        """Delete the database and its WAL files, with the notice ``text``."""
        self.notice(text)
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                Path(f"{self.file}{suffix}").unlink()

    def _unusable(self, exc: BaseException) -> None:
        self._usable = False
        self.notice(f"cannot write the gitmem cache in {self.root} ({exc}); reads stay cold")

    def _run(self, sql: str, args: tuple = (), write: bool = False) -> list[tuple] | None:
        """Rows of ``sql``; ``None`` when the database cannot serve it (damage is rebuilt)."""
        with self.lock:
            if write and not self._writable:
                return None
            conn = self._connect()
            if conn is None:
                return None
            try:
                return conn.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                if write:
                    self._writable = False
                    self.notice(f"cannot write the gitmem cache in {self.root} ({exc}); reads stay cold")
                return None
            except sqlite3.DatabaseError as exc:
                self._reset(exc)
                return None

    def run(self, sql: str, args: tuple = (), write: bool = False) -> list[tuple] | None:
        """Rows of one SQL statement; ``None`` when the database cannot serve it.

        For the parts of the cache that keep tables of their own (:mod:`gitmem.cache.statements`,
        :mod:`gitmem.cache.wakeplan`, :mod:`gitmem.cache.paths`): damage is rebuilt and an
        unwritable database reported (with ``write``), as for every other access.
        """
        return self._run(sql, args, write)

    def run_many(self, sql: str, rows: Iterable[tuple]) -> bool:
        """Run one writing SQL statement for each of ``rows``; whether it was done.

        Inside :meth:`batch`, part of its transaction.
        """
        with self.lock:
            if not self._writable:
                return False
            conn = self._connect()
            if conn is None:
                return False
            try:
                conn.executemany(sql, rows)
            except sqlite3.OperationalError as exc:
                self._writable = False
                self.notice(f"cannot write the gitmem cache in {self.root} ({exc}); reads stay cold")
                return False
            except sqlite3.DatabaseError as exc:
                self._reset(exc)
                return False
            return True

    def _reset(self, exc: BaseException) -> None:
        """Close, delete and forget a database found damaged while in use."""
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        self._drop(f"gitmem cache database {self.file.name} is damaged ({exc}); rebuilding it")

    # -- memos ------------------------------------------------------------------------------------

    def get(self, kind: str, key: str) -> Any:
        """The payload of the memo ``key`` of ``kind``, or ``None`` (absent, or unreadable: then deleted)."""
        rows = self._run("SELECT value FROM memo WHERE kind = ? AND key = ?", (kind, key))
        if not rows:
            return None
        try:
            return marshal.loads(rows[0][0])
        except (EOFError, ValueError, TypeError) as exc:
            self.reject(kind, key, Untrusted(f"unreadable payload: {exc}"))
            return None

    def put(self, kind: str, key: str, payload: Any) -> bool:
        """Save the memo ``key`` of ``kind`` (a plain marshal-able value); prune its kind (:data:`KEEP`).

        Returns:
            Whether it was saved (``False``: the database cannot be written; one notice says so).

        Raises:
            ValueError: ``payload`` holds something marshal cannot write.
        """
        with self.lock:
            saved = self._run("INSERT OR REPLACE INTO memo VALUES (?, ?, ?, ?)",
                              (kind, key, marshal.dumps(payload), time.time_ns()), write=True) is not None
            if saved:
                self._prune(kind)
        return saved

    def asked_before(self, kind: str, key: str) -> bool:
        """Whether a memo ``key`` of ``kind`` that was not saved was asked for before; note it if not.

        What a first read after a write derives cheaply from an older memo (a table, a recall
        index: the old one plus the few records the write changed) is saved only when it is
        asked for again: a tree read once (the wake right after a ``learn``, before the next
        ``learn``) costs no save of a whole column, a tree read twice is then read warm.
        Always ``True`` while :attr:`eager` (a warm-up saves what it builds).
        """
        if self.eager or self._run("SELECT 1 FROM memo WHERE kind = 'asked' AND key = ?", (f"{kind}:{key}",)):
            return True
        self.put("asked", f"{kind}:{key}", 0)
        return False

    def keys(self, kind: str, prefix: str = "") -> list[str]:
        """Keys of the memos of ``kind`` that start with ``prefix``, most recently written first."""
        rows = self._run("SELECT key FROM memo WHERE kind = ? AND substr(key, 1, ?) = ?"
                         " ORDER BY used_at DESC", (kind, len(prefix), prefix))
        return [r[0] for r in rows or ()]

    def newest(self, *kinds: str) -> str | None:
        """The key of the memo of any of ``kinds`` written last, or ``None``."""
        marks = ", ".join("?" for _ in kinds)
        rows = self._run(f"SELECT key FROM memo WHERE kind IN ({marks}) ORDER BY used_at DESC LIMIT 1", kinds)
        return rows[0][0] if rows else None

    def keep_newest(self, kind: str, count: int) -> None:
        """Delete all memos of ``kind`` but the ``count`` most recently written."""
        self._run("DELETE FROM memo WHERE kind = ? AND key NOT IN (SELECT key FROM memo"
                  " WHERE kind = ? ORDER BY used_at DESC LIMIT ?)", (kind, kind, count), write=True)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Run the writes inside in one transaction (one commit, one WAL sync)."""
        with self.lock:
            conn = self._connect() if self._writable else None
            began = False
            if conn is not None and not conn.in_transaction:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    began = True
                except sqlite3.Error:
                    began = False
            try:
                yield
            finally:
                if began and self._conn is conn and conn is not None:
                    with suppress(sqlite3.Error):
                        conn.execute("COMMIT")

    # -- record rows --------------------------------------------------------------------------------

    def put_rows(self, rows: Iterable[tuple[str, str, tuple, bytes]]) -> None:
        """Save ``(blob id, memory id, hot row, marshalled mapping)`` of record blobs."""
        # One transaction: in autocommit mode each row would be a commit of its own (10,000
        # rows: ~1 s instead of ~0.2 s).
        with self.batch():
            self.run_many("INSERT OR REPLACE INTO record VALUES (?, ?, ?, ?)",
                          [(b, i, marshal.dumps(r), m) for b, i, r, m in rows])

    def rows(self, blobs: Iterable[str]) -> dict[str, tuple[str, tuple]]:
        """Blob id -> (memory id, hot row) of the saved rows of ``blobs`` (an unreadable one is left out)."""
        return self._select("id, row", blobs, lambda i, r: (i, marshal.loads(r)))

    def mappings(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Blob id -> marshalled mapping of the saved rows of ``blobs``."""
        return self._select("mapping", blobs, lambda m: m)

    def drop_row(self, blob: str) -> None:
        """Delete the row of ``blob`` (found damaged)."""
        self._run("DELETE FROM record WHERE blob = ?", (blob,), write=True)

    def _select(self, columns: str, blobs: Iterable[str], made: Any) -> dict[str, Any]:
        out = {}
        # By chunks: a first read asks for every blob of the tree (1,000,000 ids would be one
        # 89 MB JSON text and its rows at once).
        blobs = iter(blobs)
        while chunk := list(islice(blobs, _CHUNK)):
            found = self._run(f"SELECT blob, {columns} FROM record WHERE blob IN"
                              " (SELECT value FROM json_each(?))", (_json_list(chunk),))
            for blob, *values in found or ():
                try:
                    out[blob] = made(*values)
                except (EOFError, ValueError, TypeError):
                    continue  # read again from git
        return out

    # -- maintenance ------------------------------------------------------------------------------

    def _prune(self, kind: str) -> None:
        """Keep the :data:`KEEP` newest memos of ``kind``, and every token column of a kept table.

        The next table is made from a kept one, and takes its token counts.
        """
        count = KEEP.get(kind)
        if count is None:
            return
        kept = "" if kind != "tokens" else (
            " AND substr(key, 1, instr(key, ':') - 1) NOT IN (SELECT key FROM memo WHERE kind = 'table')")
        self._run(f"DELETE FROM memo WHERE kind = ?{kept} AND key NOT IN (SELECT key FROM memo"
                  " WHERE kind = ? ORDER BY used_at DESC LIMIT ?)", (kind, kind, count), write=True)

    def prune(self, live: Iterable[str]) -> None:
        """Delete the rows of blobs not in ``live`` (a table's), once they outnumber those by a margin.

        A count is cheap, a sweep is not: rows of old trees stay a while, and cost only space.
        """
        live = list(live)
        with self.batch():
            total = self._run("SELECT count(*) FROM record")
            if total and total[0][0] > 2 * len(live) + 4096:
                self._run("DELETE FROM record WHERE blob NOT IN (SELECT value FROM json_each(?))",
                          (_json_list(live),), write=True)

    def clear(self) -> int:
        """Delete the database (and its WAL files); return how many files were deleted."""
        removed = 0
        with self.lock:
            if self._conn is not None:
                with suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None
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
        """The directory and its files (the database and its ``-wal``/``-shm``)."""
        try:
            files = tuple(sorted((p.name, p.stat().st_size) for p in self.root.iterdir() if p.is_file()))
        except OSError:
            files = ()
        return CacheInfo(self.root, files)


def _json_list(items: Iterable[str]) -> str:
    """``items`` as a JSON array, what SQLite's ``json_each`` reads (a warm wake never needs it)."""
    import json

    return json.dumps(list(items))


class ObjectMemo:
    """Lookups of immutable objects (what a commit's tree holds at a path), kept across processes.

    What :class:`gitmem.store.Store` is given to remember them in (its ``ObjectMemo``
    protocol): one ``objects`` entry of the database, a dict of at most :attr:`LIMIT` keys.
    Keys name commit or blob ids, which never change meaning, so an entry is never stale.
    A badly shaped entry is dropped and reported.
    """

    LIMIT = 256
    MISS: Any = object()

    def __init__(self, db: CacheDB, miss: Any) -> None:
        self.db = db
        self.MISS = miss
        self.data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self.data is None:
            got = self.db.get("objects", "")
            data: dict[str, Any] = {}
            if got is not None and _memo_shaped(got):
                data = got
            elif got is not None:
                self.db.reject("objects", "", Untrusted("bad structure"))
            self.data = data
        return self.data

    def get(self, key: str) -> Any:
        """The remembered lookup of ``key``, or the store's miss sentinel."""
        return self._load().get(key, self.MISS)

    def snapshot(self) -> dict[str, Any]:
        """A copy of every remembered lookup."""
        return dict(self._load())

    def put(self, key: str, value: Any) -> None:
        """Remember one lookup (a string, ``None`` or an ``ls:`` listing)."""
        self.put_many({key: value})

    def put_many(self, items: dict[str, Any]) -> None:
        """Remember several lookups in one write; the oldest go past :attr:`LIMIT`."""
        data = self._load()
        data.update(items)
        while len(data) > self.LIMIT:
            del data[next(iter(data))]
        with suppress(ValueError):  # a memo that cannot be written only costs time
            self.db.put("objects", "", data)


def _memo_shaped(data: Any) -> bool:
    """Whether ``data`` has the shape :class:`ObjectMemo` writes.

    ``ls:`` keys map to ``{name: blob id}``, the others to a string (or ``None``: no
    object at that path).
    """
    if not isinstance(data, dict):
        return False
    for key, value in data.items():
        if not isinstance(key, str):
            return False
        if key.startswith("ls:"):
            if not (isinstance(value, dict)
                    and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
                return False
        elif not (value is None or isinstance(value, str)):
            return False
    return True
