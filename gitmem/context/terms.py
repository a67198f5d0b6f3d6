"""The terms recall indexes: words with the month and year of observation, character trigrams.

A leaf below :mod:`gitmem.context.recall` (which explains the choices): its index and its
scores are built from these.
"""

from __future__ import annotations

import functools
from collections import Counter as Multiset
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gitmem.context import analysis
from gitmem.context.analysis import tokenize

__all__ = ["bm25_document", "date_column", "date_words", "trigrams", "word_trigrams"]

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")


def date_words(observed: datetime | str | None) -> str:
    """The month and year of an observation time as words (``"may 2023"``), ``""`` for none.

    Accepts a datetime or its ISO 8601 text (``2023-05-08T13:56:00+00:00``); the month is
    that of the time as given (UTC for stored records).
    """
    if observed is None:
        return ""
    if isinstance(observed, str):
        year, month = observed[:4], int(observed[5:7])
    else:
        year, month = str(observed.year), observed.month
    return f"{_MONTHS[month - 1]} {year}"


def date_column(observed: Sequence[datetime | str | None]) -> list[str]:
    """:func:`date_words` of each time; one string per month (they repeat: smaller files)."""
    words: dict[Any, str] = {}
    out = []
    for at in observed:
        key = at[:7] if isinstance(at, str) else at
        found = words.get(key)
        if found is None:
            found = words[key] = date_words(at)
        out.append(found)
    return out


def bm25_document(content: str, observed: datetime | str | None) -> list[str]:
    """BM25 terms of one memory: its content's, then its observation month and year."""
    terms = tokenize(content)
    if observed is not None:
        terms.extend(tokenize(date_words(observed)))
    return terms


@functools.lru_cache(maxsize=1 << 16)
def word_trigrams(word: str) -> tuple[str, ...]:
    """The character trigrams of ``word`` padded with one space each side."""
    padded = f" {word} "
    return tuple(padded[i : i + 3] for i in range(len(padded) - 2))


def trigrams(text: str) -> Multiset[str]:
    """The trigrams of every word of ``text`` (lowercased, stop words left out), counted."""
    grams: Multiset[str] = Multiset()
    for word in analysis.words(text.lower()):
        if word in analysis.STOPWORDS:
            continue
        grams.update(word_trigrams(word))
    return grams
