"""Token-budgeted wake compilation (EP-0132): tiered packing plus an assembly record.

Layout of the text (sections without content are left out, blocks are separated by one
blank line)::

    ## Identity and invariants        <- Tier 0: persona, line by line
    ## Continuity                     <- Tier 1: latest spark note, line by line
    ## Axioms and core memories       <- Tier 1: active axiom/core records
    ## Salient memories               <- Tier 2: other records by salience
    [Tur Context Manager]: ...        <- advisory, when anything was omitted or is stale
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitmem.errors import InvalidInput
from gitmem.render import format_entry
from gitmem.vocabulary import MemoryType, RelationType, Status

if TYPE_CHECKING:
    from gitmem.models import Memory

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_SHARES",
    "DEFAULT_THRESHOLD",
    "REASONS",
    "AssemblyEntry",
    "WakeResult",
    "advisory_line",
    "centrality",
    "compile_wake",
    "relation_degrees",
    "superseded_by",
]

DEFAULT_BUDGET = 4096
"""Default token budget of ``tur wake`` (EP-0132)."""
DEFAULT_SHARES = (0.25, 0.35, 0.40)
"""Default budget shares of tiers 0, 1 and 2."""
DEFAULT_THRESHOLD = 0.3
"""Weight below which a memory leaves wake with reason ``low_weight`` (EP-0131)."""

REASONS = ("over_budget", "stale", "refuted", "low_weight", "superseded", "truncated")
"""Every reason an assembly entry can carry. ``truncated`` is the one reason of an *included*
entry: only part of the persona or continuity note fitted."""

PERSONA_ID = "persona"
CONTINUITY_ID = "continuity"

_HEADERS = {
    "persona": "## Identity and invariants\n",
    "continuity": "## Continuity\n",
    "axioms": "## Axioms and core memories\n",
    "salient": "## Salient memories\n",
}
_TIER1_TYPES = (MemoryType.AXIOM, MemoryType.CORE)


@dataclass(frozen=True)
class AssemblyEntry:
    """What happened to one memory (or to the persona / continuity note) in a wake.

    Attributes:
        memory_id: the memory id, or ``"persona"`` / ``"continuity"``.
        tier: 0, 1 or 2.
        tokens: tokens of the entry (for a truncated or omitted block: of the lines
            included, or of the whole block when nothing was included).
        included: whether (some of) it is in the text.
        reason: ``None`` when fully included, else one of :data:`REASONS`.
        salience: weight × centrality for memories, ``None`` for persona and continuity.
    """

    memory_id: str
    tier: int
    tokens: int
    included: bool
    reason: str | None
    salience: float | None


@dataclass(frozen=True)
class WakeResult:
    """A compiled wake.

    Attributes:
        text: the markdown an agent reads; ``tokens <= budget`` always holds.
        tokens: tokens of ``text``, counted on the final string by the counter.
        budget: the budget in tokens, ``None`` when unbounded.
        assembly: one entry per memory given (and per persona / continuity block), in tier
            and rank order; nothing is left out.
        omitted: memories excluded for budget (reason ``over_budget``); the advisory's number.
    """

    text: str
    tokens: int
    budget: int | None
    assembly: tuple[AssemblyEntry, ...]
    omitted: int

    def excluded_counts(self) -> dict[str, int]:
        """Excluded entries by reason, in :data:`REASONS` order, reasons with none left out."""
        counts = {reason: 0 for reason in REASONS}
        for entry in self.assembly:
            if not entry.included and entry.reason:
                counts[entry.reason] += 1
        return {reason: n for reason, n in counts.items() if n}


@dataclass(slots=True)
class _Unit:
    key: str
    tokens: int
    is_memory: bool
    _text: str | None = None
    _memory: Memory | None = None

    @property
    def text(self) -> str:
        # Only chosen entries are laid out: formatting all 100,000 would dominate a
        # warm wake whose token counts come from the cache.
        if self._text is None:
            self._text = format_entry(self._memory)
        return self._text


@dataclass
class _Section:
    tier: int
    header: str
    units: list[_Unit]
    # Lines of a persona or continuity note are taken as a prefix (their order is their
    # meaning); memories are packed greedily, skipping those that do not fit.
    prefix_only: bool
    chosen: list[_Unit] = field(default_factory=list)


def relation_degrees(memories: Iterable[Memory]) -> dict[str, int]:
    """Degree of each memory in the undirected relation graph, keyed by id.

    A neighbour counts once however many relations join the two; self-links and links to
    ids not among ``memories`` are ignored.
    """
    memories = list(memories)
    degrees = dict.fromkeys((m.id for m in memories), 0)
    # Most memories have no relation: build neighbour sets only for linked ones.
    neighbours: dict[str, set[str]] = {}
    for memory in memories:
        for target in memory.relation_targets():
            if target in degrees and target != memory.id:
                neighbours.setdefault(memory.id, set()).add(target)
                neighbours.setdefault(target, set()).add(memory.id)
    degrees.update((key, len(value)) for key, value in neighbours.items())
    return degrees


def superseded_by(
    memories: Iterable[Memory], active: Callable[[Memory], bool]
) -> dict[str, str]:
    """Ids superseded by an active memory, mapped to the (smallest) id superseding them.

    Args:
        memories: the memories whose ``supersedes`` relations are read.
        active: whether a memory's ``supersedes`` relations count (an inactive one, e.g.
            stale or refuted, supersedes nothing).
    """
    result: dict[str, str] = {}
    linking = [m for m in memories if m.relation_targets(RelationType.SUPERSEDES)]
    for memory in sorted(linking, key=lambda m: m.id, reverse=True):
        if active(memory):
            for target in memory.relation_targets(RelationType.SUPERSEDES):
                if target != memory.id:
                    result[target] = memory.id
    return result


def centrality(degree: int) -> float:
    """Graph centrality factor of salience: ``1 + ln(1 + degree)``.

    An isolated memory gets 1 (never zeroed); each further neighbour adds less (1.69 for one,
    2.10 for two, 3.40 for ten), so a hub cannot drown out confidence and decay.
    """
    return 1.0 + math.log1p(degree)


def advisory_line(omitted: int, stale: int, *, short: bool = False) -> str:
    """The advisory that closes a wake (EP-0132 wording), or ``""`` when there is nothing to say.

    Args:
        omitted: memories left out for budget; the advisory's first clause.
        stale: stale memories excluded; a second clause says ``--include-stale`` recalls them.
            Low-weight memories are not mentioned: a plain recall still finds them.
        short: the fallback wording used when the full line does not fit an empty wake.
    """
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'y' if n == 1 else 'ies'}"

    if short:
        total = omitted + stale
        return f"[Tur Context Manager]: {plural(total, 'memor')} omitted." if total else ""
    clauses = []
    if omitted:
        clauses.append(
            f"{plural(omitted, 'lower-salience memor')} omitted to preserve token budget. "
            "Use `tur recall --query ...` for on-demand retrieval."
        )
    if stale:
        clauses.append(
            f"{plural(stale, 'stale memor')} excluded (recall with `--include-stale`)."
        )
    return f"[Tur Context Manager]: {' '.join(clauses)}" if clauses else ""


def compile_wake(
    memories: Sequence[Memory],
    *,
    weights: Mapping[str, float],
    persona: Mapping[str, object] | str | None = None,
    continuity: str | None = None,
    budget: int | None = DEFAULT_BUDGET,
    shares: Sequence[float] = DEFAULT_SHARES,
    threshold: float = DEFAULT_THRESHOLD,
    counter: Callable[[str], int] | None = None,
    entry_tokens: Mapping[str, int] | None = None,
) -> WakeResult:
    """Compile the wake text of ``memories`` within ``budget`` tokens.

    Tiers: 0 the persona; 1 the continuity note, then active ``axiom``/``core`` records;
    2 every other active record. Within tiers 1 and 2 memories are ranked by
    ``salience = weight × centrality(degree)`` (ties by id), where ``weight`` is the decay
    module's weight, which already is ``confidence × time decay × commit-distance decay``
    (DESIGN.md), so confidence is not multiplied in twice; see :func:`centrality`.

    Exclusions, in order of precedence: ``refuted``; ``stale``; ``low_weight`` (weight below
    ``threshold``); ``superseded`` (target of a ``supersedes`` relation from a memory that
    passed the first three checks); then ``over_budget``. ``unanchored`` memories are not
    excluded for their status: their weight decides.

    Budget: tier *i* may spend ``floor(budget × (share_0 + … + share_i))`` minus what the
    tiers above spent, so a tier's unused share flows down. Headers are paid by the tier that
    opens them. Memories are packed greedily by rank (one that does not fit is skipped and a
    smaller one may follow); persona and continuity lines are taken as a prefix. The advisory
    is then appended and the final string counted with ``counter``; while it exceeds the
    budget the lowest-ranked included entry is dropped (becoming ``over_budget``) and the
    advisory recounted, falling back to a short advisory and then to an empty text. So
    ``counter(text) <= budget`` holds exactly, even where the count of a concatenation is not
    the sum of its parts.

    Args:
        memories: every memory of the store; each gets one assembly entry.
        weights: decay weight per memory id; a missing id falls back to its confidence.
        persona: Tier 0 as a parsed mapping (rendered as indented ``key: value`` lines) or text.
        continuity: the latest spark note.
        budget: tokens; ``None`` or ``0`` is unbounded (every active memory, no truncation).
        shares: budget shares of tiers 0, 1, 2: non-negative, summing to at most 1.
        threshold: minimum weight to be in wake.
        counter: token counter; default :class:`gitmem.tokens.TokenCounter`.
        entry_tokens: precomputed ``counter(format_entry(memory))`` per memory id (a cache);
            ids not in it are counted.

    Returns:
        The :class:`WakeResult`.

    Raises:
        InvalidInput: negative budget, or shares that are not three non-negative numbers
            summing to at most 1.
        TokenizerUnavailable: the default counter's encoding cannot be loaded offline.
    """
    _check(budget, shares)
    if counter is None:
        from gitmem.tokens import TokenCounter

        counter = TokenCounter()
    cached = entry_tokens or {}
    reasons = _status_reasons(memories, weights, threshold)
    degrees = relation_degrees(memories)
    salience = {m.id: weights.get(m.id, m.confidence) * centrality(degrees[m.id]) for m in memories}
    ranked = sorted(memories, key=lambda m: (-salience[m.id], m.id))
    tier1 = [m for m in ranked if m.type in _TIER1_TYPES]
    tier2 = [m for m in ranked if m.type not in _TIER1_TYPES]

    def unit(m: Memory) -> _Unit:
        tokens = cached.get(m.id)
        if tokens is not None:
            return _Unit(m.id, tokens, True, _memory=m)
        text = format_entry(m)
        return _Unit(m.id, counter(text), True, _text=text)

    persona_units = _lines(PERSONA_ID, _persona_lines(persona), counter)
    continuity_units = _lines(CONTINUITY_ID, _text_lines(continuity), counter)
    sections = [
        _Section(0, _HEADERS["persona"], persona_units, True),
        _Section(1, _HEADERS["continuity"], continuity_units, True),
        _Section(1, _HEADERS["axioms"], [unit(m) for m in tier1 if m.id not in reasons], False),
        _Section(2, _HEADERS["salient"], [unit(m) for m in tier2 if m.id not in reasons], False),
    ]
    stale = sum(1 for r in reasons.values() if r == "stale")
    if budget:
        text, tokens = _pack(sections, budget, shares, stale, counter)
    else:
        for section in sections:
            section.chosen = list(section.units)
        text = _layout(sections, advisory_line(0, stale))
        tokens = counter(text)
    assembly = _assembly(sections, tier1, tier2, reasons, salience, unit)
    omitted = sum(1 for e in assembly if e.reason == "over_budget" and e.memory_id in salience)
    return WakeResult(text, tokens, budget or None, tuple(assembly), omitted)


def _check(budget: int | None, shares: Sequence[float]) -> None:
    if budget is not None and budget < 0:
        raise InvalidInput(f"token budget must be >= 0, got {budget}", "0 means unbounded")
    if len(shares) != 3 or any(s < 0 for s in shares) or sum(shares) > 1 + 1e-9:
        raise InvalidInput(
            f"wake shares must be three non-negative fractions summing to <= 1, got {list(shares)}",
            "the default is 0.25, 0.35, 0.40",
        )


def _status_reasons(
    memories: Sequence[Memory], weights: Mapping[str, float], threshold: float
) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for memory in memories:
        if memory.status is Status.REFUTED:
            reasons[memory.id] = "refuted"
        elif memory.status is Status.STALE:
            reasons[memory.id] = "stale"
        elif weights.get(memory.id, memory.confidence) < threshold:
            reasons[memory.id] = "low_weight"
    superseded = superseded_by(memories, lambda m: m.id not in reasons)
    for memory in memories:
        if memory.id in superseded and memory.id not in reasons:
            reasons[memory.id] = "superseded"
    return reasons


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _persona_lines(persona: Mapping[str, object] | str | None, indent: str = "") -> list[str]:
    if persona is None or isinstance(persona, str):
        return _text_lines(persona)
    lines: list[str] = []
    for key, value in persona.items():
        if isinstance(value, Mapping):
            lines.append(f"{indent}{key}:\n")
            lines.extend(_persona_lines(value, indent + "  "))
        elif isinstance(value, list | tuple):
            lines.append(f"{indent}{key}:\n")
            lines.extend(_item_lines(_scalar(item), f"{indent}  - ", indent + "    ")
                         for item in value)
        else:
            lines.append(_item_lines(_scalar(value), f"{indent}{key}: ", indent + "  "))
    return lines


def _item_lines(text: str, first: str, rest: str) -> str:
    # A multi-line value stays one unit so that it is included or dropped whole.
    return first + text.rstrip("\n").replace("\n", "\n" + rest) + "\n"


def _text_lines(text: str | None) -> list[str]:
    if not text or not text.strip():
        return []
    return [line + "\n" for line in text.strip("\n").split("\n")]


def _lines(key: str, lines: list[str], counter: Callable[[str], int]) -> list[_Unit]:
    return [_Unit(key, counter(line), False, _text=line) for line in lines]


def _layout(sections: Sequence[_Section], advisory: str) -> str:
    blocks = [s.header + "".join(u.text for u in s.chosen) for s in sections if s.chosen]
    if advisory:
        blocks.append(advisory + "\n")
    return "\n".join(blocks)


def _pack(
    sections: list[_Section],
    budget: int,
    shares: Sequence[float],
    stale: int,
    counter: Callable[[str], int],
) -> tuple[str, int]:
    used = 0
    opened = False
    cumulative = 0.0
    for tier in range(3):
        cumulative += shares[tier]
        allowance = math.floor(budget * cumulative) - used
        for section in (s for s in sections if s.tier == tier):
            header = counter(("\n" if opened else "") + section.header)
            for unit in section.units:
                cost = unit.tokens + (0 if section.chosen else header)
                if cost <= allowance:
                    section.chosen.append(unit)
                    allowance -= cost
                    used += cost
                    opened = True
                elif section.prefix_only:
                    break
    return _fit(sections, budget, stale, counter)


def _fit(
    sections: list[_Section], budget: int, stale: int, counter: Callable[[str], int]
) -> tuple[str, int]:
    all_memories = sum(1 for s in sections for u in s.units if u.is_memory)
    short = False
    while True:
        included = sum(1 for s in sections for u in s.chosen if u.is_memory)
        text = _layout(sections, advisory_line(all_memories - included, stale, short=short))
        tokens = counter(text)
        if tokens <= budget:
            return text, tokens
        last = next((s for s in reversed(sections) if s.chosen), None)
        if last is not None:
            last.chosen.pop()
        elif not short:
            short = True
        else:
            return "", 0


def _assembly(
    sections: list[_Section],
    tier1: list[Memory],
    tier2: list[Memory],
    reasons: Mapping[str, str],
    salience: Mapping[str, float],
    unit: Callable[[Memory], _Unit],
) -> list[AssemblyEntry]:
    entries = [_block_entry(s) for s in sections[:2] if s.units]
    for tier, memories, section in ((1, tier1, sections[2]), (2, tier2, sections[3])):
        chosen = {u.key for u in section.chosen}
        tokens = {u.key: u.tokens for u in section.units}
        for m in memories:
            reason = reasons.get(m.id) or (None if m.id in chosen else "over_budget")
            cost = tokens.get(m.id)
            if cost is None:
                cost = unit(m).tokens
            entries.append(AssemblyEntry(m.id, tier, cost, reason is None, reason, salience[m.id]))
    return entries


def _block_entry(section: _Section) -> AssemblyEntry:
    key = section.units[0].key
    if not section.chosen:
        total = sum(u.tokens for u in section.units)
        return AssemblyEntry(key, section.tier, total, False, "over_budget", None)
    partial = len(section.chosen) < len(section.units)
    tokens = sum(u.tokens for u in section.chosen)
    return AssemblyEntry(key, section.tier, tokens, True, "truncated" if partial else None, None)
