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

Computed once per index (a sort of the documents by time, cached on it), and at query time
from the postings the query's terms already fetch: one pass over each posting.

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
    """Each document's sitting and each sitting's length, for :meth:`scores`.

    Args:
        ids, authors, refs: per document its memory id (``""``: a hole), author, anchor.
        times: per document its observation time in µs (``NO_TIME``: none).
        lengths: per document its number of BM25 terms.
        replied: the documents with a reply (a neighbour by another author); a sitting
            holding one has no opener.
    """

    def __init__(self, ids: Sequence[str], authors: Sequence[str], refs: Sequence[str],
                 times: array, lengths: array, replied: AbstractSet[int] = frozenset()) -> None:
        self.of = array("i", [-1]) * len(ids)  # document -> sitting number, -1: none
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
        self.lengths = array("d")
        self.openers: set[int] = set()  # the first document of each one-speaker sitting
        for run in runs:
            if len(run) < 2:
                continue
            if replied.isdisjoint(run):
                self.openers.add(run[0])
            number = len(self.lengths)
            for d in run:
                self.of[d] = number
            self.lengths.append(float(sum(lengths[d] for d in run)))
        self.count = len(self.lengths)
        self.average = (sum(self.lengths) / self.count) if self.count else 1.0

    def scores(self, postings: Sequence[tuple[array, array]],
               matched: dict[int, float]) -> dict[int, float]:
        """The prior of each matched document, by document number.

        ``SITTING_WEIGHT`` × the BM25 of its sitting, and for an opener ``OPENER_WEIGHT`` × its own.

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
