"""Query-time recall: BM25 over each memory and its neighbours, plus a boost for named fields.

Terms come from :mod:`gitmem.context.analysis` (identifier parts, English stop words, Snowball
stems). A memory's score for a query is

    score(d) = BM25(q, d⁺) + FIELD_WEIGHT × BM25(q_fields, fields(d))

- **BM25**: S. Robertson, H. Zaragoza, "The Probabilistic Relevance Framework: BM25 and
  Beyond", Foundations and Trends in IR 3(4), 2009, in Lucene's form (idf ``ln(1 + (N - df +
  0.5) / (df + 0.5))``, never negative, no ``k1 + 1`` factor), each distinct query term once,
  with ``k1`` = :data:`BM25_K1` and ``b`` = :data:`BM25_B`: memories are short, a term said
  twice says little more, and their length says little about their topic.
- **d⁺, neighbour expansion, for turns of a conversation only**: the memory's own terms (its
  content and the month and year it was observed, ``may 2023``) plus :data:`REPLY_WEIGHT` ×
  the terms of the memory observed just before it and the one just after it when that one
  is a reply (the turn it answers, the answer it got): by another known author, in the same
  sitting, and neither of the two anchored to a file (an anchored memory is about its code).
  A short turn ("Yes, last Friday!") is found by the words of what it answers. A memory with
  a reply is a turn of a conversation; between two such turns by the same author, observed
  just before and just after each other, :data:`NEIGHBOUR_WEIGHT` × the other's terms too.
  One author's memories with no reply between them (an agent's facts learned in one
  sitting, a user's turns without the answers) lend each other nothing: they are separate
  statements, and an unrelated one must not be recalled on its neighbour's words. The same
  sitting: observed within :data:`NEIGHBOUR_WINDOW_US` of each other; memories observed at
  the same instant (an import of many at once) are not neighbours by the same author.
  Document frequencies and lengths are those of d⁺.
- **Field boost**: BM25 of the query's lowercase words (and their terms) over the memory's
  field values (:func:`gitmem.context.terms.field_terms`: the code identifiers its content
  names, its anchor's path, its author's name), weighted :data:`FIELD_WEIGHT`: a question
  about "Caroline" or ``ctx.obj`` favours the memories stated by Caroline or naming
  ``ctx.obj`` over ones that merely share its other words.
- **Sitting prior** (:mod:`gitmem.context.sittings`): a memory that matches the query and
  belongs to a sitting (one author's unanchored memories observed one after another, at most
  an hour apart: a chat session) also scores a weighted BM25 of its whole sitting, so that a
  turn of the session about the question outranks an equal turn elsewhere; the first memory
  of a sitting of one speaker alone (no reply: a user's side of chat sessions) also scores
  half its own BM25 (the opener: a session's first message states the request).

Score fusion of the two, not rank fusion: RRF (Cormack et al., SIGIR 2009) and a character
trigram ranker were measured on the development sets and added nothing once BM25 had these
parameters (``bench/bench_recall.py``; figures in docs/wake-recall.md), so they were dropped.

**Relevance** of a hit: its score over the query's maximum BM25 score, the sum of the idf of
its distinct terms (a term no memory has counts with ``df = 1``): what a memory holding every
query term would score, saturation aside. :data:`RELEVANCE_FLOOR` is the relevance the best memory must
reach for ``tur hook pre-turn`` to inject anything (a prompt about another project shares a
few common words with the store and little else), and twice what every memory it injects has.

Parameters were tuned on development data only (``../shared/eval/``: three LoCoMo
conversations, half of LongMemEval_S, the docstrings of click and attrs queried by their later
commit subjects, with the other project's subjects as prompts where nothing is relevant), at
values where the figures are flat; see docs/wake-recall.md.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import Counter as Multiset
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gitmem.context import analysis
from gitmem.context.analysis import tokenize
from gitmem.context.entry import RECALL_FORMATS, format_hits
from gitmem.context.hits import Hit, RecallResult
from gitmem.context.payload import query_from_payload
from gitmem.context.postings import NEAR as _NEAR
from gitmem.context.postings import TermPosting
from gitmem.context.postings import append as _append
from gitmem.context.postings import bm25_idf as _bm25_idf
from gitmem.context.postings import columns as _columns
from gitmem.context.postings import linked as _linked
from gitmem.context.postings import ranks as _ranks
from gitmem.context.postings import words as _words
from gitmem.context.sittings import Sittings
from gitmem.context.terms import NO_TIME, date_words, field_terms, query_field_terms
from gitmem.defaults import PREVIEW_CHARS, RECALL_TOP_K
from gitmem.errors import InvalidInput
from gitmem.record.anchors import covered_lines
from gitmem.record.decay import microseconds
from gitmem.record.relations import superseded_by
from gitmem.vocabulary import RelationType, Status

if TYPE_CHECKING:
    from datetime import datetime

    from gitmem.record.models import Memory

__all__ = [
    "BM25_B",
    "BM25_K1",
    "FIELD_WEIGHT",
    "INDEX_VERSION",
    "NEIGHBOUR_WEIGHT",
    "NEIGHBOUR_WINDOW_US",
    "REPLY_WEIGHT",
    "RELEVANCE_FLOOR",
    "Hit",
    "RecallIndex",
    "RecallResult",
    "date_words",
    "index_columns",
    "query_from_payload",
    "observed_times",
    "rank_memories",
    "recall",
    "select_candidates",
    "tokenize",
]

BM25_K1 = 0.6
"""BM25 term-frequency saturation (Robertson & Zaragoza 2009); see the module docstring."""
BM25_B = 0.2
"""BM25 document-length normalisation, 0 (none) to 1 (full); see the module docstring."""
NEIGHBOUR_WEIGHT = 0.1
"""Weight of the terms of a neighbour by the same author in a memory's BM25 document."""
REPLY_WEIGHT = 0.4
"""Weight of the terms of a neighbour by another author in a memory's BM25 document."""
NEIGHBOUR_WINDOW_US = 3_600_000_000
"""Neighbours are observed at most this far apart (an hour, in microseconds): one sitting."""
FIELD_WEIGHT = 2.0
"""Weight of the field boost against the BM25 score (module docstring)."""
RELEVANCE_FLOOR = 0.2
"""Relevance (score over the query's maximum BM25 score) the best memory must reach for a
pre-turn hook to inject any; each one injected then has at least half of it (module docstring;
calibrated in docs/wake-recall.md)."""
INDEX_VERSION = (f"{analysis.VERSION}/bm25-lucene-k1={BM25_K1}-b={BM25_B}/month-year"
                 f"/neighbours-{NEIGHBOUR_WEIGHT}-{REPLY_WEIGHT}-{NEIGHBOUR_WINDOW_US}us-conversations/fields-1"
                 "/term-rows-4")
