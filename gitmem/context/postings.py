"""The raw postings arithmetic of :class:`gitmem.context.recall.RecallIndex`: idf, columns, ranks.

Kept apart from the scoring so that each module stays small; every function here is exact
(integer counts, the same float expressions as the scorer's documentation states).
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gitmem.context.analysis import tokenize
from gitmem.context.terms import NO_TIME, time_key
from gitmem.context.terms import date_column as _date_column

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["NEAR", "TermPosting", "append", "bm25_idf", "columns", "linked", "ranks", "words"]

NEAR = 4
"""Neighbours a document has at most: before and after by its author, before and after by another."""


def linked(near: array) -> set[int]:
    """The documents with at least one neighbour in ``near`` (:data:`NEAR` slots each, -1: none).

    Found from the most significant byte of each slot (0xff for -1, below 0x80 for a
    document number) by C string operations, so that loading an index runs no Python loop
    per document: only turns of a conversation have neighbours.
    """
    width = near.itemsize
    top = near.tobytes()[width - 1::width] if sys.byteorder == "little" else near.tobytes()[::width]
    flags = top.translate(_SET_SLOT)
    return {m.start() // NEAR for m in re.finditer(b"\x01", flags)}


_SET_SLOT = bytes(0 if b == 0xFF else 1 for b in range(256))


def bm25_idf(size: int, df: int) -> float:
    """Lucene's BM25 idf of a term held by ``df`` of ``size`` documents."""
    return math.log(1 + (size - df + 0.5) / (df + 0.5))


def words(text: str, when: str) -> list[str]:
    """BM25 terms of one document: its content's, then its month and year's."""
    words = tokenize(text)
    if when:
        words.extend(tokenize(when))
    return words


def columns(n: int, observed: Sequence[datetime | str | None] | None,
             authors: Sequence[str | None] | None,
             refs: Sequence[str | None] | None) -> tuple[list[str], list[int], list[str], list[str]]:
    """Dates, times, authors and anchors of ``n`` documents as index columns (``""``: none)."""
    dates = _date_column(observed) if observed is not None else [""] * n
    times = [time_key(t) for t in observed] if observed is not None else [NO_TIME] * n
    return (dates, times, [a or "" for a in authors] if authors is not None else [""] * n,
            [r or "" for r in refs] if refs is not None else [""] * n)


def append(postings: dict[str, tuple[array, array]], key: str, number: int, count: int) -> None:
    """Add ``count`` occurrences of ``key`` in document ``number`` (the last one) to ``postings``."""
    found = postings.get(key)
    if found is None:
        found = postings[key] = (array("i"), array("i"))
    found[0].append(number)
    found[1].append(count)


def ranks(keys: Iterable[tuple[float, str]]) -> dict[str, int]:
    """Memory id -> its 1-based competition rank by key (ascending) among ``keys``, ``(key, id)`` pairs."""
    # Competition ranking ("1224"): equal scores share a rank, so that a tie in one ranker
    # is left for the others to break instead of being broken by id.
    ranks: dict[str, int] = {}
    previous = None
    rank = 0
    for position, (key, memory_id) in enumerate(sorted(keys), start=1):
        if key != previous:
            rank, previous = position, key
        ranks[memory_id] = rank
    return ranks


_SAME_SHIFT, _OTHERS_SHIFT = 24, 48
_COUNT_MASK = (1 << 24) - 1


