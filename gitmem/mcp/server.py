"""``tur mcp``: gitmem as a Model Context Protocol server over stdio (EP-0132's MCP surface).

Built on the official ``mcp`` SDK (:class:`mcp.server.mcpserver.MCPServer`, mcp 2.x): each
tool is a typed function whose input schema the SDK derives from its signature (with the
bounds of :mod:`gitmem.mcp.bounds`), and whose structured result is one of the pydantic
models of :mod:`gitmem.mcp.models` (its JSON schema is the tool's output schema). Tools:
``wake``, ``recall``, ``learn``, ``edit``, ``verify``, ``confirm``, ``refute``, ``forget``,
``link``, ``show``, ``list``, ``status``; each does what its CLI command does, through the
same :class:`~gitmem.api.Gitmem` method (:mod:`gitmem.mcp.tools`). Resources: ``tur://wake``,
the template ``tur://context/recall?q={query}`` (as EP-0132 names it) and
``tur://memory/{id}``.

A surface like the CLI: it uses only :mod:`gitmem.api`, :mod:`gitmem.errors` and the leaf
modules. One :class:`~gitmem.api.Gitmem` serves every call; the facade reads the memory
ref's tip on each call, so writes by other processes (the CLI, the watcher, a teammate's
sync) are seen at once. Calls run one at a time (a lock), and every write is one
compare-and-swap commit, as the CLI's. After a write the server warms the read cache for
the new tip (:meth:`Gitmem.warm`), so that the next wake and recall cost what they did
before it.

Errors: a tool error carries one line in the tools' words (:mod:`gitmem.mcp.wording`);
an argument out of bounds is ``argument <name>: <what is wrong>``. Malformed JSON-RPC frames
get JSON-RPC errors (:mod:`gitmem.mcp.protocol`). The server keeps serving either way.
Started outside a git repository, it lists its tools and answers each call with one error
naming ``--repo``. This module imports the SDK at the top: only ``tur mcp`` imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from gitmem.api import Gitmem, Via
from gitmem.mcp.bounds import (
    MAX_TOKEN_BUDGET,
    MAX_TOP_K,
    AgentArg,
    AnchorArg,
    ContentArg,
    FileArg,
    ForArg,
    IdArg,
    OptionalRelationArg,
    QueryArg,
    ReasonArg,
    StatusArg,
    TypeArg,
)
from gitmem.mcp.models import (
    EditResult,
    ForgetResult,
    LearnResult,
    LinkResult,
    ListResult,
    RecallResult,
    RefuteResult,
    ShowResult,
    StatusResult,
    VerifyResult,
    WakeResult,
)
from gitmem.mcp.protocol import stdio_transport
from gitmem.mcp.tools import LIST_LIMIT, GitmemTools
from gitmem.version import __version__

__all__ = ["DESCRIPTIONS", "INSTRUCTIONS", "at_root", "build_server", "serve", "server_for"]

log = logging.getLogger("gitmem.mcp")

INSTRUCTIONS = (
    "gitmem: this repository's memory, kept on refs/tur/memories in git. Call `wake` at the "
    "start of a session, `recall` before a task, and `learn` when you find something durable "
    "about the code (anchor it with `file`: path or path#Lx-Ly). Memories are hypotheses with "
    "an observation time and a confidence: when the code disagrees, trust the code; `edit` or "
    "`confirm` a memory that still holds, `refute` one that is wrong."
)

#: Each tool's description: sent in every session's tool list, so one short line each (a test
#: counts their tokens).
DESCRIPTIONS = {
    "wake": "The token-budgeted prompt for the start of a session.",
    "recall": "Memories relevant to a query (or anchored to `file`), best first.",
    "learn": "Remember a statement about the code, observed at HEAD; known content is re-verified.",
    "edit": "Change a memory's content or type, or re-anchor it with `file` at HEAD (fresh there).",
    "verify": "Check one memory against HEAD and the working tree, and record its status.",
    "confirm": "Vouch that a memory still holds: fresh, re-anchored where its lines went.",
    "refute": "Mark a memory wrong, with a reason; it leaves wake and recall.",
    "forget": "Remove a memory (it stays in the ref's history).",
    "link": "Relate two memories: source --type--> target.",
    "show": "One whole record and the commits that touched it.",
    "list": "Memories with stored status, weight and anchor, by id.",
    "status": "Check every memory against HEAD, writing nothing; counts and what `verify` would change.",
}


class _Server(MCPServer):
    """:class:`MCPServer` whose argument errors are one line, on gitmem's stdio transport."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """As :meth:`MCPServer.call_tool`; arguments that fail the input schema raise one line.

        Raises:
            ToolError: unknown tool, or ``argument <name>: <what is wrong>`` for each bad argument.
        """
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(f"argument {'.'.join(str(p) for p in e['loc'])}: "
                                 f"{e['msg'].removeprefix('Value error, ')}"
                                 for e in cause.errors(include_input=False))
            raise ToolError(problems) from cause

    async def run_stdio_async(self) -> None:
        """Serve on stdin/stdout through :func:`gitmem.mcp.protocol.stdio_transport`."""
        lowlevel = self._lowlevel_server
        async with stdio_transport() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def build_server(gm: Gitmem | None, on_new_tip: Callable[[], None] | None = None,
                 where: Path | None = None, asking: Via | None = None) -> MCPServer:
    """The MCP server of ``gm``'s repository: its tools and resources, not yet running.

    Args:
        gm: the repository; open it at the repository root so that ``file`` paths are
            relative to the root. ``None``: no repository (every call says so).
        on_new_tip: see :class:`~gitmem.mcp.tools.GitmemTools`.
        where: the directory the server was started in (named when ``gm`` is ``None``).
        asking: the harness and agent it answers (see :class:`~gitmem.mcp.tools.GitmemTools`).
    """
    return server_for(GitmemTools(gm, on_new_tip, where, asking))


def server_for(tools: GitmemTools) -> MCPServer:
    """The MCP server whose tools and resources are ``tools``' (not yet running).

    :func:`build_server` for stdio; :mod:`gitmem.mcp.http` serves the same server over
    HTTP and runs its own endpoints through the same ``tools`` (one lock for both).
    """
    server: MCPServer = _Server("tur", title="gitmem", version=__version__, instructions=INSTRUCTIONS,
                                log_level="WARNING")
    _reading_tools(server, tools)
    _writing_tools(server, tools)
    _resources(server, tools)
    return server


_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_REMOVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def _tool(server: MCPServer, name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
    return server.tool(name=name, description=DESCRIPTIONS[name], annotations=annotations)


def _reading_tools(server: MCPServer, tools: GitmemTools) -> None:
    """``wake``, ``recall``, ``show``, ``list``, ``status``: nothing written."""
    read_only = _READ_ONLY

    def tool(name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
        return _tool(server, name, annotations)

    @tool("wake", read_only)
    def wake(
        token_budget: Annotated[int | None, Field(description="tokens; 0 = unbounded", le=MAX_TOKEN_BUDGET,
                                                  json_schema_extra={"minimum": 0})] = None,
        max_chars: Annotated[int | None, Field(description="most characters", le=100_000_000,
                                               json_schema_extra={"minimum": 0})] = None,
        explain: Annotated[bool, Field(description="also what was left out, by reason")] = False,
    ) -> Annotated[CallToolResult, WakeResult]:
        return tools.call(lambda: tools.wake(token_budget, max_chars, explain))

    @tool("recall", read_only)
    def recall(
        query: QueryArg = "",
        top_k: Annotated[int | None, Field(description="most hits (default 5)", le=MAX_TOP_K,
                                           json_schema_extra={"minimum": 1})] = None,
        include_stale: Annotated[bool, Field(description="also stale and superseded ones")] = False,
        file: FileArg = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        return tools.call(lambda: tools.recall(query, top_k, include_stale, file))

    @tool("show", read_only)
    def show(id: IdArg) -> Annotated[CallToolResult, ShowResult]:
        return tools.call(lambda: tools.show(id))

    @tool("list", read_only)
    def list_(
        file: FileArg = None,
        status: StatusArg = None,
        limit: Annotated[int | None, Field(description=f"most returned (default {LIST_LIMIT})", le=100_000,
                                           json_schema_extra={"minimum": 1})] = None,
    ) -> Annotated[CallToolResult, ListResult]:
        return tools.call(lambda: tools.list_memories(file, status, limit))

    @tool("status", read_only)
    def status() -> Annotated[CallToolResult, StatusResult]:
        return tools.call(tools.status)


def _writing_tools(server: MCPServer, tools: GitmemTools) -> None:
    """``learn``, ``edit``, ``verify``, ``confirm``, ``refute``, ``forget``, ``link``: one commit each."""
    writes, removes = _WRITES, _REMOVES

    def tool(name: str, annotations: ToolAnnotations) -> Callable[[Any], Any]:
        return _tool(server, name, annotations)

    @tool("learn", writes)
    def learn(
        content: ContentArg,
        type: TypeArg = None,
        file: AnchorArg = None,
        confidence: Annotated[float | None, Field(description="in [0, 1] (default 1)",
                                                  json_schema_extra={"minimum": 0, "maximum": 1})] = None,
        source_agent: AgentArg = None,
        personal: Annotated[bool, Field(description="store it in the user's personal store (every "
                                        "repository, never the project's ref); no file then")] = False,
        for_agents: ForArg = None,
    ) -> Annotated[CallToolResult, LearnResult]:
        return tools.call(lambda: tools.learn(content, type, file, confidence, source_agent, personal,
                                              for_agents))

    @tool("edit", writes)
    def edit(
        id: IdArg,
        content: Annotated[ContentArg | None, Field(description="the new statement")] = None,
        type: TypeArg = None,
        file: AnchorArg = None,
        reanchor: Annotated[bool, Field(description="move the anchor to where git's diff maps its "
                                                    "lines at HEAD")] = False,
        for_agents: ForArg = None,
    ) -> Annotated[CallToolResult, EditResult]:
        return tools.call(lambda: tools.edit(id, content, type, file, reanchor, for_agents))

    @tool("verify", writes)
    def verify(id: IdArg) -> Annotated[CallToolResult, VerifyResult]:
        return tools.call(lambda: tools.verify(id))

    @tool("confirm", writes)
    def confirm(id: IdArg) -> Annotated[CallToolResult, VerifyResult]:
        return tools.call(lambda: tools.verify(id, confirm=True))

    @tool("refute", writes)
    def refute(id: IdArg, reason: ReasonArg) -> Annotated[CallToolResult, RefuteResult]:
        return tools.call(lambda: tools.refute(id, reason))

    @tool("forget", removes)
    def forget(
        id: IdArg,
        undo: Annotated[bool, Field(description="bring a forgotten memory back (id or prefix)")] = False,
    ) -> Annotated[CallToolResult, ForgetResult]:
        return tools.call(lambda: tools.forget(id, undo))

    @tool("link", writes)
    def link(
        source: IdArg,
        target: IdArg,
        type: OptionalRelationArg = None,
        remove: Annotated[bool, Field(description="take the relation out")] = False,
    ) -> Annotated[CallToolResult, LinkResult]:
        return tools.call(lambda: tools.link(source, target, type, remove))



def _resources(server: MCPServer, tools: GitmemTools) -> None:
    """``tur://wake``, ``tur://context/recall?q={query}``, ``tur://memory/{id}``."""

    @server.resource("tur://wake", name="wake", mime_type="text/markdown",
                     description="the wake prompt at the configured token budget")
    def wake_resource() -> str:
        return tools.read(tools.wake_text)

    @server.resource("tur://context/recall?q={query}", name="recall", mime_type="text/markdown",
                     description="memories relevant to the query, as a markdown-prompt block",
                     security=ResourceSecurity(exempt_params={"query"}))  # free text, not a path
    def recall_resource(query: str) -> str:
        return tools.read(lambda: tools.recall_text(query))

    @server.resource("tur://memory/{id}", name="memory", mime_type="application/json",
                     description="one record as JSON")
    def memory_resource(id: str) -> str:
        return tools.read(lambda: tools.memory_json(id))


def serve(gm: Gitmem | None, on_new_tip: Callable[[], None] | None = None,
          where: Path | None = None, asking: Via | None = None) -> None:
    """Run the server on stdin/stdout for ``gm``'s repository, until the client closes stdin.

    ``file`` arguments are relative to the repository root, wherever ``gm`` was opened.
    ``gm`` ``None``: outside a repository (``where``), every call answers one error.
    ``on_new_tip``, ``asking``: see :class:`~gitmem.mcp.tools.GitmemTools`. Every request read before
    stdin closed is answered before this returns.
    """
    if gm is not None:
        gm = at_root(gm)
    server = build_server(gm, on_new_tip, where, asking)  # configures logging to stderr
    server.run("stdio")


def at_root(gm: Gitmem) -> Gitmem:
    """``gm``, or the same repository opened at its working tree's root (where ``file`` paths start)."""
    root = gm.paths.workdir
    if root is not None and root.resolve() != gm.cwd:
        return Gitmem.open(root)
    return gm
