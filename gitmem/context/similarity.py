"""Near-duplicate and possibly contradicting statements, by the terms they share.

Two statements are **near-duplicates** when they share at least :data:`MIN_SHARED` terms
and those make up at least :data:`MIN_OVERLAP` of the shorter one's terms (the overlap
coefficient, |A ∩ B| / min(|A|, |B|); Szymkiewicz–Simpson). Terms are recall's
(:func:`gitmem.context.analysis.tokenize`: identifier parts, no stop words, Snowball stems), so
``API port is 8090`` and ``API moved to port 9090`` share ``api`` and ``port``: 2 of the
shorter one's 3 terms.

Near-duplicates **may contradict** each other when they differ in a number (``8090`` and
``9090``) or when only one of them is negated (``not``, ``never``, ``no``…): the same
subject, said two ways. The rule is a cheap lexical signal for a person or an agent to
check, never a verdict; gitmem only warns and marks, it never hides either memory.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gitmem.context.analysis import tokenize

__all__ = ["MIN_OVERLAP", "MIN_SHARED", "Statement", "StatementIndex", "StoredParts",
           "find_similar", "may_contradict", "near_duplicate"]

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
        """Analyse ``text`` (recall's terms; numbers as written; a negation word present).

        Memoised (a bounded cache): one recall compares its hits twice (near-ties, then
        contradiction marks), and a long-running process meets the same memories again.
        """
        return _statement(text)


@functools.lru_cache(maxsize=4096)
def _statement(text: str) -> Statement:
    words = {w.lower().replace("'", "") for w in _WORD.findall(text)}
    return Statement(frozenset(tokenize(text)), frozenset(_NUMBER.findall(text)),
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

    Laid out flat so that loading it costs little more than reading the file: the
    contents are one UTF-8 string with row offsets (a row's text is decoded only when
    looked at); the postings one array of row numbers, with each term's offsets, found by
    searching a newline-separated string of the terms. Rows are never renumbered:
    :meth:`derive` marks the rows of changed or removed statements dead and appends the
    new ones; the postings of the terms it touches are kept apart (``extra``) until there
    are :data:`_FLATTEN_AT` of them. Build with :meth:`build`; :meth:`to_parts` gives the
    byte strings an index is saved as, :meth:`stored` an index that reads them as it needs
    them.
    """

    VERSION = "3"
    """Changes when the analysis (:func:`gitmem.context.analysis.tokenize`) or the parts change."""

    def __init__(self, ids: list[str], text: bytes, offsets: array, sizes: array, dead: bytearray,
                 terms: str, spans: array, flat: bytes, extra: dict[str, bytes | array]) -> None:
        self.ids = ids
        self.sizes = sizes
        self.dead = dead
        self._joined: str | None = None  # "\n" + the ids joined by "\n" + "\n", made on first use
        self._last_row: dict[str, int] | None = None  # id -> its last row, made on first use
        self._text = text
        self._offsets = offsets
        self._terms = terms
        self._spans = spans
        self._flat = flat
        self._extra = extra

    @classmethod
    def build(cls, statements: Iterable[tuple[str, str]]) -> StatementIndex:
        """Index ``(id, content)`` pairs (each id once)."""
        index = cls([], b"", array("q", [0]), array("I"), bytearray(), "\n", array("q", [0]), b"", {})
        index._append(statements)
        return index._flattened()

    def __len__(self) -> int:
        """Rows that are not dead."""
        return len(self.ids) - self.dead.count(1)

    def content(self, row: int) -> str:
        """The statement of ``row``."""
        return self._text[self._offsets[row]:self._offsets[row + 1]].decode("utf-8", "surrogatepass")

    def statements(self) -> dict[str, str]:
        """Id -> content of every row that is not dead."""
        return {i: self.content(r) for r, i in enumerate(self.ids) if not self.dead[r]}

    def statement(self, memory_id: str) -> str | None:
        """The statement indexed for ``memory_id``, or ``None``."""
        row = self._live_rows([memory_id]).get(memory_id)
        return None if row is None else self.content(row)

    def changes(self, changes: Mapping[str, str | None]) -> dict[str, str | None]:
        """The part of ``changes`` (as for :meth:`derive`) that changes this index.

        Statements that differ from the indexed ones, new ids, and removed ids that are
        indexed: what :meth:`derive` acts on (e.g. a ``verify`` that changed no statement
        changes nothing here).
        """
        rows = self._live_rows(changes)
        out: dict[str, str | None] = {}
        for memory_id, content in changes.items():
            row = rows.get(memory_id)
            if row is None:
                if content is not None:
                    out[memory_id] = content
            elif content is None or self.content(row) != content:
                out[memory_id] = content
        return out

    def derive(self, changes: Mapping[str, str | None]) -> StatementIndex:
        """A new index with ``changes`` applied (id -> new content, ``None``: no longer indexed).

        This index is left as it is. Ids not indexed and mapped to ``None`` are ignored, and
        so are statements that did not change (a write that changed other fields of many
        records, e.g. ``verify``, analyses none of them).
        """
        out = StatementIndex(list(self.ids), self._text, array("q", self._offsets), array("I", self.sizes),
                             bytearray(self.dead), self._terms, self._spans, self._flat, dict(self._extra))
        if changes:
            dead = out.dead
            rows = self._live_rows(changes)
            added: list[tuple[str, str]] = []
            for memory_id, content in changes.items():
                row = rows.get(memory_id)
                if row is not None and content is not None and self.content(row) == content:
                    continue
                if row is not None:
                    dead[row] = 1
                if content is not None:
                    added.append((memory_id, content))
            out._append(added)
        return out._flattened() if len(out._extra) >= _FLATTEN_AT else out

    def _live_rows(self, wanted: Iterable[str]) -> dict[str, int]:
        """The row of each id of ``wanted`` that is indexed (not dead).

        An id's live row, if it has one, is its last: :meth:`derive` appends a changed
        statement after marking its old row dead, and dead rows never come back. A few ids
        are looked for in the joined ids (no dict of 100,000 ids for the one a ``learn``
        adds); many through a dict made once.
        """
        wanted = list(wanted)
        ids, dead = self.ids, self.dead
        out: dict[str, int] = {}
        if len(wanted) > _LOOKED_FOR_AT_MOST or self._last_row is not None:
            if self._last_row is None:
                self._last_row = dict(zip(ids, range(len(ids)), strict=True))
            for memory_id in wanted:
                row = self._last_row.get(memory_id)
                if row is not None and not dead[row]:
                    out[memory_id] = row
            return out
        if self._joined is None:
            self._joined = "\n" + "\n".join(ids) + "\n"
        joined = self._joined
        for memory_id in wanted:
            at = joined.rfind(f"\n{memory_id}\n") if "\n" not in memory_id else -1
            if at >= 0:
                row = joined.count("\n", 0, at)
                if not dead[row]:
                    out[memory_id] = row
        return out

    def similar(self, text: str, skip: Iterable[str] = (), limit: int = 3) -> list[str]:
        """:func:`find_similar` of ``text`` over the indexed statements but the ids in ``skip``."""
        return [memory_id for _, memory_id in sorted(self._scored(text, set(skip)))[:limit]]

    def _scored(self, text: str, skipped: Container[str]) -> list[tuple[float, str]]:
        """``(-overlap, id)`` of the near-duplicates of ``text`` (:func:`find_similar`) not skipped."""
        new = Statement.of(text)
        if len(new.terms) < MIN_SHARED:
            return []
        counts: Counter[int] = Counter()
        for term in new.terms:
            counts.update(self._rows(term))
        probes: Sequence[str] | None = None
        size, ids, rows = len(new.terms), self.ids, len(self.ids)
        scored: list[tuple[float, str]] = []
        for row, shared in counts.items():
            if shared < MIN_SHARED or row >= rows:
                continue
            # The overlap first: it leaves few rows, whose id a stored index reads one by one.
            overlap = shared / min(size, self.sizes[row])
            if overlap < MIN_OVERLAP or self.dead[row] or ids[row] in skipped:
                continue
            if probes is None:
                probes = _probes(text)
            if _probed(probes, self.content(row)):
                scored.append((-overlap, ids[row]))
        return scored

    def to_parts(self) -> tuple[int, dict[str, bytes]]:
        """The number of rows and the index as named byte strings (what :meth:`stored` reads back).

        ``ids`` (UTF-8, one a line) and ``idoffsets`` (where each starts), ``text`` and
        ``offsets``, ``sizes``, ``dead``, ``terms`` (UTF-8, one a line) and ``spans``, ``flat``:
        the postings kept apart by :meth:`derive` are moved into ``flat`` first.
        """
        self._flattened()
        joined = "\n".join(self.ids).encode("utf-8", "surrogatepass")
        starts = array("q", [0])
        for memory_id in self.ids:
            starts.append(starts[-1] + len(memory_id.encode("utf-8", "surrogatepass")) + 1)
        return len(self.ids), {
            "ids": joined, "idoffsets": starts.tobytes(), "text": self._text,
            "offsets": self._offsets.tobytes(), "sizes": self.sizes.tobytes(), "dead": bytes(self.dead),
            "terms": self._terms.encode("utf-8", "surrogatepass"), "spans": self._spans.tobytes(),
            "flat": self._flat}

    @classmethod
    def stored(cls, rows: int, parts: StoredParts) -> StatementIndex:
        """The index :meth:`to_parts` gave, read from ``parts`` as it is used.

        A lookup (:meth:`similar`, :meth:`statement`, :meth:`changes`) reads the terms, the
        row sizes and dead marks, the ids when one is looked for, and only the postings and
        texts of the rows it looks at; anything else (:meth:`derive`, :meth:`statements`)
        reads every part. Whatever ``parts`` raises (a damaged part) passes through.

        Raises:
            ValueError: parts of lengths that do not fit ``rows``.
        """
        sizes = {name: parts.size(name) for name in _PART_NAMES}
        if not isinstance(rows, int) or rows < 0:
            raise ValueError(f"{rows!r} rows")
        if sizes["sizes"] != 4 * rows or sizes["dead"] != rows or sizes["offsets"] != 8 * (rows + 1) \
                or sizes["idoffsets"] != 8 * (rows + 1) or sizes["spans"] % 8 or sizes["flat"] % 4:
            raise ValueError("parts of different lengths")
        return _StoredIndex(rows, parts)

    def _rows(self, term: str) -> array:
        """The rows whose statement has ``term`` (empty when none)."""
        rows = array("I")
        found = self._extra.get(term)
        if isinstance(found, array):
            return found
        if isinstance(found, bytes):
            # (a posting of the wrong length is a damaged file: rows cut short, never an error)
            rows.frombytes(found[:len(found) - len(found) % rows.itemsize])
            self._extra[term] = rows
            return rows
        at = self._terms.find(f"\n{term}\n") if "\n" not in term else -1
        if at >= 0:
            number = self._terms.count("\n", 0, at)
            rows.frombytes(self._flat[self._spans[number] * 4:self._spans[number + 1] * 4])
        return rows

    def _append(self, statements: Iterable[tuple[str, str]]) -> None:
        """Add rows; the postings of their terms go to ``extra`` (copied, never changed in place)."""
        self._joined = self._last_row = None
        grown: dict[str, array] = {}
        pieces = [self._text]
        end = self._offsets[-1]
        for memory_id, content in statements:
            row = len(self.ids)
            terms = frozenset(tokenize(content))
            encoded = content.encode("utf-8", "surrogatepass")
            self.ids.append(memory_id)
            pieces.append(encoded)
            end += len(encoded)
            self._offsets.append(end)
            self.sizes.append(len(terms))
            self.dead.append(0)
            for term in terms:
                rows = grown.get(term)
                if rows is None:
                    rows = grown[term] = array("I", self._rows(term))
                rows.append(row)
        self._text = b"".join(pieces)
        self._extra.update(grown)

    def _flattened(self) -> StatementIndex:
        """Move every posting in ``extra`` to the flat array; return the index itself."""
        names = self._terms.split("\n")[1:-1]
        order = {t: n for n, t in enumerate(names)}
        for term in self._extra:
            order.setdefault(term, len(order))
        chunks: list[bytes] = []
        spans = array("q", [0])
        for number, term in enumerate(order):
            found = self._extra.get(term)
            if found is None:
                chunk = self._flat[self._spans[number] * 4:self._spans[number + 1] * 4]
            else:
                chunk = found if isinstance(found, bytes) else found.tobytes()
                chunk = chunk[:len(chunk) - len(chunk) % 4]
            chunks.append(chunk)
            spans.append(spans[-1] + len(chunk) // 4)
        self._terms = "\n" + "".join(f"{t}\n" for t in order)
        self._spans, self._flat, self._extra = spans, b"".join(chunks), {}
        return self


class StoredParts(Protocol):
    """Where a saved index's parts (:meth:`StatementIndex.to_parts`) are read from."""

    def size(self, name: str) -> int:
        """Bytes of the part ``name``."""

    def read(self, name: str, start: int = 0, stop: int | None = None) -> bytes:
        """Bytes ``start`` to ``stop`` (default: the end) of the part ``name``."""


_PART_NAMES = ("ids", "idoffsets", "text", "offsets", "sizes", "dead", "terms", "spans", "flat")


def _numbers(typecode: str, data: bytes) -> array:
    found = array(typecode)
    found.frombytes(data)
    return found


#: How each attribute of a :class:`_StoredIndex` is made from its whole part, when first used.
_WHOLE: dict[str, Callable[[StoredParts], Any]] = {
    "sizes": lambda parts: _numbers("I", parts.read("sizes")),
    "dead": lambda parts: bytearray(parts.read("dead")),
    "_text": lambda parts: parts.read("text"),
    "_offsets": lambda parts: _numbers("q", parts.read("offsets")),
    "_terms": lambda parts: parts.read("terms").decode("utf-8", "surrogatepass"),
    "_spans": lambda parts: _numbers("q", parts.read("spans")),
    "_flat": lambda parts: parts.read("flat"),
}


class _StoredIds(Sequence[str]):
    """The ids of a stored index: one read by its row, or all of them (split once) when iterated."""

    def __init__(self, rows: int, parts: StoredParts) -> None:
        self._rows = rows
        self._parts = parts
        self._all: list[str] | None = None

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, row: Any) -> Any:
        if self._all is not None or not isinstance(row, int):
            return list(self)[row]
        if not 0 <= row < self._rows:
            raise IndexError(row)
        start, stop = _numbers("q", self._parts.read("idoffsets", 8 * row, 8 * row + 16))
        return self._parts.read("ids", start, stop - 1).decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        if self._all is None:
            joined = self._parts.read("ids").decode("utf-8", "surrogatepass")
            self._all = joined.split("\n") if self._rows else []
        return iter(self._all)


class _StoredIndex(StatementIndex):
    """A :class:`StatementIndex` whose parts are read as it uses them (see :meth:`StatementIndex.stored`).

    Each attribute of :data:`_WHOLE` is read whole the first time it is used (:meth:`__getattr__`);
    a lookup reads postings and texts row by row instead (:meth:`_rows`, :meth:`content`).
    """

    def __init__(self, rows: int, parts: StoredParts) -> None:  # the parts are read on use
        self.ids = _StoredIds(rows, parts)  # type: ignore[assignment]
        self._parts = parts
        self._joined = None
        self._last_row = None
        self._extra = {}

    def __getattr__(self, name: str) -> Any:
        make = _WHOLE.get(name)
        if make is None:
            raise AttributeError(name)
        value = make(self._parts)
        setattr(self, name, value)
        return value

    def content(self, row: int) -> str:
        """The statement of ``row`` (its text alone, unless all of them are read)."""
        if "_text" in self.__dict__:
            return super().content(row)
        start, stop = _numbers("q", self._parts.read("offsets", 8 * row, 8 * row + 16))
        return self._parts.read("text", start, stop).decode("utf-8", "surrogatepass")

    def _rows(self, term: str) -> array:
        if "_flat" in self.__dict__:
            return super()._rows(term)
        rows = array("I")
        at = self._terms.find(f"\n{term}\n") if "\n" not in term else -1
        if at >= 0:
            number = self._terms.count("\n", 0, at)
            start, stop = _numbers("q", self._parts.read("spans", 8 * number, 8 * number + 16))
            rows.frombytes(self._parts.read("flat", 4 * start, 4 * stop))
        return rows

    def _live_rows(self, wanted: Iterable[str]) -> dict[str, int]:
        if self._joined is None and len(self.ids):
            self._joined = "\n" + self._parts.read("ids").decode("utf-8", "surrogatepass") + "\n"
        return super()._live_rows(wanted)


#: Terms whose postings :meth:`StatementIndex.derive` keeps apart before flattening them all.
_FLATTEN_AT = 4096
#: Ids :meth:`StatementIndex.derive` looks for one by one in the joined ids; more go through a dict.
_LOOKED_FOR_AT_MOST = 64


def _probes(text: str) -> Sequence[str]:
    """Lowercased word stems of ``text`` that any sharing candidate must contain as substrings.

    A Snowball stem is a prefix of every word it comes from, except where the stemmer turns a
    final ``y`` into ``i`` (``query`` → ``queri``): the probe is the stem without such an ``i``.
    Stop words give no probe.
    """
    from gitmem.context.analysis import STOPWORDS, identifier_parts, stem

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
