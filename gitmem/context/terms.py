"""The terms recall indexes: words with the month and year of observation, and field values.

A leaf below :mod:`gitmem.context.recall` (which explains the choices): its index and its
scores are built from these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from gitmem.context.analysis import tokenize

__all__ = ["NO_TIME", "bm25_document", "date_column", "date_words", "field_terms", "query_field_terms",
           "time_key"]

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


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\b\w*_\w+|\b[a-z]+[A-Z]\w*"
                         r"|\b[A-Z]\w*[a-z]\w*[A-Z]\w*")
_FIELD_WORD = re.compile(r"\w+")


def field_terms(content: str, author: str | None, ref: str | None) -> list[str]:
    """The field values of one memory that a query may name, as lowercase whole words.

    - the code identifiers its content names (dotted, ``snake_case`` or ``camelCase``
      words: ``click.core.Context`` gives ``click``, ``core``, ``context``;
      ``convert_type`` stays one term, unlike in its BM25 terms);
    - the path of its anchor without the extension (``src/click/core.py#L1-L9``: ``src``,
      ``click``, ``core``);
    - the words of its author's name (``Caroline <c@example.org>``: ``caroline``).

    Whole words, not stems or identifier parts: a boost for a query that names the value
    itself (see :data:`gitmem.context.recall.FIELD_WEIGHT`).
    """
    out = [part.lower() for word in _IDENTIFIER.findall(content) for part in word.split(".") if part]
    if ref:
        path = ref.split("#", 1)[0]
        path = re.sub(r"\.\w+$", "", path)
        out.extend(part.lower() for part in re.split(r"[/.]", path) if part)
    if author:
        out.extend(w.lower() for w in _FIELD_WORD.findall(author.split("<", 1)[0]))
    return out


def query_field_terms(query: str) -> set[str]:
    """The terms of ``query`` matched against :func:`field_terms`: its lowercase words and BM25 terms."""
    return {w.lower() for w in _FIELD_WORD.findall(query)} | set(tokenize(query))


NO_TIME = -(1 << 63)
"""What :func:`time_key` gives for no observation time."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_key(observed: datetime | str | None) -> int:
    """An observation time in microseconds from the Unix epoch (:data:`NO_TIME` for none).

    A datetime or its ISO 8601 text; one without a zone is taken as UTC (as stored records
    are). The order in which recall finds a memory's neighbours.
    """
    if observed is None:
        return NO_TIME
    moment = datetime.fromisoformat(observed) if isinstance(observed, str) else observed
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)
