"""The values of status and verify: each memory's status row, the row filter, a verify's outcome.

Apart from :mod:`gitmem.api.results` (which re-exports them lazily) so that a command that
neither reads statuses nor verifies (``learn``) does not create their dataclasses (about 1 ms
each on 2 cores, the cost of compiling the methods ``dataclasses`` writes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gitmem.cache.reader import Skipped
from gitmem.store import CommitInfo
from gitmem.vocabulary import Status, iso_z

if TYPE_CHECKING:
    from gitmem.record.models import Memory
    from gitmem.record.shapes import MemoryLike

__all__ = ["AnchorStep", "RowFilter", "StatusRow", "StatusView", "VerifyLine", "VerifyOutcome"]

_ORDER = (Status.FRESH, Status.STALE, Status.UNANCHORED, Status.REFUTED)


@dataclass(frozen=True)
class AnchorStep:
    """One step of a memory's anchor through the code: learned, then each time it moved.

    Read from the record's commits on the memory ref (see ``Gitmem.anchor_trail``).

    Attributes:
        commit: the memory-ref commit that recorded the step (full SHA).
        time: that commit's time (UTC).
        how: ``("learned",)``, or what moved the anchor: any of ``"renamed"``,
            ``"moved"``, ``"reformatted"`` (as verify found it), else ``"shifted"`` (other
            lines of the same file), ``"re-anchored"`` (another file, e.g. by
            ``verify --confirm``) or ``"re-learned"`` (``learn`` with a new ``--file``).
        from_ref: the anchor before (``None`` for the first step).
        to_ref: the anchor after (``None`` when the record had none).
        reason: the verify commit's words for it, e.g. ``moved to b.py#L4-L9 in 3f2a1b9``.
        code_commits: the code commits the reason names (abbreviated SHAs), in order.
    """

    commit: str
    time: datetime
    how: tuple[str, ...]
    from_ref: str | None
    to_ref: str | None
    reason: str | None = None
    code_commits: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: ``how: FROM -> TO (reason)``, ``learned: TO``, or ``how: TO (reason)`` in place."""
        label = ", ".join(self.how)
        to = self.to_ref or "(no anchor)"
        moved = self.from_ref is not None and self.from_ref != self.to_ref
        text = f"{label}: {self.from_ref} -> {to}" if moved else f"{label}: {to}"
        return f"{text} ({self.reason})" if self.reason else text

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (``time`` in ISO 8601, ``Z``)."""
        return {
            "commit": self.commit,
            "time": iso_z(self.time),
            "how": list(self.how),
            "from": self.from_ref,
            "to": self.to_ref,
            "reason": self.reason,
            "code_commits": list(self.code_commits),
        }


@dataclass(slots=True)  # a verify or status of 100,000 memories holds one per memory
class StatusRow:
    """One memory with its status, reason, weight (in [0, 1]) and commit distance (commits).

    ``memory`` is a full record, or a read-only :class:`gitmem.cache.MemoryView` stand-in
    where the caller asked for views (``status_view(full_records=False)``).
    """

    memory: Memory | MemoryLike
    status: Status
    reason: str | None
    weight: float
    commit_distance: int | None = None
    changed: bool = False
    moved: bool = False
    new_ref: str | None = None
    hint: str | None = None
    old_status: Status | None = None
    """The stored status before a verify (``None`` in rows that no verify produced)."""
    old_reason: str | None = None
    """The stored reason before a verify."""
    local: str | None = None
    """Why this clone's uncommitted changes make the memory stale (``working tree: line 80
    modified``); then ``status`` is ``stale`` here while the shared ref keeps the committed
    status. ``None`` when the working tree and index agree with HEAD."""
    maps_to: str | None = None
    """For a stale anchored memory, where its lines are at HEAD (``path#Lx-Ly``, or the file),
    as git's diff maps them (:attr:`gitmem.staleness.verdicts.Verdict.maps_to`); ``None`` when
    they are gone or no check produced the row."""

    @property
    def memory_id(self) -> str:
        """The memory's id."""
        return self.memory.id

    @property
    def status_changed(self) -> bool:
        """True when a verify found news: what ``tur verify`` and ``tur watch`` report.

        News is another status than the stored one, another reason for a stale memory, or
        moved anchored lines; a corroboration at a new HEAD alone is not. An unanchored
        memory's reason says why it has no anchor (a legacy record has no provenance), which
        no code change alters: it stays unanchored without news.
        """
        if self.old_status is None:
            return False
        if self.status is not self.old_status or self.moved:
            return True
        return self.status is Status.STALE and self.reason != self.old_reason


@dataclass(frozen=True)
class RowFilter:
    """Which memories a list shows: one type, one status, search words (``None``/``""``: any).

    The one filter of every surface: ``Gitmem.status_view(type=, status=)`` applies it for
    ``tur list`` and the MCP ``list`` tool; the TUI applies it to its rows as the filter
    bar changes (:meth:`admits`), so that all three keep the same memories.
    """

    type: str | None = None
    """A memory type value (``fact`` …), or ``None`` for any."""
    status: str | None = None
    """A status value (``fresh`` | ``stale`` | ``unanchored`` | ``refuted``), or ``None``."""
    text: str = ""
    """Search words, ANDed, case-insensitive; ``""`` matches every memory."""

    @classmethod
    def checked(cls, type: str | None, status: str | None) -> RowFilter:
        """A filter of ``type`` and ``status``, each a known value or ``None``.

        Raises:
            InvalidInput: an unknown type or status (the hint lists the known ones).
        """
        from gitmem.errors import InvalidInput
        from gitmem.vocabulary import MemoryType

        for what, value, enum in (("type", type, MemoryType), ("status", status, Status)):
            if value is not None and value not in {e.value for e in enum}:
                raise InvalidInput(f"unknown {what} {value!r}",
                                   f"use one of {', '.join(e.value for e in enum)}")
        return cls(type=type, status=status)

    def admits(self, type: str, status: str, searched: Iterable[str] = ()) -> bool:
        """True for a memory of ``type`` and ``status`` whose ``searched`` texts hold every word."""
        if self.type is not None and type != self.type:
            return False
        if self.status is not None and status != self.status:
            return False
        words = self.text.casefold().split()
        if not words:
            return True
        hay = "\n".join(searched).casefold()
        return all(word in hay for word in words)

    def keeps(self, row: StatusRow) -> bool:
        """:meth:`admits` for a status row, searching its id, anchor and content."""
        memory = row.memory
        anchor = memory.provenance.context_ref if memory.provenance else None
        return self.admits(memory.type.value, row.status.value,
                           (memory.id, anchor or "", memory.content) if self.text else ())

    def select(self, rows: Sequence[StatusRow], order: Sequence[str] | None = None) -> list[StatusRow]:
        """The rows this filter keeps; with ``order`` (ids), only those rows, in that order."""
        kept = [r for r in rows if self.keeps(r)]
        if order is None:
            return kept
        rank = {memory_id: i for i, memory_id in enumerate(order)}
        return sorted((r for r in kept if r.memory_id in rank), key=lambda r: rank[r.memory_id])


@dataclass
class StatusView:
    """Every readable memory with its stored status and current weight; skipped blobs."""

    rows: list[StatusRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    head: str | None = None


@dataclass(frozen=True)
class VerifyLine:
    """One memory a verify shows (:meth:`VerifyOutcome.shown`), with the words for it."""

    memory_id: str
    status: str
    """The status now (a :class:`~gitmem.vocabulary.Status` value)."""
    was: str | None
    """The status recorded before, when a writing verify changed it."""
    weight: float
    """Current weight in [0, 1]."""
    reason: str
    """Why the status is what it is, or what the check found (``unchanged`` …)."""
    moved_to: str | None
    """The anchor's new ``path#Lx-Ly`` when the lines moved."""
    hint: str | None
    """What to do about a memory that is not fresh."""
    maps_to: str | None = None
    """For a stale memory, where its lines are at HEAD (:attr:`StatusRow.maps_to`)."""

    def text(self) -> str:
        """``ID  [WAS -> ]STATUS  w=W  REASON[ -> ANCHOR]``: the line ``tur verify`` prints."""
        was = f"{self.was} -> " if self.was else ""
        moved = f" -> {self.moved_to}" if self.moved_to else ""
        return f"{self.memory_id}  {was}{self.status}  w={self.weight:.2f}  {self.reason}{moved}"


@dataclass
class VerifyOutcome(StatusView):
    """Result of ``verify`` / ``status``: one row per memory checked, and the commit (if any)."""

    commit: CommitInfo | None = None

    def counts(self) -> dict[str, int]:
        """Memories per status, in the order fresh, stale, unanchored, refuted (zeros left out)."""
        counts = Counter(r.status for r in self.rows)
        return {s.value: counts[s] for s in _ORDER if counts[s]}

    def shown(self, *, written: bool, verbose: bool = False, named: bool = False,
              confirmed: bool = False) -> list[VerifyLine]:
        """The rows worth a look, each with the words for why, in row order.

        Worth a look: a memory whose status, reason or anchored lines changed, or one stale
        here because of uncommitted changes; without ``written`` (``tur status``), also every
        memory that is not fresh; with ``verbose`` or ``named``, every row.

        Args:
            written: the verify recorded its verdicts (``verify --write``).
            verbose: show every row.
            named: the memories were named by id (then every one is shown).
            confirmed: the anchors were confirmed at HEAD (``--confirm``).
        """
        lines = []
        for row in self.rows:
            if not (verbose or named or row.status_changed or row.local
                    or (not written and row.status is not Status.FRESH)):
                continue
            if not (verbose or named) and self._quiet(row):
                continue  # counted in one line: unchanged_unanchored()
            was = (row.old_status.value if written and row.old_status
                   and row.old_status is not row.status else None)
            reason = row.reason or ("confirmed" if confirmed else "re-anchored" if row.moved else
                                    "its anchor holds at HEAD" if row.status_changed else "unchanged")
            if row.local:
                reason = f"{reason}; uncommitted, kept in this clone only"
            lines.append(VerifyLine(row.memory_id, row.status.value, was, row.weight, reason,
                                    row.new_ref if row.new_ref and row.moved else None,
                                    row.hint if row.status is not Status.FRESH else None,
                                    row.maps_to if row.status is Status.STALE else None))
        return lines

    @staticmethod
    def _quiet(row: StatusRow) -> bool:
        """An unanchored memory that stays so: no code change can concern it."""
        return row.status is Status.UNANCHORED and not row.status_changed and not row.local

    def unchanged_unanchored(self) -> int:
        """How many memories :meth:`shown` leaves out (without ``verbose``) as unanchored, unchanged.

        Legacy records (no provenance) are thousands in an imported store; one line counts
        them instead of one line each.
        """
        return sum(1 for row in self.rows if self._quiet(row))

    def recorded(self) -> str:
        """What a writing verify did to the memory ref, in one line."""
        if self.commit:
            return f"recorded in {self.commit.sha[:12]} on refs/tur/memories"
        if any(row.local for row in self.rows):
            return "nothing recorded: the changes above are uncommitted, kept in this clone only"
        return "nothing changed"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary: counts, the commit, and one entry per memory."""
        return {
            "head": self.head,
            "counts": self.counts(),
            "commit": self.commit.sha if self.commit else None,
            "memories": [
                {
                    "id": r.memory_id,
                    "status": r.status.value,
                    "reason": r.reason,
                    "hint": r.hint,
                    "local": r.local,
                    "weight": round(r.weight, 6),
                    "commit_distance": r.commit_distance,
                    "changed": r.changed,
                    "old_status": r.old_status.value if r.old_status else None,
                    "status_changed": r.status_changed,
                    "context_ref": r.new_ref or (r.memory.provenance.context_ref
                                                 if r.memory.provenance else None),
                    "maps_to": r.maps_to,
                }
                for r in self.rows
            ],
        }
