"""The bodies of the ``tur mcp`` tools and resources over one :class:`~gitmem.api.Gitmem`.

Each tool does what its CLI command does, through the same facade method and with the same
checks: ``learn`` (``tur learn``), ``edit`` (``tur edit``), ``confirm`` (``tur verify ID
--confirm``), ``forget`` (``tur forget ID``), ``link`` (``tur link``), and the rest. Every
text returned goes through :func:`gitmem.mcp.wording.tool_words`, every error through
:func:`gitmem.mcp.wording.error_words`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from gitmem.api import Gitmem, LearnActions, StatusRow, Via, current_via, memory_to_json
from gitmem.defaults import PRE_TURN_TOKEN_BUDGET
from gitmem.errors import GitmemError, InvalidInput, NotARepository, UnknownMemory
from gitmem.mcp.bounds import check_id, check_query
from gitmem.mcp.models import (
    CommitOut,
    EditResult,
    ForgetResult,
    LearnResult,
    LinkResult,
    ListResult,
    MemoryEntry,
    MemoryRecord,
    RecallHit,
    RecallResult,
    RefuteResult,
    ShowResult,
    StatusChange,
    StatusResult,
    VerifyResult,
    WakeResult,
)
from gitmem.mcp.wording import NO_REPOSITORY, error_words, tool_words
from gitmem.vocabulary import MemoryType, iso_z

__all__ = ["LIST_LIMIT", "GitmemTools"]

log = logging.getLogger("gitmem.mcp")

#: How the learn notes name what they suggest: with this server's tools.
_LEARN_ACTIONS = LearnActions(supersede="`link` with source {id}, target {other}, type supersedes",
                              re_anchor="`edit` it with `file` to re-anchor it",
                              retype="`edit` {id} with `type`")

#: Most memories one ``list`` call returns unless it asks for more.
LIST_LIMIT = 100

_T = TypeVar("_T")




def _record(memory: Any) -> MemoryRecord:
    """A full :class:`gitmem.api.Memory` as a :class:`MemoryRecord` (:func:`gitmem.api.memory_to_json`)."""
    return MemoryRecord(**memory_to_json(memory))


def _warnings(skipped: Sequence[Any]) -> list[str]:
    return [tool_words(item.warning()) for item in skipped]


def _hint(hint: str | None) -> str | None:
    return tool_words(hint) if hint else hint


def _sha(commit: Any) -> str | None:
    return commit.sha if commit is not None else None


def _repo_path(file: str) -> str:
    """``file`` as the anchor path it names: repository-relative POSIX, without a line range."""
    from gitmem.api import split_anchor_ref

    path = split_anchor_ref(file.strip())[0].replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _anchor(row: StatusRow) -> str | None:
    if row.new_ref:
        return row.new_ref
    prov = row.memory.provenance
    return prov.context_ref if prov is not None else None


def _text_result(model: BaseModel, text: str | None = None) -> CallToolResult:
    structured = model.model_dump(mode="json")
    if text is None:
        text = json.dumps(structured, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def error_result(message: str) -> CallToolResult:
    """A tool error carrying ``message`` (one line)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class GitmemTools:
    """The tools and resources over one :class:`~gitmem.api.Gitmem`, one call at a time.

    Each public method is the body of one tool or resource; :meth:`call` runs it under the
    lock and turns errors into tool errors.

    Args:
        gm: the repository's memory store; relative ``file`` paths start at ``gm.cwd``.
            ``None``: the server runs outside a repository and every call answers
            :data:`~gitmem.mcp.wording.NO_REPOSITORY`.
        on_new_tip: called with no argument after the first call that sees a new tip of the
            memory ref, under the lock. The process's owner (the ``tur mcp`` entry point) uses
            it for process-wide settings such as the garbage collector's; ``None`` does nothing.
        where: the directory the server was started in (named in the error without ``gm``).
        asking: the harness and agent the server answers (``tur mcp --harness --agent``): the
            ``harness`` and ``agent`` of every call's :class:`~gitmem.api.Via` (memories bound to
            other agents are left out; its harness's limits apply).
    """

    def __init__(self, gm: Gitmem | None, on_new_tip: Callable[[], None] | None = None,
                 where: Path | None = None, asking: Via | None = None) -> None:
        self.asking = asking or Via()
        self._gm = gm
        self._where = where
        self._lock = threading.Lock()
        self._settled: str | None = None
        self._on_new_tip = on_new_tip

    def _via(self, surface: str) -> Via:
        """The tool's own surface name and the server's names, unless a server of its own serves it."""
        return current_via() or self.asking._replace(surface=surface)

    @property
    def gm(self) -> Gitmem:
        """The repository's store.

        Raises:
            NotARepository: the server runs outside a repository.
        """
        if self._gm is None:
            raise NotARepository(NO_REPOSITORY.format(where=self._where or Path.cwd()))
        return self._gm

    def run(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` alone (no other call of this server at the same time) and return its result.

        The one way in for every surface of the server (the MCP tools and resources, the HTTP
        API of :mod:`gitmem.mcp.http`). After ``body``, a new tip of the memory ref is told
        to the process's owner (``on_new_tip``).

        Raises:
            Whatever ``body`` raises (a :class:`~gitmem.errors.GitmemError`, a bound's
            ``ValueError``), unchanged.
        """
        with self._lock:
            result = body()
            self._settle()
            return result

    def call(self, body: Callable[[], tuple[BaseModel, str | None]]) -> CallToolResult:
        """Run ``body`` alone; its result, or a tool error with a one-line message."""
        try:
            model, text = self.run(body)
        except GitmemError as exc:
            return error_result(error_words(exc))
        except Exception as exc:  # a gitmem bug: report it, keep serving
            if not isinstance(exc, OSError):
                log.exception("tur mcp: internal error")
            return error_result(error_words(exc))
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
            ResourceError: any other gitmem error, a value out of bounds, or an internal error.
        """
        try:
            return self.run(body)
        except UnknownMemory as exc:
            raise ResourceNotFoundError(error_words(exc)) from None
        except ValueError as exc:  # a bound of gitmem.mcp.bounds
            raise ResourceError(str(exc)) from None
        except Exception as exc:
            if not isinstance(exc, GitmemError | OSError):
                log.exception("tur mcp: internal error")
            raise ResourceError(error_words(exc)) from None

    def _warm(self) -> None:
        """After a write: build the new tip's cache now, not in the next wake or recall."""
        try:
            self.gm.warm()
        except GitmemError as exc:  # the write stands; the next read reports the problem
            log.warning("tur mcp: could not warm the cache: %s", exc)
        except Exception:  # a gitmem bug: the write stands and its result is still returned
            log.exception("tur mcp: internal error while warming the cache")

    def _absolute(self, file: str) -> str:
        """``file`` (relative to the repository root, as tools take it) as an absolute path."""
        root = self.gm.paths.workdir
        path = _repo_path(file)
        return str(root / path) if root is not None else path

    # -- reading ------------------------------------------------------------------------------

    def wake(self, token_budget: int | None, max_chars: int | None,
             explain: bool = False) -> tuple[WakeResult, str]:
        """The wake prompt; with ``explain``, the summary of its assembly record too."""
        from gitmem import api

        result, skipped = self.gm.wake(token_budget=token_budget, max_chars=max_chars,
                                       via=self._via("mcp:wake"))
        text = tool_words(result.text)
        out = WakeResult(text=text, tokens=result.tokens, budget=result.budget,
                         omitted=result.omitted, warnings=_warnings(skipped))
        if explain:  # the assembly record costs an object per memory: only when asked
            out.included = [e.memory_id for e in result.assembly if e.included]
            out.excluded = result.excluded_counts()
        # The CLI's words for an empty wake (its stderr line on a terminal) as the tool's text.
        return out, text or tool_words(api.empty_notice(result) or "")

    def recall(self, query: str, top_k: int | None, include_stale: bool,
               file: str | None) -> tuple[RecallResult, str]:
        """Hits for ``query`` and their markdown-prompt block."""
        from gitmem import api

        result, skipped = self.gm.recall(query, top_k=top_k, include_stale=include_stale,
                                         full_records=False,
                                         file=self._absolute(file) if file else None,
                                         via=self._via("mcp:recall"))
        hits = [RecallHit(**{**memory_to_json(h.memory), "reason": h.stale_reason}, score=h.score,
                          bm25=h.bm25, boost=h.boost, stale=h.stale)
                for h in result.hits]
        text = tool_words(api.render_recall(result, "markdown-prompt"))
        out = RecallResult(query=query, hits=hits, text=text, warnings=_warnings(skipped))
        return out, text or tool_words(api.empty_notice(result, file or "") or "")

    def show(self, memory_id: str) -> tuple[ShowResult, None]:
        """The whole record and its commits."""
        try:
            memory = self.gm.get(memory_id)
        except UnknownMemory as missing:
            raise self.gm.records.forgotten_error(memory_id) or missing from None
        commits = [CommitOut(sha=c.sha, message=c.message, author=c.author, time=iso_z(c.time))
                   for c in self.gm.history(memory.id)]
        return ShowResult(**_record(memory).model_dump(), commits=commits), None

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
                                anchor=_anchor(r), hint=_hint(r.hint))
                   for r in outcome.rows if r.changed]
        out = StatusResult(head=outcome.head, tip=self.gm.tip(), memories=len(outcome.rows),
                           counts=outcome.counts(), changes=changes,
                           warnings=_warnings(outcome.skipped))
        return out, None

    # -- writing ------------------------------------------------------------------------------

    def learn(self, content: str, type: str | None, file: str | None, confidence: float | None,
              source_agent: str | None, personal: bool = False,
              for_agents: Sequence[str] | None = None) -> tuple[LearnResult, None]:
        """Store a memory observed at HEAD (the CLI's ``learn``; ``personal``: ``--personal``).

        ``for_agents``: the ``for`` argument (``tur learn --for``): the agents it is for
        (``[]``: everyone; ``None``: everyone, or a known memory's binding kept).
        """
        from gitmem import api

        if personal:
            api.refuse_personal_anchor(file)
        gm = self.gm.make_personal() if personal else self.gm
        result = gm.learn(content, type=type or MemoryType.FACT.value, file=file,
                          confidence=confidence, agent=source_agent, visibility=for_agents)
        self._warm()
        was = result.visibility_was
        out = LearnResult(memory=_record(result.memory), created=result.created,
                          commit=_sha(result.commit),
                          notes=[tool_words(n) for n in result.notes(type, _LEARN_ACTIONS)],
                          visibility_was=None if was is None else list(was))
        return out, None

    def verify(self, memory_id: str, confirm: bool = False) -> tuple[VerifyResult, None]:
        """Check one memory against HEAD and the working tree and record its status.

        With ``confirm`` (``tur verify ID --confirm``): vouch for it, fresh and re-anchored
        where the diff maps its lines; a memory whose lines cannot be placed keeps its
        status, and ``hint`` says what to do.
        """
        outcome = self.gm.verify([memory_id], write=True, confirm=confirm)
        if outcome.commit is not None:
            self._warm()
        if not outcome.rows:  # the record is malformed: say what the CLI warns
            raise GitmemError(outcome.skipped[-1].warning() if outcome.skipped
                              else f"no memory with id {memory_id!r}")
        row = outcome.rows[0]
        out = VerifyResult(id=row.memory_id, status=row.status.value, reason=row.reason,
                           weight=round(row.weight, 6), changed=row.changed, anchor=_anchor(row),
                           moved=row.moved, hint=_hint(row.hint), commit=_sha(outcome.commit))
        return out, None

    def refute(self, memory_id: str, reason: str) -> tuple[RefuteResult, None]:
        """Mark a memory refuted, by the repository's git identity."""
        memory, commit = self.gm.refute(memory_id, reason, by=self.gm.identity())
        self._warm()
        return RefuteResult(memory=_record(memory), commit=_sha(commit)), None

    def edit(self, memory_id: str, content: str | None, type: str | None,
             file: str | None, reanchor: bool = False,
             for_agents: Sequence[str] | None = None) -> tuple[EditResult, None]:
        """Change a memory's content, type, anchor or binding in place (``tur edit``).

        ``file`` re-anchors it at HEAD to that file or range and makes it fresh there;
        ``reanchor`` takes the range git's diff maps its lines to (``tur edit --reanchor``);
        ``for_agents`` binds it to those agents (``tur edit --for``; ``[]``: ``--everyone``).
        """
        memory, commit = self.gm.edit(memory_id, content=content, type=type, file=file, reanchor=reanchor,
                                      visibility=for_agents)
        if commit is not None:
            self._warm()
        return EditResult(memory=_record(memory), changed=commit is not None, commit=_sha(commit)), None

    def forget(self, memory_id: str, undo: bool = False) -> tuple[ForgetResult, str]:
        """Remove a memory from the tree (``tur forget ID``); it stays in the ref's history.

        With ``undo``, bring a forgotten memory's last version back (``tur forget --undo ID``).
        """
        if undo:
            memory, restored = self.gm.restore(memory_id)
            self._warm()
            return (ForgetResult(id=memory.id, commit=_sha(restored), restored=True),
                    f"restored {memory.id} from the history of refs/tur/memories")
        try:
            target = self.gm.resolve(memory_id)  # a malformed record can be forgotten too
        except UnknownMemory as missing:
            raise self.gm.records.forgotten_error(memory_id) or missing from None
        commit = self.gm.forget(target)
        self._warm()
        out = ForgetResult(id=target, commit=_sha(commit))
        return out, f"forgot {target} (still in the history of refs/tur/memories)"

    def link(self, source: str, target: str, type: str | None,
             remove: bool = False) -> tuple[LinkResult, None]:
        """Add the relation ``source --type--> target`` (``tur link``; idempotent).

        With ``remove``, take it out (``tur link --remove``; every type when ``type`` is None).
        """
        try:  # before the unlink: a target forgotten since is named by the source's relations alone
            named = self.gm.records.link_target(source, target) if remove else None
        except UnknownMemory:
            named = None  # the unlink below says what is wrong
        memory, commit = self.gm.link(source, target, type, remove=remove)
        if commit is not None:
            self._warm()
        out = LinkResult(source=memory.id, type=type, target=named or self.gm.resolve(target),
                         changed=commit is not None, commit=_sha(commit), removed=remove)
        return out, None

    # -- resources ----------------------------------------------------------------------------

    def wake_text(self) -> str:
        """``tur://wake``: the wake prompt at the configured budget."""
        result, _ = self.gm.wake(via=self._via("mcp:resource"))
        return tool_words(result.text)

    def recall_text(self, query: str) -> str:
        """``tur://context/recall?q=…``: the markdown-prompt block ('' when nothing matches).

        What ``tur hook pre-turn`` prints for the same prompt (in the tools' words): at most
        :data:`~gitmem.defaults.PRE_TURN_TOKEN_BUDGET` tokens, for injection before a turn.

        Raises:
            ValueError: the query is out of bounds (:func:`gitmem.mcp.bounds.check_query`).
        """
        from gitmem import api

        check_query(query)
        result, _ = self.gm.recall(query, token_budget=PRE_TURN_TOKEN_BUDGET, full_records=False,
                                   via=self._via("mcp:resource"))
        return tool_words(api.render_recall(result, "markdown-prompt"))

    def memory_json(self, memory_id: str) -> str:
        """``tur://memory/{id}``: the record as JSON (:class:`MemoryRecord`).

        Raises:
            ValueError: the id is out of bounds (:func:`gitmem.mcp.bounds.check_id`).
        """
        check_id(memory_id)
        return _record(self.gm.get(memory_id)).model_dump_json(indent=2)
