"""The text of memory entries: what wake packs, token counts are cached for, and recall measures.

One memory is one list item (:func:`format_entry`); a list of recall hits is those items in one
of :data:`RECALL_FORMATS` (:func:`format_hits`). Both sit below the algorithms: wake counts the
tokens of entries, and recall fits the formatted hits into its token budget, so neither needs
the renderer (:mod:`gitmem.render`), which only turns finished results into output.

Memory content reaches the text exactly as stored: no escaping, no markup interpretation, no
hard wrapping. Only two things are done to it: trailing newlines are dropped and continuation
lines of multi-line content are indented, so that one entry stays one list item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol

from gitmem.vocabulary import RECALL_FORMATS

if TYPE_CHECKING:
    from gitmem.shapes import MemoryLike

__all__ = [
    "RECALL_FORMATS",
    "RECALL_HEADER",
    "HitLike",
    "format_confidence",
    "format_entry",
    "format_hits",
]


RECALL_HEADER = "> [!NOTE] Working Hypotheses (Memory Recall)\n"
"""First line of the ``markdown-prompt`` recall block (EP-0132 hypothesis framing)."""


class HitLike(Protocol):
    """What :func:`format_hits` reads of a recall hit (:class:`gitmem.recall.Hit` is one)."""

    @property
    def memory(self) -> MemoryLike:
        """The record (or a stand-in with the same fields, such as a cache view)."""

    @property
    def score(self) -> float:
        """Its fused score."""

    @property
    def ranks(self) -> Mapping[str, int | None]:
        """1-based rank per ranker, ``None`` where that ranker did not rank it."""

    @property
    def stale(self) -> bool:
        """Whether it is shown as stale."""

    @property
    def bm25(self) -> float:
        """Its BM25 score."""

    @property
    def trigram(self) -> float:
        """Its trigram cosine."""

    @property
    def stale_reason(self) -> str | None:
        """Why it is stale, when it is."""

    @property
    def may_contradict(self) -> tuple[str, ...]:
        """Ids of other hits that may say the opposite."""


def format_confidence(confidence: float) -> str:
    """Confidence as printed in entries: two decimals, trailing zeros trimmed to one (``0.9``).

    Args:
        confidence: in [0, 1].

    Returns:
        ``"0.95"``, ``"0.9"``, ``"1.0"``...
    """
    text = f"{confidence:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def format_entry(memory: MemoryLike, *, stale_reason: str | None = None) -> str:
    """One memory as a list item: ``- [fact-8f2a1b9c] content (Observed 2026-08-27, Conf: 0.95)``.

    The result depends only on the memory (and ``stale_reason``), ends with a newline, and is
    what token counts are cached for. ``Observed`` is the UTC date of the first observation and
    is left out for legacy records without provenance.

    Args:
        memory: the record, or a stand-in with its fields (a cache view).
        stale_reason: when given, `` (STALE: reason)`` is appended (recall of stale memories).
            An empty string appends `` (STALE)``.

    Returns:
        The entry, one line per content line, continuation lines indented by two spaces.
    """
    content = memory.content.rstrip("\n").replace("\n", "\n  ")
    meta = f"Conf: {format_confidence(memory.confidence)}"
    if memory.provenance is not None:
        meta = f"Observed {memory.provenance.observed_at.date().isoformat()}, {meta}"
    stale = ""
    if stale_reason is not None:
        stale = f" (STALE: {stale_reason})" if stale_reason else " (STALE)"
    return f"- [{memory.id}] {content} ({meta}){stale}\n"


def _quote(text: str) -> str:
    return "".join(f"> {line}\n" for line in text.splitlines())


def format_hits(hits: Sequence[HitLike], fmt: str, query: str = "") -> str:
    """Recall hits as text in ``fmt``, one of :data:`RECALL_FORMATS`.

    ``markdown-prompt`` frames the hits as falsifiable hypotheses under :data:`RECALL_HEADER`,
    each line quoted with ``"> "``; ``plain`` is the bare entries; ``json`` an object with the
    query and one object per hit. No hits gives an empty string in the text formats (there is
    nothing to inject). Stale hits carry `` (STALE: reason)``. Unlike wake's entries, a hit's
    line gives the observation time to the minute (see :func:`_hit_entry`).

    Args:
        hits: best first.
        fmt: the format.
        query: the query, written into the ``json`` object only.

    Returns:
        The text; the ``json`` form ends with a newline.

    Raises:
        ValueError: unknown format.
    """
    if fmt == "json":
        return json.dumps(
            {"query": query, "hits": [_hit_json(hit) for hit in hits]},
            ensure_ascii=False,
            indent=2,
        ) + "\n"
    entries = "".join(_hit_entry(h) for h in hits)
    if fmt == "plain":
        return entries
    if fmt == "markdown-prompt":
        return RECALL_HEADER + _quote(entries) if hits else ""
    raise ValueError(f"unknown recall format {fmt!r}; expected one of {RECALL_FORMATS}")


def _hit_entry(hit: HitLike) -> str:
    """:func:`format_entry` of a hit, its observation date with the time to the minute (UTC).

    ``- [fact-8f2a1b9c] content (Observed 2026-08-27 15:04 UTC, Conf: 0.95)``: an agent asked
    "when did …" reads the answer there. Legacy records without provenance have no time.
    """
    memory = hit.memory
    full = format_entry(memory, stale_reason=(hit.stale_reason or "") if hit.stale else None)
    if memory.provenance is None:
        if hit.may_contradict:
            full = f"{full[:-1]} (may contradict {', '.join(hit.may_contradict)})\n"
        return full
    at = memory.provenance.observed_at
    at = at.astimezone(UTC) if at.tzinfo is not None else at
    marker = f"(Observed {memory.provenance.observed_at.date().isoformat()}, "
    # The metadata is the last group of the entry without its stale suffix, which ``full``
    # only appends: its marker is the last one there (content may hold the same text).
    cut = format_entry(memory).rfind(marker)
    line = f"{full[:cut]}(Observed {at:%Y-%m-%d %H:%M} UTC, {full[cut + len(marker):]}"
    if hit.may_contradict:
        line = f"{line[:-1]} (may contradict {', '.join(hit.may_contradict)})\n"
    return line


def _hit_json(hit: HitLike) -> dict[str, Any]:
    memory = hit.memory
    return {
        "id": memory.id,
        "type": memory.type.value,
        "content": memory.content,
        "confidence": memory.confidence,
        # As in `tur list --format json`: UTC written with Z.
        "observed_at": memory.provenance.observed_at.isoformat().replace("+00:00", "Z")
        if memory.provenance else None,
        "status": memory.status.value,
        "stale": hit.stale,
        "stale_reason": hit.stale_reason,
        "score": round(hit.score, 6),
        "ranks": hit.ranks,
        "bm25": round(hit.bm25, 6),
        "trigram": round(hit.trigram, 6),
        "may_contradict": list(hit.may_contradict),
    }
