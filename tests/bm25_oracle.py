"""The BM25 oracle: bm25s' scores of a corpus tokenised as gitmem's recall tokenises it.

bm25s (Lucene variant, the test extra) is what the BM25 part of
:class:`gitmem.context.recall.RecallIndex` must equal (to float32 rounding: bm25s computes in
float32) for documents that have no neighbours; the product never imports it. Used by
``tests/test_cache.py``, ``tests/test_incremental.py`` and ``bench/bench_recall.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from types import ModuleType

from gitmem.context.analysis import tokenize
from gitmem.context.recall import BM25_B, BM25_K1, date_words

__all__ = ["bm25_document", "bm25_scores"]


def bm25_document(content: str, observed: datetime | str | None) -> list[str]:
    """BM25 terms of one memory: its content's, then its observation month and year."""
    terms = tokenize(content)
    if observed is not None:
        terms.extend(tokenize(date_words(observed)))
    return terms


def bm25_scores(query: str, documents: Sequence[str],
                observed: Sequence[datetime | str | None] | None = None) -> list[float]:
    """bm25s' BM25 score of each document for ``query``; 0.0 where no query term occurs.

    Args:
        query: free text, terms from :func:`gitmem.context.analysis.tokenize`.
        documents: the texts.
        observed: each document's observation time, whose month and year are indexed with
            it (:func:`gitmem.context.recall.date_words`); ``None`` indexes the texts alone.

    Returns:
        One float per document, in order (bm25s computes them in float32).
    """
    if observed is None:
        corpus = [tokenize(d) for d in documents]
    else:
        corpus = [bm25_document(d, at) for d, at in zip(documents, observed, strict=True)]
    vocabulary = {t for doc in corpus for t in doc}
    # Each distinct query term once, as recall scores them.
    terms = list(dict.fromkeys(t for t in tokenize(query) if t in vocabulary))
    if not terms:
        return [0.0] * len(documents)
    retriever = _bm25s().BM25(k1=BM25_K1, b=BM25_B)
    retriever.index(corpus, show_progress=False)
    return [float(s) for s in retriever.get_scores(terms)]


def _bm25s() -> ModuleType:
    """bm25s, imported on first use; it sets its own logger to DEBUG, put back to WARNING."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s
