"""The checked cache file format: a header line, a CRC, a :mod:`marshal` payload.

Every cache file is one header line ``TURCACHE <kind> <format> <gitmem version> <python>
<marshal> <length> <crc32>`` and a marshal payload of plain tuples, lists, dicts, strings,
numbers and bytes, optionally followed by a tail the caller indexes and checks itself (the
records section of a records file, the parts of a statement index; see :func:`open_file`).
marshal because it is the fastest loader in the standard library for such data (about 3x
faster than pickle on 100,000 rows) and, unlike pickle, never calls code while loading; its
format is tied to the Python version, which is therefore in the header. The CRC is checked
before unmarshalling, so a damaged file is never trusted; one from another version is never
read. Files are written to a temporary name and renamed, so readers never see half a file.

This module knows nothing of what is cached and imports nothing of gitmem but the version,
so that the store (its object lookups) and the read cache both build on it.
"""

from __future__ import annotations

import gc
import marshal
import os
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

from gitmem.version import __version__

__all__ = ["CACHE_FORMAT", "Untrusted", "open_file", "paused_gc", "read_file", "stamp", "write_file"]

CACHE_FORMAT = 6
"""Version of the file layouts; part of every header. 3: the provenance column holds the
source agent too, and every payload records the exact key it was built for. 4: the records
table holds each record's old ids (``legacy_id``). 5: an ``author`` column (who stated each
record: ``author``, else ``updated_by``). 6: the provenance column holds the fingerprint too
(verify judges rows), writes save deltas, and recall indexes hold raw postings."""

_MAGIC = b"TURCACHE"
#: Payload bytes from which unmarshalling pauses the garbage collector (:func:`paused_gc`): a
#: small one builds too few objects to start a collection, and freezing then unfreezing every
#: object of the process costs about a millisecond, several times a ``tur learn``.
_PAUSE_GC_AT = 1 << 20


class Untrusted(Exception):
    """A cache file that must not be used; ``reason`` says why (one line).

    Attributes:
        reason: e.g. ``"length or checksum mismatch"``.
        foreign: written by another gitmem, Python or format version (not damaged).
    """

    def __init__(self, reason: str, foreign: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.foreign = foreign


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small live objects.

    Loading 100,000 rows triggers dozens of full collections that find nothing to collect
    (everything built is alive); pausing the collector halves the load time. On resuming,
    what is alive is moved to the oldest generation (``gc.freeze`` then ``gc.unfreeze``, two
    list splices): else the first young collection would walk every object just built
    (about 40 ms for 100,000 rows) to find them all alive. Nothing stays frozen, so a
    long-running process (the TUI, the watcher) still collects every cycle.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def stamp() -> bytes:
    """``<format> <gitmem version> py<major>.<minor> m<marshal version>``."""
    v = sys.version_info
    return f"{CACHE_FORMAT} {__version__} py{v[0]}.{v[1]} m{marshal.version}".encode()


def read_file(path: Path, kind: str) -> tuple[Any, int] | None:
    """The payload of ``path`` and the byte offset just after it; ``None`` when there is no file.

    Raises:
        Untrusted: not a cache file of ``kind``, from another version, truncated, failing
            its checksum or not unmarshallable. The caller deletes and rebuilds it.
    """
    got = open_file(path, kind)
    if got is None:
        return None
    value, end, handle = got
    handle.close()
    return value, end


def open_file(path: Path, kind: str) -> tuple[Any, int, BinaryIO] | None:
    """As :func:`read_file`, and the file, still open: for a caller that reads its tail in parts.

    Reading the tail from this handle reads the file the payload came from, even if another
    process has replaced it since. The caller closes the handle.

    Raises:
        Untrusted: as :func:`read_file` (the handle is then closed).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned open, or closed below
    except OSError:
        return None
    try:
        try:
            header = handle.readline(512)
            parts = header.split()
            if len(parts) != 8 or parts[0] != _MAGIC or parts[1] != kind.encode():
                raise Untrusted("not a gitmem cache file of this kind")
            if b" ".join(parts[2:6]) != stamp():
                found = b" ".join(parts[2:6]).decode("ascii", "replace")
                raise Untrusted(f"{found} is not {stamp().decode()}", foreign=True)
            length, crc = int(parts[6]), int(parts[7])
            payload = handle.read(length)
        except (OSError, ValueError) as exc:
            raise Untrusted(f"unreadable: {exc}") from None
        if len(payload) != length or zlib.crc32(payload) != crc:
            raise Untrusted("length or checksum mismatch")
        try:
            if length < _PAUSE_GC_AT:
                value = marshal.loads(payload)
            else:
                with paused_gc():
                    value = marshal.loads(payload)
        except (EOFError, ValueError, TypeError) as exc:
            raise Untrusted(f"unreadable payload: {exc}") from None
    except BaseException:
        handle.close()
        raise
    return value, len(header) + length, handle


def write_file(path: Path, kind: str, payload: Any, tail: Iterable[bytes] = ()) -> int:
    """Write ``payload`` (then ``tail``) as a cache file of ``kind``; return the payload's end offset.

    Raises:
        OSError: the directory cannot be written (nothing is left behind).
        ValueError: ``payload`` holds something marshal cannot write.
    """
    data = marshal.dumps(payload)
    header = b" ".join([_MAGIC, kind.encode(), stamp(), str(len(data)).encode(),
                        str(zlib.crc32(data)).encode()]) + b"\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            handle.write(header)
            handle.write(data)
            for chunk in tail:
                handle.write(chunk)
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            tmp.unlink()
        raise
    return len(header) + len(data)
