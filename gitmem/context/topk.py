"""The best ``limit`` hits of a recall without ordering, or building a record for, every match.

:func:`gitmem.context.recall.rank_memories` with a ``limit`` sorts every memory with affinity
to the query (about two thirds of the store for common words) and builds a record view for
each. The hits it returns need less: the ``limit`` best in its order, and each hit's ranks
among all the matches, which are counts (a competition rank is 1 + how many matches have a
strictly better key). :func:`best` gives exactly the same hits: the order of the matches is
taken only as far as the first ``limit`` that are not skipped (matches whose score reaches
the score of the ``m``-th best, ``m`` doubled until enough are left after ``skip``), and the
ranks are counted by bisection in the sorted scores and verification times (C sorts of
floats and integers, no key function). A memory's record view is built only for those
first hits (and for ``skip`` on them).

Its order is the exhaustive one's, by construction: score (highest first), then the
recency rank (a monotone function of the last verification, newest first, none last), then
id; the near-tie step (:func:`gitmem.context.similarity.newer_first_among_near_ties`) then
runs on the same head. ``tests/test_topk.py`` compares both on random and real stores.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitmem.context.hits import Hit
    from gitmem.record.models import Memory

__all__ = ["ByRow", "best", "matching"]


class ByRow:
    """Memory -> its last verification (microseconds or ``None``), from a column by row.

    Callable on a record (what :func:`gitmem.context.recall.rank_memories` takes as
    ``verified``); :meth:`by_id` answers from the id alone, and :func:`best` reads the
    column by the rows of a :class:`gitmem.cache.table.RowViews` of the same table, so that
    the recency of every match costs no record and no id lookup.

    Args:
        column: per row its effective last verification in microseconds, ``None`` for none.
        row_of: memory id -> its row, ``None`` for none.
    """

    def __init__(self, column: Sequence[int | None], row_of: Callable[[str], int | None]) -> None:
        self.column = column
        self.row_of = row_of

    def __call__(self, memory: Any) -> int | None:
        """The verification of ``memory`` (anything with an ``id``)."""
        return self.by_id(memory.id)

    def by_id(self, memory_id: str) -> int | None:
        """The verification of the memory with this id, ``None`` when unknown."""
        row = self.row_of(memory_id)
        return self.column[row] if row is not None else None


def best(memories: Sequence[Memory], index: Any, query: str, floor: float, limit: int,
         skip: Callable[[Memory], bool] | None,
         verified: Callable[[Memory], int | None] | None, *, near_tie: float,
         own_verified: Callable[[Memory], int | None],
         stale_reason: Callable[[Memory], str | None]) -> list[Hit]:
    """The first ``limit`` hits of :func:`gitmem.context.recall.rank_memories`, the same ones.

    Scores come from :func:`gitmem.context.maxscore.top_scores` (exact, for the documents
    that may be among the ``wanted`` best; ``wanted`` doubled until enough are left after
    ``skip``); the matches (for the recency ranks) from :func:`matching`, or with a floor
    the documents reaching it, which ``top_scores`` scores all.

    Args:
        memories: the candidates, by position (a :class:`gitmem.cache.table.RowViews` is
            read from its columns where it can be).
        index: their recall index, bound to their order.
        query: free text.
        floor: the relevance floor of ``rank_memories``.
        limit: how many hits, >= 1.
        skip: memories left out before ``limit`` is applied, as ``rank_memories`` takes it.
        verified: memory -> its last verification in microseconds (a :class:`ByRow` is read
            by id), ``None``: the record's own (``own_verified``).
        near_tie: the near-tie fraction of :data:`gitmem.context.recall.NEAR_TIE`.
        own_verified: a record's own last verification in microseconds.
        stale_reason: why a stale record is stale.
    """
    from gitmem.context.hits import Hit
    from gitmem.context.maxscore import top_scores
    from gitmem.context.similarity import newer_first_among_near_ties
    from gitmem.vocabulary import Status

    if not index.size:
        return []
    rows, table = getattr(memories, "rows", None), getattr(memories, "table", None)
    if rows is not None and table is not None:
        table_ids = table.ids
        id_of: Callable[[int], str] = lambda i: table_ids[rows[i]]  # noqa: E731
    else:
        id_of = lambda i: memories[i].id  # noqa: E731
    time_of, times_of = _recency(memories, rows, id_of, verified, own_verified)
    wanted = limit
    pool: Any = None
    times: list[int] = []
    at: dict[int, int | None] = {}
    total: dict[int, float] = {}

    def recency_rank(i: int) -> int:
        t = at[i]
        return len(pool) + 1 if t is None else 1 + len(times) - bisect_right(times, t)

    def key(i: int) -> tuple[float, int, str]:
        return (-total[i], recency_rank(i), id_of(i))

    while True:
        scored, maximum, least = top_scores(index, query, wanted, floor)
        positions = index.positions  # after the query: a damaged saved index is built again by it
        if positions is not None:
            scored = {positions[d]: v for d, v in scored.items()}
        total = {i: b + f for i, (b, f) in scored.items() if b + f > 0 and b + f >= least}
        # The floor: nothing when even the best is below it, else every hit over half of it.
        if not total or (floor and max(total.values()) < floor * maximum):
            return []
        if pool is None:
            pool = set(total) if least > 0 else matching(index, query)
            times = sorted([t for t in times_of(pool) if t is not None])
        scores = sorted(total.values())
        at = {i: time_of(i) for i in total}
        # Every match scoring at least the ``wanted``-th best score, ties included: the head
        # of the full order is among them (``top_scores`` scored all of those).
        cut = scores[max(0, len(scores) - wanted)]
        head = sorted((i for i in total if total[i] >= cut), key=key)
        if skip is not None:
            head = [i for i in head if not skip(memories[i])]
        if len(head) >= limit or wanted >= len(pool):
            break
        wanted *= 2
    head = head[:limit]
    order = newer_first_among_near_ties(head, lambda i: memories[i].content, total, recency_rank,
                                        len(head), near_tie)
    hits = []
    for i in order:
        memory = memories[i]
        bm25, boost = scored[i]
        ranks = {"bm25": 1 + len(scores) - bisect_right(scores, total[i]),
                 "recency": None if at[i] is None else recency_rank(i)}
        stale = memory.status is Status.STALE
        hits.append(Hit(memory, total[i], ranks, stale, bm25, boost,
                        stale_reason(memory) if stale else None,
                        relevance=total[i] / maximum if maximum else 0.0))
    return hits


def _recency(memories: Sequence[Memory], rows: Sequence[int] | None, id_of: Callable[[int], str],
             verified: Callable[[Memory], int | None] | None,
             own_verified: Callable[[Memory], int | None],
             ) -> tuple[Callable[[int], int | None], Callable[[Iterable[int]], Iterable[int | None]]]:
    """Position -> its last verification, and positions -> theirs (C maps where it can)."""
    if isinstance(verified, ByRow) and rows is not None:
        column = verified.column  # the rows of a RowViews are the column's
        # C maps, no Python frame per match: the recency of every match is read.
        return (lambda i: column[rows[i]],
                lambda ps: map(column.__getitem__, map(rows.__getitem__, ps)))
    time_of: Callable[[int], int | None]
    if isinstance(verified, ByRow):
        by_id = verified.by_id
        time_of = lambda i: by_id(id_of(i))  # noqa: E731
    else:
        recency = verified or own_verified
        time_of = lambda i: recency(memories[i])  # noqa: E731
    return time_of, lambda ps: map(time_of, ps)


def matching(index: Any, query: str) -> set[int]:
    """The positions in ``index`` (a recall index, in its bound order) of documents with a score.

    Those :meth:`RecallIndex.sparse_scores` gives a score above 0, found as a union of the
    query terms' postings (with the neighbours of the documents holding them) and of its
    field terms' postings: no score is computed. Every document in the union has a score
    above 0 (an idf and a count above 0 in each term's part), so the two sets are equal.
    """
    from gitmem.context.analysis import tokenize
    from gitmem.context.postings import NEAR
    from gitmem.context.terms import query_field_terms

    found: set[int] = set()
    near, linked = index.near, index._linked
    terms, fields = sorted(set(tokenize(query))), sorted(query_field_terms(query))
    index.fetch(terms, fields)
    for postings, keys in ((index.terms, terms), (index.fields, fields)):
        for key in keys:
            posting = postings.get(key)
            if posting is None:
                continue
            numbers = array("i")
            numbers.frombytes(posting[0])
            found.update(numbers)
            if postings is index.terms:
                for number in linked.intersection(numbers):
                    found.update(x for x in near[NEAR * number:NEAR * number + NEAR] if x >= 0)
    positions = index.positions
    return found if positions is None else set(map(positions.__getitem__, found))