"""Names what a :class:`RecallIndex` holds; a stored index of another version is never used."""

NEAR_TIE = 0.25
"""Near-duplicate hits whose BM25 scores are within this fraction of the higher one are a
near-tie: the newer ranks first (:func:`gitmem.context.similarity.newer_first_among_near_ties`)."""
NEAR_TIE_WINDOW = 10
"""Without a limit, near-ties are looked for among the first this many hits (else the limit)."""

TOPK_SCORING = True
"""Whether a recall with a limit orders only its best matches (:mod:`gitmem.context.topk`, the
same hits); ``False``: every match is sorted (what ``tests/test_topk.py`` and the bench compare)."""



class RecallIndex:
    """BM25 and field postings of a list of documents, for scoring without re-indexing.

    Raw postings, so that an index follows a write by the documents it changed
    (:meth:`derive`) instead of being built again: per BM25 term the documents holding it
    and how often, each document's length; per field term the same. Neighbours (module
    docstring) are found from the observation times and authors whenever the documents
    change, and expanded at query time, for the query's terms only. Scores are in float64.
    The payload is plain bytes and strings (see :mod:`gitmem.cache`), stamped with
    :data:`INDEX_VERSION`.

    Documents are numbered in the order they were indexed; :meth:`derive` appends new ones
    and leaves holes where it removes some (``ids[d] == ""``). :meth:`bind` maps the
    documents to the positions of a candidate list, in which order every score list is given.

    Args:
        ids, texts, dates: per document its memory id, content and observation month and
            year (:func:`date_words`); ``""`` for a hole.
        times: per document its observation time (:func:`gitmem.context.terms.time_key`),
            an ``array("q")``.
        authors, refs: per document its author and anchor (``path#Lx-Ly``); ``""`` for none.
        lengths, flengths: per document its number of BM25 terms and of field terms.
        terms, fields: term -> (document numbers, counts), each an ``array("i")`` as bytes,
            documents ascending.
        near: per document :data:`_NEAR` neighbour numbers (``-1``: none), ``None`` to find them.
        expanded: per document its length with its neighbours' terms (``array("d")``, what
            :meth:`_expanded_lengths` gives for ``near``), ``None`` to compute it.
    """

    VERSION = INDEX_VERSION

    def __init__(self, ids: list[str], texts: list[str], dates: list[str], times: array,
                 authors: list[str], refs: list[str], lengths: array, flengths: array,
                 terms: dict[str, tuple[bytes, bytes]], fields: dict[str, tuple[bytes, bytes]],
                 near: array | None = None, expanded: array | None = None) -> None:
        self.ids = ids
        self.texts = texts
        self.dates = dates
        self.times = times
        self.authors = authors
        self.refs = refs
        self.lengths = lengths
        self.flengths = flengths
        self.terms = terms
        self.fields = fields
        self.size = len(ids) - ids.count("")
        self.near = near if near is not None else self._neighbours()
        self.positions: array | None = None  # document -> candidate position; None: the same
        self._expanded = expanded if expanded is not None and near is not None else self._expanded_lengths()
        self._scoring()

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, documents: Sequence[str],
              observed: Sequence[datetime | str | None] | None = None, *,
              ids: Sequence[str] | None = None, authors: Sequence[str | None] | None = None,
              refs: Sequence[str | None] | None = None) -> RecallIndex:
        """Index ``documents``.

        Args:
            documents: the texts.
            observed: each document's observation time (its month and year are BM25 terms
                of the document, and its neighbours are found by it); ``None``: the texts alone.
            ids: the memory id of each document (what :meth:`bind` and :meth:`derive`
                match); default their positions.
            authors: who stated each document (``Name <email>``), ``None`` where unknown.
            refs: each document's anchor (``path`` or ``path#Lx-Ly``), ``None`` for none.
        """
        n = len(documents)
        index = cls([], [], [], array("q"), [], [], array("i"), array("i"), {}, {}, array("i"))
        index._add(list(ids) if ids is not None else [str(i) for i in range(n)], list(documents),
                   *_columns(n, observed, authors, refs))
        index._reindexed()
        return index

    def _add(self, ids: list[str], documents: list[str], dates: list[str], times: list[int],
             authors: list[str], refs: list[str]) -> None:
        """Append documents (numbered after the last one) to the postings."""
        terms: dict[str, tuple[array, array]] = {}
        fields: dict[str, tuple[array, array]] = {}
        first = len(self.ids)
        for number, (text, when, author, ref) in enumerate(
                zip(documents, dates, authors, refs, strict=True), start=first):
            words = _words(text, when)
            for term, count in Multiset(words).items():
                _append(terms, term, number, count)
            values = field_terms(text, author, ref)
            for term, count in Multiset(values).items():
                _append(fields, term, number, count)
            self.lengths.append(len(words))
            self.flengths.append(len(values))
        for column, added_values in ((self.ids, ids), (self.texts, documents), (self.dates, dates),
                                     (self.authors, authors), (self.refs, refs)):
            column.extend(added_values)
        self.times.extend(times)
        for own, added in ((self.terms, terms), (self.fields, fields)):
            while added:  # popped as they are copied, so that each posting is held once
                key, (numbers, counts) = added.popitem()
                old = own.get(key)
                own[key] = ((old[0] + numbers.tobytes(), old[1] + counts.tobytes()) if old
                            else (numbers.tobytes(), counts.tobytes()))
        self.size += sum(1 for memory_id in ids if memory_id)

    def _remove(self, number: int) -> None:
        """Take document ``number`` out of the postings, leaving a hole."""
        text = self.texts[number]
        for own, keys in ((self.terms, set(_words(text, self.dates[number]))),
                          (self.fields, set(field_terms(text, self.authors[number], self.refs[number])))):
            for key in keys:
                found = own.get(key)
                if found is None:
                    continue
                numbers, counts = array("i"), array("i")
                numbers.frombytes(found[0])
                counts.frombytes(found[1])
                at = bisect_left(numbers, number)
                if at < len(numbers) and numbers[at] == number:
                    del numbers[at]
                    del counts[at]
                    if numbers:
                        own[key] = (numbers.tobytes(), counts.tobytes())
                    else:
                        del own[key]
        for column in (self.ids, self.texts, self.dates, self.authors, self.refs):
            column[number] = ""
        self.times[number] = NO_TIME
        self.lengths[number] = 0
        self.flengths[number] = 0
        self.size -= 1

    def _reindexed(self) -> None:
        """Find the neighbours and expanded lengths again, after documents were added or removed."""
        self.near = self._neighbours()
        self._expanded = self._expanded_lengths()
        self._scoring()

    def _scoring(self) -> None:
        """What every query's scoring shares: each document's neighbours and BM25 length norm.

        The norm is ``k1 × (1 − b + b × |d⁺| / avg |d⁺|)``, the average summed by
        :func:`math.fsum` (the same whatever order the documents are in).
        """
        # Only the averages here (C loops over the arrays): a loaded index costs no Python loop
        # over its documents, and a query computes the norms of the documents it scores.
        self._linked = _linked(self.near)
        self._postings: dict[tuple[bool, str], TermPosting] = {}  # the terms scored so far
        self._sittings: Sittings | None = None  # found at the first query (gitmem.context.sittings)
        self._average = ((math.fsum(self._expanded) / self.size) if self.size else 1.0) or 1.0
        self._faverage = ((sum(self.flengths) / self.size) if self.size else 1.0) or 1.0
        # The least norms bound every term's part of a score (MaxScore, gitmem.context.maxscore).
        self._least_norm = BM25_K1 * (1 - BM25_B + BM25_B * min(self._expanded, default=0.0) / self._average)
        self._least_fnorm = BM25_K1 * (1 - BM25_B + BM25_B * min(self.flengths, default=0) / self._faverage)

    def sittings(self) -> Sittings:
        """The documents' sittings (:mod:`gitmem.context.sittings`), found at the first query."""
        if self._sittings is None:
            self._sittings = Sittings.found(self.ids, self.authors, self.refs, self.times, self.lengths,
                                            self._linked)
        return self._sittings

    def norm(self, d: int) -> float:
        """Document ``d``'s BM25 length norm ``k1 × (1 − b + b × |d⁺| / avg |d⁺|)``."""
        return BM25_K1 * (1 - BM25_B + BM25_B * self._expanded[d] / self._average)

    def fnorm(self, d: int) -> float:
        """Document ``d``'s length norm over its field values, as :meth:`norm`."""
        return BM25_K1 * (1 - BM25_B + BM25_B * self.flengths[d] / self._faverage)

    def _neighbours(self) -> array:
        """Each document's neighbours (module docstring), :data:`_NEAR` numbers each, ``-1`` for none.

        Order is by observation time, then memory id, so that an index derived from another
        finds the same neighbours as one built at once. The relation is symmetric.
        """
        near = array("i", [-1]) * (_NEAR * len(self.ids))
        if len(set(self.authors).difference(("",))) < 2:
            return near  # a reply takes two authors, and one author's neighbours take a reply
        timed = sorted((t, self.ids[d], d) for d, t in enumerate(self.times)
                       if t != NO_TIME and self.ids[d])
        order = [d for _, _, d in timed]
        authors, times = self.authors, self.times
        by_author: dict[str, list[int]] = {}
        for d in order:
            by_author.setdefault(authors[d], []).append(d)
        window, refs = NEIGHBOUR_WINDOW_US, self.refs
        for a, b in zip(order, order[1:], strict=False):
            # A reply: the next memory, by someone else, in the same sitting, both about no
            # file (an anchored memory is about its code, not an answer to what came before).
            if (authors[a] != authors[b] and authors[a] and authors[b] and not refs[a] and not refs[b]
                    and times[b] - times[a] <= window):
                near[_NEAR * a + 3] = b
                near[_NEAR * b + 2] = a

        def in_conversation(d: int) -> bool:
            return near[_NEAR * d + 2] >= 0 or near[_NEAR * d + 3] >= 0

        for run in by_author.values():
            for a, b in zip(run, run[1:], strict=False):
                # Only turns of a conversation lend each other terms: one author's memories
                # learned in one sitting are separate facts. Observed at once (an import) is
                # neither before nor after; an hour later, another sitting.
                if (times[a] != times[b] and times[b] - times[a] <= window
                        and in_conversation(a) and in_conversation(b)):
                    near[_NEAR * a + 1] = b
                    near[_NEAR * b] = a
        return near

    def _expanded_lengths(self) -> array:
        """Each document's length with its neighbours' terms (d⁺ of the module docstring)."""
        lengths, near = self.lengths, self.near
        # A document with no neighbour is its own length (``n + w × 0 + r × 0`` is ``float(n)``):
        # a C copy; only turns of a conversation are summed.
        out = array("d", lengths)
        for d in _linked(near):
            at = _NEAR * d
            same = sum(lengths[other] for other in near[at:at + 2] if other >= 0)
            others = sum(lengths[other] for other in near[at + 2:at + 4] if other >= 0)
            out[d] = lengths[d] + NEIGHBOUR_WEIGHT * same + REPLY_WEIGHT * others
        return out

    def bm25_scores(self, query: str) -> list[float]:
        """The BM25 part of :meth:`scores`."""
        return self.scores(query)[0]

    def derive(self, ids: Sequence[str], documents: Sequence[str],
               observed: Sequence[datetime | str | None],
               authors: Sequence[str | None] | None = None,
               refs: Sequence[str | None] | None = None) -> RecallIndex:
        """The index of these documents, from this one: only the documents that differ are indexed.

        Scores equal those of :meth:`build` of the same documents (bound to the same
        order). When most documents differ, or too many holes would be left, it is built.
        """
        dates, times, who, where = _columns(len(documents), observed, authors, refs)
        at = {i: d for d, i in enumerate(self.ids) if i}
        kept: set[int] = set()
        added = []
        for k, memory_id in enumerate(ids):
            d = at.get(memory_id)
            if d is not None and self.texts[d] == documents[k] and self.times[d] == times[k] \
                    and self.authors[d] == who[k] and self.refs[d] == where[k]:
                kept.add(d)
            else:
                added.append(k)
        removed = [d for d in at.values() if d not in kept]
        holes = len(self.ids) - self.size + len(removed)
        if len(removed) + len(added) > max(64, len(ids) // 4) or holes > max(64, len(ids) // 4):
            return RecallIndex.build(documents, observed, ids=ids, authors=authors, refs=refs)
        index = RecallIndex(list(self.ids), list(self.texts), list(self.dates), array("q", self.times),
                            list(self.authors), list(self.refs), array("i", self.lengths),
                            array("i", self.flengths), dict(self.terms), dict(self.fields), self.near)
        for number in removed:
            index._remove(number)
        index._add([ids[k] for k in added], [documents[k] for k in added], [dates[k] for k in added],
                   [times[k] for k in added], [who[k] for k in added], [where[k] for k in added])
        index._reindexed()
        return index

    def bind(self, ids: Sequence[str]) -> RecallIndex:
        """Give scores in the order of ``ids``, the candidates; return this index.

        Raises:
            ValueError: the index's documents are not exactly these candidates.
        """
        if len(ids) != self.size:
            raise ValueError("index of another document list")
        if self.ids == (ids if isinstance(ids, list) else list(ids)):
            self.positions = None
            return self
        at = {memory_id: k for k, memory_id in enumerate(ids)}
        positions = array("i", [at.get(memory_id, -1) if memory_id else -1 for memory_id in self.ids])
        if len(at) != len(ids) or sorted(p for p in positions if p >= 0) != list(range(len(ids))):
            raise ValueError("index of another document list")
        self.positions = positions
        return self

    # -- storing ----------------------------------------------------------------------------

    def to_payload(self) -> dict[str, Any]:
        """The index as marshal-able plain values."""
        return {
            "version": self.VERSION,
            "ids": self.ids, "texts": self.texts, "dates": self.dates, "times": self.times.tobytes(),
            "authors": self.authors, "refs": self.refs,
            "lengths": self.lengths.tobytes(), "flengths": self.flengths.tobytes(),
            "terms": self.terms, "fields": self.fields, "near": self.near.tobytes(),
            "expanded": self._expanded.tobytes(),
            "sittings": [column.tobytes() for column in self.sittings().arrays()],
        }

    @classmethod
    def from_payload(cls, payload: Any, size: int | None = None) -> RecallIndex:
        """Rebuild an index from :meth:`to_payload`'s value, checking its shape.

        Raises:
            ValueError, TypeError, KeyError: not an index of ``size`` documents (when given),
                or of another :data:`INDEX_VERSION`.
        """
        if not isinstance(payload, dict) or payload.get("version") != cls.VERSION:
            raise ValueError("index of another version")
        columns = [payload[name] for name in ("ids", "texts", "dates", "authors", "refs")]
        terms, fields = payload["terms"], payload["fields"]
        if not all(isinstance(x, list) for x in columns) or \
                not isinstance(terms, dict) or not isinstance(fields, dict):
            raise TypeError("ids, texts, dates, authors, refs, terms and fields")
        lengths, flengths, near, times, expanded = array("i"), array("i"), array("i"), array("q"), array("d")
        expanded.frombytes(payload["expanded"])
        times.frombytes(payload["times"])
        lengths.frombytes(payload["lengths"])
        flengths.frombytes(payload["flengths"])
        near.frombytes(payload["near"])
        n = len(columns[0])
        if not all(len(c) == n for c in columns) or not len(lengths) == len(flengths) == len(times) == n \
                or len(near) != _NEAR * n or len(expanded) != n \
                or (n and not -1 <= min(near) <= max(near) < n):
            raise ValueError("inconsistent arrays")
        ids, texts, dates, authors, refs = columns
        index = cls(ids, texts, dates, times, authors, refs, lengths, flengths, terms, fields, near, expanded)
        if size is not None and index.size != size:
            raise ValueError("index of another document list")
        return index

    # -- scoring ----------------------------------------------------------------------------

    def query_postings(self, bm25_terms: Sequence[str],
                       field_terms: Sequence[str]) -> tuple[list[TermPosting], float]:
        """The postings of these BM25 and field terms (those the index has, in this order), and the maximum.

        The maximum BM25 score is the sum of the BM25 terms' idf, in their order (a term no
        document has counts with ``df = 1``). Postings are kept for the index's next query
        (``tur mcp``); a saved index reads only these terms' rows (:meth:`fetch`).
        """
        self.fetch(bm25_terms, field_terms)
        out: list[TermPosting] = []
        maximum = 0.0
        for field, keys in ((False, bm25_terms), (True, field_terms)):
            for term in keys:
                posting = self._postings.get((field, term))
                if posting is None:
                    found = (self.fields if field else self.terms).get(term)
                    if found is None:
                        if not field:
                            maximum += _bm25_idf(self.size, 1)  # a memory holding it would be its only one
                        continue
                    posting = self._postings[(field, term)] = self._posting(field, found)
                if not field:
                    maximum += posting.idf
                out.append(posting)
        return out, maximum

    def _posting(self, field: bool, found: tuple, df: int | None = None) -> TermPosting:
        """The :class:`TermPosting` of a term's ``(numbers, counts)``: ``array("i")`` or their bytes."""
        numbers, counts = found
        if not isinstance(numbers, array):
            numbers, counts = array("i"), array("i")
            numbers.frombytes(found[0])
            counts.frombytes(found[1])
        norm = ((BM25_K1, BM25_B, self.flengths, self._faverage) if field
                else (BM25_K1, BM25_B, self._expanded, self._average))
        return TermPosting(numbers, counts, norm, field, self.size,
                           FIELD_WEIGHT if field else 1.0, self.near, self._linked,
                           NEIGHBOUR_WEIGHT, REPLY_WEIGHT,
                           self._least_fnorm if field else self._least_norm, df)

    def fetch(self, bm25_terms: Sequence[str], field_terms: Sequence[str]) -> None:
        """Make these terms' postings available in :attr:`terms` and :attr:`fields`.

        An index held whole has them all; one saved by rows
        (:class:`gitmem.cache.recall_index.RecallIndexes`) reads only these terms' rows.
        """

    def whole(self) -> RecallIndex:
        """The index with every document's text and every posting (what :meth:`derive` reads)."""
        return self

    def sparse_scores(self, query: str) -> tuple[dict[int, float], dict[int, float], float]:
        """:meth:`scores` of the documents that have one, by their position in the order of :meth:`bind`.

        Every posting of every query term is scored (the exhaustive reference of
        :mod:`gitmem.context.maxscore`), BM25 terms sorted, then field terms sorted.

        Returns:
            ``(bm25, boost, maximum)``: BM25 of the distinct query terms over each expanded
            document (0: no query term, in it or its neighbours), ``FIELD_WEIGHT`` × BM25 of
            the query's field terms over its field values, and the query's maximum BM25
            score (the sum of the idf of its distinct terms; 0 for a query with no term).
        """
        bm25: dict[int, float] = {}
        boost: dict[int, float] = {}
        if not self.size:
            return bm25, boost, 0.0
        postings, maximum = self.query_postings(sorted(set(tokenize(query))),
                                                sorted(query_field_terms(query)))
        for posting in postings:
            into = boost if posting.field else bm25
            get = into.get
            for number, value in posting.contributions().items():
                into[number] = get(number, 0.0) + value
        found = [(p.numbers, p.counts) for p in postings if not p.field]
        for number, prior in self.sittings().scores(found, bm25).items():
            bm25[number] += prior
        positions = self.positions
        if positions is not None:
            bm25 = {positions[d]: v for d, v in bm25.items()}
            boost = {positions[d]: v for d, v in boost.items()}
        return bm25, boost, maximum

    def scores(self, query: str) -> tuple[list[float], list[float], float]:
        """Per document (order of :meth:`bind`) its BM25 score and field boost; the query's maximum.

        Returns:
            ``(bm25, boost, maximum)``: BM25 of the distinct query terms over each expanded
            document (0: no query term, in it or its neighbours), ``FIELD_WEIGHT`` × BM25 of
            the query's field terms over its field values, and the query's maximum BM25
            score (the sum of the idf of its distinct terms; 0 for a query with no term).
        """
        bm25, boost, maximum = self.sparse_scores(query)
        dense_bm25, dense_boost = [0.0] * self.size, [0.0] * self.size
        for into, values in ((dense_bm25, bm25), (dense_boost, boost)):
            for position, value in values.items():
                into[position] = value
        return dense_bm25, dense_boost, maximum


def _verified_us(memory: Memory) -> int | None:
    """``last_verified_at`` in microseconds (exact, so two times never tie by rounding)."""
    known = getattr(memory, "verified_us", None)  # a cache MemoryView carries it ready
    if known is not None:
        return known
    at = memory.last_verified_at
    return None if at is None else microseconds(at)


def index_columns(memories: Sequence[Memory]) -> dict[str, list[Any]]:
    """What :meth:`RecallIndex.build` takes of ``memories`` besides their contents.

    ``observed`` (:func:`observed_times`), ``authors`` (the record's ``author``; ``None``
    for records that predate it) and ``refs`` (``provenance.context_ref``), by keyword.
    """
    return {"observed": observed_times(memories),
            "authors": [getattr(m, "author", None) for m in memories],
            "refs": [m.provenance.context_ref if m.provenance is not None else None for m in memories]}


def rank_memories(
    query: str,
    memories: Sequence[Memory],
    index: RecallIndex | None = None,
    limit: int | None = None,
    skip: Callable[[Memory], bool] | None = None,
    verified: Callable[[Memory], int | None] | None = None,
    floor: float = 0.0,
) -> list[Hit]:
    """Every memory with affinity to ``query``, best first (score of the module docstring).

    Affinity: a score above 0 (a query term in the memory or its neighbours, or a field value
    the query names) and a relevance of at least ``floor``. Equal scores are ordered by
    recency (last verification, else observation time; newest first, legacy records last),
    then by id, so recency alone never recalls.

    Args:
        query: free text.
        memories: candidates (no status filtering here).
        index: a :class:`RecallIndex` of ``[m.content for m in memories]`` and
            :func:`index_columns` of them: same scores, without indexing at query time;
            ``None`` indexes here.
        limit: return only the best ``limit`` hits (the first ``limit`` of the full list),
            building no hit for the rest.
        skip: memories for which it returns true are left out before ``limit`` is applied
            (what a hook already sent this session).
        verified: memory -> its last verification in microseconds, when that is not the
            record's own (an effective verification point, :mod:`gitmem.api.runs`).
        floor: the relevance floor (relevance: score over the query's maximum BM25 score,
            0 to about 1 + the boost): when no memory reaches it, there is no hit; else
            each hit has at least half of it. 0 keeps every hit with a score.
    """
    if not query.strip() or not memories:
        return []
    if index is None or index.size != len(memories):
        index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                                  **index_columns(memories))
    if limit is not None and TOPK_SCORING:
        from gitmem.context.topk import best

        return best(memories, index, query, floor, limit, skip, verified,
                    near_tie=NEAR_TIE, own_verified=_verified_us, stale_reason=_stale_reason)
    bm25, boost, maximum = index.sparse_scores(query)
    total = dict(bm25)
    for i, value in boost.items():
        total[i] = total.get(i, 0.0) + value
    # The floor: nothing when even the best is below it, else every hit over half of it.
    if floor and (not total or max(total.values()) < floor * maximum):
        return []
    least = floor / 2 * maximum
    # By position only: ``memories`` may build its items on access (cache views).
    pool = [i for i, s in total.items() if s > 0 and s >= least]
    # Each item read once: indexing a sequence of cache views may cost a lookup each time.
    items = {i: memories[i] for i in pool}
    ids = {i: m.id for i, m in items.items()}
    ranks = {
        "bm25": _ranks((-total[i], ids[i]) for i in pool),
        "recency": _ranks(
            (-at, ids[i])
            for i, at in ((i, (verified or _verified_us)(items[i])) for i in pool)
            if at is not None
        ),
    }
    unranked = len(pool) + 1
    recency = ranks["recency"]
    order = sorted(pool, key=lambda i: (-total[i], recency.get(ids[i], unranked), ids[i]))
    if skip is not None:
        order = [i for i in order if not skip(memories[i])]
    window = min(len(order), limit or NEAR_TIE_WINDOW)
    from gitmem.context.similarity import newer_first_among_near_ties

    order = newer_first_among_near_ties(order, lambda i: memories[i].content, total,
                                        lambda i: recency.get(ids[i], unranked), window, NEAR_TIE)
    hits = []
    for i in order if limit is None else order[:limit]:
        memory = items[i]
        own = {name: ranking.get(memory.id) for name, ranking in ranks.items()}
        stale = memory.status is Status.STALE
        reason = _stale_reason(memory) if stale else None
        hits.append(Hit(memory, total[i], own, stale, bm25.get(i, 0.0), boost.get(i, 0.0), reason,
                        relevance=total[i] / maximum if maximum else 0.0))
    return hits


