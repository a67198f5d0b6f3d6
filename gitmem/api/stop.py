"""The end-of-turn hook, for the facade: a reminder to learn, once, for a session that changed files.

:meth:`StopHook.begin` records the session's start (the session-start hook calls it);
:meth:`StopHook.stop` answers the harness's end-of-turn event. It says nothing unless all of
these hold: ``hooks.learn_reminder`` is on; the payload names a session whose start was
recorded; this turn did not already continue because of a stop hook; the session was not
reminded before; no memory was added to the memory ref since the session began (any added
memory counts, a teammate's synced in too: when in doubt it keeps quiet); and files differ
from what they were at the start (:func:`gitmem.store.session_files.changed_since`). A
session whose start was not recorded (its start hook did not run) is recorded at its first
stop, and compared from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.harness.hooks import SESSIONS_DIR
from gitmem.harness.stop import SessionStart, SessionStarts, parse_stop, reminder, render_stop

if TYPE_CHECKING:
    from gitmem.api.records import Workspace

__all__ = ["StopHook"]


class StopHook:
    """``tur hook stop`` and the session start it compares with.

    Args:
        ws: the shared workspace.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.starts = SessionStarts(Path(ws.store.common_dir) / "tur" / SESSIONS_DIR)

    def _workdir(self) -> Path | None:
        """The working tree to compare, ``None`` when the reminder is off (or there is none)."""
        return self.ws.store.workdir if self.ws.settings.hooks.learn_reminder else None

    def begin(self, session_id: str) -> None:
        """Record the start of ``session_id`` unless it has one (a resumed or compacted session keeps it).

        Raises:
            GitmemError: git cannot read the working tree.
        """
        workdir = self._workdir() if session_id else None
        if workdir is None or self.starts.get(session_id) is not None:
            return
        from gitmem.store.session_files import snapshot

        store = self.ws.store
        work = snapshot(store.git_dir, workdir, store.head_sha())
        self.starts.put(session_id, SessionStart(work, store.tip()))

    def stop(self, payload: str, harness: str = "claude", start: bool = False) -> str:
        """What ``tur hook stop`` prints: the reminder in ``harness``'s answer format, or nothing.

        Nothing is ``""`` (``{}`` for Gemini CLI, see :func:`gitmem.harness.stop.render_stop`).

        Args:
            payload: the hook's stdin (its first JSON object).
            harness: one of :data:`gitmem.harness.stop.STOP_HARNESSES`.
            start: the payload is the session's start, not its end: record it (as
                :meth:`begin`) and say nothing.

        Raises:
            ValueError: an unknown harness.
            GitmemError: git cannot read the working tree or the memory ref.
        """
        quiet = render_stop("", harness)  # also: an unknown harness is an error at once
        hook = parse_stop(payload)
        if start:
            self.begin(hook.session_id)
            return quiet
        workdir = self._workdir()
        if not hook.session_id or hook.continued or workdir is None:
            return quiet
        began = self.starts.get(hook.session_id)
        if began is None:
            self.begin(hook.session_id)
            return quiet
        if began.reminded or self._learned_since(began.memories):
            return quiet
        from gitmem.store.session_files import changed_since

        store = self.ws.store
        paths = changed_since(store.git_dir, workdir, store.head_sha(), began.work)
        if not paths:
            return quiet
        self.starts.reminded(hook.session_id, began)
        return render_stop(reminder(paths, harness), harness)

    def _learned_since(self, tip_then: str | None) -> bool:
        """Whether a memory was added to the memory ref since its commit ``tip_then``."""
        store = self.ws.store
        tip = store.tip()
        if tip is None or tip == tip_then:
            return False
        before = store.subtree_id(tip_then, "memories") if tip_then else None
        changes = store.changed_records(before, store.subtree_id(tip, "memories"))
        return any(old is None and new is not None for old, new in changes.values())
