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

The sitting prior (:mod:`gitmem.context.sittings`) of a matched document is bounded by
:meth:`~gitmem.context.sittings.Sittings.bound` (whatever terms its sitting holds), added to
the bounds left, and computed exactly for the documents scored exactly.

Every score returned is exact, summed in the order of the exhaustive scorer
(:meth:`RecallIndex.sparse_scores`: BM25 terms sorted, then field terms sorted), so the two
agree to the last bit; every document scoring at least the ``wanted``-th best score is
returned (ties included), and with a floor every document reaching it. A bound is compared
with a relative margin of 1e-9 (the partial sums are taken in another order).
"""

from __future__ import annotations

import heapq
from operator import itemgetter
from typing import TYPE_CHECKING, Protocol

from gitmem.context.analysis import tokenize
from gitmem.context.terms import query_field_terms

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gitmem.context.postings import TermPosting
    from gitmem.context.sittings import Sittings

__all__ = ["ScoredIndex", "top_scores"]


class ScoredIndex(Protocol):
    """What MaxScore reads of an index: :class:`gitmem.context.recall.RecallIndex` is one."""

    def query_postings(self, bm25_terms: Sequence[str],
                       field_terms: Sequence[str]) -> tuple[list[TermPosting], float]:
        """The postings of these terms (those the index has, in this order), and the maximum score."""
        ...

    def sittings(self) -> Sittings:
        """The documents' sittings."""
        ...

_MARGIN = 1e-9


def _reaches(bound: float, threshold: float) -> bool:
    """Whether a score of at most ``bound`` may reach ``threshold`` (margin for rounding)."""
    return bound * (1 + _MARGIN) + 1e-300 >= threshold


def top_scores(index: ScoredIndex, query: str, wanted: int,
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
    prior, prior_of, openers = _sitting_prior(index, postings)
    partial, read, left = _essential(postings, wanted, least, prior)
    left += prior
    priors = prior_of if prior or openers else None
    every = len(read) == len(postings)
    exact = _summed(postings, read, priors).__getitem__ if every else _exact(postings, read, priors)

    scored: dict[int, tuple[float, float]] = {}
    if least > 0 or every:
        for d, p in partial.items():
            if not least or _reaches(p + left, least):
                scored[d] = exact(d)
        return _with_openers(scored, openers, exact, every), maximum, least
    best: list[float] = []  # a min-heap of the ``wanted`` best exact scores
    for d, p in sorted(partial.items(), key=itemgetter(1), reverse=True):  # stable: ties in order
        if len(best) >= wanted and not _reaches(p + left, best[0]):
            break
        bm25, boost = scored[d] = exact(d)
        total = bm25 + boost
        if len(best) < wanted:
            heapq.heappush(best, total)
        elif total > best[0]:
            heapq.heapreplace(best, total)
    return _with_openers(scored, openers, exact, every), maximum, least


def _with_openers(scored: dict[int, tuple[float, float]], openers: set[int],
                  exact: Callable[[int], tuple[float, float]], every: bool) -> dict[int, tuple[float, float]]:
    """``scored`` and every opener with a score (its share is in no bound; all read: all scored)."""
    if not every:
        for d in openers.difference(scored):
            bm25, boost = exact(d)
            if bm25 + boost > 0:
                scored[d] = (bm25, boost)
    return scored


def _exact(postings: list[TermPosting], read: dict[int, dict[int, float]],
           prior_of: Callable[[int, float], float | None] | None) -> Callable[[int], tuple[float, float]]:
    """Document -> its exact ``(bm25, boost)``, summed in the exhaustive scorer's order.

    The terms read are looked up in their contributions, the others by bisection; the
    sitting prior (``prior_of``, ``None``: none) is added to a matched document's BM25.
    """

    def exact(d: int) -> tuple[float, float]:
        bm25 = boost = 0.0
        matched = False
        for j, posting in enumerate(postings):
            found = read.get(j)
            value = found.get(d) if found is not None else posting.contribution(d)
            if value is None:
                continue
            if posting.field:
                boost += value
            else:
                bm25 += value
                matched = True
        if matched and prior_of is not None:
            extra = prior_of(d, bm25)
            if extra is not None:
                bm25 += extra
        return bm25, boost

    return exact


def _summed(postings: list[TermPosting], read: dict[int, dict[int, float]],
            prior_of: Callable[[int, float], float | None] | None) -> dict[int, tuple[float, float]]:
    """Every document's exact ``(bm25, boost)`` when every term was read: term at a time.

    The exhaustive scorer's sums (:meth:`RecallIndex.sparse_scores`: terms in order, then the
    prior of each matched document), the same floats as :func:`_exact`, one dictionary update
    per posting instead of one lookup per term and document.
    """
    bm25: dict[int, float] = {}
    boost: dict[int, float] = {}
    for j, posting in enumerate(postings):
        into = boost if posting.field else bm25
        get = into.get
        for d, value in read[j].items():
            into[d] = get(d, 0.0) + value
    if prior_of is not None:
        for d, own in bm25.items():
            extra = prior_of(d, own)
            if extra is not None:
                bm25[d] += extra
    return {d: (bm25.get(d, 0.0), boost.get(d, 0.0)) for d in bm25.keys() | boost.keys()}


def _sitting_prior(index: ScoredIndex, postings: list[TermPosting],
                   ) -> tuple[float, Callable[[int, float], float | None], set[int]]:
    """The query's sitting prior: its bound, ``(document, its BM25)`` -> its exact prior, the openers.

    The sitting's part is bounded by :meth:`~gitmem.context.sittings.Sittings.bound`. An
    opener's share of its own BM25 is in no bound: the openers (one per one-speaker sitting)
    are each scored exactly (:func:`top_scores`).
    """
    sittings = index.sittings()
    own = [(p.numbers, p.counts) for p in postings if not p.field]
    idfs = sittings.idfs(own) if sittings.count and own else []
    bound = sittings.bound(own, idfs) if any(idfs) else 0.0  # no document's prior is larger
    openers = sittings.openers if own else set()
    return bound, lambda d, bm25: sittings.prior(d, bm25, own, idfs), openers


def _essential(postings: list[TermPosting], wanted: int, least: float,
               prior: float) -> tuple[dict[int, float], dict[int, dict[int, float]], float]:
    """Read the essential terms, highest bound first: ``(partial scores, terms read, bounds left)``.

    A term is read while a document holding none of the terms read so far could still
    reach the threshold (``least``, else the ``wanted``-th best partial score) with the
    bounds of the terms left and ``prior``, the bound of the sitting prior.
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
        if pos and threshold > 0 and not _reaches(rest[pos] + prior, threshold):
            return partial, read, rest[pos]
        contributions = read[j] = postings[j].contributions()
        if not partial:
            partial = dict(contributions)  # ``0.0 + value`` is ``value``: a C copy
            continue
        get = partial.get
        for d, value in contributions.items():
            partial[d] = get(d, 0.0) + value
    return partial, read, 0.0
