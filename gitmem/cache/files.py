"""The cache directory and its checked files: format, payloads, notices, pruning, clearing.

Every cache file is one header line ``TURCACHE <kind> <format> <gitmem version> <python>
<marshal> <length> <crc32>`` and a :mod:`marshal` payload of plain tuples, lists, dicts,
strings, numbers and bytes, optionally followed by a tail the caller indexes itself (the
records section of a records file). marshal because it is the fastest loader in the
standard library for such data (about 3x faster than pickle on 100,000 rows) and, unlike
pickle, never calls code while loading; its format is tied to the Python version, which
is therefore in the header. The CRC is checked before unmarshalling, so a damaged file is
never trusted; one from another version is never read.

Files are written to a temporary name and renamed, so readers never see half a file.
:func:`read_file` and :func:`write_file` know nothing of what is cached: the parts of
:class:`gitmem.cache.RecordCache`, :class:`gitmem.store.Store` (object lookups) and
verify's outcomes all use them. :class:`CacheFiles` adds what a cache needs around them:
a bad file is deleted and reported once as a :class:`CacheNotice`, and a directory that
cannot be written makes reads cold instead of failing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from gitmem.cache.fileformat import (
    CACHE_FORMAT,
    Untrusted,
    open_file,
    paused_gc,
    read_file,
    stamp,
    write_file,
)
from gitmem.cache.reader import Skipped

__all__ = [
    "CACHE_FORMAT",
    "CacheFiles",
    "CacheInfo",
    "CacheNotice",
    "Untrusted",
    "cache_dir",
    "paused_gc",
    "read_file",
    "safe_name",
    "stamp",
    "write_file",
]

KEEP_TREES = 3
"""Trees whose files are kept by :meth:`CacheFiles.prune`: the current one and two before it."""
TREE_KEYED = ("records-", "delta-", "tokens-", "recall-", "similar-")
"""Prefixes of the files named ``<prefix><tree id>[-<more>].bin``, pruned with their tree."""
_FORMER_FILES = frozenset({"objects.json", "verify.json"})  # unchecked JSON of cache format 1


def cache_dir(store: Any) -> Path:
    """``<git common dir>/tur/cache``: shared by all worktrees, never in a working tree.

    Args:
        store: anything with a ``common_dir`` path (a :class:`gitmem.store.Store`).
    """
    return Path(store.common_dir) / "tur" / "cache"


# -- the checked file format ------------------------------------------------------------------------


# -- what the cache reports ---------------------------------------------------------------------------


class CacheNotice(Skipped):
    """A cache file that was not trusted (damaged, or from another version) and is rebuilt.

    Travels with the skipped-blob warnings (``memory_id`` and ``blob_id`` are empty), so
    every command that reports those reports this too, on one stderr line. A frozen
    dataclass by inheritance: it adds no field, so it needs no decorator of its own (which
    would cost every import of this module a third of a millisecond).
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


# -- the directory --------------------------------------------------------------------------------------


