"""Everything the detail pane shows about one memory, gathered through the public facade."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitmem.api import AnchoredDiff, AnchorStep, CommitInfo, Gitmem, Memory, StaleNote
from tui.rows import Row

__all__ = ["Detail", "load_detail"]


@dataclass(frozen=True)
class Detail:
    """One memory with its record text, commits on the memory ref and the anchored diff.

    Attributes:
        row: the table row (status, weight, reason).
        memory: the parsed record.
        record: the YAML exactly as stored on the ref.
        history: commits on ``refs/tur/memories`` that changed the record, newest first.
        diff: the anchored file's diff since ``provenance.git_sha``.
        trail: how the anchor travelled (learned, then renamed, moved, reformatted...).
        note: for a memory that is not fresh, why, where its lines are at HEAD and what
            settles it (:meth:`gitmem.api.Gitmem.stale_note`); else ``None``.
    """

    row: Row
    memory: Memory
    record: str
    history: list[CommitInfo] = field(default_factory=list)
    diff: AnchoredDiff = AnchoredDiff("")
    trail: list[AnchorStep] = field(default_factory=list)
    note: StaleNote | None = None


def load_detail(gm: Gitmem, row: Row) -> Detail:
    """Read ``row``'s memory, record text, history and diff.

    Raises:
        GitmemError: the memory vanished (another process forgot it) or cannot be read.
    """
    memory = gm.get(row.id)
    history = gm.history(memory.id)
    return Detail(
        row=row,
        memory=memory,
        record=gm.record_text(memory.id),
        history=history,
        diff=gm.anchored_diff(memory),
        trail=gm.anchor_trail(memory.id, history),
        note=gm.stale_note(memory.id) if row.status in ("stale", "unanchored") else None,
    )
