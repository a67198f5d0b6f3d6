"""MaxScore top-k scoring of a :class:`gitmem.context.recall.RecallIndex`: exact scores, fewer postings.

H. Turtle, J. Flood, "Query evaluation: strategies and optimizations", Information
Processing & Management 31(6), 1995. Each query term (BM25 terms and field terms alike) has
an upper bound, the largest contribution it makes to any document (:meth:`RecallIndex.bound`).
Terms are taken by bound, highest first, term at a time; once the bounds of the terms left
sum below the threshold a document must reach (the ``wanted``-th best partial score, a lower
bound of the final one; with a relevance floor, the least score of a match), no document
outside the postings read so far can reach it: the terms left are *non-essential*, looked up
(bisection in their postings) only for the candidates whose partial score plus the bounds
left can still reach the threshold, best upper bound first.

Every score returned is exact, summed in the order of the exhaustive scorer
(:meth:`RecallIndex.sparse_scores`: BM25 terms sorted, then field terms sorted), so the two
agree to the last bit; every document scoring at least the ``wanted``-th best score is
returned (ties included), and with a floor every document reaching it. A bound is compared
with a relative margin of 1e-9 (the partial sums are taken in another order).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from gitmem.context.analysis import tokenize
from gitmem.context.terms import query_field_terms

if TYPE_CHECKING:
    from gitmem.context.postings import TermPosting
    from gitmem.context.recall import RecallIndex

__all__ = ["top_scores"]

_MARGIN = 1e-9


def _reaches(bound: float, threshold: float) -> bool:
    """Whether a score of at most ``bound`` may reach ``threshold`` (margin for rounding)."""
    return bound * (1 + _MARGIN) + 1e-300 >= threshold


def top_scores(index: RecallIndex, query: str, wanted: int,
               floor: float) -> tuple[dict[int, tuple[float, float]], float, float]:
    """The exact scores of the documents that may be among the ``wanted`` best of ``query``.

    Args:
        index: the recall index (scores by document number, not bound position).
        query: free text.
        wanted: how many best documents, >= 1.
        floor: a relevance floor (0: none): every document whose score reaches ``least``,
            half of it times the maximum, is returned, whatever ``wanted``.

    Returns:
        ``(scored, maximum, least)``: document number -> ``(bm25, boost)`` (only documents
        with a score above 0; among them every one scoring at least the ``wanted``-th best
        score, and with a floor every one reaching ``least``), the query's maximum BM25
        score, and ``least``.
    """
    bm25_terms = sorted(set(tokenize(query)))
    field_terms = sorted(query_field_terms(query))
    postings, maximum = index.query_postings(bm25_terms, field_terms)
    least = floor / 2 * maximum
    if not postings:
        return {}, maximum, least
    partial, read, left = _essential(postings, wanted, least)

    def exact(d: int) -> tuple[float, float]:
        bm25 = boost = 0.0
        for j, posting in enumerate(postings):
            found = read.get(j)
            value = found.get(d) if found is not None else posting.contribution(d)
            if value is None:
                continue
            if posting.field:
                boost += value
            else:
                bm25 += value
        return bm25, boost

    scored: dict[int, tuple[float, float]] = {}
    if least > 0 or len(read) == len(postings):
        for d, p in partial.items():
            if not least or _reaches(p + left, least):
                scored[d] = exact(d)
        return scored, maximum, least
    best: list[float] = []  # a min-heap of the ``wanted`` best exact scores
    for d, p in sorted(partial.items(), key=lambda item: -item[1]):
        if len(best) >= wanted and not _reaches(p + left, best[0]):
            break
        bm25, boost = scored[d] = exact(d)
        total = bm25 + boost
        if len(best) < wanted:
            heapq.heappush(best, total)
        elif total > best[0]:
            heapq.heapreplace(best, total)
    return scored, maximum, least


def _essential(postings: list[TermPosting], wanted: int,
               least: float) -> tuple[dict[int, float], dict[int, dict[int, float]], float]:
    """Read the essential terms, highest bound first: ``(partial scores, terms read, bounds left)``.

    A term is read while a document holding none of the terms read so far could still
    reach the threshold (``least``, else the ``wanted``-th best partial score).
    """
    order = sorted(range(len(postings)), key=lambda j: (-postings[j].bound, j))
    rest = [0.0] * (len(order) + 1)
    for pos in range(len(order) - 1, -1, -1):
        rest[pos] = rest[pos + 1] + postings[order[pos]].bound
    partial: dict[int, float] = {}
    read: dict[int, dict[int, float]] = {}
    for pos, j in enumerate(order):
        if least > 0:
            threshold = least
        elif len(partial) >= wanted:
            threshold = heapq.nlargest(wanted, partial.values())[-1]
        else:
            threshold = 0.0
        if pos and threshold > 0 and not _reaches(rest[pos], threshold):
            return partial, read, rest[pos]
        contributions = read[j] = postings[j].contributions()
        get = partial.get
        for d, value in contributions.items():
            partial[d] = get(d, 0.0) + value
    return partial, read, 0.0
