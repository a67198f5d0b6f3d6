"""The end-of-turn hook's parts: its payload, a session's start, the reminder, each harness's answer.

``tur hook stop`` runs when the agent is about to end its turn: Claude Code's and Codex's
``Stop``, Gemini CLI's ``AfterAgent``, Copilot CLI's ``agentStop``, Cursor's ``stop``
(sources in docs/harness.md). When the session changed files and recorded no memory, it
answers once with a short reminder that names the files; the harness then gives the reminder
to the agent as its next instruction, and the agent either records a memory or stops.

- :func:`parse_stop` reads what the payloads carry: the session's id (``session_id``;
  Copilot CLI's ``sessionId``; Cursor's ``conversation_id``) and whether this turn already
  continued because of a stop hook (``stop_hook_active``: Claude Code, Codex, Gemini CLI;
  ``loop_count`` above 0: Cursor), in which case the hook never answers again.
- :class:`SessionStarts` keeps, per session, the working tree at its start
  (:class:`gitmem.store.session_files.WorkSnapshot`), the memory ref's commit then, and
  whether the reminder was given: ``<git common dir>/tur/sessions/<digest>.start.json``,
  deleted with the session logs after a day without use.
- :func:`reminder` is the text; :func:`render_stop` the answer in each harness's format.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitmem.harness.hooks import SessionLog
from gitmem.store.session_files import WorkSnapshot

__all__ = ["STOP_HARNESSES", "SessionStart", "SessionStarts", "StopPayload", "parse_stop",
           "reminder", "render_stop"]

STOP_HARNESSES = ("claude", "codex", "gemini", "copilot", "cursor")
"""The harnesses whose end-of-turn answer :func:`render_stop` knows."""

_AGENTS = {"claude": "claude-code", "codex": "codex", "gemini": "gemini", "copilot": "copilot",
           "cursor": "cursor"}
_NAMED = 5
"""Files named in the reminder; the rest are counted."""


@dataclass(frozen=True)
class StopPayload:
    """What the end-of-turn hook reads of its payload.

    Attributes:
        session_id: the session (``""`` when the payload names none).
        continued: this turn already went on because a stop hook answered (never answer twice).
    """

    session_id: str = ""
    continued: bool = False


def parse_stop(payload: str) -> StopPayload:
    """The :class:`StopPayload` of an end-of-turn hook's stdin; never raises (bad input: empty)."""
    try:
        data = json.loads(payload) if payload.strip() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        return StopPayload()
    session = next((v for k in ("session_id", "sessionId", "conversation_id")
                    if isinstance(v := data.get(k), str) and v), "")
    loops = data.get("loop_count")
    continued = data.get("stop_hook_active") is True or (
        isinstance(loops, int) and not isinstance(loops, bool) and loops > 0)
    return StopPayload(session, continued)


@dataclass(frozen=True)
class SessionStart:
    """A session as it began.

    Attributes:
        work: the working tree then.
        memories: the memory ref's commit then (``None``: none yet).
        reminded: whether the reminder was given in this session.
    """

    work: WorkSnapshot
    memories: str | None = None
    reminded: bool = False


@dataclass
class SessionStarts:
    """The start of each session, one small JSON file per session.

    Args:
        root: the directory (``<git common dir>/tur/sessions``, beside the session logs of
            :class:`gitmem.harness.hooks.SessionLog`, which prune it); created on write.
    """

    root: Path

    def _path(self, session_id: str) -> Path:
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.root / f"{digest}.start.json"

    def get(self, session_id: str) -> SessionStart | None:
        """The session's start, or ``None`` when none was recorded (or it cannot be read)."""
        try:
            data = json.loads(self._path(session_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("session") != session_id:
            return None
        work = WorkSnapshot.from_plain(data.get("work"))
        memories = data.get("memories")
        if work is None or not (memories is None or isinstance(memories, str)):
            return None
        return SessionStart(work, memories, data.get("reminded") is True)

    def put(self, session_id: str, start: SessionStart) -> None:
        """Write the session's start (atomically) and prune what a day left unused.

        A file system error only loses the record.
        """
        path = self._path(session_id)
        body = {"session": session_id, "work": start.work.to_plain(), "memories": start.memories,
                "reminded": start.reminded}
        with suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(body), encoding="utf-8")
            os.replace(tmp, path)
        # A harness wired through MCP alone (Cursor, Copilot CLI) writes no session log,
        # whose writes prune this directory otherwise.
        SessionLog(self.root).prune()

    def reminded(self, session_id: str, start: SessionStart) -> None:
        """Record that the session was given the reminder."""
        self.put(session_id, replace(start, reminded=True))


def reminder(paths: list[str], harness: str) -> str:
    """The reminder for a session that changed ``paths`` and recorded no memory (markdown, one paragraph)."""
    shown = ", ".join(f"`{p}`" for p in paths[:_NAMED])
    more = len(paths) - _NAMED
    if more > 0:
        shown += f" and {more} more"
    noun = "file" if len(paths) == 1 else "files"
    agent = _AGENTS.get(harness, harness)
    return (f"gitmem: this session changed {len(paths)} {noun} ({shown}) and recorded no memory. "
            "If you learned something about this code that the next session should know, "
            "record it, anchored to the lines it is about, once they are committed: "
            f"`tur learn \"...\" --file {paths[0]}#Lx-Ly --agent {agent}`. "
            "If not, just stop: this reminder comes once per session.")


def render_stop(text: str, harness: str) -> str:
    """What ``tur hook stop`` prints for ``harness``: the answer that hands ``text`` to the agent.

    No text: ``""`` (the turn ends as usual), or ``{}`` for Gemini CLI, whose hooks must
    print JSON only (as gitmem's other Gemini hooks do). Claude Code, Codex and Copilot CLI take
    ``{"decision": "block", "reason": ...}`` (the reason becomes the agent's next
    instruction); Gemini CLI's ``AfterAgent`` the same with ``"deny"``; Cursor's ``stop``
    ``{"followup_message": ...}``.

    Raises:
        ValueError: an unknown harness.
    """
    if harness not in STOP_HARNESSES:
        raise ValueError(f"unknown harness {harness!r}; expected one of {', '.join(STOP_HARNESSES)}")
    if not text:
        return "{}\n" if harness == "gemini" else ""
    body: Mapping[str, Any]
    if harness == "cursor":
        body = {"followup_message": text}
    else:
        body = {"decision": "deny" if harness == "gemini" else "block", "reason": text}
    return json.dumps(body, ensure_ascii=False) + "\n"