def observed_times(memories: Sequence[Memory]) -> list[datetime | None]:
    """``provenance.observed_at`` of each memory (``None`` for legacy records), for indexing."""
    return [m.provenance.observed_at if m.provenance is not None else None for m in memories]


def select_candidates(
    memories: Sequence[Memory], include_stale: bool = False
) -> tuple[list[Memory], dict[str, str]]:
    """The memories recall ranks, and the superseded ones (id -> the id superseding it).

    Refuted memories are never candidates. A memory superseded by one that is neither stale
    nor refuted is as outdated as a stale one: both are candidates only with
    ``include_stale``. Order is kept.
    """
    candidates = [m for m in memories if m.status is not Status.REFUTED]
    superseded = superseded_by(candidates, lambda m: m.status is not Status.STALE)
    if not include_stale:
        candidates = [
            m for m in candidates if m.status is not Status.STALE and m.id not in superseded
        ]
    return candidates, superseded


def recall(
    memories: Sequence[Memory],
    query: str,
    *,
    top_k: int = RECALL_TOP_K,
    include_stale: bool = False,
    token_budget: int | None = None,
    counter: Callable[[str], int] | None = None,
    fmt: str = "markdown-prompt",
    index: Callable[[Sequence[Memory]], RecallIndex] | None = None,
    materialize: Callable[[Memory], Memory] | None = None,
    selected: tuple[Sequence[Memory], Mapping[str, str]] | None = None,
    max_chars: int | None = None,
    bytes_bound: bool | None = None,
    skip: Callable[[Memory], bool] | None = None,
    first: Sequence[Memory] = (),
    author_of: Callable[[Memory], str | None] | None = None,
    verified: Callable[[Memory], int | None] | None = None,
    floor: float = 0.0,
    suffix: str = "",
) -> RecallResult:
    """The memories most relevant to ``query`` (see :func:`rank_memories`).

    Refuted memories never appear; stale ones, and ones superseded by a memory that is neither
    stale nor refuted, only with ``include_stale`` (and are marked stale, with the reason).
    With a ``token_budget`` or ``max_chars`` the top ``top_k`` hits are taken in rank order;
    a hit whose whole entry would make the output rendered in ``fmt`` exceed a limit is shown
    as a compressed preview (:data:`~gitmem.defaults.PREVIEW_CHARS` characters of its
    content, its citation and ``tur show ID``) when that fits, and is left out (counted in
    ``omitted``) only when not even the preview fits. Limits are checked on the whole
    rendered string, so the caps are exact.

    Args:
        memories: candidate records.
        query: free text; may be empty when ``first`` is given (then only ``first`` is shown).
        top_k: maximum number of hits, >= 1.
        include_stale: let stale memories through.
        token_budget: tokens; ``None`` or 0 means no cap.
        counter: token counter; default :class:`gitmem.context.tokens.TokenCounter` (only with a budget).
        fmt: output format the budget is measured in, one of :data:`~gitmem.context.entry.RECALL_FORMATS`.
        index: given the candidates (refuted, and unless ``include_stale`` stale and
            superseded, memories left out; in the given order), returns their
            :class:`RecallIndex` (e.g. from a cache); ``None`` indexes at query time.
        materialize: turns a stand-in record (e.g. :class:`gitmem.cache.MemoryView`) into the
            full record, for the top ``top_k`` hits only; ``None`` keeps them as given.
        selected: what :func:`select_candidates` gives for ``memories`` and
            ``include_stale``, when the caller has it already (e.g. from cache columns);
            ``memories`` is then not read.
        max_chars: characters the rendered output may take; ``None`` or 0 means no cap.
        bytes_bound: whether ``counter`` counts BPE tokens (each at least one byte), so that a
            text of at most ``token_budget`` UTF-8 bytes fits without counting; default: when
            ``counter`` is a :class:`gitmem.context.tokens.TokenCounter`.
        skip: memories for which it returns true are never hits (e.g. already sent this
            session); the next best take their places.
        first: candidates shown before every other hit, best-ranked for ``query`` first,
            then the widest anchor (e.g. the memories anchored to a file); they count
            towards ``top_k``.
        author_of: memory -> who stated it when that is not the reader (``Name <email>``),
            else ``None``; hits get it as :attr:`Hit.author`. ``None``: no author is shown.
        verified: memory -> its last verification (microseconds), which breaks ties, when
            that is not the record's own (see :func:`rank_memories`).
        floor: the least relevance of a hit that is not in ``first`` (see
            :func:`rank_memories`; a pre-turn hook passes :data:`RELEVANCE_FLOOR`): with
            nothing relevant, nothing is shown.
        suffix: text the caller appends after the hits (the notes on memories that are not
            fresh, :func:`gitmem.context.stale_notes.stale_tail`): the limits are checked on
            the hits' text with it.

    Returns:
        The :class:`RecallResult`.

    ``top_k`` (at least 1), ``token_budget`` and ``max_chars`` (0 or more) are taken as
    checked: the facade checks them (:func:`gitmem.api.context.check_limits`).

    Raises:
        InvalidInput: an unknown format.
        TokenizerUnavailable: the default counter's encoding cannot be loaded offline.
    """
    _check_format(fmt)
    candidates, superseded = selected or select_candidates(memories, include_stale)
    top = _mark_contradictions(_ranked_hits(query, candidates, superseded, top_k=top_k,
                                            index=index, skip=skip, first=first, verified=verified,
                                            floor=floor))
    if author_of is not None:  # before materializing: a stand-in names its row
        top = [replace(hit, author=author_of(hit.memory)) for hit in top]
    if materialize is not None:
        top = [replace(hit, memory=materialize(hit.memory)) for hit in top]
    if not token_budget and not max_chars:
        return RecallResult(query, tuple(top), 0, fmt)
    from gitmem.context.tokens import TokenCounter

    if counter is None:
        counter = TokenCounter()
    if bytes_bound is None:
        bytes_bound = isinstance(counter, TokenCounter)

    def fits(text: str) -> bool:
        if max_chars and len(text) > max_chars:
            return False
        # A BPE token is at least one byte, so a text of at most ``budget`` UTF-8 bytes fits
        # without counting: the common short recall never loads the BPE tables.
        return (not token_budget
                or (bytes_bound and len(text.encode("utf-8", "surrogatepass")) <= token_budget)
                or counter(text) <= token_budget)

    chosen: list[Hit] = []
    for hit in top:
        for candidate in (hit, replace(hit, compress=PREVIEW_CHARS)):
            if candidate.compress is not None and len(hit.memory.content) <= PREVIEW_CHARS:
                break  # a preview of a short memory is no shorter than the memory
            if fits(format_hits([*chosen, candidate], fmt, query) + suffix):
                chosen.append(candidate)
                break
    return RecallResult.fitted(query, top, chosen, fmt)


