"""The raw postings arithmetic of :class:`gitmem.context.recall.RecallIndex`: idf, columns, ranks.

Kept apart from the scoring so that each module stays small; every function here is exact
(integer counts, the same float expressions as the scorer's documentation states).
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gitmem.context.analysis import tokenize
from gitmem.context.terms import NO_TIME, time_key
from gitmem.context.terms import date_column as _date_column

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["NEAR", "append", "bm25_idf", "columns", "linked", "ranks", "words"]

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