class CacheFiles:
    """The files of one cache directory, read and written in the checked format.

    Never raises for a bad or missing file: an untrusted one is deleted and a notice says
    so (see :meth:`take_notices`), and after the first failed write every write is skipped
    (reads stay cold) with one notice. :attr:`lock` (re-entrant) is shared by every part of
    the cache that keeps state.

    Args:
        root: the cache directory (created on the first write).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()
        self._notices: list[CacheNotice] = []
        self._writable = True
        self._told_foreign = False

    def path(self, name: str) -> Path:
        """The path of the cache file ``name`` (e.g. ``"verify.bin"``)."""
        return self.root / name

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

    def reject(self, path: Path, exc: Untrusted) -> None:
        """Delete the untrusted file ``path`` and say so (once for all files of another version)."""
        # After an upgrade every file is from the old version: one line says so, not one a file.
        with self.lock:
            if not (exc.foreign and self._told_foreign):
                what = "was written by another version" if exc.foreign else "is damaged"
                self.notice(f"gitmem cache file {path.name} {what} ({exc.reason}); rebuilding it")
                self._told_foreign = self._told_foreign or exc.foreign
        with suppress(OSError):
            path.unlink()

    # -- payloads ---------------------------------------------------------------------------------

    def read(self, name: str, kind: str) -> tuple[Any, int] | None:
        """Payload of the file ``name`` of ``kind`` and the offset just after it.

        Returns:
            ``None`` when the file is absent or untrusted (then deleted, with a notice).
        """
        path = self.root / name
        try:
            return read_file(path, kind)
        except Untrusted as exc:
            self.reject(path, exc)
            return None

    def open(self, name: str, kind: str) -> tuple[Any, int, BinaryIO] | None:
        """Payload of the file ``name`` of ``kind``, the offset just after it, and the file, open.

        The caller reads the tail from the handle and closes it (see
        :func:`~gitmem.cache.fileformat.open_file`).

        Returns:
            ``None`` when the file is absent or untrusted (then deleted, with a notice).
        """
        path = self.root / name
        try:
            with self.lock:
                return open_file(path, kind)
        except Untrusted as exc:
            self.reject(path, exc)
            return None

    def write(self, name: str, kind: str, payload: Any, tail: Iterable[bytes] = ()) -> int:
        """Write the file ``name`` of ``kind``: ``payload`` (plain, marshal-able) then ``tail``.

        Returns:
            The offset just after the payload, or 0 when nothing was written (the directory
            cannot be written: one notice says so, and later writes are skipped).
        """
        with self.lock:
            if not self._writable:
                return 0
            try:
                return write_file(self.root / name, kind, payload, tail)
            except OSError as exc:
                self._writable = False
                self.notice(f"cannot write the gitmem cache in {self.root} ({exc}); reads stay cold")
                return 0

    def read_payload(self, name: str, kind: str) -> Any:
        """The payload of the cache file ``name`` of ``kind``, or ``None``.

        ``None`` when the file is absent or untrusted; an untrusted one is deleted and a
        notice says so. The caller checks the payload's structure (see :meth:`reject`).
        """
        with self.lock:
            got = self.read(name, kind)
        return got[0] if got is not None else None

    def write_payload(self, name: str, kind: str, payload: Any) -> None:
        """Write the cache file ``name`` of ``kind`` (a plain marshal-able value)."""
        self.write(name, kind, payload)

    # -- the directory ----------------------------------------------------------------------------

    def newest_first(self, *patterns: str) -> list[Path]:
        """Files matching any of the glob ``patterns``, most recently written first (``[]`` on error)."""
        try:
            found = {p for pattern in patterns for p in self.root.glob(pattern)}
            return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return []

    def prune(self, keep: str) -> None:
        """Delete the files of all trees but ``keep`` and the :data:`KEEP_TREES` newest others.

        A file belongs to a tree by its name (see :data:`TREE_KEYED`); the trees kept are
        those of the newest records and delta files, and the base of each kept delta
        (``delta-<tree>-<base>.bin``). A statement index saved as a change
        (``similar-<tree>-<base>.bin``) of a kept tree keeps the whole index it changes,
        ``similar-<base>.bin``. Files of the first cache format go too.
        """
        try:
            files = self.newest_first("records-*.bin", "delta-*.bin")
            paths = list(self.root.iterdir())
        except OSError:
            return
        trees = list(dict.fromkeys(p.stem.split("-", 2)[1] for p in files))
        keep_trees = {keep, *[t for t in trees if t != keep][: KEEP_TREES - 1]}
        keep_trees |= {p.stem.split("-", 2)[2] for p in files
                       if p.name.startswith("delta-") and p.stem.split("-", 2)[1] in keep_trees}
        needed = {f"similar-{p.stem.split('-', 2)[2]}.bin" for p in paths
                  if p.name.startswith("similar-") and p.stem.count("-") == 2
                  and p.stem.split("-", 2)[1] in keep_trees}
        for path in paths:
            name = path.name
            if name in needed:
                continue
            # <prefix><tree id>[-<more>].bin; a tree id is 40 or (SHA-256) 64 hex digits.
            stale = name in _FORMER_FILES or any(
                name.startswith(prefix)
                and name[len(prefix):].split("-", 1)[0].removesuffix(".bin") not in keep_trees
                for prefix in TREE_KEYED)
            if stale:
                with suppress(OSError):
                    path.unlink()

    def clear(self) -> int:
        """Delete every file in the directory; return how many were deleted."""
        removed = 0
        with self.lock:
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
        """The directory and its files (none when it does not exist)."""
        try:
            files = tuple(sorted((p.name, p.stat().st_size) for p in self.root.iterdir()
                                 if p.is_file()))
        except OSError:
            files = ()
        return CacheInfo(self.root, files)


def safe_name(name: str) -> str:
    """``name`` with every character but letters, digits, ``.`` and ``_`` replaced by ``_``."""
    return "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in name)