def _mark_contradictions(hits: list[Hit]) -> list[Hit]:
    """``hits`` with :attr:`Hit.may_contradict` set on every pair that may disagree.

    A pair linked by ``supersedes`` (either way) is settled and not marked.
    """
    from gitmem.context.similarity import Statement, may_contradict

    if len(hits) < 2:
        return hits
    said = [Statement.of(h.memory.content) for h in hits]
    marks: list[list[str]] = [[] for _ in hits]
    for i, a in enumerate(hits):
        for j in range(i + 1, len(hits)):
            b = hits[j]
            settled = (b.memory.id in a.memory.relation_targets(RelationType.SUPERSEDES)
                       or a.memory.id in b.memory.relation_targets(RelationType.SUPERSEDES))
            if not settled and may_contradict(said[i], said[j]):
                marks[i].append(b.memory.id)
                marks[j].append(a.memory.id)
    return [replace(h, may_contradict=tuple(m)) if m else h for h, m in zip(hits, marks, strict=True)]


def _check_format(fmt: str) -> None:
    if fmt not in RECALL_FORMATS:
        hint = f"use one of {', '.join(RECALL_FORMATS)}"
        raise InvalidInput(f"unknown recall format {fmt!r}", hint)


def _ranked_hits(
    query: str,
    candidates: Sequence[Memory],
    superseded: Mapping[str, str],
    *,
    top_k: int,
    index: Callable[[Sequence[Memory]], RecallIndex] | None,
    skip: Callable[[Memory], bool] | None,
    first: Sequence[Memory],
    verified: Callable[[Memory], int | None] | None = None,
    floor: float = 0.0,
) -> list[Hit]:
    """The best ``top_k`` hits, superseded ones marked stale.

    ``first`` come first: those matching ``query`` in the order it ranks them among all
    candidates (every one of them is ranked, however many there are), then the rest widest
    anchor first (:func:`~gitmem.record.anchors.covered_lines`; ties in their given order);
    then the other hits.
    With no query, ``first`` alone, in their given order.
    """
    firsts = [m for m in first if skip is None or not skip(m)]
    pinned = {m.id for m in firsts}
    ranked: list[Hit] = []
    if query.strip() and candidates:
        built = index(candidates) if index else None
        if pinned:
            # Every hit, so that each of the file's memories has its rank among all of them.
            every = rank_memories(query, candidates, index=built, skip=skip, verified=verified)
            matched = [h for h in every if h.memory.id in pinned]
            seen = {h.memory.id for h in matched}
            rest = [h for h in every if h.memory.id not in pinned and h.relevance >= floor]
            unmatched = sorted((m for m in firsts if m.id not in seen), reverse=True, key=lambda m:
                               covered_lines(m.provenance.context_ref if m.provenance else None))
            ranked = [*matched, *_unranked(unmatched), *rest]
        else:
            ranked = rank_memories(query, candidates, index=built, limit=top_k, skip=skip,
                                   verified=verified, floor=floor)
    else:
        ranked = _unranked(firsts)
    return [
        replace(hit, stale=True, stale_reason=f"superseded by {superseded[hit.memory.id]}")
        if hit.memory.id in superseded
        else hit
        for hit in ranked[:top_k]
    ]


def _stale_reason(memory: Memory) -> str | None:
    """Why a stale memory is stale: this clone's working-tree reason, else the recorded one."""
    return memory.local_reason or (memory.decay.reason if memory.decay else None)


def _unranked(memories: Iterable[Memory]) -> list[Hit]:
    """Hits for ``memories`` the query did not rank, in their order."""
    return [Hit(m, 0.0, {"bm25": None, "recency": None}, m.status is Status.STALE, 0.0, 0.0,
                _stale_reason(m) if m.status is Status.STALE else None)
            for m in memories]
