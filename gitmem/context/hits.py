"""What a recall returns: its hits, best first (:mod:`gitmem.context.recall` finds them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.context.stale_notes import StaleNote
    from gitmem.record.models import Memory

__all__ = ["Hit", "RecallResult"]


@dataclass(frozen=True)
class Hit:
    """One recalled memory.

    Attributes:
        memory: the record.
        score: its score: BM25 over it and its neighbours plus the field boost
            (:mod:`gitmem.context.recall`).
        ranks: 1-based rank by ``bm25`` (the score) and by ``recency``; ``None`` where that
            ordering did not rank it.
        stale: whether it is stale or superseded (only with ``include_stale``).
        bm25: its BM25 score (0 = no query term).
        boost: its field boost (0 = the query names none of its field values).
        stale_reason: why it is stale (the recorded reason, or ``superseded by <id>``).
        may_contradict: see the field's docstring.
        compress: characters of the content's preview when the hit is shown compressed (it did
            not fit the budget whole), else ``None``; see :func:`gitmem.context.entry.format_entry`.
    """

    memory: Memory
    score: float
    ranks: dict[str, int | None]
    stale: bool
    bm25: float
    boost: float
    stale_reason: str | None = None
    may_contradict: tuple[str, ...] = ()
    """Ids of other hits of the same recall that may say the opposite
    (:func:`gitmem.context.similarity.may_contradict`) with no ``supersedes`` link between them."""
    compress: int | None = None
    author: str | None = None
    """Who stated it (``Name <email>``) when that is not the reader's git identity, else
    ``None``: the entry then shows ``By:`` (docs/sharing.md, Trust)."""
    relevance: float = 0.0
    """Its score over the query's maximum BM25 score (:data:`gitmem.context.recall.RELEVANCE_FLOOR`)."""
    store: str | None = None
    """``"personal"`` for a memory of the personal store (docs/personal.md), else ``None``."""


@dataclass(frozen=True)
class RecallResult:
    """Hits of one recall, best first.

    Attributes:
        query: the query.
        hits: at most ``top_k`` hits, fitting ``token_budget`` when rendered in ``format``.
        omitted: hits among the top ``top_k`` left out for budget (not even their compressed
            preview fitted).
        format: the format the budget was measured in.
        stale: one note per memory of the recalled files that is not fresh, after the hits
            (:class:`gitmem.context.stale_notes.StaleNote`); empty without files.
        held_back: matches of the query held back as stale (stale or superseded memories
            with affinity to it; 0 with ``include_stale``).
        over_budget: ids of the top ``top_k`` hits left out for budget (``omitted`` of
            them), best first.
        hidden: ids of the memories left out as bound to other agents than the caller
            (``visibility``), in rank order.
    """

    query: str
    hits: tuple[Hit, ...]
    omitted: int = 0
    format: str = "markdown-prompt"
    stale: tuple[StaleNote, ...] = ()
    held_back: int = 0
    over_budget: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    @classmethod
    def fitted(cls, query: str, top: Sequence[Hit], chosen: Sequence[Hit], fmt: str) -> RecallResult:
        """The result of ``chosen``, the hits of ``top`` that fitted the limits (the others omitted)."""
        kept = {hit.memory.id for hit in chosen}
        dropped = tuple(hit.memory.id for hit in top if hit.memory.id not in kept)
        return cls(query, tuple(chosen), len(dropped), fmt, over_budget=dropped)
