"""Query-time recall: BM25 and character-trigram rankers fused by reciprocal rank fusion.

Terms come from :mod:`gitmem.context.analysis` (identifier parts, English stop words, Snowball stems).

BM25: S. Robertson, H. Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
Foundations and Trends in IR 3(4), 2009, in Lucene's form (idf ``ln(1 + (N - df + 0.5) /
(df + 0.5))``, never negative) as bm25s computes it, with ``k1`` = :data:`BM25_K1` and ``b`` =
:data:`BM25_B`. A memory's BM25 document is its content plus the month and year it was
observed (``may 2023``), so that "what did we decide in May 2023" finds May's memories.

Fusion: G. V. Cormack, C. L. A. Clarke, S. Büttcher, "Reciprocal rank fusion outperforms
Condorcet and individual rank learning methods", SIGIR 2009: ``score(d) = Σ_r w_r / (k +
rank_r(d))`` over the rankers that rank ``d``, with ``k`` = :data:`RRF_K` and the weights
:data:`RRF_WEIGHTS` (weighted RRF; Cormack et al. weight every ranker 1).

Parameters were tuned on development data only: the LoCoMo development split of
``bench/bench_recall.py`` (three long real conversations, one memory per turn) and its
labelled code-memory set, and chosen where the figures are flat rather than at a peak
(figures: hit@5 / MRR@10 on LoCoMo, recall@5 / MRR on the code set):

- ``b = 0.4`` (not 0.75): turns and memories are short and their length says little about
  their topic; full length normalisation pushes long evidence turns down (BM25 alone on
  LoCoMo: hit@5 0.614 at b 0.75, 0.640 at 0.5, 0.648 at 0.4, 0.653 at 0.3). ``k1 = 1.2``:
  0.9 to 1.5 differ by less than 0.01.
- Month and year of observation in the BM25 document: LoCoMo 0.629 / 0.484 → 0.648 / 0.497
  (questions name dates: "in May 2023"); no change on the code set. The day of the month
  was tried too and cost the code set (numbers in queries match day numbers).
- Trigram (TF-IDF weighted character trigrams) at weight ``0.15`` with ``k = 10``: it adds
  matches on misspellings and identifier fragments that whole-word BM25 misses (code set
  recall@5 0.764 → 0.783) and is neutral on LoCoMo (0.645 / 0.498 without it, 0.642 /
  0.496 with it). At the weight of BM25 (1, ``k = 60``) it buries BM25's best answers under
  memories that merely share letter runs with the question (LoCoMo 0.619 / 0.474, code
  0.743 / 0.729). With ``k = 10`` a low weight can only reorder near neighbours in BM25.
- Recency: weight ``0``. A question may be about any time; at weight 0.25 LoCoMo MRR fell
  0.496 → 0.485 and the code set 0.783 / 0.774 → 0.772 / 0.750. Its rank is still reported
  and breaks exact ties of the fused score (newest first).
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
from gitmem.context.terms import date_column as _date_column
from gitmem.context.terms import date_words
from gitmem.context.terms import trigrams as _trigrams
from gitmem.defaults import PREVIEW_CHARS, RECALL_TOP_K
from gitmem.errors import InvalidInput
from gitmem.record.decay import microseconds
from gitmem.record.relations import superseded_by
from gitmem.vocabulary import RelationType, Status

if TYPE_CHECKING:
    from datetime import datetime

    from gitmem.record.models import Memory

__all__ = [
    "BM25_B",
    "BM25_K1",
    "INDEX_VERSION",
    "RRF_K",
    "RRF_WEIGHTS",
    "TRIGRAM_FLOOR",
    "Hit",
    "RecallIndex",
    "RecallResult",
    "date_words",
    "query_from_payload",
    "observed_times",
    "rank_memories",
    "recall",
    "select_candidates",
    "tokenize",
    "trigram_scores",
]

BM25_K1 = 1.2
"""BM25 term-frequency saturation (Robertson & Zaragoza 2009); see the module docstring."""
BM25_B = 0.4
"""BM25 document-length normalisation, 0 (none) to 1 (full); see the module docstring."""
RRF_K = 10
"""The ``k`` of reciprocal rank fusion (Cormack et al. 2009); see the module docstring."""
RRF_WEIGHTS = {"bm25": 1.0, "trigram": 0.15, "recency": 0.0}
"""Weight of each ranker in the fusion (see the module docstring)."""
TRIGRAM_FLOOR = 0.15
"""Trigram cosine below which a memory has no trigram affinity to the query."""
INDEX_VERSION = (f"{analysis.VERSION}/bm25-lucene-k1={BM25_K1}-b={BM25_B}/month-year/trigram-tfidf"
                 "/raw-postings")
"""Names what a :class:`RecallIndex` holds; a stored index of another version is never used."""

NEAR_TIE = 0.25
"""Near-duplicate hits whose BM25 scores are within this fraction of the higher one are a
near-tie: the newer ranks first (see :func:`_newer_first_among_near_ties`)."""
NEAR_TIE_WINDOW = 10
"""Without a limit, near-ties are looked for among the first this many hits (else the limit)."""

def trigram_scores(query: str, documents: Sequence[str]) -> list[float]:
    """Cosine in [0, 1] of TF-IDF weighted character-trigram vectors, query against each document.

    Words are lowercased and padded with one space each side; stop words are left out. A
    trigram's weight is its count times ``ln(1 + N / df)`` (``N`` documents, ``df`` of them
    holding it; a query trigram no document holds counts with ``df = 1``), so that letter runs
    every document has (a name in every line) weigh little against rare ones. Same as
    :meth:`RecallIndex.trigram_scores` of an index of ``documents``.
    """
    return RecallIndex.build(documents, bm25=False).trigram_scores(query)


def _idf(size: int, df: int) -> float:
    """Trigram weight ``ln(1 + N / df)`` of a trigram held by ``df`` of ``size`` documents."""
    return math.log(1.0 + size / max(df, 1))



class RecallIndex:
    """BM25 and trigram postings of a list of documents, for scoring without re-indexing.

    Raw postings, so that an index follows a write by the documents it changed
    (:meth:`derive`) instead of being built again: per BM25 term the documents holding it
    and how often, each document's length; per trigram the documents and counts, each
    document's trigram norm. Scores are computed at query time, for the query's terms only.

    :meth:`bm25_scores` returns exactly what bm25s (Lucene variant) returns for the same
    tokenised documents (``tests/bm25_oracle.py`` is that oracle; bm25s is a test dependency
    only): each (term, document) score is bm25s' float32
    ``idf × tf / (tf + k1 × (1 − b + b × dl / avgdl))`` (the idf rounded to float32, the rest
    in float64, as numpy 2 evaluates bm25s' expression), and the scores of the query's terms
    are added per document in float32, as ``BM25.get_scores`` does. :meth:`trigram_scores`
    is what :func:`trigram_scores` returns. bm25s is never imported, numpy only for the norms
    of a large index (:data:`_NUMPY_POSTINGS`). The payload
    is plain bytes and strings (see :mod:`gitmem.cache`), stamped with :data:`INDEX_VERSION`.

    Documents are numbered in the order they were indexed; :meth:`derive` appends new ones
    and leaves holes where it removes some (``ids[d] == ""``). :meth:`bind` maps the
    documents to the positions of a candidate list, in which order every score list is given.

    Args:
        ids, texts, dates: per document its memory id, content and observation month and
            year (:func:`date_words`); ``""`` for a hole.
        lengths: per document its number of BM25 terms (0 for a hole).
        terms: BM25 term -> (document numbers, term frequencies), each an ``array("i")`` as
            bytes, documents ascending.
        grams: trigram -> (document numbers, counts), the same way.
        norms: per document the Euclidean norm of its TF-IDF trigram vector.
    """

    VERSION = INDEX_VERSION

    def __init__(self, ids: list[str], texts: list[str], dates: list[str], lengths: array,
                 terms: dict[str, tuple[bytes, bytes]], grams: dict[str, tuple[bytes, bytes]],
                 norms: array) -> None:
        self.ids = ids
        self.texts = texts
        self.dates = dates
        self.lengths = lengths
        self.terms = terms
        self.grams = grams
        self.norms = norms
        self.size = sum(1 for memory_id in ids if memory_id)
        self.total = sum(lengths)
        self.positions: array | None = None  # document -> candidate position; None: the same

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, documents: Sequence[str],
              observed: Sequence[datetime | str | None] | None = None, *,
              bm25: bool = True, ids: Sequence[str] | None = None) -> RecallIndex:
        """Index ``documents`` (as :func:`trigram_scores` does, and bm25s would).

        Args:
            documents: the texts.
            observed: each document's observation time (its month and year are BM25 terms
                of the document); ``None`` indexes the texts alone.
            bm25: build the BM25 part (``False``: trigrams only, BM25 scores all 0).
            ids: the memory id of each document (what :meth:`bind` and :meth:`derive`
                match); default their positions.
        """
        n = len(documents)
        dates = _date_column(observed) if observed is not None else [""] * n
        index = cls([], [], [], array("i"), {}, {}, array("d"))
        index._add(list(ids) if ids is not None else [str(i) for i in range(n)], list(documents),
                   dates, bm25)
        index.norms = index._norms()
        return index

    def _add(self, ids: list[str], documents: list[str], dates: list[str], bm25: bool = True) -> None:
        """Append documents (numbered after the last one) to the postings."""
        terms: dict[str, tuple[array, array]] = {}
        grams: dict[str, tuple[array, array]] = {}
        first = len(self.ids)
        for number, (text, when) in enumerate(zip(documents, dates, strict=True), start=first):
            words = tokenize(text)
            if when:
                words.extend(tokenize(when))
            if bm25:
                for term, count in Multiset(words).items():
                    _append(terms, term, number, count)
            for gram, count in _trigrams(text).items():
                _append(grams, gram, number, count)
            self.lengths.append(len(words) if bm25 else 0)
        self.ids.extend(ids)
        self.texts.extend(documents)
        self.dates.extend(dates)
        for own, added in ((self.terms, terms), (self.grams, grams)):
            while added:  # popped as they are copied, so that each posting is held once
                key, (numbers, counts) = added.popitem()
                old = own.get(key)
                own[key] = ((old[0] + numbers.tobytes(), old[1] + counts.tobytes()) if old
                            else (numbers.tobytes(), counts.tobytes()))
        self.size += sum(1 for memory_id in ids if memory_id)
        self.total = sum(self.lengths)

    def _remove(self, number: int) -> None:
        """Take document ``number`` out of the postings, leaving a hole."""
        words = tokenize(self.texts[number])
        if self.dates[number]:
            words.extend(tokenize(self.dates[number]))
        for own, keys in ((self.terms, set(words)), (self.grams, set(_trigrams(self.texts[number])))):
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
        self.ids[number], self.texts[number], self.dates[number] = "", "", ""
        self.lengths[number] = 0
        self.size -= 1
        self.total = sum(self.lengths)

    def _norms(self, vectorised: bool | None = None) -> array:
        """Each document's trigram norm, summed over its trigrams in sorted order.

        A fixed order, whatever order the documents were added in: an index built at once
        and one derived from another give the same norms, bit for bit. With many postings
        (``vectorised`` ``None``: over :data:`_NUMPY_POSTINGS`) numpy adds them, in the same
        order, to the same floats.
        """
        size = self.size
        grams = self.grams
        if vectorised or (vectorised is None and
                          sum(len(v[0]) for v in grams.values()) // 4 > _NUMPY_POSTINGS):
            return self._norms_numpy()
        squares = [0.0] * len(self.ids)
        for gram in sorted(grams):
            numbers, counts = array("i"), array("i")
            numbers.frombytes(grams[gram][0])
            counts.frombytes(grams[gram][1])
            idf = _idf(size, len(numbers))
            for number, count in zip(numbers, counts, strict=True):
                w = count * idf
                squares[number] += w * w
        return array("d", map(math.sqrt, squares))

    def _norms_numpy(self) -> array:
        """:meth:`_norms` with numpy: each product and each sum as the loop does them, in its order."""
        import numpy as np  # lazy: ~0.1 s to import, paid only where it saves more (see _norms)

        size, grams = self.size, self.grams
        squares = np.zeros(len(self.ids), dtype=np.float64)
        for gram in sorted(grams):
            numbers = np.frombuffer(grams[gram][0], dtype=np.int32)
            counts = np.frombuffer(grams[gram][1], dtype=np.int32)
            # math.log, as the loop computes it (numpy's log may round differently); one
            # trigram at a time, so that no array of every posting is ever held.
            w = counts * _idf(size, len(numbers))
            # add.at adds in index order, unbuffered: the loop's sums exactly.
            np.add.at(squares, numbers, w * w)
        return array("d", np.sqrt(squares).tobytes())

    def derive(self, ids: Sequence[str], documents: Sequence[str],
               observed: Sequence[datetime | str | None]) -> RecallIndex:
        """The index of these documents, from this one: only the documents that differ are indexed.

        Scores equal those of :meth:`build` of the same documents (bound to the same
        order). When most documents differ, or too many holes would be left, it is built.
        """
        dates = _date_column(observed)
        at = {i: d for d, i in enumerate(self.ids) if i}
        texts, own_dates = self.texts, self.dates
        kept: set[int] = set()
        added = []
        for k, (memory_id, text, when) in enumerate(zip(ids, documents, dates, strict=True)):
            d = at.get(memory_id)
            if d is not None and texts[d] == text and own_dates[d] == when:
                kept.add(d)
            else:
                added.append(k)
        removed = [d for d in at.values() if d not in kept]
        holes = len(self.ids) - self.size + len(removed)
        if len(removed) + len(added) > max(64, len(ids) // 4) or holes > max(64, len(ids) // 4):
            return RecallIndex.build(documents, observed, ids=ids)
        index = RecallIndex(list(self.ids), list(self.texts), list(self.dates), array("i", self.lengths),
                            dict(self.terms), dict(self.grams), self.norms)
        for number in removed:
            index._remove(number)
        index._add([ids[k] for k in added], [documents[k] for k in added], [dates[k] for k in added])
        index.norms = index._norms()
        return index

    def bind(self, ids: Sequence[str]) -> RecallIndex:
        """Give scores in the order of ``ids``, the candidates; return this index.

        Raises:
            ValueError: the index's documents are not exactly these candidates.
        """
        if len(ids) != self.size:
            raise ValueError("index of another document list")
        if len(self.ids) == len(ids) and all(a == b for a, b in zip(self.ids, ids, strict=True)):
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
            "ids": self.ids,
            "texts": self.texts,
            "dates": self.dates,
            "lengths": self.lengths.tobytes(),
            "terms": self.terms,
            "grams": self.grams,
            "norms": self.norms.tobytes(),
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
        ids, texts, dates = payload["ids"], payload["texts"], payload["dates"]
        terms, grams = payload["terms"], payload["grams"]
        if not all(isinstance(x, list) for x in (ids, texts, dates)) or \
                not isinstance(terms, dict) or not isinstance(grams, dict):
            raise TypeError("ids, texts, dates, terms and grams")
        lengths, norms = array("i"), array("d")
        lengths.frombytes(payload["lengths"])
        norms.frombytes(payload["norms"])
        n = len(ids)
        if not len(texts) == len(dates) == len(lengths) == len(norms) == n:
            raise ValueError("inconsistent arrays")
        index = cls(ids, texts, dates, lengths, terms, grams, norms)
        if size is not None and index.size != size:
            raise ValueError("index of another document list")
        return index

    # -- scoring ----------------------------------------------------------------------------

    def _by_position(self, per_document: Sequence[float]) -> list[float]:
        positions = self.positions
        if positions is None:
            return list(per_document)
        out = [0.0] * self.size
        for number, position in enumerate(positions):
            if position >= 0:
                out[position] = per_document[number]
        return out

    def bm25_scores(self, query: str) -> list[float]:
        """BM25 score of each indexed document for ``query`` (see the module docstring); 0: no query term.

        Equal, bit for bit, to bm25s' scores of the same tokenised documents (float32 sums;
        the oracle is ``tests/bm25_oracle.py``), in the order of :meth:`bind`.
        """
        found = [self.terms[t] for t in tokenize(query) if t in self.terms]
        if not found:
            return [0.0] * self.size
        scores = array("f", bytes(4 * len(self.ids)))  # float32: each += rounds as numpy's would
        size, lengths = self.size, self.lengths
        average = self.total / size
        k1, b = BM25_K1, BM25_B
        shared: dict[int, float] = {}  # document length -> its part of the denominator
        for numbers_bytes, counts_bytes in found:
            numbers, counts = array("i"), array("i")
            numbers.frombytes(numbers_bytes)
            counts.frombytes(counts_bytes)
            df = len(numbers)
            idf = array("f", [math.log(1 + (size - df + 0.5) / (df + 0.5))])[0]  # bm25s: float32
            parts = []
            for number, tf in zip(numbers, counts, strict=True):
                dl = lengths[number]
                k = shared.get(dl)
                if k is None:
                    k = shared[dl] = k1 * ((1 - b) + b * dl / average)
                parts.append(idf * (tf / (k + tf)))
            for number, part in zip(numbers, array("f", parts), strict=True):  # rounded as bm25s stores it
                scores[number] += part
        return self._by_position(scores.tolist())

    def trigram_scores(self, query: str) -> list[float]:
        """As :func:`trigram_scores` of ``query`` over the indexed documents."""
        size = self.size
        dots = [0.0] * len(self.ids)
        q_squares = 0.0
        for gram, v in _trigrams(query).items():
            found = self.grams.get(gram)
            if found is None:
                q_squares += (v * _idf(size, 1)) ** 2
                continue
            ids, counts = array("i"), array("i")
            ids.frombytes(found[0])
            counts.frombytes(found[1])
            idf = _idf(size, len(ids))
            weight = v * idf
            q_squares += weight ** 2
            for number, count in zip(ids, counts, strict=True):
                dots[number] += weight * (count * idf)
        q_norm = math.sqrt(q_squares)
        norms = self.norms
        return self._by_position(
            [dot / (q_norm * norms[n]) if dot else 0.0 for n, dot in enumerate(dots)])


_NUMPY_POSTINGS = 1_500_000
"""Trigram postings above which :meth:`RecallIndex._norms` adds them with numpy: its import
costs 0.06-0.1 s and it adds about 25 ns a posting, the loop about 80 ns (about 490,000
postings at 10,000 memories: 40 ms in the loop, 70-120 ms with numpy)."""


def _append(postings: dict[str, tuple[array, array]], key: str, number: int, count: int) -> None:
    found = postings.get(key)
    if found is None:
        found = postings[key] = (array("i"), array("i"))
    found[0].append(number)
    found[1].append(count)


def _ranks(keys: Iterable[tuple[float, str]]) -> dict[str, int]:
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


def _verified_us(memory: Memory) -> int | None:
    """``last_verified_at`` in microseconds (exact, so two times never tie by rounding)."""
    known = getattr(memory, "verified_us", None)  # a cache MemoryView carries it ready
    if known is not None:
        return known
    at = memory.last_verified_at
    return None if at is None else microseconds(at)


def rank_memories(
    query: str,
    memories: Sequence[Memory],
    weights: Mapping[str, float] = RRF_WEIGHTS,
    index: RecallIndex | None = None,
    limit: int | None = None,
    skip: Callable[[Memory], bool] | None = None,
    verified: Callable[[Memory], int | None] | None = None,
) -> list[Hit]:
    """Every memory with affinity to ``query``, fused and sorted best first.

    Affinity: BM25 score > 0 or trigram cosine >= :data:`TRIGRAM_FLOOR`. Recency (last
    verification, else observation time; legacy records are not ranked) orders only memories
    that have affinity, so recency alone never recalls. Equal fused scores are ordered by
    recency rank (newest first; unranked last), then by id.

    Args:
        query: free text.
        memories: candidates (no status filtering here).
        weights: weight per ranker name (``bm25``, ``trigram``, ``recency``) in the fusion.
        index: a :class:`RecallIndex` of ``[m.content for m in memories]`` and their
            observation times (:func:`observed_times`): same scores, without indexing at
            query time; ``None`` indexes here.
        limit: return only the best ``limit`` hits (the first ``limit`` of the full list),
            building no hit for the rest.
        skip: memories for which it returns true are left out before ``limit`` is applied
            (what a hook already sent this session).
        verified: memory -> its last verification in microseconds, when that is not the
            record's own (an effective verification point, :mod:`gitmem.api.runs`).
    """
    if not query.strip() or not memories:
        return []
    if index is not None and index.size == len(memories):
        bm25 = index.bm25_scores(query)
        tri = index.trigram_scores(query)
    else:
        built = RecallIndex.build([m.content for m in memories], observed_times(memories))
        bm25 = built.bm25_scores(query)
        tri = built.trigram_scores(query)
    # By position only: ``memories`` may build its items on access (cache views).
    pool = [i for i in range(len(memories)) if bm25[i] > 0 or tri[i] >= TRIGRAM_FLOOR]
    # Each item read once: indexing a sequence of cache views may cost a lookup each time.
    items = {i: memories[i] for i in pool}
    ids = {i: m.id for i, m in items.items()}
    ranks = {
        "bm25": _ranks((-bm25[i], ids[i]) for i in pool if bm25[i] > 0),
        "trigram": _ranks((-tri[i], ids[i]) for i in pool if tri[i] >= TRIGRAM_FLOOR),
        "recency": _ranks(
            (-at, ids[i])
            for i, at in ((i, (verified or _verified_us)(items[i])) for i in pool)
            if at is not None
        ),
    }
    scores = {}
    for i in pool:
        memory_id = ids[i]
        scores[i] = sum(weights[name] / (RRF_K + ranking[memory_id])
                        for name, ranking in ranks.items() if memory_id in ranking)
    unranked = len(pool) + 1
    recency = ranks["recency"]
    order = sorted(pool, key=lambda i: (-scores[i], recency.get(ids[i], unranked), ids[i]))
    if skip is not None:
        order = [i for i in order if not skip(memories[i])]
    window = min(len(order), limit or NEAR_TIE_WINDOW)
    order = _newer_first_among_near_ties(
        order, memories, bm25, lambda i: recency.get(ids[i], unranked), window)
    hits = []
    for i in order if limit is None else order[:limit]:
        memory = items[i]
        own = {name: ranking.get(memory.id) for name, ranking in ranks.items()}
        stale = memory.status is Status.STALE
        reason = _stale_reason(memory) if stale else None
        hits.append(Hit(memory, scores[i], own, stale, bm25[i], tri[i], reason))
    return hits


def _newer_first_among_near_ties(order: list[int], memories: Sequence[Memory],
                                 bm25: Sequence[float], recency_rank: Callable[[int], int],
                                 window: int) -> list[int]:
    """``order`` with each near-tie of two statements that may disagree put newest first.

    A near-tie: two of the first ``window`` hits may contradict each other
    (:func:`gitmem.context.similarity.may_contradict`: near-duplicates that differ in a number or a
    negation) and their BM25 scores are within :data:`NEAR_TIE` of the higher one. The later
    statement (an update, a correction) then takes the earlier one's place; every other hit
    keeps its rank, and the set of the first ``window`` hits is unchanged. Near-duplicates
    that agree are left in rank order: on long conversations (the LoCoMo development split)
    putting every newer near-duplicate first lowered hit@5 from 0.642 to 0.629.
    """
    from gitmem.context.similarity import Statement, may_contradict

    head = order[:window]
    if len(head) < 2:
        return order
    said = {i: Statement.of(memories[i].content) for i in head}
    moved = True
    while moved:
        moved = False
        for p in range(len(head)):
            for q in range(p + 1, len(head)):
                a, b = head[p], head[q]
                top = max(bm25[a], bm25[b])
                if (top > 0 and top - min(bm25[a], bm25[b]) <= NEAR_TIE * top
                        and recency_rank(b) < recency_rank(a) and may_contradict(said[a], said[b])):
                    head.insert(p, head.pop(q))
                    moved = True
                    break
            if moved:
                break
    return head + order[window:]


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
    suffix: str = "",
) -> RecallResult:
    """The memories most relevant to ``query``, fused by RRF (see :func:`rank_memories`).

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
        first: candidates shown before every other hit, best-ranked for ``query`` first
            (e.g. the memories anchored to a file); they count towards ``top_k``.
        author_of: memory -> who stated it when that is not the reader (``Name <email>``),
            else ``None``; hits get it as :attr:`Hit.author`. ``None``: no author is shown.
        verified: memory -> its last verification (microseconds) for the recency ranker,
            when that is not the record's own (see :func:`rank_memories`).
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
                                            index=index, skip=skip, first=first, verified=verified))
    if materialize is not None:
        top = [replace(hit, memory=materialize(hit.memory)) for hit in top]
    if author_of is not None:
        top = [replace(hit, author=author_of(hit.memory)) for hit in top]
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
    return RecallResult(query, tuple(chosen), len(top) - len(chosen), fmt)


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
) -> list[Hit]:
    """The best ``top_k`` hits, superseded ones marked stale.

    ``first`` come first (those matching ``query`` in rank order, then the rest in their given
    order), then the other hits.
    """
    firsts = [m for m in first if skip is None or not skip(m)][:top_k]
    pinned = {m.id for m in firsts}
    ranked: list[Hit] = []
    if query.strip():
        def leave_out(memory: Memory) -> bool:
            return (skip is not None and skip(memory)) or (bool(pinned) and memory.id in pinned)

        matched = {
            hit.memory.id: hit
            for hit in rank_memories(query, candidates,
                                     index=index(candidates) if index and candidates else None,
                                     limit=top_k, skip=leave_out if pinned or skip else None,
                                     verified=verified)
        } if candidates else {}
        ranked = [*_pinned_hits(query, firsts, verified), *matched.values()]
    else:
        ranked = _pinned_hits("", firsts, verified)
    return [
        replace(hit, stale=True, stale_reason=f"superseded by {superseded[hit.memory.id]}")
        if hit.memory.id in superseded
        else hit
        for hit in ranked[:top_k]
    ]


def _stale_reason(memory: Memory) -> str | None:
    """Why a stale memory is stale: this clone's working-tree reason, else the recorded one."""
    return memory.local_reason or (memory.decay.reason if memory.decay else None)


def _pinned_hits(query: str, memories: Sequence[Memory],
                 verified: Callable[[Memory], int | None] | None = None) -> list[Hit]:
    """Hits for ``memories`` in the order ``query`` ranks them among themselves, unranked last."""
    ranked = rank_memories(query, memories, verified=verified) if query.strip() else []
    seen = {hit.memory.id for hit in ranked}
    rest = [Hit(m, 0.0, {"bm25": None, "trigram": None, "recency": None},
                m.status is Status.STALE, 0.0, 0.0,
                _stale_reason(m) if m.status is Status.STALE else None)
            for m in memories if m.id not in seen]
    return [*ranked, *rest]
