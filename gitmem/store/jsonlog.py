"""A bounded log of JSON lines in the git directory, rotated by size: the injection log's file.

Per clone, never on the ref (docs/log.md). The log is ``<dir>/<name>.jsonl`` and its older
files ``<name>.jsonl.1`` … ``<name>.jsonl.<files-1>`` (``.1`` the newest of them). A record is
appended with one ``write`` on a descriptor opened with ``O_APPEND``: POSIX makes each such
write land whole at the end of the file, so concurrent hooks never interleave their lines.
A write that would take the file past ``max_bytes`` first rotates it, under an exclusive
``flock`` on ``<dir>/<name>.lock`` (the size is checked again once the lock is held, so two
writers rotate once); the oldest file is dropped, so the log holds at most about
``files × max_bytes`` bytes. A writer that opened the file before another rotated it still
appends whole lines, to the file now named ``.1``.
"""

from __future__ import annotations

import fcntl
import math
import os
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import threading

__all__ = ["JsonLines", "json_line"]


def json_line(value: Any) -> str:
    r"""``value`` as one line of compact ASCII JSON: ``json.dumps(value, separators=(",", ":"))``.

    JSON values only: dicts with string keys, lists and tuples, strings, whole and finite
    numbers, booleans and ``None``. Non-ASCII characters are escaped (``\u00e9``), so that
    a lone surrogate (an undecodable byte of a command line) makes a valid line too.
    Written with the C string escaper alone (``_json.encode_basestring_ascii``): a warm
    ``tur wake`` logs its record and loads no JSON module (two milliseconds of imports;
    tests/test_speed_paths.py).

    Raises:
        TypeError: a value of another type, or a key that is not a string.
        ValueError: a number that is not finite.
    """
    try:
        from _json import encode_basestring_ascii as quote
    except ImportError:  # an interpreter without the accelerator
        from json.encoder import py_encode_basestring_ascii as quote

    def encode(item: Any) -> str:
        if isinstance(item, str):
            return quote(item)
        if item is None:
            return "null"
        if item is True or item is False:
            return "true" if item else "false"
        if isinstance(item, int):
            return int.__repr__(item)
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{item!r} is not a JSON number")
            return float.__repr__(item)
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise TypeError("a JSON object's keys are strings")
            return "{" + ",".join(f"{quote(k)}:{encode(v)}" for k, v in item.items()) + "}"
        if isinstance(item, list | tuple):
            return "[" + ",".join(map(encode, item)) + "]"
        raise TypeError(f"{type(item).__name__} is not a JSON value")

    return encode(value)