class TermPosting:
    """One query term's postings in a recall index, scored as :mod:`gitmem.context.recall` states.

    A BM25 term's documents are those holding it and their neighbours (``near``; a count
    lent by a neighbour by the same author weighs ``same``, by another ``reply``); a field
    term's are those holding it. ``contributions`` scores every one (term at a time), and
    ``contribution`` one document by bisection (what MaxScore asks of a non-essential term);
    both are the same float expression, so a score is the same whichever way it was summed.

    Args:
        numbers, counts: the documents holding the term (ascending) and how often.
        norm: ``(k1, b, lengths, average)``: document ``d``'s length norm is
            ``k1 × (1 − b + b × lengths[d] / average)`` (:meth:`RecallIndex.norm` or ``fnorm``).
        field: a field term (no neighbours).
        size: the index's number of documents (for the idf).
        weight: the idf's factor (1, or the field weight).
        near, linked, same, reply: the neighbour slots (:data:`NEAR` per document), the
            documents with any, and the two neighbour weights.
        least_norm: the least length norm of any document (for the bound).
        df: the term's document frequency (with neighbours), when known (saved); else
            counted from the postings.

    The bound (MaxScore's) is ``idf × f / (f + least_norm)`` with ``f`` the largest count
    the term has, times ``1 + 2 × same + 2 × reply`` when a document holding it has
    neighbours: no document's part is larger, and it costs no loop over the postings.
    """

    __slots__ = ("numbers", "counts", "norm", "field", "near", "linked", "same", "reply",
                 "df", "idf", "bound", "_lent", "_packed", "_scored")

    def __init__(self, numbers: array, counts: array, norm: tuple[float, float, Sequence[float], float],
                 field: bool,
                 size: int, weight: float, near: array, linked: set[int], same: float, reply: float,
                 least_norm: float, df: int | None = None) -> None:
        self.numbers, self.counts, self.norm, self.field = numbers, counts, norm, field
        self.near, self.linked, self.same, self.reply = near, linked, same, reply
        self._packed: dict[int, int] | None = None
        self._scored: dict[int, float] | None = None
        lent = self._lent = not field and not linked.isdisjoint(numbers)
        if df is None:
            df = len(self.packed()) if lent else len(numbers)
        self.df = df
        self.idf = weight * bm25_idf(size, df)
        most = float(max(counts, default=0)) * ((1 + 2 * same + 2 * reply) if lent else 1)
        self.bound = self.idf * most / (most + least_norm) if most else 0.0

    def packed(self) -> dict[int, int]:
        """Document -> its own count (low bits), same author's neighbours' and others' (high bits)."""
        if self._packed is None:
            own: dict[int, int] = dict(zip(self.numbers, self.counts, strict=True))
            packed = dict(own)
            if not self.field:
                get, near = packed.get, self.near
                for number in self.linked.intersection(own):  # only turns of a conversation have neighbours
                    count, at = own[number], NEAR * number
                    for slot in range(at, at + NEAR):
                        other = near[slot]
                        if other >= 0:
                            shift = _SAME_SHIFT if slot - at < 2 else _OTHERS_SHIFT
                            packed[other] = get(other, 0) + (count << shift)
            self._packed = packed
        return self._packed

    def _score(self, d: int, code: int) -> float:
        f = ((code & _COUNT_MASK) + self.same * ((code >> _SAME_SHIFT) & _COUNT_MASK)
             + self.reply * (code >> _OTHERS_SHIFT))
        k1, b, lengths, average = self.norm
        return self.idf * f / (f + k1 * (1 - b + b * lengths[d] / average))

    def contributions(self) -> dict[int, float]:
        """Document -> this term's part of its score, for every document it scores.

        One expression per posting, inlined: with no neighbour lending, ``f`` is the count
        itself (``count + same × 0 + reply × 0`` is the same float), else :meth:`_score`.
        """
        if self._scored is None:
            if self._lent:
                score = self._score
                self._scored = {d: score(d, code) for d, code in self.packed().items()}
            else:
                idf, (k1, b, lengths, average) = self.idf, self.norm
                c = 1 - b  # ``1 - b + x`` is evaluated as ``(1 - b) + x``
                self._scored = {d: idf * f / (f + k1 * (c + b * lengths[d] / average))
                                for d, f in zip(self.numbers, self.counts, strict=True)}
        return self._scored

    def _count(self, d: int) -> int:
        numbers = self.numbers
        at = bisect_left(numbers, d)
        return self.counts[at] if at < len(numbers) and numbers[at] == d else 0

    def contribution(self, d: int) -> float | None:
        """The term's part of document ``d``'s score, ``None`` when it gives none."""
        if self._scored is not None:
            return self._scored.get(d)
        code = self._count(d)
        if not self.field and d in self.linked:
            at = NEAR * d
            for slot in range(at, at + NEAR):
                other = self.near[slot]
                if other >= 0:
                    # The relation is symmetric, in the same slot class: what ``packed`` lends.
                    code += self._count(other) << (_SAME_SHIFT if slot - at < 2 else _OTHERS_SHIFT)
        return self._score(d, code) if code else None
