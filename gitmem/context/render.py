"""The output of finished results: wake as markdown, JSON or an explain table; recall in its formats.

This module sits above the algorithms and only renders what they return: the text of one
memory entry and of a list of hits lives below them, in :mod:`gitmem.context.entry`, because wake packs
entries and recall measures its token budget on the formatted hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gitmem.context.entry import format_hits
from gitmem.text import for_reader
from gitmem.vocabulary import WAKE_FORMATS

if TYPE_CHECKING:  # only for annotations: results are rendered, never computed, here
    from gitmem.context.injection import Injection
    from gitmem.context.recall import RecallResult
    from gitmem.context.stale_notes import RepairActions
    from gitmem.context.wake import WakeResult

__all__ = ["HOOK_FORMATS", "NO_MEMORIES_YET", "WAKE_FORMATS", "empty_notice", "render_explain",
           "render_hook", "render_injection", "render_recall", "render_wake"]

HOOK_FORMATS = ("text", "json")
"""How a hook prints: ``text`` (the markdown itself) or ``json`` (the harness envelope)."""

NO_MEMORIES_YET = "no memories yet: tur learn TEXT"
"""What every surface says of a store that holds no memory at all (wake, list, the TUI)."""


def empty_notice(result: RecallResult | WakeResult | None, query: str = "") -> str | None:
    """The one line that says a wake, recall or list found nothing; ``None`` when it found something.

    Every surface shows these words (the CLI on a terminal's stderr, the MCP tools as their
    text, the TUI in its detail pane), so that a user meets one wording.

    Args:
        result: a recall (its hits) or a wake (the memories in its text); ``None`` for a
            listing that found no row.
        query: what was asked for when ``result`` is ``None`` (a list's filters, ``""`` for
            none, which means the store holds no memory), or what a recall without a query
            looked for (its file).

    Returns:
        ``no memory matches "QUERY"``, or :data:`NO_MEMORIES_YET` for a wake or an unfiltered
        list of a store without memories; ``None`` when there are hits or text.
    """
    from gitmem.context.hits import RecallResult as Recall

    if isinstance(result, Recall):
        return None if result.hits else f'no memory matches "{result.query or query}"'
    if result is not None:
        if result.shown or result.text:
            return None
        # A store whose memories are all refuted, stale or superseded is not empty.
        if any(e.status is not None for e in result.assembly):
            return f'no memory matches "{query}"'
        return NO_MEMORIES_YET
    return f'no memory matches "{query}"' if query else NO_MEMORIES_YET



def render_hook(text: str, event: str, fmt: str = "text") -> str:
    """What a hook prints: ``text`` as is, or the JSON envelope harnesses read context from.

    The envelope is ``{"hookSpecificOutput": {"hookEventName": event, "additionalContext":
    text}}``, the documented way to add context from Claude Code's PreToolUse, Codex's hooks
    and every Gemini CLI hook (whose stdout must be JSON only). Nothing to add gives ``""``
    in ``text`` and ``{}`` in ``json`` (an empty answer a JSON-reading harness accepts).

    Raises:
        ValueError: unknown format.
    """
    # Entries are escaped already (entry.neutralise); this catches any other stored text a
    # hook quotes (a reason, an anchor). for_reader is idempotent: its escapes are printable.
    text = for_reader(text)
    if fmt == "text":
        return text
    if fmt == "json":
        if not text:
            return "{}\n"
        import json  # lazily, as below: markdown needs none

        body = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        return json.dumps(body, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown hook format {fmt!r}; expected one of {HOOK_FORMATS}")


def render_recall(result: RecallResult, fmt: str = "markdown-prompt",
                  actions: RepairActions | None = None) -> str:
    """Render a :class:`~gitmem.context.recall.RecallResult` in ``fmt`` (one of ``entry.RECALL_FORMATS``).

    The hits' text as :func:`gitmem.context.entry.format_hits` gives it, with the result's query in
    the ``json`` form, then the notes on the files' memories that are not fresh and the count of
    matches held back as stale (:func:`gitmem.context.stale_notes.stale_tail`; in ``json``, the
    ``stale`` list and ``held_back``, each only when not empty); nothing at all gives ``""`` in
    the text formats. ``actions`` spells the commands the notes name (default: the command
    line's, :data:`gitmem.context.stale_notes.CLI_ACTIONS`; the MCP server passes its tools').

    Raises:
        ValueError: unknown format.
    """
    if fmt == "json":
        # Only when there is something to say: the object of a plain recall keeps its shape.
        extra: dict[str, object] = {}
        if result.stale:
            extra["stale"] = [{"id": n.memory_id, "status": n.status, "reason": n.reason,
                               "maps_to": n.maps_to, "text": n.text(actions)} for n in result.stale]
        if result.held_back:
            extra["held_back"] = result.held_back
        return format_hits(result.hits, fmt, result.query, extra=extra)
    text = format_hits(result.hits, fmt, result.query)
    if not result.stale and not result.held_back:
        return for_reader(text)
    from gitmem.context.entry import RECALL_HEADER
    from gitmem.context.stale_notes import stale_tail

    return for_reader(text + stale_tail(result.stale, result.held_back, fmt,
                             header=None if result.hits else RECALL_HEADER, actions=actions))


def render_wake(result: WakeResult, fmt: str = "markdown") -> str:
    """Render a :class:`~gitmem.context.wake.WakeResult` as ``markdown`` (its text) or ``json``.

    The JSON object holds the budget, the token count and the text (the budget bounds the
    text, which is what an agent reads), the advisory counts, ``entries`` (each memory in the
    text, in text order, with what an agent needs to check it: ``anchor``, ``status``,
    ``reason`` — why it is not fresh —, ``author`` and whether it is ``compressed``) and the
    assembly record (every memory, included or not, with why).

    Raises:
        ValueError: unknown format.
    """
    if fmt == "markdown":
        return for_reader(result.text)
    if fmt == "json":
        import json  # lazily: a plain wake prints its text and loads no JSON module

        payload = {
            "budget": result.budget,
            "tokens": result.tokens,
            "omitted": result.omitted,
            "excluded": result.excluded_counts(),
            "text": result.text,
            "entries": [
                {
                    "id": e.memory_id,
                    "tier": e.tier,
                    "anchor": e.anchor,
                    "status": e.status,
                    "reason": e.status_reason,
                    "author": e.author,
                    "compressed": e.reason == "compressed",
                    **({"store": e.store} if e.store else {}),
                }
                for e in result.assembly
                if e.included and e.status is not None
            ],
            "assembly": [
                {
                    "id": e.memory_id,
                    "tier": e.tier,
                    "tokens": e.tokens,
                    "included": e.included,
                    "reason": e.reason,
                    "salience": None if e.salience is None else round(e.salience, 6),
                    **({"store": e.store} if e.store else {}),
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


def _injection_heading(record: Injection) -> str:
    via = record.via
    head = [f"{record.at:%Y-%m-%d %H:%M:%S}Z", via.surface]
    if via.session:
        head.append(f"session {via.session}")
    if via.harness:
        head.append(f"harness {via.harness}")
    if via.agent:
        head.append(f"agent {via.agent}")
    size = []
    if record.tokens is not None:
        size.append(f"{record.tokens}/{'unbounded' if record.budget is None else record.budget} tokens")
    elif record.budget is not None:
        size.append(f"budget {record.budget} tokens")
    if record.chars is not None:
        size.append(f"{record.chars} chars")
    if record.floor is not None:
        size.append(f"relevance floor {record.floor:g}")
    head.append(record.kind + (f" ({', '.join(size)})" if size else ""))
    return "  ".join(head)


def _marked_id(item: Any) -> str:
    """An item's id, ``[personal] ID`` for one of the personal store (as wake and recall mark it)."""
    return f"[personal] {item.id}" if item.store == "personal" else item.id


