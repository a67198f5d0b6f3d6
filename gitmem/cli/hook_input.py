"""A harness hook's stdin, read with a deadline up to the end of its first JSON value.

A harness writes one JSON object to a hook's stdin, but may keep the pipe open after it (or
never write a whole one): a hook that reads to end of file then blocks until the harness
kills it (Claude Code's default hook timeout is 60 s, on every prompt). :func:`read_payload`
reads what has arrived, stops as soon as the bytes so far begin with a complete JSON value
(:meth:`json.JSONDecoder.raw_decode`), and gives up after :data:`DEADLINE_S` seconds without
one. Not configurable: the hook must answer before any configuration could be read.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import select
import time
from collections.abc import Callable
from typing import IO

__all__ = ["DEADLINE_S", "MAX_BYTES", "BadPayload", "read_payload"]

DEADLINE_S = 2.0
"""Seconds a hook waits for its payload to be complete (or stdin to close)."""
MAX_BYTES = 8 * 1024 * 1024
"""Bytes a payload may take (a ``Write`` of a large file carries the whole file)."""

_CHUNK = 1 << 16
_DECODER = json.JSONDecoder()


class BadPayload(Exception):
    """The payload is not one a hook can use; ``str()`` is one line for stderr."""


def _first_value(text: str) -> str | None:
    """The first JSON object of ``text`` (leading white space skipped), or ``None`` while incomplete."""
    start = len(text) - len(text.lstrip())
    if start == len(text) or text[start] != "{":
        return None
    try:
        _, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    return text[start:end]


def _at_end(text: str) -> str:
    """What a payload that ended (end of file) gives: its first object, plain text, or an error."""
    value = _first_value(text)
    if value is not None:
        return value
    if text.lstrip().startswith("{"):
        try:
            _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
        except json.JSONDecodeError as exc:
            raise BadPayload(f"stdin is not JSON ({exc.msg} at line {exc.lineno} "
                             f"column {exc.colno})") from None
    # Not JSON at all: a plain-text prompt, which `tur hook pre-turn` takes as the query.
    return text


def read_payload(stream: IO[str], deadline: float = DEADLINE_S, max_bytes: int = MAX_BYTES,
                 clock: Callable[[], float] = time.monotonic) -> str:
    """The hook payload on ``stream``: its first JSON object as text, or all of it when it is not JSON.

    Reading stops at the end of the first complete JSON object even when the stream stays
    open; plain text (and an empty stream) is read to end of file. A stream without a file
    descriptor (a :class:`io.StringIO`) is read whole, and so is stdin on Windows, where
    :func:`select.select` takes only sockets.

    Args:
        stream: the hook's stdin.
        deadline: seconds to wait, in all, for the payload to be complete.
        max_bytes: the most bytes read (UTF-8 is decoded with replacement).
        clock: monotonic seconds, for tests.

    Raises:
        BadPayload: nothing complete arrived within ``deadline``; the payload is over
            ``max_bytes``; it begins like JSON (``{``) and is not JSON.
    """
    try:
        fd = stream.fileno()
        if os.name == "nt":
            raise io.UnsupportedOperation("select() takes only sockets on Windows")
    except (AttributeError, OSError, io.UnsupportedOperation):
        text = stream.read(max_bytes + 1)
        if len(text) > max_bytes:
            raise BadPayload(f"the payload is over {max_bytes:,} bytes") from None
        return _at_end(text)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text, size, end = "", 0, clock() + deadline
    while True:
        remaining = end - clock()
        if remaining <= 0:
            raise BadPayload(f"no complete JSON payload on stdin after {deadline:g} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        # Take every chunk already there before trying to decode: one attempt a burst, so
        # a payload of megabytes is not parsed once per 64 KiB pipe read.
        closed = False
        while ready:
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:  # a stdin the harness left non-blocking: wait again
                break
            if not chunk:
                closed = True
                break
            size += len(chunk)
            if size > max_bytes:
                raise BadPayload(f"the payload is over {max_bytes:,} bytes")
            text += decoder.decode(chunk)
            ready, _, _ = select.select([fd], [], [], 0)
        if closed:
            return _at_end(text + decoder.decode(b"", final=True))
        value = _first_value(text)
        if value is not None:
            return value
