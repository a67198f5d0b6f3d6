"""The sitting prior: a memory is also scored by the sitting it was stated in.

A **sitting** is a run of memories by one author, none anchored to a file, each observed
after the one before it (never at the same instant: an import of many at once is not a
sitting) and within :data:`SITTING_WINDOW_US` of it: one session of a chat, one person's
turns of a conversation. A sitting of one memory is none.

A memory in a sitting of at least two scores, besides its own BM25,

    SITTING_WEIGHT × BM25(q, s)

where ``s`` is the sitting's turns joined as one document: term counts summed, length the
sum of its memories' lengths, document frequency counted over sittings, BM25 with
:data:`SITTING_K1` and :data:`SITTING_B` against the average sitting length (Lucene's idf, as
:func:`gitmem.context.postings.bm25_idf`). Score fusion (weighted sum), not rank fusion. Only
memories that match the query themselves (or through their neighbours) take the prior: the
sitting says *where* to look, the turn's own words say *which* turn.

Source: session-then-turn retrieval, D. Wu et al., "LongMemEval: Benchmarking Chat
Assistants on Long-Term Interactive Memory", ICLR 2025 (session-level keys and
"round"/"session" granularity, §5); the fusion is the standard score interpolation of
passage and document evidence (J. P. Callan, "Passage-level evidence in document
retrieval", SIGIR 1994). Dev figures in docs/wake-recall.md.

Found once per index (a sort of the documents by time, saved with it). At query time the
exhaustive scorer takes one pass over each posting (:meth:`Sittings.scores`); MaxScore
(:mod:`gitmem.context.maxscore`) bounds the prior (:meth:`Sittings.bound`) and computes it
only for the documents it scores exactly (:meth:`Sittings.prior`).

**The opener.** In a sitting of one speaker alone (none of its memories has a reply: a user's
side of chat sessions, stored without the answers), the first memory also scores
:data:`OPENER_WEIGHT` × its own BM25. A session's first message states the request and the
circumstances it comes from; the later ones react to answers the store does not hold. On the
LongMemEval_S development half, 56 % of the evidence turns are the first user turn of their
session, against 20 % of the turns of those sessions. A conversation (every turn has a reply)
has no opener: its first turns are greetings.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from gitmem.context.postings import bm25_idf
from gitmem.context.terms import NO_TIME

__all__ = ["OPENER_WEIGHT", "SITTING_B", "SITTING_K1", "SITTING_WEIGHT", "SITTING_WINDOW_US", "Sittings"]

SITTING_WEIGHT = 0.15
"""Weight of the sitting's BM25 against the memory's own (module docstring; flat from 0.1 to 0.3)."""
SITTING_K1 = 1.2
"""BM25 ``k1`` over sittings: Robertson's value; a sitting repeats a topic's words, and that says more."""
SITTING_B = 0.75
"""BM25 ``b`` over sittings: sessions vary in length far more than turns do, so length is normalised."""
SITTING_WINDOW_US = 3_600_000_000
"""Consecutive memories of a sitting are observed at most this far apart (an hour, in µs)."""
OPENER_WEIGHT = 0.5
"""Share of its own BM25 the first memory of a one-speaker sitting adds (module docstring; flat
from 0.3 to 0.75 on the held-out questions, LoCoMo's conversations have no opener)."""


class Sittings:
    """Each document's sitting, each sitting's documents and length, for :meth:`scores`.

    Args:
        of: document -> its sitting number, ``-1`` for none (``array("i")``).
        docs, starts: the documents of sitting ``s`` are ``docs[starts[s]:starts[s + 1]]``.
        lengths: per sitting the sum of its documents' numbers of BM25 terms (``array("d")``).
        openers: the first document of each one-speaker sitting (``array("i")``).

    :meth:`found` finds them from an index's columns; a saved index keeps the five arrays
    (:meth:`arrays`), so that a query reads them instead of sorting the documents.

    Raises:
        ValueError: arrays that do not describe the same sittings (their sizes).
    """

    def __init__(self, of: array, docs: array, starts: array, lengths: array, openers: array) -> None:
        if len(starts) != len(lengths) + 1 or (len(starts) and (starts[0] != 0 or starts[-1] != len(docs))) \
                or (docs and not 0 <= min(docs) <= max(docs) < len(of)) \
                or (of and not -1 <= min(of) <= max(of) < len(lengths)):
            raise ValueError("inconsistent sittings")
        if openers and not 0 <= min(openers) <= max(openers) < len(of):
            raise ValueError("inconsistent sittings")
        self.of, self.docs, self.starts, self.lengths = of, docs, starts, lengths
        self.opener_array = openers
        self.openers = set(openers)
        self.count = len(lengths)
        self.average = (sum(lengths) / self.count) if self.count else 1.0
        # The least length norm bounds a term's part of any sitting's score (MaxScore).
        self.least_norm = SITTING_K1 * (1 - SITTING_B + SITTING_B * min(lengths, default=0.0)
                                        / (self.average or 1.0))

    @classmethod
    def found(cls, ids: Sequence[str], authors: Sequence[str], refs: Sequence[str],
              times: array, lengths: array, replied: AbstractSet[int] = frozenset()) -> Sittings:
        """The sittings of an index's documents (module docstring).

        Args:
            ids: per document its memory id (``""``: a hole).
            authors: per document its author (``""``: unknown).
            refs: per document its anchor (``""``: none).
            times: per document its observation time in µs (``NO_TIME``: none).
            lengths: per document its number of BM25 terms.
            replied: the documents with a reply (a neighbour by another author); a sitting
                holding one has no opener.
        """
        of = array("i", [-1]) * len(ids)
        timed = sorted((times[d], ids[d], d) for d in range(len(ids))
                       if ids[d] and times[d] != NO_TIME and authors[d] and not refs[d])
        last: dict[str, tuple[int, int]] = {}  # author -> (time, document) of their last one
        runs: list[list[int]] = []
        run_of: dict[int, int] = {}
        for t, _, d in timed:
            author = authors[d]
            before = last.get(author)
            if before is not None and 0 < t - before[0] <= SITTING_WINDOW_US:
                runs[run_of[before[1]]].append(d)
                run_of[d] = run_of[before[1]]
            else:
                run_of[d] = len(runs)
                runs.append([d])
            last[author] = (t, d)
        docs, starts, sums, openers = array("i"), array("i", [0]), array("d"), array("i")
        for run in runs:
            if len(run) < 2:
                continue
            if replied.isdisjoint(run):
                openers.append(run[0])
            for d in run:
                of[d] = len(sums)
            docs.extend(sorted(run))
            starts.append(len(docs))
            sums.append(float(sum(lengths[d] for d in run)))
        return cls(of, docs, starts, sums, openers)

    def arrays(self) -> tuple[array, array, array, array, array]:
        """``(of, docs, starts, lengths, openers)``, what the constructor takes."""
        return self.of, self.docs, self.starts, self.lengths, self.opener_array

    def scores(self, postings: Sequence[tuple[array, array]],
               matched: dict[int, float]) -> dict[int, float]:
        """The prior of each matched document, by document number.

        ``SITTING_WEIGHT`` × the BM25 of its sitting, and for an opener ``OPENER_WEIGHT`` × its
        own. The exhaustive computation: one pass over every posting (the reference of
        :meth:`prior`).

        Args:
            postings: per distinct query term found in the index, its documents and counts.
            matched: the documents the query matches, with their BM25 (only these take the prior).
        """
        if not self.count:
            return {}
        of, k1, b = self.of, SITTING_K1, SITTING_B
        sitting: dict[int, float] = {}
        average, lengths = self.average or 1.0, self.lengths
        for numbers, counts in postings:
            tf: dict[int, int] = {}
            for number, count in zip(numbers, counts, strict=True):
                s = of[number]
                if s >= 0:
                    tf[s] = tf.get(s, 0) + count
            if not tf:
                continue
            idf = bm25_idf(self.count, len(tf))
            for s, f in tf.items():
                norm = k1 * (1 - b + b * lengths[s] / average)
                sitting[s] = sitting.get(s, 0.0) + idf * f / (f + norm)
        out: dict[int, float] = {}
        for d in matched:
            s = of[d]
            if s >= 0 and s in sitting:
                out[d] = SITTING_WEIGHT * sitting[s]
        for d in self.openers.intersection(matched):
            out[d] = out.get(d, 0.0) + OPENER_WEIGHT * matched[d]
        return out

    def idfs(self, postings: Sequence[tuple[array, array]]) -> list[float]:
        """Per posting the idf of its term over sittings, 0 for a term in no sitting.

        One C pass over each posting (the set of its documents' sittings).
        """
        of = self.of
        out = []
        for numbers, _ in postings:
            held = set(map(of.__getitem__, numbers))
            held.discard(-1)
            out.append(bm25_idf(self.count, len(held)) if held else 0.0)
        return out

    def bound(self, postings: Sequence[tuple[array, array]], idfs: Sequence[float]) -> float:
        """An upper bound of any document's prior: each term's idf × F / (F + least norm).

        ``F``, the term's total count, bounds its count in any one sitting.
        """
        total = 0.0
        for (_, counts), idf in zip(postings, idfs, strict=True):
            if idf:
                f = float(sum(counts))
                total += idf * f / (f + self.least_norm)
        return SITTING_WEIGHT * total

    def prior(self, d: int, own: float, postings: Sequence[tuple[array, array]],
              idfs: Sequence[float]) -> float | None:
        """Document ``d``'s prior as :meth:`scores` gives it (the same floats), ``None`` for none.

        ``own`` is its BM25 (what an opener adds a share of).

        The sitting's count of each term is summed by bisection in the term's postings, one
        per document of the sitting.
        """
        sitting = self._sitting_prior(d, postings, idfs)
        if d in self.openers:
            return (0.0 if sitting is None else sitting) + OPENER_WEIGHT * own
        return sitting

    def _sitting_prior(self, d: int, postings: Sequence[tuple[array, array]],
                       idfs: Sequence[float]) -> float | None:
        s = self.of[d] if self.count else -1
        if s < 0:
            return None
        members = self.docs[self.starts[s]:self.starts[s + 1]]
        norm = SITTING_K1 * (1 - SITTING_B + SITTING_B * self.lengths[s] / (self.average or 1.0))
        total: float | None = None
        for (numbers, counts), idf in zip(postings, idfs, strict=True):
            if not idf:
                continue
            f = 0
            size = len(numbers)
            for m in members:
                at = bisect_left(numbers, m)
                if at < size and numbers[at] == m:
                    f += counts[at]
            if f:
                value = idf * f / (f + norm)
                total = value if total is None else total + value
        return None if total is None else SITTING_WEIGHT * total