def _for(names: Sequence[str]) -> str:
    """Whom a bound memory is for, as ``tur learn --for`` named them: ``for claude, codex``."""
    from gitmem.record.visibility import bound_to

    return bound_to([for_reader(name) for name in names])


def render_injection(record: Injection) -> str:
    """One injection of the log as text (``tur log``): a heading line, then a line per memory.

    The heading: the time (UTC, to the second), the surface, the session and harness when
    known, the kind, and tokens / budget / characters as far as known; then the query of a
    recall. Then ``+ ID`` for each memory included (its tokens and tier, or its rank, and
    ``compressed`` / ``truncated`` / ``stale note``, and ``for NAME`` for a memory bound to
    agents), ``- ID reason`` for each left out by name, and a last line counting those left
    out by reason (named or not). A memory of the personal store is ``[personal] ID``.
    """
    lines = [_injection_heading(record)]
    if record.query:
        lines.append(f'  query: "{for_reader(record.query)}"')
    for item in record.included:
        about = []
        if item.tokens is not None:
            about.append(f"{item.tokens} tokens")
        if item.tier is not None:
            about.append(f"tier {item.tier}")
        if item.rank is not None:
            about.append(f"rank {item.rank}")
        if item.note:
            about.append(item.note)
        if item.visibility:
            about.append(_for(item.visibility))
        lines.append(f"  + {_marked_id(item):<20}  {', '.join(about)}".rstrip())
    for out in record.left_out:
        tokens = f" ({out.tokens} tokens)" if out.tokens is not None else ""
        bound = f", {_for(out.visibility)}" if out.visibility else ""
        lines.append(f"  - {_marked_id(out):<20}  {out.reason}{tokens}{bound}")
    if record.unlisted:
        lines.append(f"  … and {record.unlisted} more included")
    if not record.included:
        lines.append("  (nothing injected)")
    if record.counts:
        counted = ", ".join(f"{n} {reason}" for reason, n in record.counts.items())
        lines.append(f"  left out: {counted}")
    return "\n".join(lines) + "\n"
