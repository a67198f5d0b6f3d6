"""``tur serve``: the retrieval API and MCP over HTTP on one local server (issue 32).

Kura's on-demand retrieval contract (``/work/shared/seeds``: "hits carry rank, source
links, and drill-down member ids"), served with the HTTP stack the ``mcp`` SDK already
brings (Starlette for the app, uvicorn for the socket), so ``tur serve`` needs no new
dependency. One ASGI app:

- ``POST /v1/retrieval/queries``, body ``{"query": str, "limit": int?}`` (``limit`` in
  [1, :data:`~gitmem.mcp.bounds.MAX_TOP_K`], default the configured recall top-k):
  ``{"query", "hits": [{"rank", "id", "type", "content", "status", "reason", "anchor",
  "related", "score"}], "held_back", "warnings"}``. ``rank`` is 1-based, best first;
  ``anchor`` is the source link ``{"link": "path#Lx-Ly", "path", "commit"}`` (the commit the
  memory was observed at) or ``null`` for an unanchored memory; ``related`` the ids of the
  memories it links to (its relations' targets), to drill into with ``GET /v1/memory/{id}``;
  ``score`` recall's score (BM25 over the memory and its neighbours plus the field boost,
  docs/wake-recall.md). The same :meth:`Gitmem.recall <gitmem.api.Gitmem.recall>` as
  ``tur recall`` and the ``recall`` tool.
- ``GET /v1/memory/{id}``: the record and its commits, as the ``show`` tool returns it
  (:class:`~gitmem.mcp.models.ShowResult`); an unknown id is 404.
- ``GET /v1/wake?budget=N``: the wake prompt as the ``wake`` tool returns it
  (:class:`~gitmem.mcp.models.WakeResult`); ``budget`` in tokens, 0 = unbounded, absent =
  the configured budget.
- ``/mcp``: the ``tur mcp`` server (:func:`gitmem.mcp.server.server_for`: the same tools and
  resources) on the SDK's streamable HTTP transport.

Every call, API or MCP, runs through one :class:`~gitmem.mcp.tools.GitmemTools`: one at a
time, as in ``tur mcp``. Bad input is a JSON ``{"error": "<one line>"}`` with 400 (bad
JSON, a field of the wrong type or out of the MCP tools' bounds, :mod:`gitmem.mcp.bounds`),
404 (no such memory, no such endpoint), 405 (wrong method; ``Allow`` names the right one),
413 (a body over :data:`~gitmem.mcp.bounds.MAX_HTTP_BODY_BYTES`) or 415 (a POST body that
is not ``application/json``); a failure of gitmem itself is 500 with its message. On a
loopback address, requests whose ``Host`` or ``Origin`` is not loopback are refused (421,
403) for the API as for ``/mcp`` (the SDK's DNS-rebinding check): a web page cannot read
the memories through a rebound name.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
import uvicorn
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gitmem.api import Gitmem, Via, memory_to_json, split_anchor_ref
from gitmem.errors import AmbiguousId, GitmemError, InvalidInput, UnknownMemory
from gitmem.mcp.bounds import MAX_HTTP_BODY_BYTES, MAX_TOKEN_BUDGET, MAX_TOP_K, check_id, check_query
from gitmem.mcp.server import at_root, server_for
from gitmem.mcp.tools import GitmemTools
from gitmem.mcp.wording import error_words, tool_words

__all__ = ["ENDPOINTS", "SURFACES", "build_app", "is_loopback", "listen", "serve_http"]

log = logging.getLogger("gitmem.serve")

#: The surface name of each API endpoint, as the injection log records it (issue 32).
SURFACES = {"retrieval": "http:retrieval", "wake": "http:wake", "memory": "http:memory"}

#: What the API serves, for the 404 of an unknown path.
ENDPOINTS = "POST /v1/retrieval/queries, GET /v1/memory/{id}, GET /v1/wake?budget=N, /mcp (MCP)"

#: Seconds a shutdown waits for open connections (an MCP client's event stream stays open
#: until it disconnects) before closing them.
SHUTDOWN_GRACE_SECONDS = 3

_RETRIEVAL_FIELDS = ("query", "limit")


class _BadRequest(Exception):
    """A request answered with ``status`` and ``{"error": message}`` before gitmem sees it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IPv4/IPv6 address) is reachable only from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _security(host: str) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding check on a loopback ``host`` (what it sets up itself there); off elsewhere."""
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


# -- the request bodies and parameters -------------------------------------------------------


async def _json_body(request: Request) -> Any:
    """The request's JSON body, read up to :data:`MAX_HTTP_BODY_BYTES`.

    Raises:
        _BadRequest: 415 (not ``application/json``), 413 (too long), 400 (not JSON).
    """
    kind = request.headers.get("content-type", "")
    if kind.split(";")[0].strip().lower() != "application/json":
        raise _BadRequest(415, f"the body must be application/json, got {kind or 'no content-type'}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_HTTP_BODY_BYTES:
        raise _BadRequest(413, f"a request body is at most {MAX_HTTP_BODY_BYTES} bytes, got {declared}")
    body = bytearray()
    async for chunk in request.stream():  # a chunked body has no length to check up front
        body += chunk
        if len(body) > MAX_HTTP_BODY_BYTES:
            raise _BadRequest(413, f"a request body is at most {MAX_HTTP_BODY_BYTES} bytes")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadRequest(400, f"the body is not JSON ({exc})") from None


def _retrieval_query(doc: Any) -> tuple[str, int | None]:
    """``(query, limit)`` of a retrieval body ``{"query": str, "limit": int?}``.

    Raises:
        _BadRequest: 400 for anything else (another shape, an unknown field, a value out of
            the ``recall`` tool's bounds).
    """
    if not isinstance(doc, dict):
        raise _BadRequest(400, 'the body is one JSON object: {"query": "...", "limit": 5}')
    unknown = sorted(set(doc) - set(_RETRIEVAL_FIELDS))
    if unknown:
        raise _BadRequest(400, f"unknown field {', '.join(map(repr, unknown))}; "
                          "the fields are query and limit")
    query = doc.get("query")
    if not isinstance(query, str):
        raise _BadRequest(400, "query: a string is required")
    try:
        check_query(query)
    except ValueError as exc:
        raise _BadRequest(400, f"query: {exc}") from None
    limit = doc.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                              or not 1 <= limit <= MAX_TOP_K):
        raise _BadRequest(400, f"limit: an integer from 1 to {MAX_TOP_K}, got {json.dumps(limit)}")
    return query, limit


def _budget(request: Request) -> int | None:
    """The ``budget`` parameter of ``GET /v1/wake`` (tokens), ``None`` when absent.

    Raises:
        _BadRequest: 400 for another parameter, or a budget that is no integer in
            [0, :data:`MAX_TOKEN_BUDGET`].
    """
    unknown = sorted(set(request.query_params) - {"budget"})
    if unknown:
        raise _BadRequest(400, f"unknown parameter {', '.join(map(repr, unknown))}; the parameter is budget")
    raw = request.query_params.get("budget")
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) > MAX_TOKEN_BUDGET:
        raise _BadRequest(400, f"budget: an integer from 0 to {MAX_TOKEN_BUDGET} (tokens; 0 = unbounded), "
                          f"got {raw!r}")
    return int(raw)


# -- the answers -----------------------------------------------------------------------------


def _anchor(doc: dict[str, Any]) -> dict[str, str | None] | None:
    """A memory's source link: its anchor (``path#Lx-Ly`` or ``path``), path and commit."""
    link = doc["anchor"]
    if not link:
        return None
    return {"link": link, "path": split_anchor_ref(link)[0], "commit": doc["git_sha"]}


def _hits(result: Any, skipped: list[Any]) -> dict[str, Any]:
    """A recall result as the retrieval API's answer (the shape in the module docstring)."""
    hits = []
    for rank, hit in enumerate(result.hits, 1):
        doc = memory_to_json(hit.memory)
        related = list(dict.fromkeys(r["target"] for r in doc["relations"]))
        hits.append({"rank": rank, "id": doc["id"], "type": doc["type"], "content": doc["content"],
                     "status": doc["status"], "reason": doc["reason"] or hit.stale_reason,
                     "anchor": _anchor(doc), "related": related, "score": round(hit.score, 6)})
    return {"query": result.query, "hits": hits, "held_back": result.held_back,
            "warnings": [tool_words(s.warning()) for s in skipped]}


class _Api:
    """The API's endpoints over ``tools`` (the MCP server's, so that one call runs at a time)."""

    def __init__(self, tools: GitmemTools, security: TransportSecuritySettings) -> None:
        self.tools = tools
        self.guard = TransportSecurityMiddleware(security)

    def _run(self, surface: str, body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run ``body`` as a call of ``surface`` (a value of :data:`SURFACES`)."""
        # The one place the API names its surface: every wake and recall it serves is
        # logged under it in the injection log.
        log.debug("tur serve: a call of %s", surface)
        from gitmem.api import injecting

        with injecting(self.tools.asking._replace(surface=surface)):
            return self.tools.run(body)

    async def _refused(self, request: Request) -> Response | None:
        """The answer to a request whose ``Host`` or ``Origin`` names no loopback host, else ``None``."""
        refused = await self.guard.validate_request(request)
        if refused is None:
            return None
        return _error(refused.status_code, bytes(refused.body).decode("utf-8", "replace"))

    async def _answer(self, surface: str, body: Callable[[], dict[str, Any]]) -> Response:
        try:
            doc = await anyio.to_thread.run_sync(self._run, surface, body)
        except UnknownMemory as exc:
            return _error(404, error_words(exc))
        except (InvalidInput, AmbiguousId) as exc:
            return _error(400, error_words(exc))
        except Exception as exc:  # a failure of gitmem (or a bug): say it, keep serving
            if not isinstance(exc, GitmemError | OSError):
                log.exception("tur serve: internal error")
            return _error(500, error_words(exc))
        return JSONResponse(doc)

    async def retrieval(self, request: Request) -> Response:
        """``POST /v1/retrieval/queries``."""
        refused = await self._refused(request)
        if refused is not None:
            return refused
        try:
            query, limit = _retrieval_query(await _json_body(request))
        except _BadRequest as bad:
            return _error(bad.status, bad.message)

        def body() -> dict[str, Any]:
            result, skipped = self.tools.gm.recall(query, top_k=limit, full_records=False)
            return _hits(result, skipped)

        return await self._answer(SURFACES["retrieval"], body)

    async def memory(self, request: Request) -> Response:
        """``GET /v1/memory/{id}``."""
        refused = await self._refused(request)
        if refused is not None:
            return refused
        memory_id = request.path_params["id"]
        try:
            check_id(memory_id)
        except ValueError as exc:
            return _error(400, f"id: {exc}")
        return await self._answer(SURFACES["memory"],
                                  lambda: self.tools.show(memory_id)[0].model_dump(mode="json"))

    async def wake(self, request: Request) -> Response:
        """``GET /v1/wake?budget=N``."""
        refused = await self._refused(request)
        if refused is not None:
            return refused
        try:
            budget = _budget(request)
        except _BadRequest as bad:
            return _error(bad.status, bad.message)
        return await self._answer(SURFACES["wake"],
                                  lambda: self.tools.wake(budget, None)[0].model_dump(mode="json"))


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such path, wrong method) as JSON."""
    if not isinstance(exc, HTTPException):  # registered for HTTPException only
        raise exc
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}; the API: {ENDPOINTS}"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
    else:
        message = str(exc.detail)
    return _error(exc.status_code, message, headers=exc.headers)


def build_app(tools: GitmemTools, host: str = "127.0.0.1") -> Starlette:
    """The ASGI app of ``tur serve`` over ``tools``: the API and ``/mcp`` (module docstring).

    Args:
        tools: the repository's tools; every endpoint and MCP call runs through them.
        host: the address the app is served on; on a loopback one, requests naming another
            host (DNS rebinding) are refused.

    Returns:
        A Starlette app whose lifespan runs the SDK's MCP session manager: serve it with a
        server that runs the lifespan (uvicorn does).
    """
    security = _security(host)
    api = _Api(tools, security)
    server = server_for(tools)
    server.custom_route("/v1/retrieval/queries", methods=["POST"])(api.retrieval)
    server.custom_route("/v1/memory/{id}", methods=["GET"])(api.memory)
    server.custom_route("/v1/wake", methods=["GET"])(api.wake)
    app = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security,
                                     host=host)
    app.add_exception_handler(HTTPException, _http_error)
    return app


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port`` (0: a free port the system picks).

    Raises:
        InvalidInput: the address cannot be listened on (in use, not this machine's, unknown).
    """
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InvalidInput(f"cannot listen on {host}:{port}: {reason}",
                           "pick another --port, or 0 for a free one") from None


class _Server(uvicorn.Server):
    """uvicorn's server that says where it listens once it serves, and ends quietly on a signal."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start (the MCP session manager first, then the socket), then call ``on_started``."""
        await super().startup(sockets)
        if self.started:
            self._on_started()

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM end the server gracefully.

        uvicorn's own version raises the signal again after the shutdown, so that the process
        dies of it; ``tur serve`` has shut down cleanly by then and exits 0 instead.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def serve_http(gm: Gitmem, sock: socket.socket, on_started: Callable[[str], None],
               on_new_tip: Callable[[], None] | None = None, asking: Via | None = None) -> None:
    """Serve ``gm``'s repository on ``sock`` (from :func:`listen`) until SIGINT or SIGTERM.

    Args:
        gm: the repository (``file`` paths of the MCP tools start at its root).
        sock: the listening socket.
        on_started: called with the server's base URL (``http://127.0.0.1:PORT``) once it
            answers requests.
        on_new_tip: see :class:`~gitmem.mcp.tools.GitmemTools`.
        asking: the harness and agent every call is made for (``tur serve --harness``), as
            :class:`~gitmem.mcp.tools.GitmemTools` takes it.
    """
    host, port = sock.getsockname()[:2]
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    tools = GitmemTools(at_root(gm), on_new_tip, asking=asking)
    config = uvicorn.Config(build_app(tools, host), lifespan="on", log_config=None, access_log=False,
                            ws="none", timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    _Server(config, lambda: on_started(url)).run(sockets=[sock])
