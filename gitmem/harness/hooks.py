"""What a harness hook sends and what a session was already told: payloads and per-session logs.

A harness runs ``tur hook session-start | pre-turn | pre-tool`` with one JSON object on stdin.
The fields read here are those the harnesses document (sources in docs/harness.md):

- every event: ``session_id``, ``hook_event_name``, ``cwd`` (Claude Code, Codex, Gemini CLI);
- session start: ``source`` (``startup`` | ``resume`` | ``clear`` | ``compact``);
- a prompt: ``prompt`` (see :func:`gitmem.context.recall.query_from_payload` for the others);
- a tool call: ``tool_name`` and ``tool_input``, whose file is ``file_path`` (Claude Code's
  Read, Edit, Write, MultiEdit), ``notebook_path`` (NotebookEdit), ``absolute_path`` or
  ``path`` (Gemini CLI's ``read_file``), or, for Codex's ``apply_patch``, the ``*** Add File:``,
  ``*** Update File:``, ``*** Delete File:`` and ``*** Move to:`` lines of the patch in
  ``command``.

:class:`SessionLog` remembers, per ``session_id``, which memories a hook has put into the
agent's context (id and blob id, so a memory that changed since is sent again). It lives in
``<git common dir>/tur/sessions/``, one small JSON file per session, and a file not written
for a day is deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SESSIONS_DIR", "SESSION_TTL_SECONDS", "HookPayload", "SessionLog", "hook_command",
           "parse_payload", "patch_files"]

SESSION_TTL_SECONDS = 86_400
"""A session log not written for this long (one day) is deleted."""

_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
_FILE_KEYS = ("file_path", "notebook_path", "absolute_path", "path")


@dataclass(frozen=True)
class HookPayload:
    """The fields of a hook payload gitmem uses (empty when absent).

    Attributes:
        data: the decoded JSON object (``{}`` when the payload is not a JSON object).
        session_id: the harness's session id, or ``""``.
        event: ``hook_event_name`` (``SessionStart``, ``UserPromptSubmit``, ``PreToolUse``,
            ``BeforeAgent``...), or ``""``.
        source: why a session started (``startup``, ``resume``, ``clear``, ``compact``), or ``""``.
        cwd: the directory the harness ran in, or ``""``.
        tool_name: the tool about to run, or ``""``.
        files: the files that tool is about to read or change, as given (absolute or
            relative to ``cwd``), in order, without repeats.
    """

    data: Mapping[str, Any] = field(default_factory=dict)
    session_id: str = ""
    event: str = ""
    source: str = ""
    cwd: str = ""
    tool_name: str = ""
    files: tuple[str, ...] = ()


def patch_files(patch: str) -> list[str]:
    """The paths a Codex ``apply_patch`` body adds, updates, deletes or moves to, in order."""
    seen: dict[str, None] = {}
    for match in _PATCH_FILE.finditer(patch):
        seen.setdefault(match.group(1), None)
    return list(seen)


def _tool_files(tool_input: object) -> list[str]:
    if isinstance(tool_input, str):
        return patch_files(tool_input)
    if not isinstance(tool_input, Mapping):
        return []
    for key in _FILE_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return [value]
    command = tool_input.get("command") or tool_input.get("input") or tool_input.get("patch")
    return patch_files(command) if isinstance(command, str) else []


def parse_payload(payload: bytes | str) -> HookPayload:
    """The :class:`HookPayload` of a hook's stdin; never raises (a bad payload is empty).

    Args:
        payload: the bytes (decoded as UTF-8 with replacement) or text the harness sent.
    """
    try:
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
        data = json.loads(text) if text.strip().startswith("{") else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}

    def text_of(key: str) -> str:
        value = data.get(key)
        return value if isinstance(value, str) else ""

    files = tuple(dict.fromkeys(_tool_files(data.get("tool_input"))))
    return HookPayload(data, text_of("session_id"), text_of("hook_event_name"),
                       text_of("source") or text_of("trigger"), text_of("cwd"),
                       text_of("tool_name"), files)


SESSIONS_DIR = "sessions"
"""Under ``<git common dir>/tur/``: one log per session (see :class:`SessionLog`), and the
session starts of the reminder to learn (:mod:`gitmem.api.stop`)."""


class SessionLog:
    """Which memories a hook already put into one session's context.

    Args:
        root: the directory of the logs (``<git common dir>/tur/sessions``); created on write.
        now: the clock (seconds since the epoch), for tests.
    """

    def __init__(self, root: Path, now: Any = time.time) -> None:
        self.root = root
        self._now = now

    def _path(self, session_id: str) -> Path:
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.root / f"{digest}.json"

    def sent(self, session_id: str) -> dict[str, str]:
        """Memory id -> blob id of what was sent in ``session_id`` (``{}`` without an id or log).

        A log older than :data:`SESSION_TTL_SECONDS` counts as none.
        """
        if not session_id:
            return {}
        path = self._path(session_id)
        try:
            if self._now() - path.stat().st_mtime > SESSION_TTL_SECONDS:
                return {}
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        sent = data.get("sent") if isinstance(data, dict) else None
        if not isinstance(sent, dict):
            return {}
        return {k: v for k, v in sent.items() if isinstance(k, str) and isinstance(v, str)}

    def add(self, session_id: str, memories: Mapping[str, str]) -> None:
        """Remember that ``memories`` (id -> blob id) were sent in ``session_id``; prune old logs.

        Never raises for the file system: a log that cannot be written only means the
        memories may be sent again.
        """
        if not session_id or not memories:
            return
        merged = {**self.sent(session_id), **memories}
        self._write(session_id, merged)

    def forget(self, session_id: str) -> None:
        """Start ``session_id`` afresh (its context was cleared or compacted)."""
        if session_id:
            with suppress(OSError):
                self._path(session_id).unlink()

    def _write(self, session_id: str, sent: Mapping[str, str]) -> None:
        path = self._path(session_id)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"session": session_id, "sent": dict(sent)}), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            return
        self.prune()

    def prune(self) -> int:
        """Delete the logs not written for a day; return how many were deleted."""
        removed = 0
        cutoff = self._now() - SESSION_TTL_SECONDS
        try:
            entries = list(self.root.iterdir())
        except OSError:
            return 0
        for entry in entries:
            with suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
                    removed += 1
        return removed


def hook_command(hook: str, harness: str, *options: str) -> tuple[str, tuple[str, ...]]:
    """The command ``tur setup`` writes for ``tur hook HOOK`` of ``harness``, and what it replaces.

    The command names the harness (``--harness NAME``), so that memories bound to other agents
    stay out and ``harness.NAME`` of ``.tur/config.yaml`` sets its limits; it carries no
    number the config could hold. ``options`` (``--format json``) go before it.

    Returns:
        ``(command, older)``: ``older`` is what setup wrote before hooks named their harness.
    """
    base = " ".join(("tur hook", hook, *options))
    return f"{base} --harness {harness}", (base,)
