"""The read cache's one SQLite database: ``<git common dir>/tur/cache/cache.sqlite``.

One table, ``memo(kind, key, value, tail, used_at)``: ``value`` is a :mod:`marshal` payload
of plain tuples, lists, dicts, strings, numbers and bytes, ``tail`` optional bytes a caller
reads in parts (the records section of a records table, read through SQLite's incremental
blob I/O). Keys are content ids (tree, blob, commit ids) or digests of inputs, so a value
can never be out of date. marshal because it is the fastest loader in the standard library
for such data and never calls code while loading; its format is tied to the Python
version, which is therefore part of the stamp checked on opening.

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
from pathlib import Path
from typing import Any, NamedTuple

from gitmem.cache.reader import Skipped
from gitmem.version import __version__

__all__ = ["CACHE_FORMAT", "DB_NAME", "CacheDB", "CacheInfo", "CacheNotice", "Untrusted", "cache_dir"]

CACHE_FORMAT = 7
"""``PRAGMA user_version`` of the database. 7: one SQLite database instead of files."""
DB_NAME = "cache.sqlite"
KEEP_TREES = 3
"""Trees whose entries :meth:`CacheDB.prune` keeps: the current one and two before it."""
TREE_KEYED = ("records-", "delta-", "tokens-", "recall-", "similar-")
"""Prefixes of the keys named ``<prefix><tree id>[-<more>].bin``, pruned with their tree."""
KEEP_PER_KIND = 64
"""Entries of a kind keyed by something else than a tree (wake plans...) that are kept."""
_BUSY_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memo (
    kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, tail BLOB,
    used_at INTEGER NOT NULL, PRIMARY KEY (kind, key));
CREATE INDEX IF NOT EXISTS memo_key ON memo (key);
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


class Tail:
    """A file-like reader of one entry's ``tail`` (``seek``, ``read``, ``close``).

    Reads go through :meth:`sqlite3.Connection.blobopen`, so a part of a large tail costs
    that part. A tail replaced by another writer since reads as an error (``OSError``), which
    callers treat as a value that is gone.
    """

    def __init__(self, blob: sqlite3.Blob | None, lock: threading.RLock) -> None:
        self._blob = blob
        self._lock = lock
        self._at = 0

    def seek(self, at: int) -> int:
        self._at = at
        return at

    def read(self, length: int = -1) -> bytes:
        if self._blob is None:
            return b""
        with self._lock:
            try:
                self._blob.seek(self._at)
                data = self._blob.read(length)
            except (sqlite3.Error, ValueError) as exc:
                raise OSError(str(exc)) from None
        self._at += len(data)
        return data

    def close(self) -> None:
        if self._blob is not None:
            with self._lock, suppress(sqlite3.Error):
                self._blob.close()
            self._blob = None


class Section:
    """Where a records table's records section is: the tail of the entry ``name`` of ``kind``.

    :meth:`open` returns a reader (``seek``, ``read``, ``close``) of the tail as stored now.
    """

    def __init__(self, db: CacheDB, name: str, kind: str) -> None:
        self.db = db
        self.name = name
        self.kind = kind

    def open(self) -> Tail:
        """A reader of the tail.

        Raises:
            OSError: the entry is gone (another process cleared or pruned the cache).
        """
        got = self.db.open_tail(self.name, self.kind)
        if got is None:
            raise OSError(f"no cache entry {self.name}")
        return got


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

    def reject(self, name: str, exc: Untrusted) -> None:
        """Delete the untrusted entry ``name`` and say so (once for all entries of another version)."""
        with self.lock:
            if not (exc.foreign and self._told_foreign):
                what = "was written by another version" if exc.foreign else "is damaged"
                self.notice(f"gitmem cache entry {name} {what} ({exc.reason}); rebuilding it")
                self._told_foreign = self._told_foreign or exc.foreign
            self._run("DELETE FROM memo WHERE key = ?", (name,), write=True)

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
                        conn.execute("INSERT OR REPLACE INTO memo VALUES ('meta', 'stamp', ?, NULL, 0)",
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

    def _reset(self, exc: BaseException) -> None:
        """Close, delete and forget a database found damaged while in use."""
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        self._drop(f"gitmem cache database {self.file.name} is damaged ({exc}); rebuilding it")

    # -- entries ----------------------------------------------------------------------------------

    def read(self, name: str, kind: str) -> tuple[Any, int] | None:
        """The payload of the entry ``name`` of ``kind`` and 0 (where its tail starts), or ``None``.

        ``None`` when absent or unreadable (then deleted, with a notice).
        """
        rows = self._run("SELECT value FROM memo WHERE kind = ? AND key = ?", (kind, name))
        if not rows:
            return None
        try:
            return marshal.loads(rows[0][0]), 0
        except (EOFError, ValueError, TypeError) as exc:
            self.reject(name, Untrusted(f"unreadable payload: {exc}"))
            return None

    def open(self, name: str, kind: str) -> tuple[Any, int, Tail] | None:
        """As :meth:`read`, and a reader of the entry's tail (the caller closes it)."""
        with self.lock:
            rows = self._run("SELECT value, rowid, tail IS NULL FROM memo WHERE kind = ? AND key = ?",
                             (kind, name))
            if not rows:
                return None
            value, rowid, empty = rows[0]
            try:
                payload = marshal.loads(value)
            except (EOFError, ValueError, TypeError) as exc:
                self.reject(name, Untrusted(f"unreadable payload: {exc}"))
                return None
            blob = None
            if not empty and self._conn is not None:
                try:
                    blob = self._conn.blobopen("memo", "tail", rowid, readonly=True)
                except sqlite3.Error:
                    return None
            return payload, 0, Tail(blob, self.lock)

    def open_tail(self, name: str, kind: str) -> Tail | None:
        """A reader of the tail of the entry ``name`` of ``kind`` (empty without one), or ``None``."""
        with self.lock:
            rows = self._run("SELECT rowid, tail IS NULL FROM memo WHERE kind = ? AND key = ?", (kind, name))
            if not rows or self._conn is None:
                return None
            if rows[0][1]:
                return Tail(None, self.lock)
            try:
                return Tail(self._conn.blobopen("memo", "tail", rows[0][0], readonly=True), self.lock)
            except sqlite3.Error:
                return None

    def exists(self, name: str) -> bool:
        """Whether an entry is named ``name``."""
        return bool(self._run("SELECT 1 FROM memo WHERE key = ? LIMIT 1", (name,)))

    def write(self, name: str, kind: str, payload: Any, tail: Iterable[bytes] = ()) -> bool:
        """Save the entry ``name`` of ``kind``: ``payload`` (plain, marshal-able) and ``tail``.

        Returns:
            Whether it was saved (``False``: the database cannot be written; one notice says so).

        Raises:
            ValueError: ``payload`` holds something marshal cannot write.
        """
        data = marshal.dumps(payload)
        rest = b"".join(tail) or None
        return self._run("INSERT OR REPLACE INTO memo VALUES (?, ?, ?, ?, ?)",
                         (kind, name, data, rest, time.time_ns()), write=True) is not None

    def read_payload(self, name: str, kind: str) -> Any:
        """The payload of the entry ``name`` of ``kind``, or ``None`` (absent or unreadable)."""
        got = self.read(name, kind)
        return got[0] if got is not None else None

    def write_payload(self, name: str, kind: str, payload: Any) -> None:
        """Save the entry ``name`` of ``kind`` (a plain marshal-able value)."""
        self.write(name, kind, payload)

    def newest_first(self, *patterns: str) -> list[str]:
        """Names of the entries matching any of the glob ``patterns``, most recently written first."""
        if not patterns:
            return []
        where = " OR ".join("key GLOB ?" for _ in patterns)
        rows = self._run(f"SELECT key FROM memo WHERE {where} ORDER BY used_at DESC", patterns)
        return [r[0] for r in rows or ()]

    def keep_newest(self, kind: str, count: int) -> None:
        """Delete all entries of ``kind`` but the ``count`` most recently written."""
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

    # -- maintenance ------------------------------------------------------------------------------

    def prune(self, keep: str) -> None:
        """Delete the entries of all trees but ``keep`` and the :data:`KEEP_TREES` newest others.

        An entry belongs to a tree by its name (see :data:`TREE_KEYED`); the trees kept are
        those of the newest records and delta entries, and the base of each kept delta.
        A statement index saved as a change of a kept tree keeps the whole index it changes.
        Other kinds keep their :data:`KEEP_PER_KIND` newest entries.
        """
        names = self._run("SELECT key FROM memo WHERE kind != 'meta' ORDER BY used_at DESC")
        if names is None:
            return
        keys = [r[0] for r in names]
        tables = [k for k in keys if k.startswith(("records-", "delta-"))]
        trees = list(dict.fromkeys(k.removesuffix(".bin").split("-", 2)[1] for k in tables))
        keep_trees = {keep, *[t for t in trees if t != keep][: KEEP_TREES - 1]}
        keep_trees |= {k.removesuffix(".bin").split("-", 2)[2] for k in tables
                       if k.startswith("delta-") and k.split("-", 2)[1] in keep_trees}
        needed = {f"similar-{k.removesuffix('.bin').split('-', 2)[2]}.bin" for k in keys
                  if k.startswith("similar-") and k.count("-") == 2 and k.split("-", 2)[1] in keep_trees}
        stale = [k for k in keys if k not in needed and any(
            k.startswith(prefix) and k[len(prefix):].split("-", 1)[0].removesuffix(".bin") not in keep_trees
            for prefix in TREE_KEYED)]
        with self.batch():
            for key in stale:
                self._run("DELETE FROM memo WHERE key = ?", (key,), write=True)
            self.keep_newest("wake", KEEP_PER_KIND)

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
            got = self.db.read_payload("objects", "objects")
            data: dict[str, Any] = {}
            if got is not None and _memo_shaped(got):
                data = got
            elif got is not None:
                self.db.reject("objects", Untrusted("bad structure"))
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
            self.db.write("objects", "objects", data)


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