class JsonLines:
    """The JSON-lines files ``<directory>/<name>.jsonl[.N]``.

    Args:
        directory: where the files are (created on the first append).
        name: the file's stem.
        max_bytes: bytes past which the file is rotated (at least 1).
        files: how many files are kept, the current one included (at least 1; 1: the file
            is emptied when full).
    """

    def __init__(self, directory: Path, name: str, max_bytes: int, files: int) -> None:
        if max_bytes < 1 or files < 1:
            raise ValueError(f"a log needs max_bytes >= 1 and files >= 1, got {max_bytes}, {files}")
        self.directory = directory
        self.name = name
        self.max_bytes = max_bytes
        self.files = files

    @property
    def path(self) -> Path:
        """The current file."""
        return self.directory / f"{self.name}.jsonl"

    def paths(self) -> list[Path]:
        """Every file of the log that exists, oldest first."""
        older = [self.directory / f"{self.name}.jsonl.{n}" for n in range(self.files - 1, 0, -1)]
        return [p for p in [*older, self.path] if p.exists()]

    def append(self, record: Any) -> None:
        """Append ``record`` (JSON values) as one line.

        Raises:
            OSError: the directory or file cannot be written.
            TypeError, ValueError: ``record`` is not JSON values.
        """
        data = (json_line(record) + "\n").encode("ascii")
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = self._open()
        try:
            if os.fstat(fd).st_size + len(data) > self.max_bytes and os.fstat(fd).st_size:
                os.close(fd)
                fd = -1
                self._rotate(len(data))
                fd = self._open()
            os.write(fd, data)
        finally:
            if fd >= 0:
                os.close(fd)

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def _rotate(self, incoming: int) -> None:
        lock = os.open(self.directory / f"{self.name}.lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                return
            if not size or size + incoming <= self.max_bytes:
                return  # another writer rotated it while this one waited
            if self.files == 1:
                os.truncate(self.path, 0)
                return
            for n in range(self.files - 1, 1, -1):
                with suppress(FileNotFoundError):
                    os.replace(self.directory / f"{self.name}.jsonl.{n - 1}",
                               self.directory / f"{self.name}.jsonl.{n}")
            os.replace(self.path, self.directory / f"{self.name}.jsonl.1")
        finally:
            os.close(lock)  # closing the descriptor releases the flock

    def read(self) -> Iterator[Any]:
        """Every record, oldest first; a line that is not JSON (a torn write of a crash) is skipped."""
        for path in self.paths():
            try:
                with path.open("rb") as f:
                    yield from _records(f.read())
            except FileNotFoundError:  # rotated away between listing and opening
                continue

    def follow(self, stop: threading.Event, since_start: bool = False, step_ms: int = 50) -> Iterator[Any]:
        """The records appended from now on (``since_start``: every record, then those), until ``stop``.

        Waits on the directory with :func:`watchfiles.watch` (inotify on Linux, and a look
        every ``4 × step_ms`` milliseconds all the same), and reads the file from where it
        was left. When the file is rotated, what was appended to the old one is read from
        the descriptor still open on it, then the files rotated after it (found by inode),
        then the new file from its start. Only records rotated out of the log altogether
        between two looks (more than ``files`` rotations in one) are missed.
        Returns once ``stop`` is set (within about ``4 × step_ms``).
        """
        from watchfiles import watch

        self.directory.mkdir(parents=True, exist_ok=True)
        if since_start:
            for path in self.paths()[:-1] if self.path.exists() else self.paths():
                with suppress(FileNotFoundError), path.open("rb") as f:
                    yield from _records(f.read())
        current = _Tail.open(self.path, at_end=not since_start)
        if current is not None:
            yield from current.new()
        try:
            for _ in watch(self.directory, stop_event=stop, step=step_ms, debounce=step_ms,
                           rust_timeout=step_ms * 4, yield_on_timeout=True, raise_interrupt=False):
                if stop.is_set():
                    return
                if current is not None:
                    yield from current.new()
                if current is None or not current.same_as(self.path):
                    if current is not None:
                        yield from self._rotated_after(current.inode)
                        current.close()
                    current = _Tail.open(self.path, at_end=False)
                    if current is not None:
                        yield from current.new()
        finally:
            if current is not None:
                current.close()


    def _rotated_after(self, inode: int) -> Iterator[Any]:
        """The records of the rotated files newer than the one of ``inode`` (all when it is gone)."""
        rotated = []
        for n in range(self.files - 1, 0, -1):  # oldest first
            path = self.directory / f"{self.name}.jsonl.{n}"
            with suppress(FileNotFoundError):
                rotated.append((path, path.stat().st_ino))
        inodes = [ino for _, ino in rotated]
        newer = rotated[inodes.index(inode) + 1:] if inode in inodes else rotated
        for path, _ in newer:
            with suppress(FileNotFoundError), path.open("rb") as f:
                yield from _records(f.read())


class _Tail:
    """A file of the log read as it grows: its descriptor, and the bytes not yet a whole line."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.inode = os.fstat(f.fileno()).st_ino
        self.rest = b""

    @classmethod
    def open(cls, path: Path, at_end: bool) -> _Tail | None:
        try:
            f = path.open("rb")
        except FileNotFoundError:
            return None
        if at_end:
            f.seek(0, os.SEEK_END)
        return cls(f)

    def same_as(self, path: Path) -> bool:
        try:
            return os.fstat(self.f.fileno()).st_ino == path.stat().st_ino
        except FileNotFoundError:
            return False

    def new(self) -> Iterator[Any]:
        if os.fstat(self.f.fileno()).st_size < self.f.tell():  # emptied (a log of one file)
            self.f.seek(0)
            self.rest = b""
        data = self.rest + self.f.read()
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        return _records(data[:cut])

    def close(self) -> None:
        self.f.close()


def _records(data: bytes) -> Iterator[Any]:
    import json  # reading is for tur log and the TUI: a hook that only appends never loads it

    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError:
            continue
