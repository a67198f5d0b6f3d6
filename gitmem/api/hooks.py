"""The harness hooks, for the facade: what a session start, a prompt and a tool call inject.

Each hook reads the harness's JSON payload (:mod:`gitmem.harness.hooks`), builds its text from
:class:`~gitmem.api.context.ContextBuilder` and remembers, per ``session_id``, what it put
into the agent's context (:class:`gitmem.harness.hooks.SessionLog` in ``<git common dir>/tur/
sessions``), so that no later hook of the same session sends a memory again unless it changed.
Each hook that injects appends its assembly record to the injection log
(:class:`gitmem.api.injections.InjectionLog`), with the payload's session id.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.api.context import check_limits
from gitmem.context.injection import Via
from gitmem.defaults import HOOK_MAX_CHARS, PRE_TOOL_MAX_CHARS, PRE_TOOL_TOKEN_BUDGET, PRE_TURN_TOKEN_BUDGET
from gitmem.errors import GitmemError, InvalidInput
from gitmem.harness.hooks import SESSIONS_DIR, SessionLog, parse_payload

if TYPE_CHECKING:
    from gitmem.api.context import ContextBuilder
    from gitmem.api.injections import InjectionLog
    from gitmem.api.records import Workspace
    from gitmem.context.recall import RecallResult

__all__ = ["SESSIONS_DIR", "HookOutput", "Hooks"]


_FRESH_CONTEXT = frozenset({"clear", "compact"})
_NOTE_KEY = "note:"  # the session log's key of a stale note, beside its memory's id


# Here rather than with the other results in gitmem.api.results (which re-exports it): a hook
# runs on every turn and builds this one result; that module creates a dozen other dataclasses.
@dataclass(frozen=True)
class HookOutput:
    """What a harness hook prints: the text for the agent and the event it answers.

    Attributes:
        text: markdown for the agent's context; ``""`` when there is nothing to add.
        event: the payload's ``hook_event_name`` (``SessionStart``, ``UserPromptSubmit``,
            ``PreToolUse``, ``BeforeAgent``...), or the hook's own event when the payload
            names none; it goes into the JSON form (``hookSpecificOutput.hookEventName``).
    """

    text: str
    event: str


class Hooks:
    """``session_start``, ``pre_turn``, ``pre_tool`` and ``stop`` for a harness (``Gitmem.hooks``).

    Args:
        ws: the shared workspace.
        context: what builds wake and recall.
        injections: the injection log each hook appends its assembly record to.

    Each hook takes ``via``: the harness (and a surface name other than the hook's own, for
    a caller that is not ``tur hook``); the session id comes from the payload when it has one.
    """

    def __init__(self, ws: Workspace, context: ContextBuilder, injections: InjectionLog) -> None:
        self.ws = ws
        self.context = context
        self.injections = injections
        self.log = SessionLog(Path(ws.store.common_dir) / "tur" / SESSIONS_DIR)

    def session_start(self, payload: bytes | str, token_budget: int | None = None,
                      max_chars: int | None = None, via: Via | None = None) -> HookOutput:
        """The wake text for a harness's session-start hook (``tur hook session-start``).

        A ``clear`` or ``compact`` start (the payload's ``source``) forgets what the session
        was sent; the memories in the wake are remembered as sent to ``session_id``.

        Args:
            payload: the hook's JSON (``session_id``, ``source``, ``hook_event_name``); may be
                empty.
            token_budget: tokens (``None``: the harness's ``wake_budget``, else the configured
                wake budget; 0: no cap).
            max_chars: characters (``None``: the harness's ``char_cap``, else
                :data:`~gitmem.defaults.HOOK_MAX_CHARS`).
            via: the harness, for the injection log (see the class docstring).

        Raises:
            InvalidInput: a negative budget or character cap (:func:`~gitmem.api.context.check_limits`).
            GitmemError: the store cannot be read (the CLI prints it and still exits 0).
        """
        check_limits(token_budget=token_budget, max_chars=max_chars)
        hook = parse_payload(payload)
        if hook.source in _FRESH_CONTEXT:
            self.log.forget(hook.session_id)
        via = _via(via, "hook:session-start", hook.session_id)
        result, _ = self.context.wake(token_budget, max_chars=self._chars(max_chars, via, HOOK_MAX_CHARS),
                                      via=via)
        if hook.session_id and result.shown:
            self._remember(hook.session_id, result.shown)
        self.injections.wake(result, via)
        from gitmem.api.stop import StopHook

        with suppress(GitmemError):  # without its start, the session's first stop records one
            StopHook(self.ws).begin(hook.session_id)
        return HookOutput(result.text, hook.event or "SessionStart")

    def pre_turn(self, payload: bytes | str, top_k: int | None = None,
                 token_budget: int | None = PRE_TURN_TOKEN_BUDGET,
                 max_chars: int | None = None, via: Via | None = None) -> HookOutput:
        """The recall block for a harness hook payload; its text is ``""`` when nothing matches.

        The prompt is found as :func:`gitmem.context.recall.query_from_payload` does (a JSON
        object's ``prompt`` field, a message list, or the raw text). A memory already sent
        in the payload's ``session_id`` (by any hook) is not sent again unless it changed
        since; the log is kept in ``<git common dir>/tur/sessions`` for a day.

        Raises:
            InvalidInput: ``top_k`` < 1, a negative budget or character cap.
            GitmemError: the store cannot be read (the CLI prints it and still exits 0).
        """
        check_limits(top_k=top_k, token_budget=token_budget, max_chars=max_chars)
        from gitmem.context.recall import RELEVANCE_FLOOR, query_from_payload

        hook = parse_payload(payload)
        event = hook.event or "UserPromptSubmit"
        prompt = query_from_payload(payload)
        if not prompt:
            return HookOutput("", event)
        # The relevance floor: a prompt that nothing in the store is about gets no memory,
        # and one that few are about gets only those (docs/wake-recall.md, Relevance floor).
        skip, refused = self._skip(hook.session_id)
        via = _via(via, "hook:pre-turn", hook.session_id)
        result, _ = self.context.recall(prompt, top_k=top_k, token_budget=token_budget,
                                        max_chars=self._chars(max_chars, via, HOOK_MAX_CHARS),
                                        full_records=False, skip=skip, floor=RELEVANCE_FLOOR, via=via)
        text = self._deliver(hook.session_id, result)
        self._log(result, text, refused, top_k, token_budget, via, RELEVANCE_FLOOR)
        return HookOutput(text, event)

    def pre_tool(self, payload: bytes | str, top_k: int | None = None,
                 token_budget: int | None = PRE_TOOL_TOKEN_BUDGET,
                 max_chars: int | None = None, via: Via | None = None) -> HookOutput:
        """The memories anchored to the files a tool call is about to read or change.

        Reads a PreToolUse payload: Claude Code's ``tool_input.file_path`` (or
        ``notebook_path``), Gemini CLI's ``absolute_path``, Codex's ``apply_patch`` patch
        (its ``*** Update File:`` lines). Deduplicated per ``session_id`` as
        :meth:`pre_turn` is.

        Raises:
            InvalidInput: ``top_k`` < 1, a negative budget or character cap.
            GitmemError: the store cannot be read (the CLI prints it and still exits 0).
        """
        check_limits(top_k=top_k, token_budget=token_budget, max_chars=max_chars)
        hook = parse_payload(payload)
        event = hook.event or "PreToolUse"
        base = Path(hook.cwd) if hook.cwd else None
        paths = []
        for name in hook.files:
            try:
                paths.append(self.context.repo_path(name, base))
            except InvalidInput:
                continue
        if not paths:
            return HookOutput("", event)
        skip, refused = self._skip(hook.session_id)
        via = _via(via, "hook:pre-tool", hook.session_id)
        result, _ = self.context.recall("", files=paths, top_k=top_k, token_budget=token_budget,
                                        max_chars=self._chars(max_chars, via, PRE_TOOL_MAX_CHARS),
                                        full_records=False, skip=skip,
                                        skip_note=self._skip_note(hook.session_id), via=via)
        text = self._deliver(hook.session_id, result)
        if not result.query:  # the record says which files the memories were about
            result = replace(result, query=" ".join(paths))
        self._log(result, text, refused, top_k, token_budget, via)
        return HookOutput(text, event)

    def stop(self, payload: str, harness: str = "claude", start: bool = False) -> str:
        """``tur hook stop``: the reminder to learn, in ``harness``'s format, or ``""``.

        See :mod:`gitmem.api.stop`. With ``start``, only record the session's start (for a
        harness whose session-start hook output is ignored).
        """
        from gitmem.api.stop import StopHook

        return StopHook(self.ws).stop(payload, harness, start)

    # -- the session log -------------------------------------------------------------------

    def _chars(self, given: int | None, via: Via, default: int) -> int | None:
        """The character cap of a hook of ``via``'s harness (:func:`gitmem.api.limits.resolve`)."""
        from gitmem.api.limits import resolve

        return resolve("char_cap", given, self.ws.settings, via.harness, self.context.persona, default)

    def _skip(self, session_id: str) -> tuple[Any, list[str]]:
        """The recall's ``skip`` of what ``session_id`` was sent, and the list of the ids it refuses.

        The ids are appended in the order recall asks, which is its rank order: the
        injection log names the best of them as ``duplicate``.
        """
        refused: list[str] = []
        sent = self.log.sent(session_id)
        if not sent:
            return None, refused

        def skip(memory: Any) -> bool:
            if sent.get(memory.id) == memory.blob_id:
                refused.append(memory.id)
                return True
            return False

        return skip, refused

    def _log(self, result: RecallResult, text: str, refused: list[str], top_k: int | None,
             token_budget: int | None, via: Via, floor: float | None = None) -> None:
        # Only those a recall of this session would have shown: the first top_k refused.
        k = top_k or self.ws.settings.recall.top_k
        self.injections.recall(result, via, text, list(dict.fromkeys(refused))[:k], token_budget,
                               floor=floor)

    def _skip_note(self, session_id: str) -> Any:
        # A note is logged apart from its memory: a memory sent as fresh earlier in the session
        # and found stale since still gets its note, once.
        sent = self.log.sent(session_id)
        if not sent:
            return None
        return lambda view: sent.get(_NOTE_KEY + view.id) == view.blob_id

    def _deliver(self, session_id: str, result: RecallResult) -> str:
        from gitmem.context.render import render_recall

        if not result.hits and not result.stale:
            self.ws.records.flush()
            return ""
        text = render_recall(result, "markdown-prompt")
        if session_id:
            sent = {h.memory.id: h.memory.blob_id or "" for h in result.hits}
            sent.update((_NOTE_KEY + note.memory_id, note.blob_id) for note in result.stale)
            self.log.add(session_id, sent)
        self.ws.records.flush()
        return text

    def _remember(self, session_id: str, ids: Iterable[str]) -> None:
        records = self.ws.records
        table, _ = records.table(records.tip())
        blobs = {}
        for memory_id in ids:
            row = table.row(memory_id)
            if row is not None:
                blobs[memory_id] = table.blobs[row]
        self.log.add(session_id, blobs)


def _via(given: Via | None, surface: str, session_id: str) -> Via:
    """``given`` with its session from the payload (when it names one), or the hook's own ``Via``."""
    if given is None:
        return Via(surface, "", session_id)
    return given._replace(session=session_id or given.session)
