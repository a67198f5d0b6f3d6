"""The stdio transport of ``tur mcp``: JSON-RPC 2.0 frames, one per line, checked before the SDK.

The SDK's own stdio transport drops a frame it cannot read without a word, so a client that
sent it waits for an answer forever, and it stops serving as soon as stdin closes, so the
answers to the last requests are lost. This one reads each line itself and:

- answers every malformed frame with a JSON-RPC error (JSON-RPC 2.0 specification, section
  5.1, <https://www.jsonrpc.org/specification#error_object>): not JSON → ``-32700`` (parse
  error) with id ``null``; not a request, notification or response (a batch, a bare value, a
  missing or mistyped ``jsonrpc``, ``method`` or ``id``) → ``-32600`` (invalid request), with
  the request's id when it has a valid one; ``params`` that are not an object → ``-32602``
  (invalid params). An unknown method is the SDK's ``-32601``;
- reads at most :data:`~gitmem.mcp.bounds.MAX_FRAME_BYTES` of a line (the rest is skipped
  without being held) and answers a longer one with ``-32600``;
- when stdin closes, keeps serving until every request read has been answered (or cancelled
  by the client), then ends.

While it runs, file descriptors 0 and 1 point at the null device and at stderr (as the
SDK's transport does), so that a child process or a stray ``print`` cannot corrupt the wire.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from gitmem.mcp.bounds import MAX_FRAME_BYTES

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "PARSE_ERROR", "Frames", "stdio_transport"]

log = logging.getLogger("gitmem.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# An over-long frame is not parsed; its id is looked for near its start, so that the client
# waiting on it hears why. Only a top-level-looking ``"id"`` member is taken.
_ID_NEAR_START = re.compile(rb'^\s*\{(?:[^{}\[\]]*?,)?\s*"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_ID_LOOKED_AT = 64 << 10
_READ_CHUNK = 1 << 20


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _problem(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The ``-32600`` error of a JSON object that is no JSON-RPC request, notification or response."""
    request_id = frame.get("id")
    answer_to = request_id if _valid_id(request_id) else None
    if frame.get("jsonrpc") != "2.0":
        return _error(answer_to, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    if "method" in frame:
        if not isinstance(frame["method"], str):
            return _error(answer_to, INVALID_REQUEST, 'invalid request: "method" must be a string')
        if "id" in frame and answer_to is None:
            return _error(None, INVALID_REQUEST, 'invalid request: "id" must be a string or an integer')
        return None
    if "result" not in frame and "error" not in frame:
        return _error(answer_to, INVALID_REQUEST, 'invalid request: no "method"')
    return None


class Frames:
    """What to do with each line read: forward a message to the server, or answer an error.

    Keeps the ids of the requests forwarded and not yet answered, so that the transport
    knows when everything read has been answered. Pure: no I/O, one instance per connection.
    """

    def __init__(self) -> None:
        self.pending: set[str | int] = set()

    def take(self, line: bytes) -> SessionMessage | dict[str, Any] | None:
        """One frame: the message to forward, a JSON-RPC error to write back, or ``None`` (nothing).

        ``None`` for a blank line, and for a malformed notification or response (JSON-RPC
        answers neither), which is logged.
        """
        if not line.strip():
            return None
        try:
            frame = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(None, PARSE_ERROR, f"parse error: not JSON ({exc})")
        if isinstance(frame, list):
            return _error(None, INVALID_REQUEST, "invalid request: batches are not supported; "
                          "send one JSON-RPC object a line")
        if not isinstance(frame, dict):
            return _error(None, INVALID_REQUEST, "invalid request: a frame is one JSON-RPC object")
        problem = _problem(frame)
        if problem is not None:
            return problem
        answer_to = frame.get("id") if _valid_id(frame.get("id")) else None
        params = frame.get("params")
        if "method" in frame and params is not None and not isinstance(params, dict):
            if answer_to is None:
                log.warning("tur mcp: notification %s with params that are not an object, ignored",
                            frame["method"])
                return None
            return _error(answer_to, INVALID_PARAMS, 'invalid params: "params" must be an object')
        return self._forward(frame)

    def _forward(self, frame: dict[str, Any]) -> SessionMessage | dict[str, Any] | None:
        """``frame`` (well formed as JSON-RPC) as the SDK's message, or why the SDK refuses it."""
        answer_to = frame.get("id") if _valid_id(frame.get("id")) else None
        try:
            message = types.jsonrpc_message_adapter.validate_python(frame, by_name=False)
        except ValueError as exc:
            if "method" not in frame or answer_to is None:
                log.warning("tur mcp: malformed frame ignored: %s", " ".join(str(exc).split()))
                return None
            return _error(answer_to, INVALID_REQUEST, "invalid request: "
                          + " ".join(str(exc).split())[:300])
        if isinstance(message, types.JSONRPCRequest):
            self.pending.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # The SDK never answers a request its client cancelled.
            cancelled = (message.params or {}).get("requestId")
            if _valid_id(cancelled):
                self.pending.discard(cancelled)
        return SessionMessage(message)

    def too_long(self, head: bytes) -> dict[str, Any]:
        """The error for a frame longer than :data:`MAX_FRAME_BYTES` whose first bytes are ``head``."""
        found = _ID_NEAR_START.match(head[:_ID_LOOKED_AT])
        request_id: Any = None
        if found is not None:
            with suppress(ValueError):
                request_id = json.loads(found.group(1))
        if _valid_id(request_id):
            self.pending.discard(request_id)
        return _error(request_id, INVALID_REQUEST,
                      f"invalid request: a frame is at most {MAX_FRAME_BYTES} bytes")

    def answered(self, message: Any) -> None:
        """Note that ``message`` (written to the client) answers its request, if it is an answer."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.pending.discard(message.id)


def _read_frame(wire: BinaryIO) -> tuple[bytes, bool] | None:
    """The next line of ``wire`` (at most :data:`MAX_FRAME_BYTES`) and whether it was longer.

    ``None`` at EOF. Of a longer line only the first bytes are returned.
    """
    line = wire.readline(MAX_FRAME_BYTES + 1)
    if not line:
        return None
    if len(line) <= MAX_FRAME_BYTES or line.endswith(b"\n"):
        return line, False
    while True:  # skip the rest of the line without holding it
        rest = wire.readline(_READ_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return line[:_ID_LOOKED_AT], True


def _claim(fd: int, flags: int, diversion: str | int) -> tuple[int, int] | None:
    """Move the wire of ``fd`` to a private descriptor and point ``fd`` at ``diversion``.

    Returns (private descriptor, ``fd``) to restore later, or ``None`` where it cannot be done.
    """
    if sys.platform == "win32":
        return None
    try:
        private = os.dup(fd)
        target = os.open(diversion, flags) if isinstance(diversion, str) else os.dup(diversion)
    except OSError:
        return None
    os.dup2(target, fd)
    os.close(target)
    return private, fd


class _Connection:
    """One client over two binary streams: the reading and writing halves of the transport."""

    def __init__(self, wire_in: BinaryIO, wire_out: BinaryIO) -> None:
        self.wire_in = wire_in
        self.wire_out = wire_out
        self.frames = Frames()
        self.to_server, self.server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.server_writes, self.from_server = anyio.create_memory_object_stream[SessionMessage](0)
        self.write_lock = anyio.Lock()
        self.all_answered = anyio.Event()
        self.eof = False

    async def write(self, data: dict[str, Any] | str) -> None:
        """Write one frame (a JSON-RPC object, or its JSON text) and flush it."""
        line = (data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)) + "\n"
        async with self.write_lock:
            await anyio.to_thread.run_sync(_write_blocking, self.wire_out, line.encode("utf-8"))

    def settle(self) -> None:
        """After EOF, once nothing read is left unanswered, let the read stream end."""
        if self.eof and not self.frames.pending:
            self.all_answered.set()

    async def reader(self) -> None:
        """Read frames until EOF; forward messages, answer malformed frames; end when all is answered."""
        async with self.to_server:
            while True:
                got = await anyio.to_thread.run_sync(_read_frame, self.wire_in, abandon_on_cancel=True)
                if got is None:
                    break
                line, too_long = got
                taken = self.frames.too_long(line) if too_long else self.frames.take(line)
                if isinstance(taken, SessionMessage):
                    await self.to_server.send(taken)
                elif taken is not None:
                    await self.write(taken)
            self.eof = True
            self.settle()
            await self.all_answered.wait()

    async def writer(self) -> None:
        """Write what the server sends, noting each answer."""
        async with self.from_server:
            async for item in self.from_server:
                await self.write(item.message.model_dump_json(by_alias=True, exclude_unset=True))
                self.frames.answered(item.message)
                self.settle()


@asynccontextmanager
async def stdio_transport(wire_in: BinaryIO | None = None, wire_out: BinaryIO | None = None
                          ) -> AsyncIterator[tuple[Any, Any]]:
    """The (read stream, write stream) pair the SDK's server runs on, over stdin and stdout.

    Args:
        wire_in: a binary stream to read instead of the process's stdin (then fd 0 stays).
        wire_out: a binary stream to write instead of the process's stdout (then fd 1 stays).

    The read stream ends when the wire is at EOF and every request read has been answered.
    """
    claims = []
    if wire_in is None:
        claimed_in = _claim(0, os.O_RDONLY, os.devnull)
        wire_in = os.fdopen(claimed_in[0], "rb") if claimed_in else sys.stdin.buffer
        claims.append(claimed_in)
    if wire_out is None:
        claimed_out = _claim(1, os.O_WRONLY, 2)
        wire_out = os.fdopen(claimed_out[0], "wb") if claimed_out else sys.stdout.buffer
        claims.append(claimed_out)
    connection = _Connection(wire_in, wire_out)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(connection.reader)
            group.start_soon(connection.writer)
            yield connection.server_reads, connection.server_writes
            group.cancel_scope.cancel()
    finally:
        for claim in claims:
            if claim is not None:
                with suppress(OSError):
                    os.dup2(claim[0], claim[1])


def _write_blocking(wire: BinaryIO, data: bytes) -> None:
    try:
        wire.write(data)
        wire.flush()
    except (BrokenPipeError, ValueError):  # the client went away: nothing left to tell it
        log.debug("tur mcp: the client closed stdout")
