"""The injection log, for the facade: every wake and recall an agent was given, kept in this clone.

docs/log.md. :class:`InjectionLog` (``Gitmem.injections``) appends the assembly record of an
injection (:class:`gitmem.context.injection.Injection`) to ``<git common dir>/tur/log/
injections.jsonl`` (:class:`gitmem.store.jsonlog.JsonLines`, rotated at ``log.max_bytes`` with
``log.files`` files kept), and reads it back for ``tur log`` and the TUI. Only this module
writes the log: the facade's :meth:`~gitmem.api.Gitmem.wake` and
:meth:`~gitmem.api.Gitmem.recall` (given a :class:`~gitmem.context.injection.Via`) and the
hooks call it, never a surface.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.context.injection import Injection, Via, recall_injection, wake_injection
from gitmem.store.jsonlog import JsonLines

if TYPE_CHECKING:
    import threading

    from gitmem.api.records import Workspace
    from gitmem.context.hits import RecallResult
    from gitmem.context.wake import WakeResult

__all__ = ["LOG_DIR", "InjectionLog", "Via"]

LOG_DIR = "log"
"""Under ``<git common dir>/tur/``: the injection log's files."""

_NAME = "injections"


class InjectionLog:
    """Appends and reads the injection log of one clone.

    Args:
        ws: the shared workspace (its store's common dir, its ``log`` settings).
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._warned = False

    @property
    def files(self) -> JsonLines:
        """The log's files, sized by the ``log`` settings."""
        log = self.ws.settings.log
        return JsonLines(Path(self.ws.store.common_dir) / "tur" / LOG_DIR, _NAME, log.max_bytes,
                         log.files)

    # -- writing ---------------------------------------------------------------------------

    def wake(self, result: WakeResult, via: Via, at: datetime | None = None) -> None:
        """Log a wake given to ``via`` (see :func:`gitmem.context.injection.wake_injection`)."""
        self._add(lambda: wake_injection(result, via, at or datetime.now(UTC)))

    def recall(self, result: RecallResult, via: Via, text: str | None = None,
               duplicates: Sequence[str] = (), budget: int | None = None,
               at: datetime | None = None, floor: float | None = None) -> None:
        """Log a recall given to ``via`` (see :func:`gitmem.context.injection.recall_injection`)."""
        self._add(lambda: recall_injection(result, via, at or datetime.now(UTC), text, duplicates,
                                           budget, floor))

    def _add(self, build: Callable[[], Injection]) -> None:
        # A log that cannot be written never costs the agent its context: one notice, at most.
        try:
            self.files.append(build().to_json())
        except Exception as exc:  # whatever failed, the injection goes on
            if not self._warned:
                self._warned = True
                self.ws.store.add_notice(f"tur: warning: the injection log was not written: {exc}")

    # -- reading ---------------------------------------------------------------------------

    def read(self, session: str | None = None, since: datetime | None = None) -> list[Injection]:
        """The records, oldest first: of ``session`` only, and from ``since`` on, when given.

        A line that is not a record (damaged, or written by another version) is skipped.
        """
        return list(_matching(self.files.read(), session, since))

    def follow(self, stop: threading.Event, session: str | None = None,
               since: datetime | None = None) -> Iterator[Injection]:
        """The records there are (as :meth:`read`), then each new one as it is appended, until ``stop``.

        Follows the log across rotations (:meth:`gitmem.store.jsonlog.JsonLines.follow`).
        """
        return _matching(self.files.follow(stop, since_start=True), session, since)

    def sessions(self) -> list[tuple[str, list[Injection]]]:
        """The records by session, the session with the newest record first.

        Records without a session id (``tur wake``, ``tur recall``, MCP) are under ``""``.
        """
        by: dict[str, list[Injection]] = {}
        for record in self.read():
            by.setdefault(record.via.session, []).append(record)
        return sorted(by.items(), key=lambda item: item[1][-1].at, reverse=True)


def _matching(records: Iterable[Any], session: str | None,
              since: datetime | None) -> Iterator[Injection]:
    for data in records:
        try:
            record = Injection.from_json(data)
        except ValueError:
            continue
        if session is not None and record.via.session != session:
            continue
        if since is not None and record.at < since:
            continue
        yield record
