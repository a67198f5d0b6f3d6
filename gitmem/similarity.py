"""Near-duplicate and possibly contradicting statements, by the terms they share.

Two statements are **near-duplicates** when they share at least :data:`MIN_SHARED` terms
and those make up at least :data:`MIN_OVERLAP` of the shorter one's terms (the overlap
coefficient, |A ∩ B| / min(|A|, |B|); Szymkiewicz–Simpson). Terms are recall's
(:func:`gitmem.analysis.tokenize`: identifier parts, no stop words, Snowball stems), so
``API port is 8090`` and ``API moved to port 9090`` share ``api`` and ``port``: 2 of the
shorter one's 3 terms.

Near-duplicates **may contradict** each other when they differ in a number (``8090`` and
``9090``) or when only one of them is negated (``not``, ``never``, ``no``…): the same
subject, said two ways. The rule is a cheap lexical signal for a person or an agent to
check, never a verdict; gitmem only warns and marks, it never hides either memory.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.analysis import tokenize

__all__ = ["MIN_OVERLAP", "MIN_SHARED", "Statement", "StatementIndex", "find_similar", "may_contradict",
           "near_duplicate"]

MIN_SHARED = 2
"""Terms two near-duplicates share at least."""
MIN_OVERLAP = 0.6
"""Overlap coefficient (shared terms / terms of the shorter statement) of near-duplicates."""

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "nobody", "neither", "nor",
                        "cannot", "without", "dont", "doesnt", "isnt", "wasnt", "arent",
                        "werent", "wont", "shouldnt", "mustnt", "cant", "couldnt", "wouldnt",
                        "didnt", "hasnt", "havent", "hadnt"})
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@dataclass(frozen=True)
class Statement:
    """One statement prepared for comparison: its terms, numbers and whether it is negated.

    Build with :meth:`of`.
    """

    terms: frozenset[str]
    numbers: frozenset[str]
    negated: bool

    @classmethod
    def of(cls, text: str) -> Statement:
        """Analyse ``text`` (recall's terms; numbers as written; a negation word present)."""
        words = {w.lower().replace("'", "") for w in _WORD.findall(text)}
        return cls(frozenset(tokenize(text)), frozenset(_NUMBER.findall(text)),
                   bool(words & _NEGATIONS))


def near_duplicate(a: Statement, b: Statement) -> bool:
    """True when ``a`` and ``b`` share enough terms to be about the same thing (module docstring)."""
    shared = len(a.terms & b.terms)
    smaller = min(len(a.terms), len(b.terms))
    return shared >= MIN_SHARED and smaller > 0 and shared / smaller >= MIN_OVERLAP


def may_contradict(a: Statement, b: Statement) -> bool:
    """True when near-duplicates differ in a number or in negation (module docstring)."""
    if not near_duplicate(a, b):
        return False
    return (bool(a.numbers or b.numbers) and a.numbers != b.numbers) or a.negated != b.negated


def find_similar(text: str, candidates: Iterable[tuple[str, str]], limit: int = 3) -> list[str]:
    """Ids of the candidates that are near-duplicates of ``text``, most overlapping first.

    Args:
        text: the new statement.
        candidates: ``(id, content)`` pairs to compare with.
        limit: most ids returned.

    Returns:
        At most ``limit`` ids, by overlap coefficient (highest first), then by id.

    A cheap prefilter keeps this linear and light: a candidate is analysed only when its
    lowercased text contains at least :data:`MIN_SHARED` of the new statement's words.
    """
    new = Statement.of(text)
    if len(new.terms) < MIN_SHARED:
        return []
    probes = _probes(text)
    scored: list[tuple[float, str]] = []
    for memory_id, content in candidates:
        if not _probed(probes, content):
            continue
        other = Statement.of(content)
        if near_duplicate(new, other):
            shared = len(new.terms & other.terms) / min(len(new.terms), len(other.terms))
            scored.append((-shared, memory_id))
    return [memory_id for _, memory_id in sorted(scored)[:limit]]


def _probed(probes: Sequence[str], content: str) -> bool:
    """Whether ``content`` passes :func:`find_similar`'s prefilter (:data:`MIN_SHARED` probes in it)."""
    lowered = content.lower()
    return sum(1 for p in probes if p in lowered) >= MIN_SHARED


class StatementIndex:
    """The terms of many statements, for :func:`find_similar` without analysing each of them.

    A postings list per term (the rows whose statement has it) and each row's number of
    terms give, for a new statement, every row's shared terms by counting, so only the
    rows that share enough are looked at: the same ids, in the same order, as
    :func:`find_similar` over the same ``(id, content)`` pairs (rows that are
    near-duplicates must still pass its prefilter, checked on their text).

    Rows are never renumbered: :meth:`derive` marks the rows of changed or removed
    statements dead and appends the new ones, so deriving costs what the change does.
    Build with :meth:`build`; :meth:`to_payload` / :meth:`from_payload` convert to and from
    a plain marshal-able dict.
    """

    VERSION = "1"
    """Changes when the analysis (:func:`gitmem.analysis.tokenize`) or the payload changes."""

    def __init__(self, ids: list[str], contents: list[str], sizes: array, dead: bytearray,
                 postings: dict[str, bytes | array]) -> None:
        self.ids = ids
        self.contents = contents
        self.sizes = sizes
        self.dead = dead
        self._postings = postings

    @classmethod
    def build(cls, statements: Iterable[tuple[str, str]]) -> StatementIndex:
        """Index ``(id, content)`` pairs (each id once)."""
        index = cls([], [], array("I"), bytearray(), {})
        index._append(statements)
        return index

    def __len__(self) -> int:
        """Rows that are not dead."""
        return len(self.ids) - sum(self.dead)

    def statements(self) -> dict[str, str]:
        """Id -> content of every row that is not dead."""
        dead = self.dead
        return {i: c for r, (i, c) in enumerate(zip(self.ids, self.contents, strict=True)) if not dead[r]}

    def derive(self, changes: Mapping[str, str | None]) -> StatementIndex:
        """A new index with ``changes`` applied (id -> new content, ``None``: no longer indexed).

        This index is left as it is. Ids not indexed and mapped to ``None`` are ignored.
        """
        postings = dict(self._postings)
        out = StatementIndex(list(self.ids), list(self.contents), array("I", self.sizes),
                             bytearray(self.dead), postings)
        if changes:
            changed = set(changes)
            for row, memory_id in enumerate(self.ids):
                if memory_id in changed and not out.dead[row]:
                    out.dead[row] = 1
            out._append((i, c) for i, c in changes.items() if c is not None)
        return out

    def similar(self, text: str, skip: Iterable[str] = (), limit: int = 3) -> list[str]:
        """:func:`find_similar` of ``text`` over the indexed statements but the ids in ``skip``."""
        new = Statement.of(text)
        if len(new.terms) < MIN_SHARED:
            return []
        counts: Counter[int] = Counter()
        for term in new.terms:
            postings = self._rows(term)
            if postings is not None:
                counts.update(postings)
        probes: Sequence[str] | None = None
        skipped = set(skip)
        size, dead, ids, rows = len(new.terms), self.dead, self.ids, len(self.ids)
        scored: list[tuple[float, str]] = []
        for row, shared in counts.items():
            if shared < MIN_SHARED or row >= rows or dead[row] or ids[row] in skipped:
                continue
            overlap = shared / min(size, self.sizes[row])
            if overlap < MIN_OVERLAP:
                continue
            if probes is None:
                probes = _probes(text)
            if _probed(probes, self.contents[row]):
                scored.append((-overlap, ids[row]))
        return [memory_id for _, memory_id in sorted(scored)[:limit]]

    def to_payload(self) -> dict[str, Any]:
        """The index as a plain dict of lists, bytes and strings (for :mod:`marshal`)."""
        return {"version": self.VERSION, "ids": self.ids, "contents": self.contents,
                "sizes": self.sizes.tobytes(), "dead": bytes(self.dead),
                "postings": {t: bytes(p) if isinstance(p, bytes) else p.tobytes()
                             for t, p in self._postings.items()}}

    @classmethod
    def from_payload(cls, payload: Any) -> StatementIndex:
        """The index :meth:`to_payload` gave.

        Raises:
            ValueError: another version, or columns of different lengths.
            KeyError, TypeError: not such a payload.
        """
        if payload["version"] != cls.VERSION:
            raise ValueError(f"index version {payload['version']!r}, not {cls.VERSION!r}")
        ids, contents, postings = payload["ids"], payload["contents"], payload["postings"]
        sizes = array("I")
        sizes.frombytes(payload["sizes"])
        dead = bytearray(payload["dead"])
        if not (isinstance(ids, list) and isinstance(contents, list) and isinstance(postings, dict)) \
                or not len(ids) == len(contents) == len(sizes) == len(dead):
            raise ValueError("columns of different lengths")
        return cls(ids, contents, sizes, dead, postings)

    def _rows(self, term: str) -> array | None:
        """The rows whose statement has ``term`` (decoded on first use), or ``None``."""
        found = self._postings.get(term)
        if found is None or isinstance(found, array):
            return found
        rows = array("I")
        # (a posting of the wrong type or length is a damaged file: no rows, never an error)
        if isinstance(found, bytes):
            rows.frombytes(found[:len(found) - len(found) % rows.itemsize])
        self._postings[term] = rows
        return rows

    def _append(self, statements: Iterable[tuple[str, str]]) -> None:
        """Add rows; the postings of their terms are copied, never changed in place (shared with a base)."""
        grown: dict[str, array] = {}
        for memory_id, content in statements:
            row = len(self.ids)
            terms = frozenset(tokenize(content))
            self.ids.append(memory_id)
            self.contents.append(content)
            self.sizes.append(len(terms))
            self.dead.append(0)
            for term in terms:
                rows = grown.get(term)
                if rows is None:
                    rows = grown[term] = array("I")
                    old = self._postings.get(term)
                    if old is not None:
                        if isinstance(old, array):
                            rows.extend(old)
                        else:
                            rows.frombytes(old)
                rows.append(row)
        self._postings.update(grown)


def _probes(text: str) -> Sequence[str]:
    """Lowercased word stems of ``text`` that any sharing candidate must contain as substrings.

    A Snowball stem is a prefix of every word it comes from, except where the stemmer turns a
    final ``y`` into ``i`` (``query`` → ``queri``): the probe is the stem without such an ``i``.
    Stop words give no probe.
    """
    from gitmem.analysis import STOPWORDS, identifier_parts, stem

    out: set[str] = set()
    for word in _WORD.findall(text):
        for part in identifier_parts(word.replace("'", "")):
            lowered = part.lower()
            if lowered in STOPWORDS:
                continue
            probe = stem(lowered)
            probe = probe[:-1] if probe.endswith("i") else probe
            if len(probe) >= 2 or probe.isdigit():
                out.add(probe)
    return sorted(out)
