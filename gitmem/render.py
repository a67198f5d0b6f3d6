"""Text and JSON renderings of memory entries, wake results and recall results.

Memory content reaches the output exactly as stored: no escaping, no markup interpretation,
no hard wrapping. Only two things are done to it: trailing newlines are dropped and
continuation lines of multi-line content are indented, so that one entry stays one list item.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only for annotations: wake and recall import this module
    from gitmem.models import Memory
    from gitmem.recall import Hit, RecallResult
    from gitmem.wake import WakeResult

__all__ = [
    "RECALL_FORMATS",
    "RECALL_HEADER",
    "WAKE_FORMATS",
    "format_confidence",
    "format_entry",
    "render_explain",
    "render_hits",
    "render_recall",
    "render_wake",
]

WAKE_FORMATS = ("markdown", "json")
RECALL_FORMATS = ("markdown-prompt", "json", "plain")

#: First line of the ``markdown-prompt`` recall block (EP-0132 hypothesis framing).
RECALL_HEADER = "> [!NOTE] Working Hypotheses (Memory Recall)\n"


def format_confidence(confidence: float) -> str:
    """Confidence as printed in entries: two decimals, trailing zeros trimmed to one (``0.9``)."""
    text = f"{confidence:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def format_entry(memory: Memory, *, stale_reason: str | None = None) -> str:
    """One memory as a list item: ``- [fact-8f2a1b9c] content (Observed 2026-08-27, Conf: 0.95)``.

    The result depends only on the memory (and ``stale_reason``), ends with a newline, and is
    what token counts are cached for. ``Observed`` is the UTC date of the first observation and
    is left out for legacy records without provenance.

    Args:
        memory: the record.
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


def render_hits(hits: Sequence[Hit], fmt: str, query: str = "") -> str:
    """Render recall hits in ``fmt`` (one of :data:`RECALL_FORMATS`).

    ``markdown-prompt`` frames the hits as falsifiable hypotheses under :data:`RECALL_HEADER`,
    each line quoted with ``"> "``; ``plain`` is the bare entries; ``json`` an object with the
    query and one object per hit. No hits gives an empty string in the text formats (there is
    nothing to inject). Stale hits carry `` (STALE: reason)``. Unlike wake's entries, a hit's
    line gives the observation time to the minute (see :func:`_hit_entry`).

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


def _hit_entry(hit: Hit) -> str:
    """:func:`format_entry` of a hit, its observation date with the time to the minute (UTC).

    ``- [fact-8f2a1b9c] content (Observed 2026-08-27 15:04 UTC, Conf: 0.95)``: an agent asked
    "when did …" reads the answer there. Legacy records without provenance have no time.
    """
    memory = hit.memory
    full = format_entry(memory, stale_reason=(hit.stale_reason or "") if hit.stale else None)
    if memory.provenance is None:
        return full
    at = memory.provenance.observed_at
    at = at.astimezone(UTC) if at.tzinfo is not None else at
    marker = f"(Observed {memory.provenance.observed_at.date().isoformat()}, "
    # The metadata is the last group of the entry without its stale suffix, which ``full``
    # only appends: its marker is the last one there (content may hold the same text).
    cut = format_entry(memory).rfind(marker)
    return f"{full[:cut]}(Observed {at:%Y-%m-%d %H:%M} UTC, {full[cut + len(marker):]}"


def _hit_json(hit: Hit) -> dict[str, Any]:
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
    }


def render_recall(result: RecallResult, fmt: str = "markdown-prompt") -> str:
    """Render a :class:`~gitmem.recall.RecallResult`; see :func:`render_hits`.

    Raises:
        ValueError: unknown format.
    """
    return render_hits(result.hits, fmt, result.query)


def render_wake(result: WakeResult, fmt: str = "markdown") -> str:
    """Render a :class:`~gitmem.wake.WakeResult` as ``markdown`` (its text) or ``json``.

    The JSON object holds the budget, the token count and the text (the budget bounds the
    text, which is what an agent reads), the advisory counts and the assembly record.

    Raises:
        ValueError: unknown format.
    """
    if fmt == "markdown":
        return result.text
    if fmt == "json":
        payload = {
            "budget": result.budget,
            "tokens": result.tokens,
            "omitted": result.omitted,
            "excluded": result.excluded_counts(),
            "text": result.text,
            "assembly": [
                {
                    "id": e.memory_id,
                    "tier": e.tier,
                    "tokens": e.tokens,
                    "included": e.included,
                    "reason": e.reason,
                    "salience": None if e.salience is None else round(e.salience, 6),
                }
                for e in result.assembly
            ],
        }
        return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    raise ValueError(f"unknown wake format {fmt!r}; expected one of {WAKE_FORMATS}")


def render_explain(result: WakeResult) -> str:
    """The assembly record as a text table (``tur wake --explain``), one row per entry.

    Columns: tier, id, tokens, salience, and ``included`` or ``excluded: <reason>``; a first
    line sums up tokens used against the budget and the exclusions by reason.
    """
    budget = "unbounded" if result.budget is None else str(result.budget)
    counts = result.excluded_counts()
    summary = ", ".join(f"{n} {reason}" for reason, n in counts.items()) or "none"
    lines = [
        f"wake: {result.tokens}/{budget} tokens; excluded: {summary}",
        f"{'tier':<4}  {'id':<20}  {'tokens':>6}  {'salience':>8}  outcome",
    ]
    for e in result.assembly:
        salience = "-" if e.salience is None else f"{e.salience:.3f}"
        outcome = "included" if e.included else f"excluded: {e.reason}"
        if e.included and e.reason:
            outcome = f"included: {e.reason}"
        lines.append(f"{e.tier:<4}  {e.memory_id:<20}  {e.tokens:>6}  {salience:>8}  {outcome}")
    return "\n".join(lines) + "\n"

