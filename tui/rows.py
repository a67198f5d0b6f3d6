"""What the browse table shows: one :class:`Row` per memory, and the filter over them."""

from __future__ import annotations

from dataclasses import dataclass

from gitmem.api import RowFilter, StatusRow

__all__ = ["Filter", "Row", "apply_filter", "to_rows"]


@dataclass(frozen=True)
class Row:
    """One memory as the table lists it.

    Attributes:
        id: memory id.
        type: memory type value (``fact`` …).
        status: status value (``fresh`` | ``stale`` | ``unanchored`` | ``refuted``).
        weight: current weight in [0, 1].
        confidence: in [0, 1].
        anchor: ``path#Lx-Ly`` or ``""``.
        content: the full content (unescaped; escaping is the widget's job).
        reason: why the status is what it is, or ``None``.
        legacy_ids: the ids it had before ``tur import`` (searchable like the id).
        store: ``"personal"`` for a memory of the personal store (docs/personal.md), else ``""``.
    """

    id: str
    type: str
    status: str
    weight: float
    confidence: float
    anchor: str
    content: str
    reason: str | None
    legacy_ids: tuple[str, ...] = ()
    store: str = ""


@dataclass(frozen=True)
class Filter(RowFilter):
    """The filter bar's state: the facade's :class:`~gitmem.api.RowFilter` over table rows."""

    def matches(self, row: Row) -> bool:
        """True when ``row`` has the type and status and contains every search word.

        The search is case-insensitive over the content, the id, the anchor (so
        ``src/store.py`` finds the memories anchored to that file) and the ids the memory had
        before ``tur import``; words are ANDed.
        """
        return self.admits(row.type, row.status, (row.id, row.anchor, *row.legacy_ids, row.content))


def to_rows(status_rows: list[StatusRow], legacy_ids: dict[str, tuple[str, ...]] | None = None,
            store: str = "") -> list[Row]:
    """Table rows from ``Gitmem.status_view().rows`` (same order: by id).

    Args:
        status_rows: the memories with status and weight.
        legacy_ids: ``Gitmem.legacy_ids()``: each imported memory's old ids.
        store: ``"personal"`` for the rows of the personal store.
    """
    legacy = legacy_ids or {}
    return [
        Row(
            id=r.memory.id,
            type=r.memory.type.value,
            status=r.status.value,
            weight=r.weight,
            confidence=r.memory.confidence,
            anchor=(r.memory.provenance.context_ref or "") if r.memory.provenance else "",
            content=r.memory.content,
            reason=r.reason,
            legacy_ids=legacy.get(r.memory.id, ()),
            store=store,
        )
        for r in status_rows
    ]


def apply_filter(rows: list[Row], flt: Filter) -> list[Row]:
    """The rows ``flt`` matches, in their order."""
    return [r for r in rows if flt.matches(r)]
