"""Packing a wake's blocks into its budgets: the greedy tiered pass, the advisory, the exact fit.

What :func:`gitmem.context.wake.compile_rows` and :func:`gitmem.context.wake.compile_ranked`
share (see the first for the rules). A block is a :class:`Section`: the persona's or the
continuity note's lines, or the memories of one tier, held in full or taken lazily from a
:class:`RankedSource` (a wake plan's) as far as the budget can reach.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, Protocol

__all__ = ["Limits", "RankedItem", "RankedSource", "Section", "advisory_line", "layout", "pack"]


class RankedItem(NamedTuple):
    """One memory of a ranked source: what packing reads of it.

    Attributes:
        memory_id: its id.
        tokens: tokens of its entry (:func:`gitmem.context.entry.format_entry`).
        entry: the text of its entry.
        short: its compressed entry, or ``None`` when the source holds none.
        chars: characters of its content (a lower bound of ``len(entry)``).
    """

    memory_id: str
    tokens: int
    entry: str
    short: str | None
    chars: int


class RankedSource(Protocol):
    """The memories of one tier that compete for a wake's budget, in rank order, taken lazily.

    What a wake plan gives (:mod:`gitmem.cache.wakeplan`), so that a wake reads as many
    memories as its budget can hold, not the store. ``count`` is the number of memories
    that compete (not refuted, stale, superseded, or below the threshold at the wake's time);
    ``pull(n)`` gives the next ``n`` of them (fewer at the end) in the order of
    :func:`compile_rows` (salience descending, ties by id); ``least(over)`` gives a lower bound
    ``(tokens, characters)`` of what any memory not pulled yet costs, whole or, when its
    entry has more than ``over`` tokens, compressed; or ``None`` when none is left.
    """

    count: int

    def pull(self, n: int) -> list[RankedItem]:
        """The next ``n`` competing memories in rank order (fewer when the source ends)."""
        ...

    def least(self, over: float = 0.0) -> tuple[float, float] | None:
        """A lower bound (tokens, characters) of the cost of any memory not pulled, or ``None``."""
        ...


class Section:
    """A block of the text: a header and items, each with its tokens and its text.

    ``key`` is ``"persona"`` / ``"continuity"`` for line blocks, ``None`` when the items are
    memory rows; ``text`` gives an item's text by position, ``short`` its compressed text and
    ``min_chars`` a lower bound of its length; ``chosen`` holds the positions packed, in
    order, and ``compressed`` those shown compressed.
    """

    __slots__ = ("chosen", "compressed", "header", "items", "key", "min_chars", "more", "short",
                 "source", "text", "tier", "tokens")

    def __init__(self, tier: int, header: str, key: str | None, items: list, tokens: list[int],
                 text: Callable[[int], str], short: Callable[[int], str] | None = None,
                 min_chars: Callable[[int], int] | None = None,
                 source: RankedSource | None = None,
                 more: Callable[[list[RankedItem]], None] | None = None) -> None:
        self.tier = tier
        self.header = header
        self.key = key
        self.items = items
        self.tokens = tokens
        self.text = text
        self.short = short
        self.min_chars = min_chars
        self.chosen: list[int] = []
        self.compressed: set[int] = set()
        # A section of a wake plan holds the first items of its ranked source only: it takes
        # more (``more`` appends them) when a packing reaches its end and one could still fit.
        self.source = source
        self.more = more

    @property
    def total(self) -> int:
        """Items of the section, those not taken from its source yet included."""
        return self.source.count if self.source is not None else len(self.items)

    def walk(self, room: Callable[[], tuple[float | None, float | None, float]]) -> Iterator[tuple[int, int]]:
        """``(position, tokens)`` of every item in rank order, as long as one may still fit.

        ``room()`` gives the tokens and characters still free (``None``: no cap) and the
        tokens above which an item may be costed compressed, when the items held are all
        walked: items are taken from the source only while the least an item left there can
        cost fits; when it cannot, no item further on could be packed, so stopping is what
        walking them all to the end would do.
        """
        pos = 0
        while True:
            if pos == len(self.tokens) and not self.grow(*room()):
                return
            yield pos, self.tokens[pos]
            pos += 1

    def grow(self, tokens: float | None, chars: float | None, over: float = math.inf) -> bool:
        """Take more items from the source when the least one left costs at most ``tokens``/``chars``.

        ``over``: items of more tokens may be costed by their compressed entry.
        """
        if self.source is None or self.more is None:
            return False
        least = self.source.least(over)
        if least is None or (tokens is not None and least[0] > tokens) or (
                chars is not None and least[1] > chars):
            return False
        got = self.source.pull(max(_PULL, len(self.items)))
        if not got:
            return False
        self.more(got)
        return True

    def least_tokens(self) -> float:
        """A lower bound of the whole tokens of any item (those held and those left in the source)."""
        held = min(self.tokens, default=math.inf)
        least = self.source.least(math.inf) if self.source is not None else None
        return held if least is None else min(held, least[0])

    def take_all(self) -> None:
        """Take every item left in the source."""
        while self.grow(None, None):
            pass


    def shown(self, pos: int) -> str:
        """The text of a chosen item as it is laid out (compressed or whole)."""
        return self.short(pos) if self.short is not None and pos in self.compressed else self.text(pos)

    @property
    def prefix_only(self) -> bool:
        """Whether the items are lines taken as a prefix (persona, continuity), not memories."""
        # Lines of a persona or continuity note are taken as a prefix (their order is their
        # meaning); memories are packed greedily, skipping those that do not fit.
        return self.key is not None


_PULL = 16
"""Items taken from a ranked source at least at a time (then as many as are held: doubling)."""


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


def layout(sections: Sequence[Section], advisory: str) -> str:
    """The text of the items chosen in ``sections`` and ``advisory``: blocks one blank line apart."""
    blocks = [s.header + "".join(s.shown(pos) for pos in s.chosen) for s in sections if s.chosen]
    if advisory:
        blocks.append(advisory + "\n")
    return "\n".join(blocks)


class Limits:
    """The budgets a wake must hold: tokens and characters (``None``: no such cap)."""

    __slots__ = ("chars", "tokens")

    def __init__(self, tokens: int | None, chars: int | None) -> None:
        self.tokens = tokens
        self.chars = chars

    def holds(self, text: str, tokens: int) -> bool:
        """Whether ``text`` of ``tokens`` tokens is within both budgets."""
        return (self.tokens is None or tokens <= self.tokens) and (
            self.chars is None or len(text) <= self.chars)



_MIN_ENTRY_CHARS = 32
"""No entry is shorter (``- [fact-xxxxxxxx] x (Conf: 1.0)`` and a newline): with less room left,
a character-capped packing stops looking."""


class _Room:
    """What a tier may still spend, in tokens and characters (``None``: no cap)."""

    def __init__(self, tokens: float | None, chars: float | None) -> None:
        self.tokens = tokens
        self.chars = chars

    def fits(self, tokens: int, chars: int) -> bool:
        return (self.tokens is None or tokens <= self.tokens) and (
            self.chars is None or chars <= self.chars)

    def spend(self, tokens: int, chars: int) -> None:
        if self.tokens is not None:
            self.tokens -= tokens
        if self.chars is not None:
            self.chars -= chars


def pack(
    sections: list[Section],
    limits: Limits,
    shares: Sequence[float],
    stale: int,
    counter: Callable[[str], int],
) -> tuple[str, int]:
    """Pack the sections and lay the wake out within ``limits``: ``(text, tokens)``.

    The advisory's room is kept free while packing, so that the greedy pass may take a
    smaller memory that fits beside it (dropping entries after packing would leave that
    room unused). Tried in order, the first that includes a memory wins:

    1. no room kept, when every memory could fit (then no advisory is needed for budget);
    2. room for the full advisory (EP-0132 wording);
    3. room for the short one: a small budget shows a memory rather than the long wording.
       When 2 shows fewer than three memories, 3 is tried too and wins if its best memory
       ranks above 2's (the best memory that fits rather than a smaller, lower-ranked
       one); more memories alone do not win.

    When none includes a memory, the full advisory alone, else the short one, else ``""``.
    """
    memory_sections = [s for s in sections if not s.prefix_only]
    all_memories = sum(s.total for s in memory_sections)
    if limits.tokens is None or _tokens_within(sections, limits.tokens):
        _greedy(sections, limits, shares, counter)
        if all(len(s.chosen) == s.total for s in memory_sections):
            found = _fit(sections, limits, stale, counter, short=False)
            if found is not None:
                return found
    fallback: tuple[str, int] | None = None
    kept: tuple[tuple[str, int], list[tuple[list[int], set[int]]], list[tuple[int, int]]] | None = None
    for short in (False, True):
        advisory = "\n" + advisory_line(all_memories, stale, short=short) + "\n"
        _greedy(sections, limits, shares, counter, keep=(counter(advisory), len(advisory)))
        found = _fit(sections, limits, stale, counter, short=short)
        if found is None:
            continue
        shown = [(i, pos) for i, s in enumerate(memory_sections) for pos in s.chosen]
        if kept is not None:  # the full wording's few memories against the short one's
            if _ranks_above(kept[2], shown):
                for section, (chosen, compressed) in zip(sections, kept[1], strict=True):
                    section.chosen, section.compressed = chosen, compressed
                return kept[0]
            return found
        if not all_memories:
            return found
        if shown and (short or len(shown) >= _FEW):
            return found
        if shown:  # a small budget: the short wording may leave room for better memories
            kept = found, [(list(s.chosen), set(s.compressed)) for s in sections], shown
            continue
        fallback = fallback or found
    return fallback or ("", 0)


def _tokens_within(sections: list[Section], limit: int) -> bool:
    """Whether the items of all ``sections`` together cost at most ``limit`` tokens.

    A section of a ranked source takes items until the sum exceeds the limit (or none is left).
    """
    total = sum(sum(s.tokens) for s in sections)
    for section in sections:
        while total <= limit:
            held = len(section.tokens)
            if not section.grow(None, None):
                break
            total += sum(section.tokens[held:])
    return total <= limit


_FEW = 3
"""Below this many memories shown with the full advisory, the short one is tried too."""


def _ranks_above(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> bool:
    """Whether the best memory ``first`` shows ranks at least as well as ``second``'s best.

    Each is ``(section, position)`` in rank order (tier 1 before tier 2), not empty. Only
    the best memory counts: the full advisory (``first``) tells the agent how to recall
    the rest, which is worth about as much as one more memory of similar rank.
    """
    return first[0] <= second[0]


def _greedy(
    sections: list[Section], limits: Limits, shares: Sequence[float], counter: Callable[[str], int],
    keep: tuple[int, int] = (0, 0),
) -> None:
    """Choose each section's items within ``limits``, tier by tier (see :func:`compile_wake`).

    ``keep`` (tokens, characters) stays free for the advisory: it caps the total, not the
    tiers' shares, which stay shares of the whole budget.
    """
    for section in sections:
        section.chosen, section.compressed = [], set()
    used_tokens = used_chars = 0
    opened = False
    cumulative = 0.0
    for tier in range(3):
        cumulative += shares[tier]
        room = _Room(
            None if limits.tokens is None else
            min(math.floor(limits.tokens * cumulative), limits.tokens - keep[0]) - used_tokens,
            None if limits.chars is None else
            min(math.floor(limits.chars * cumulative), limits.chars - keep[1]) - used_chars,
        )
        share = _Room(room.tokens, room.chars)  # a memory longer than this is shown compressed
        for section in (s for s in sections if s.tier == tier):
            head_text = ("\n" if opened else "") + section.header
            head = (counter(head_text), len(head_text))
            over = (math.inf if share.tokens is None else share.tokens) if room.chars is None else -math.inf

            def free(room: _Room = room, over: float = over) -> tuple[float | None, float | None, float]:
                return room.tokens, room.chars, over

            for pos, tokens in section.walk(free):
                if room.chars is not None and room.chars < _MIN_ENTRY_CHARS:
                    break
                paid = (0, 0) if section.chosen else head
                cost = _cost(section, pos, tokens, room, share, counter)
                if cost is None:
                    if section.prefix_only:
                        break
                    continue
                total = (cost[0] + paid[0], cost[1] + paid[1])
                if room.fits(*total):
                    section.chosen.append(pos)
                    if cost[2]:
                        section.compressed.add(pos)
                    room.spend(*total)
                    used_tokens += total[0]
                    used_chars += total[1]
                    opened = True
                elif section.prefix_only:
                    break


def _cost(section: Section, pos: int, tokens: int, room: _Room, share: _Room,
          counter: Callable[[str], int]) -> tuple[int, int, bool] | None:
    """(tokens, characters, compressed) of an item as it would be shown, or ``None``: skip it.

    A memory longer than its share is costed compressed; the characters of an entry are only
    measured under a character cap, and not at all when even its content is too long to fit.
    """
    whole_fits_share = share.tokens is None or tokens <= share.tokens
    if room.chars is None:
        if whole_fits_share or section.short is None:
            return tokens, 0, False
        return counter(section.short(pos)), 0, True
    least = section.min_chars(pos) if section.min_chars is not None else 0
    if whole_fits_share and least <= room.chars:
        chars = len(section.text(pos))
        if share.chars is None or chars <= share.chars or section.short is None:
            return tokens, chars, False
    elif whole_fits_share and (share.chars is None or least <= share.chars or section.short is None):
        return None  # fits its share but not the room left: a lower-ranked memory may
    if section.short is None:
        return None
    short = section.short(pos)
    return counter(short), len(short), True


def _fit(
    sections: list[Section], limits: Limits, stale: int, counter: Callable[[str], int], *,
    short: bool,
) -> tuple[str, int] | None:
    """Lay the chosen items out with the advisory; drop the lowest-ranked until it holds.

    The count of a concatenation is not always the sum of its parts, hence the loop on the
    whole text. ``None`` when not even the advisory alone holds.
    """
    memory_sections = [s for s in sections if not s.prefix_only]
    all_memories = sum(s.total for s in memory_sections)
    while True:
        included = sum(len(s.chosen) for s in memory_sections)
        text = layout(sections, advisory_line(all_memories - included, stale, short=short))
        tokens = counter(text)
        if limits.holds(text, tokens):
            return _top_up(sections, limits, stale, counter, short, text, tokens)
        last = next((s for s in reversed(sections) if s.chosen), None)
        if last is None:
            return None
        last.compressed.discard(last.chosen.pop())


_TOP_UP_TRIES = 8
"""At most this many left-out memories are tried in the room a packed wake leaves unused."""

_TOP_UP_SCAN = 256
"""At most this many left-out memories too large for the room are passed over in one section:
with a few tokens free and one short memory somewhere in a large store, the walk would
otherwise read the whole rank order to find it (the top-up stays in proportion to the budget)."""


def _top_up(sections: list[Section], limits: Limits, stale: int, counter: Callable[[str], int],
            short: bool, text: str, tokens: int) -> tuple[str, int]:
    """Add left-out memories, in tier and rank order, that fit in the room still unused.

    The room kept for the advisory is an estimate (a token count of a concatenation is not
    the sum of its parts), and dropping an entry to fit may leave room a smaller one could
    use: each memory whose entry alone fits what is left is tried on the whole text.
    """
    memory_sections = [s for s in sections if not s.prefix_only]
    all_memories = sum(s.total for s in memory_sections)
    tries = 0

    def room() -> tuple[float | None, float | None, float]:
        return (None if limits.tokens is None else limits.tokens - tokens,
                None if limits.chars is None else limits.chars - len(text), math.inf)

    for section in memory_sections:
        if limits.tokens is not None and section.least_tokens() > limits.tokens - tokens:
            continue  # nothing left out here fits: no walk over every row of a large store
        taken = set(section.chosen)
        passed = 0
        for pos, cost in section.walk(room):
            if pos in taken:
                continue
            if (limits.tokens is not None and cost > limits.tokens - tokens) or (
                    limits.chars is not None and len(section.text(pos)) > limits.chars - len(text)):
                passed += 1
                if passed > _TOP_UP_SCAN:
                    break
                continue
            if tries == _TOP_UP_TRIES:
                return text, tokens
            tries += 1
            insort(section.chosen, pos)
            included = sum(len(s.chosen) for s in memory_sections)
            trial = layout(sections, advisory_line(all_memories - included, stale, short=short))
            counted = counter(trial)
            if limits.holds(trial, counted):
                text, tokens = trial, counted
                taken.add(pos)
            else:
                section.chosen.remove(pos)
    return text, tokens
