"""``tur mcp``: gitmem as a Model Context Protocol server over stdio (EP-0132's MCP surface).

Built on the official ``mcp`` SDK (:class:`mcp.server.mcpserver.MCPServer`, mcp 2.x): each
tool is a typed function whose input schema the SDK derives from its signature, and whose
structured result is one of the pydantic models below (its JSON schema is the tool's
output schema). Tools: ``wake``, ``recall``, ``learn``, ``verify``, ``refute``, ``show``,
``list``, ``status``. Resources: ``tur://wake``, the template
``tur://context/recall?q={query}`` (as EP-0132 names it) and ``tur://memory/{id}``.

A surface like the CLI: it uses only :mod:`gitmem.api`, :mod:`gitmem.errors` and the leaf
modules. One :class:`~gitmem.api.Gitmem` serves every call; the facade reads the memory
ref's tip on each call, so writes by other processes (the CLI, the watcher, a teammate's
sync) are seen at once. Calls run one at a time (a lock), and every write is one
compare-and-swap commit, as the CLI's. After a write the server warms the read cache for
the new tip (:meth:`Gitmem.warm`), so that the next wake and recall cost what they did
before it.

Errors: a :class:`~gitmem.errors.GitmemError` becomes a tool result with ``isError`` and
the CLI's one-line message (what ``tur`` prints after ``tur: error:``); anything else
becomes ``internal error: <type>: <message>`` (the traceback goes to stderr). The server
keeps serving either way. This module imports the SDK at the top: only ``tur mcp`` imports
it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from gitmem.api import Gitmem, LearnActions, StatusRow, memory_to_json
from gitmem.defaults import PRE_TURN_TOKEN_BUDGET
from gitmem.errors import GitmemError, InvalidInput, SecretRefused, UnknownMemory
from gitmem.version import __version__
from gitmem.vocabulary import MemoryType, Status, iso_z

__all__ = [
    "CommitOut",
    "GitmemTools",
    "LearnResult",
    "ListResult",
    "MemoryEntry",
    "MemoryRecord",
    "RecallHit",
    "RecallResult",
    "RefuteResult",
    "Relation",
    "ShowResult",
    "StatusChange",
    "StatusResult",
    "VerifyResult",
    "WakeResult",
    "build_server",
    "serve",
]

log = logging.getLogger("gitmem.mcp")

_SECRET_HINT = ("leave the credential out of the content; a person who knows it is not a real "
                "credential can store it with `tur learn --allow-secret`")

#: How the learn notes name what they suggest: with this server's tools (it has no link or
#: forget tool, so those are said in words).
_LEARN_ACTIONS = LearnActions(re_anchor="learn it again with `file` to re-anchor it")

TYPES = [t.value for t in MemoryType]
STATUSES = [s.value for s in Status]
#: Most memories one ``list`` call returns unless it asks for more.
LIST_LIMIT = 100
#: ``recall`` with a ``file`` filter ranks this many hits before keeping that file's.

INSTRUCTIONS = (
    "gitmem: this repository's memory, kept on refs/tur/memories in git. Call `wake` at the "
    "start of a session, `recall` before a task, and `learn` when you find something durable "
    "about the code (anchor it with `file`: path or path#Lx-Ly). Memories are hypotheses with "
    "an observation time and a confidence: when the code disagrees, trust the code and "
    "`refute` the memory with a reason."
)


# -- results ------------------------------------------------------------------------------------


class MemoryEntry(BaseModel):
    """One memory as ``list`` and ``recall`` give it (read from the cache, no full record)."""

    id: str = Field(description="`<type>-<8 hex>`; any unique prefix names it too")
    type: str = Field(description="axiom | core | fact | insight | preference")
    content: str
    status: str = Field(description="fresh | stale | unanchored | refuted")
    reason: str | None = Field(default=None, description="why it is stale, unanchored or refuted")
    anchor: str | None = Field(default=None, description="`path` or `path#Lx-Ly` it was observed at")
    confidence: float = Field(description="in [0, 1]")
    observed_at: str | None = Field(default=None, description="first observation, ISO 8601 UTC")
    author: str | None = Field(default=None, description="who stated it (`Name <email>`), if known")
    source_agent: str | None = Field(default=None, description="the agent that learned it")
    weight: float | None = Field(default=None, description="current decay weight in [0, 1] (list only)")


class Relation(BaseModel):
    """A typed link to another memory."""

    type: str
    target: str


class MemoryRecord(MemoryEntry):
    """One whole record (``show``, ``learn``, ``refute`` and ``tur://memory/{id}``)."""

    git_sha: str | None = Field(default=None, description="the commit the anchor refers to")
    source_harness: str | None = None
    last_verified_at: str | None = Field(default=None, description="ISO 8601 UTC; restarts time decay")
    half_life_days: float | None = Field(default=None, description="null: never decays with time")
    relations: list[Relation] = Field(default_factory=list)
    refuted_by: str | None = None


class CommitOut(BaseModel):
    """A commit on refs/tur/memories that changed a record."""

    sha: str
    message: str
    author: str
    time: str


class ShowResult(MemoryRecord):
    """``show``: the record and the commits that touched it, newest first."""

    commits: list[CommitOut] = Field(default_factory=list)


class WakeResult(BaseModel):
    """``wake``: the prompt and a summary of its assembly record."""

    text: str = Field(description="the markdown an agent reads at session start")
    tokens: int = Field(description="tokens of `text`")
    budget: int | None = Field(description="the token budget; null when unbounded")
    omitted: int = Field(description="memories left out for the budget (recall finds them)")
    included: list[str] | None = Field(default=None, description="with `explain`: ids in the text, in order "
                                       "(`persona`, `continuity` for those blocks)")
    excluded: dict[str, int] | None = Field(default=None, description="with `explain`: memories left out, "
                                            "by reason")
    warnings: list[str] = Field(default_factory=list, description="records that were skipped")


class RecallHit(MemoryEntry):
    """One recalled memory: fused score and its rankers' scores."""

    score: float = Field(description="BM25 over the memory and its neighbours, plus the field boost")
    bm25: float
    boost: float = Field(description="the field boost: the query names its author, path or identifiers")
    stale: bool = Field(description="stale or superseded (only with include_stale)")


class RecallResult(BaseModel):
    """``recall``: hits best first, and the block an agent reads."""

    query: str
    hits: list[RecallHit]
    text: str = Field(description="the hits as a markdown-prompt block ('' when none)")
    warnings: list[str] = Field(default_factory=list)


class LearnResult(BaseModel):
    """``learn``: the stored record; ``created`` false when it was known (then re-verified)."""

    memory: MemoryRecord
    created: bool
    commit: str | None = Field(description="the commit on refs/tur/memories, null if none")
    notes: list[str] = Field(default_factory=list, description="what the CLI prints on stderr")


class VerifyResult(BaseModel):
    """``verify``: one memory checked against HEAD and the working tree, and recorded."""

    id: str
    status: str
    reason: str | None
    weight: float
    changed: bool = Field(description="whether its record changed (status, reason or anchor)")
    anchor: str | None = Field(description="its anchor after the check (moved lines follow)")
    moved: bool
    hint: str | None
    commit: str | None


class RefuteResult(BaseModel):
    """``refute``: the refuted record."""

    memory: MemoryRecord
    commit: str | None


class ListResult(BaseModel):
    """``list``: memories with stored status and current weight, sorted by id."""

    memories: list[MemoryEntry]
    total: int = Field(description="memories matching the filters")
    truncated: bool = Field(description="more match than `limit`")
    warnings: list[str] = Field(default_factory=list)


class StatusChange(BaseModel):
    """A memory whose status or anchor `tur verify` would change."""

    id: str
    status: str
    reason: str | None
    anchor: str | None
    hint: str | None


class StatusResult(BaseModel):
    """``status``: the staleness check of ``tur status`` (nothing written)."""

    head: str | None = Field(description="HEAD's commit")
    tip: str | None = Field(description="refs/tur/memories' commit")
    memories: int
    counts: dict[str, int] = Field(description="memories per status, checked now")
    changes: list[StatusChange] = Field(description="what `tur verify` would record")
    warnings: list[str] = Field(default_factory=list)


# -- converting facade values -------------------------------------------------------------------


def _record(memory: Any) -> MemoryRecord:
    """A full :class:`gitmem.api.Memory` as a :class:`MemoryRecord` (:func:`gitmem.api.memory_to_json`)."""
    return MemoryRecord(**memory_to_json(memory))


def _warnings(skipped: Sequence[Any]) -> list[str]:
    return [item.warning() for item in skipped]


def _repo_path(file: str) -> str:
    """``file`` as the anchor path it names: repository-relative POSIX, without a line range."""
    from gitmem.api import split_anchor_ref

    path = split_anchor_ref(file.strip())[0].replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


# -- the server ---------------------------------------------------------------------------------


def _text_result(model: BaseModel, text: str | None = None) -> CallToolResult:
    structured = model.model_dump(mode="json")
    if text is None:
        text = json.dumps(structured, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class GitmemTools:
    """The tools and resources over one :class:`~gitmem.api.Gitmem`, one call at a time.

    Each public method is the body of one tool or resource; :meth:`call` runs it under the
    lock and turns errors into tool errors.

    Args:
        gm: the repository's memory store; relative ``file`` paths start at ``gm.cwd``.
        on_new_tip: called with no argument after the first call that sees a new tip of the
            memory ref, under the lock. The process's owner (the ``tur mcp`` entry point) uses
            it for process-wide settings such as the garbage collector's; ``None`` does nothing.
    """

    def __init__(self, gm: Gitmem, on_new_tip: Callable[[], None] | None = None) -> None:
        self.gm = gm
        self._lock = threading.Lock()
        self._settled: str | None = None
        self._on_new_tip = on_new_tip

    def call(self, body: Callable[[], tuple[BaseModel, str | None]]) -> CallToolResult:
        """Run ``body`` alone; its result, or a tool error with a one-line message."""
        try:
            with self._lock:
                model, text = body()
                self._settle()
        except SecretRefused as exc:
            # The CLI's hint names --allow-secret, which no tool here takes on purpose: an agent
            # must not be able to override the scan, only a person at the command line.
            return _error_result(str(SecretRefused(exc.message, _SECRET_HINT)))
        except GitmemError as exc:
            return _error_result(str(exc))
        except Exception as exc:  # a gitmem bug: report it, keep serving
            log.exception("tur mcp: internal error")
            return _error_result(f"internal error: {type(exc).__name__}: {exc}")
        return _text_result(model, text)

    def _settle(self) -> None:
        """Once per tip of the memory ref, tell the process's owner (``on_new_tip``)."""
        if self._on_new_tip is None:
            return
        tip = self.gm.tip()
        if tip != self._settled:
            self._settled = tip
            self._on_new_tip()

    def read(self, body: Callable[[], str]) -> str:
        """Run a resource ``body`` alone; a gitmem error becomes a resource error (its message).

        Raises:
            ResourceNotFoundError: no such memory.
            ResourceError: any other gitmem error, or an internal error.
        """
        try:
            with self._lock:
                text = body()
                self._settle()
                return text
        except UnknownMemory as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except GitmemError as exc:
            raise ResourceError(str(exc)) from None
        except Exception as exc:
            log.exception("tur mcp: internal error")
            raise ResourceError(f"internal error: {type(exc).__name__}: {exc}") from None

    def _warm(self) -> None:
        """After a write: build the new tip's cache now, not in the next wake or recall."""
        try:
            self.gm.warm()
        except GitmemError as exc:  # the write stands; the next read reports the problem
            log.warning("tur mcp: could not warm the cache: %s", exc)
        except Exception:  # a gitmem bug: the write stands and its result is still returned
            log.exception("tur mcp: internal error while warming the cache")

    # -- tools --------------------------------------------------------------------------------

    def wake(self, token_budget: int | None, max_chars: int | None,
             explain: bool = False) -> tuple[WakeResult, str]:
        """The wake prompt; with ``explain``, the summary of its assembly record too."""
        result, skipped = self.gm.wake(token_budget=token_budget, max_chars=max_chars)
        out = WakeResult(text=result.text, tokens=result.tokens, budget=result.budget,
                         omitted=result.omitted, warnings=_warnings(skipped))
        if explain:  # the assembly record costs an object per memory: only when asked
            out.included = [e.memory_id for e in result.assembly if e.included]
            out.excluded = result.excluded_counts()
        from gitmem import api

        # The CLI's words for an empty wake (its stderr line on a terminal) as the tool's text.
        return out, result.text or api.empty_notice(result) or ""

    def recall(self, query: str, top_k: int | None, include_stale: bool,
               file: str | None) -> tuple[RecallResult, str]:
        """Hits for ``query`` and their markdown-prompt block."""
        from gitmem import api

        result, skipped = self.gm.recall(query, top_k=top_k, include_stale=include_stale,
                                         full_records=False,
                                         file=self._absolute(file) if file else None)
        hits = [RecallHit(**{**memory_to_json(h.memory), "reason": h.stale_reason}, score=h.score,
                          bm25=h.bm25, boost=h.boost, stale=h.stale)
                for h in result.hits]
        text = api.render_recall(result, "markdown-prompt")
        out = RecallResult(query=query, hits=hits, text=text, warnings=_warnings(skipped))
        return out, text or api.empty_notice(result, file or "") or ""

    def learn(self, content: str, type: str | None, file: str | None, confidence: float | None,
              source_agent: str | None) -> tuple[LearnResult, None]:
        """Store a memory observed at HEAD (the CLI's ``learn``)."""
        result = self.gm.learn(content, type=type or MemoryType.FACT.value, file=file,
                               confidence=confidence, agent=source_agent)
        self._warm()
        out = LearnResult(memory=_record(result.memory), created=result.created,
                          commit=result.commit.sha if result.commit else None,
                          notes=result.notes(type, _LEARN_ACTIONS))
        return out, None

    def verify(self, memory_id: str) -> tuple[VerifyResult, None]:
        """Check one memory against HEAD and the working tree and record its status."""
        outcome = self.gm.verify([memory_id], write=True)
        if outcome.commit is not None:
            self._warm()
        if not outcome.rows:  # the record is malformed: say what the CLI warns
            raise GitmemError(outcome.skipped[-1].warning() if outcome.skipped
                              else f"no memory with id {memory_id!r}")
        row = outcome.rows[0]
        out = VerifyResult(id=row.memory_id, status=row.status.value, reason=row.reason,
                           weight=round(row.weight, 6), changed=row.changed, anchor=_anchor(row),
                           moved=row.moved, hint=row.hint,
                           commit=outcome.commit.sha if outcome.commit else None)
        return out, None

    def refute(self, memory_id: str, reason: str) -> tuple[RefuteResult, None]:
        """Mark a memory refuted, by the repository's git identity."""
        memory, commit = self.gm.refute(memory_id, reason, by=self.gm.identity())
        self._warm()
        return RefuteResult(memory=_record(memory), commit=commit.sha if commit else None), None

    def show(self, memory_id: str) -> tuple[ShowResult, None]:
        """The whole record and its commits."""
        memory = self.gm.get(memory_id)
        commits = [CommitOut(sha=c.sha, message=c.message, author=c.author, time=iso_z(c.time))
                   for c in self.gm.history(memory.id)]
        return ShowResult(**_record(memory).model_dump(), commits=commits), None

    def _absolute(self, file: str) -> str:
        """``file`` (relative to the repository root, as tools take it) as an absolute path."""
        root = self.gm.paths.workdir
        path = _repo_path(file)
        return str(root / path) if root is not None else path

    def list_memories(self, file: str | None, status: str | None,
                      limit: int | None) -> tuple[ListResult, None]:
        """Memories with stored status and current weight, filtered."""
        if limit is not None and limit < 1:
            raise InvalidInput(f"limit must be >= 1, got {limit}")
        view = self.gm.status_view(full_records=False, status=status,
                                   file=self._absolute(file) if file else None)
        rows = view.rows
        limit = limit or LIST_LIMIT
        entries = [MemoryEntry(**memory_to_json(r.memory), weight=round(r.weight, 6))
                   for r in rows[:limit]]
        return ListResult(memories=entries, total=len(rows), truncated=len(rows) > limit,
                          warnings=_warnings(view.skipped)), None

    def status(self) -> tuple[StatusResult, None]:
        """``tur status``: every memory checked now, nothing written."""
        outcome = self.gm.verify(None, write=False)
        changes = [StatusChange(id=r.memory_id, status=r.status.value, reason=r.reason,
                                anchor=_anchor(r), hint=r.hint)
                   for r in outcome.rows if r.changed]
        out = StatusResult(head=outcome.head, tip=self.gm.tip(), memories=len(outcome.rows),
                           counts=outcome.counts(), changes=changes,
                           warnings=_warnings(outcome.skipped))
        return out, None

    # -- resources ----------------------------------------------------------------------------

    def wake_text(self) -> str:
        """``tur://wake``: the wake prompt at the configured budget."""
        result, _ = self.gm.wake()
        return result.text

    def recall_text(self, query: str) -> str:
        """``tur://context/recall?q=…``: the markdown-prompt block ('' when nothing matches).

        What ``tur hook pre-turn`` prints for the same prompt: at most
        :data:`~gitmem.defaults.PRE_TURN_TOKEN_BUDGET` tokens, for injection before a turn.
        """
        from gitmem import api

        result, _ = self.gm.recall(query, token_budget=PRE_TURN_TOKEN_BUDGET, full_records=False)
        return api.render_recall(result, "markdown-prompt")

    def memory_json(self, memory_id: str) -> str:
        """``tur://memory/{id}``: the record as JSON (:class:`MemoryRecord`)."""
        return _record(self.gm.get(memory_id)).model_dump_json(indent=2)


def _anchor(row: StatusRow) -> str | None:
    if row.new_ref:
        return row.new_ref
    prov = row.memory.provenance
    return prov.context_ref if prov is not None else None


# -- argument types: the schema names the choices; gitmem checks them and says what is wrong ----

_TypeArg = Annotated[str | None, Field(description="axiom | core | fact | insight | preference "
                                       "(default fact; a known memory keeps its type)",
                                       json_schema_extra={"enum": [*TYPES, None]})]
_StatusArg = Annotated[str | None, Field(description="only memories with this stored status",
                                         json_schema_extra={"enum": [*STATUSES, None]})]
_IdArg = Annotated[str, Field(description="a memory id or a unique prefix of it (4+ characters)")]
_FileArg = Annotated[str | None, Field(description="a file, relative to the repository root")]


class _Server(MCPServer):
    """:class:`MCPServer` whose argument errors are one line, as the CLI's are."""

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
            problems = "; ".join(f"argument {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                 for e in cause.errors())
            raise ToolError(problems) from cause


def build_server(gm: Gitmem, on_new_tip: Callable[[], None] | None = None) -> MCPServer:
    """The MCP server of ``gm``'s repository: its tools and resources, not yet running.

    Args:
        gm: the repository; open it at the repository root so that ``file`` paths are
            relative to the root.
        on_new_tip: see :class:`GitmemTools`.
    """
    tools = GitmemTools(gm, on_new_tip)
    server: MCPServer = _Server("tur", title="gitmem", version=__version__, instructions=INSTRUCTIONS,
                                   log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(name="wake", annotations=read_only)
    def wake(
        token_budget: Annotated[int | None, Field(description="tokens (default from config); 0 = unbounded",
                                                  json_schema_extra={"minimum": 0})] = None,
        max_chars: Annotated[int | None, Field(description="characters the text may take at most",
                                               json_schema_extra={"minimum": 0})] = None,
        explain: Annotated[bool, Field(description="also list what was included and count what was "
                                                   "left out, by reason")] = False,
    ) -> Annotated[CallToolResult, WakeResult]:
        """The token-budgeted prompt for the start of a session.

        Persona, continuity note, axioms and core memories, then the most salient others; how
        many were left out for the budget (recall finds them), and with `explain` the
        assembly record's summary.
        """
        return tools.call(lambda: tools.wake(token_budget, max_chars, explain))

    @server.tool(name="recall", annotations=read_only)
    def recall(
        query: Annotated[str, Field(description="what you are about to do, in free text; may be "
                                                "empty with `file`")] = "",
        top_k: Annotated[int | None, Field(description="most hits (default from config, 5)",
                                           json_schema_extra={"minimum": 1})] = None,
        include_stale: Annotated[bool, Field(description="also stale and superseded memories")] = False,
        file: Annotated[str | None, Field(description="memories anchored to this file first "
                                                      "(relative to the repository root)")] = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Memories relevant to a query, best first.

        BM25 over each memory and its neighbours, with a boost for named fields; each hit
        is a falsifiable hypothesis with its observation time and confidence.
        """
        return tools.call(lambda: tools.recall(query, top_k, include_stale, file))

    @server.tool(name="learn", annotations=writes)
    def learn(
        content: Annotated[str, Field(description="the statement to remember")],
        type: _TypeArg = None,
        file: Annotated[str | None, Field(description="anchor: `path` or `path#Lx-Ly`, relative "
                                                      "to the repository root")] = None,
        confidence: Annotated[float | None, Field(description="in [0, 1] (default 1.0)",
                                                  json_schema_extra={"minimum": 0, "maximum": 1})] = None,
        source_agent: Annotated[str | None, Field(description="your name, recorded as the source")] = None,
    ) -> Annotated[CallToolResult, LearnResult]:
        """Remember a statement about the code, observed at HEAD.

        One commit on refs/tur/memories; learning known content again re-verifies it.
        """
        return tools.call(lambda: tools.learn(content, type, file, confidence, source_agent))

    @server.tool(name="verify", annotations=writes)
    def verify(id: _IdArg) -> Annotated[CallToolResult, VerifyResult]:
        """Check one memory against HEAD and the working tree, and record its status.

        Moved lines are re-anchored; a memory found fresh restarts its time decay.
        """
        return tools.call(lambda: tools.verify(id))

    @server.tool(name="refute", annotations=writes)
    def refute(
        id: _IdArg,
        reason: Annotated[str, Field(description="why it is wrong")],
    ) -> Annotated[CallToolResult, RefuteResult]:
        """Mark a memory as wrong, with a reason; it never appears in wake or recall again."""
        return tools.call(lambda: tools.refute(id, reason))

    @server.tool(name="show", annotations=read_only)
    def show(id: _IdArg) -> Annotated[CallToolResult, ShowResult]:
        """One whole record and the commits on refs/tur/memories that touched it."""
        return tools.call(lambda: tools.show(id))

    @server.tool(name="list", annotations=read_only)
    def list_(
        file: _FileArg = None,
        status: _StatusArg = None,
        limit: Annotated[int | None, Field(description=f"most memories returned (default {LIST_LIMIT})",
                                           json_schema_extra={"minimum": 1})] = None,
    ) -> Annotated[CallToolResult, ListResult]:
        """Memories with their stored status, current weight and anchor, sorted by id."""
        return tools.call(lambda: tools.list_memories(file, status, limit))

    @server.tool(name="status", annotations=read_only)
    def status() -> Annotated[CallToolResult, StatusResult]:
        """Check every memory against HEAD and the working tree, writing nothing.

        Counts per status, and the changes `verify` would record.
        """
        return tools.call(tools.status)

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

    return server


def serve(gm: Gitmem, on_new_tip: Callable[[], None] | None = None) -> None:
    """Run the server on stdin/stdout for ``gm``'s repository, until the client closes stdin.

    ``file`` arguments are relative to the repository root, wherever ``gm`` was opened.
    ``on_new_tip``: see :class:`GitmemTools`.
    """
    root = gm.paths.workdir
    if root is not None and root.resolve() != gm.cwd:
        gm = Gitmem.open(root)
    server = build_server(gm, on_new_tip)  # configures logging to stderr
    server.run("stdio")
