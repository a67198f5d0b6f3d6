"""Recall indexes: the BM25 and field postings of one candidate list, saved by term rows.

Each index is a small head memo (``recall``: ids, lengths, neighbours, expanded lengths),
a body memo (``recall-body``: texts, dates, times, authors, anchors, which only a derive
reads) and a ``recall_term`` row per term, so that a query reads its own terms' rows only.
"""

from __future__ import annotations

import hashlib
import operator
from array import array
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.cache.table import RowViews

__all__ = ["KEPT", "RecallIndexes"]

#: Indexes kept in memory: the candidate lists of one tip with and without stale memories, and
#: the stale ones alone (what a recall counts as held back, :func:`gitmem.api.stale.held_back`).
KEPT = 3
_BASES_TRIED = 2
_KIND = "recall"
_BODY = "recall-body"
_HEAD = ("ids", "lengths", "flengths", "near", "expanded", "sittings")
_CHUNK = 500
"""Terms asked for in one SELECT (SQLite's default limit of variables is 32,766)."""


class RecallIndexes:
    """:class:`gitmem.context.recall.RecallIndex` objects saved per candidate list.

    An index is keyed by ``<memories tree>:<digest>:<size>``, a digest of the candidate ids
    (which fix every document's text) and of :attr:`RecallIndex.VERSION` (which fixes the
    analysis), and their number.
    The head memo is ``{"key": (tree, digest, version), "index": head}`` (``head``: the
    version and the :data:`_HEAD` fields of :meth:`RecallIndex.to_payload`), the body memo
    the other columns, and each term a ``recall_term`` row (:meth:`save`); one whose key is
    not the one asked for is deleted and reported, never used. A loaded index is a
    :class:`SavedIndex`: a query reads only its terms' rows; a row that cannot be read or is
    not a posting of the index is a miss (the index is deleted, reported and built again).
    A missing index is derived from the kept or saved one nearest its size (:meth:`_latest`;
    :meth:`gitmem.context.recall.RecallIndex.derive`: after a write, only the memories it
    changed are indexed) and saved whole when asked for a second time
    (:meth:`~gitmem.cache.db.CacheDB.asked_before`), or built and saved. The last
    :data:`KEPT` indexes provided are also kept in memory, so that a long-running process
    (``tur mcp``) recalling again at the same tip reads nothing.

    Args:
        db: the cache database.
    """

    def __init__(self, db: CacheDB) -> None:
        self.db = db
        self._kept: dict[str, Any] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the database is cleared by the caller)."""
        self._kept.clear()

    def provider(self, tree: str | None) -> Callable[[Sequence[Any]], Any]:
        """A function ``candidates -> RecallIndex``, loading, deriving or building (and saving) the index.

        ``candidates`` is a :class:`RowViews` or a sequence of records (anything with ``id``
        and ``content``). With ``tree`` ``None`` (no records) nothing is saved. A saved index
        of the wrong structure is deleted, reported and built again.
        """
        from gitmem.context.recall import RecallIndex

        def provide(candidates: Sequence[Any]) -> RecallIndex:
            listed = candidates.ids if isinstance(candidates, RowViews) else [m.id for m in candidates]
            keyed = "\n".join([RecallIndex.VERSION, *listed]).encode()
            digest = hashlib.blake2b(keyed, digest_size=12).hexdigest()
            # The size ends the name: a base to derive from is chosen by it (:meth:`_latest`).
            name = f"{tree}:{digest}:{len(listed)}" if tree else None
            key = (tree, digest, RecallIndex.VERSION)
            if name is not None and name in self._kept:
                return self._kept[name]
            if name is not None:
                loaded = self._load(name, key)
                if loaded is not None and loaded.size == len(candidates):
                    # A damaged term row found by a query is a miss: built here again.
                    loaded.rebuild = lambda: self._miss(name, key, candidates, listed)
                    return self._keep(name, loaded).bind(listed)
                if loaded is not None:
                    self.db.reject(_KIND, name, Untrusted("bad structure: index of another document list"))
            return self._miss(name, key, candidates, listed)

        return provide

    def _miss(self, name: str | None, key: tuple, candidates: Sequence[Any],
              listed: list[str]) -> Any:
        """The index of ``candidates``, derived from the latest one or built; kept and saved."""
        from gitmem.context.recall import RecallIndex, index_columns

        columns: Mapping[str, Sequence[Any]]
        if isinstance(candidates, RowViews):
            texts = candidates.contents
            columns = _row_columns(candidates)
        else:
            texts, columns = [m.content for m in candidates], index_columns(candidates)
        base = self._latest(name, len(listed)) if name is not None else None
        if base is not None:
            try:
                base = base.whole()
            except (KeyError, TypeError, ValueError):  # a damaged base: built instead
                base = None
        index = (base.derive(listed, texts, **columns) if base is not None
                 else RecallIndex.build(texts, ids=listed, **columns)).bind(listed)
        if name is not None:
            # Derived from a saved index, it is cheap to derive again: saved (~6 MB at
            # 10,000 memories) once asked for twice.
            if base is None or self.db.asked_before(_KIND, name):
                self.save(name, key, index)
            self._keep(name, index)
        return index.bind(listed)

    def save(self, name: str, key: tuple, index: Any) -> None:
        """Save ``index`` as ``name``: its head and body memos and a row per term, in one transaction.

        Rows of indexes whose head memo was pruned are deleted with it.
        """
        payload = index.to_payload()
        head = {field: payload[field] for field in ("version", *_HEAD)}
        # Bound to the candidates its name fixes: a load reads the positions (no O(n) bind).
        head["positions"] = index.positions.tobytes() if index.positions is not None else b""
        body = {field: value for field, value in payload.items()
                if field not in (*_HEAD, "terms", "fields")}
        rows = []
        for field, postings in ((0, index.terms), (1, index.fields)):
            for term, found in postings.items():
                posting = index._posting(bool(field), found)
                rows.append((name, field, term, posting.df, found[0], found[1]))
        with self.db.batch():
            self.db.run("DELETE FROM recall_term WHERE idx = ?", (name,), write=True)
            if not self.db.run_many("INSERT INTO recall_term VALUES (?, ?, ?, ?, ?, ?)", rows):
                return
            self.db.put(_BODY, name, {"key": key, "body": body})
            self.db.put(_KIND, name, {"key": key, "index": head})
            self.db.run("DELETE FROM recall_term WHERE idx NOT IN"
                        " (SELECT key FROM memo WHERE kind = 'recall')", write=True)

    def _load(self, name: str, key: tuple | None) -> Any:
        """The index saved as ``name`` (for ``key``, when given), or ``None``.

        A bad one is deleted and reported when ``key`` is given (when the caller asked for
        that index; as a base to derive from, one of another version is passed over).
        """
        from gitmem.context.recall import RecallIndex

        payload = self.db.get(_KIND, name)
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict) or (key is not None and payload.get("key") != key):
                raise ValueError("built for another tree or candidate list")
            head = payload["index"]
            if not isinstance(head, dict) or head.get("version") != RecallIndex.VERSION:
                raise ValueError("index of another version")
            return SavedIndex.of_head(self.db, name, payload["key"], head)
        except (KeyError, TypeError, ValueError) as exc:
            if key is not None:
                self.db.reject(_KIND, name, Untrusted(f"bad structure: {exc}"))
            return None

    def _keep(self, name: str, index: Any) -> Any:
        self._kept[name] = index
        while len(self._kept) > KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str, size: int) -> Any:
        """The index held in memory or saved, but ``exclude``, nearest ``size`` documents, to derive from.

        Nearest in size, then most recent: after a write, the candidates of the last tree
        and not another list (a recall's and its held-back count's are both kept). One held
        in memory (``tur mcp``) is taken before a saved one as near: nothing to read.
        """
        def size_of(name: str) -> int:
            tail = name.rpartition(":")[2]
            return int(tail) if tail.isdigit() else -1

        near: list[tuple[int, int, str]] = []
        for rank, kept_name in enumerate(reversed(self._kept)):
            if kept_name != exclude:
                near.append((abs(self._kept[kept_name].size - size), rank, kept_name))
        for rank, name in enumerate(self.db.keys(_KIND), start=len(near)):
            if name != exclude and name not in self._kept and size_of(name) >= 0:
                near.append((abs(size_of(name) - size), rank, name))
        tries = _BASES_TRIED
        for _, _, name in sorted(near):
            if name in self._kept:
                return self._kept[name]
            if not tries:
                break
            tries -= 1
            found = self._load(name, None)
            if found is not None:
                return found
        return None


class SavedIndex:
    """Recall indexes made from a saved head, reading their term rows on demand."""

    @staticmethod
    def of_head(db: CacheDB, name: str, key: Any, head: dict[str, Any]) -> Any:
        """The index of the head memo ``head`` saved as ``name``; its postings are read by :meth:`fetch`.

        Raises:
            ValueError, TypeError, KeyError: an inconsistent head.
        """
        from gitmem.context.recall import RecallIndex

        class Saved(RecallIndex):
            """A saved index: :attr:`terms` and :attr:`fields` hold the rows read so far."""

            _absent: tuple[set[str], set[str]]  # terms found to have no row (BM25, field)
            rebuild: Callable[[], RecallIndex] | None = None  # builds it again from the candidates
            rebuilt = False  # a damaged row was found: the index is now held whole
            saved_positions: array | None = None  # its bound positions when not the identity

            def fetch(self, bm25_terms: Sequence[str], field_terms: Sequence[str]) -> None:
                if self.rebuilt:
                    return
                wanted = [(0, t) for t in bm25_terms if t not in self.terms and t not in self._absent[0]]
                wanted += [(1, t) for t in field_terms if t not in self.fields and t not in self._absent[1]]
                try:
                    read = _read_rows(db, name, wanted, len(self.ids))
                except (TypeError, ValueError) as exc:
                    self._heal(str(exc))
                    return
                for field, term, df, numbers, counts in read:
                    (self.fields if field else self.terms)[term] = (numbers.tobytes(), counts.tobytes())
                    self._postings[(bool(field), term)] = self._posting(bool(field), (numbers, counts), df)
                got = {(f, t) for f, t, *_ in read}
                for field, term in wanted:
                    if (field, term) not in got:
                        self._absent[field].add(term)

            def _heal(self, reason: str) -> None:
                """A damaged row: the index is deleted, reported, built again, and this one becomes it."""
                db.reject(_KIND, name, Untrusted(f"bad structure: {reason}"))
                db.run("DELETE FROM recall_term WHERE idx = ?", (name,), write=True)
                if self.rebuild is None:
                    raise ValueError(reason)
                fresh = self.rebuild()
                vars(self).update(vars(fresh))  # the same documents in the order bound: a whole index
                self.rebuilt = True

            def bind(self, ids: Sequence[str]) -> RecallIndex:
                known = None if self.rebuilt else self.saved_positions  # for the candidates of its name
                return super().bind(ids) if known is None else _bound(self, len(ids), known)

            def whole(self) -> RecallIndex:
                if self.rebuilt:
                    return self
                payload = db.get(_BODY, name)
                rows = db.run("SELECT field, term, numbers, counts FROM recall_term WHERE idx = ?",
                              (name,))
                if not isinstance(payload, dict) or payload.get("key") != key or rows is None:
                    raise ValueError("no body saved")
                body = payload["body"]
                terms: dict[str, tuple[bytes, bytes]] = {}
                fields: dict[str, tuple[bytes, bytes]] = {}
                for field, term, numbers, counts in rows:
                    (fields if field else terms)[term] = (numbers, counts)
                return RecallIndex.from_payload({**body, **{f: head[f] for f in ("version", *_HEAD)},
                                                 "terms": terms, "fields": fields})

        ids, lengths, flengths, near, expanded, sittings = _head_columns(head)
        index = Saved(ids, [], [], array("q"), [], [], lengths, flengths, {}, {}, near, expanded)
        index._absent = (set(), set())
        index._sittings = sittings
        index.saved_positions = _positions(head.get("positions", b""), len(ids), index.size)
        return index


def _positions(saved: bytes, n: int, size: int) -> array | None:
    """The saved positions of an index of ``n`` documents (``size`` of them not holes), ``None``: none.

    Checked by C passes: ``-1`` for each hole, and the others each of ``0 … size - 1`` once.

    Raises:
        ValueError, TypeError: not such a permutation.
    """
    if not saved:
        return None
    positions = array("i")
    positions.frombytes(saved)
    if len(positions) != n or positions.count(-1) != n - size or len(set(positions)) != size + (n > size) \
            or (n and not -1 <= min(positions) <= max(positions) < size):
        raise ValueError("inconsistent positions")
    return positions


def _bound(index: Any, count: int, positions: array) -> Any:
    """``index`` bound to ``count`` candidates by its saved ``positions``.

    Raises:
        ValueError: another number of candidates than the index has documents.
    """
    if count != index.size:
        raise ValueError("index of another document list")
    index.positions = positions
    return index


def _head_columns(head: dict[str, Any]) -> tuple[list[str], array, array, array, array, Any]:
    """The ids, lengths, field lengths, neighbours, expanded lengths and sittings of a head memo.

    Raises:
        ValueError, TypeError, KeyError: an inconsistent head.
    """
    from gitmem.context.sittings import Sittings

    lengths, flengths, near, expanded = array("i"), array("i"), array("i"), array("d")
    for column, field in ((lengths, "lengths"), (flengths, "flengths"), (near, "near"),
                          (expanded, "expanded")):
        column.frombytes(head[field])
    ids = head["ids"]
    n = len(ids)
    if not isinstance(ids, list) or not len(lengths) == len(flengths) == len(expanded) == n \
            or len(near) != 4 * n:
        raise ValueError("inconsistent arrays")
    sittings = [array(code) for code in "iiidi"]
    for column, saved in zip(sittings, head["sittings"], strict=True):
        column.frombytes(saved)
    if len(sittings[0]) != n:
        raise ValueError("inconsistent arrays")
    return ids, lengths, flengths, near, expanded, Sittings(*sittings)


def rows_statement(count: int) -> str:
    """The SELECT of ``count`` terms' rows of one index and field (parameters: idx, field, terms).

    ``field = ? AND term IN (...)`` is a search of the primary key per term; a row value
    ``(field, term) IN (VALUES ...)`` made SQLite scan every row of the index.
    """
    return (f"SELECT field, term, df, numbers, counts FROM recall_term WHERE idx = ?"
            f" AND field = ? AND term IN ({', '.join('?' * count)})")


def _read_rows(db: CacheDB, name: str, wanted: list[tuple[int, str]],
               n: int) -> list[tuple[int, str, int, array, array]]:
    """The ``recall_term`` rows of index ``name`` for ``wanted`` ``(field, term)`` pairs, checked.

    Those that exist, as ``(field, term, df, numbers, counts)``, postings as arrays.

    Raises:
        ValueError, TypeError: rows that cannot be read, or that are not postings of an
            index of ``n`` documents (numbers ascending in ``[0, n)``, counts and the
            document frequency at least 1).
    """
    found: list[tuple] = []
    for field in (0, 1):
        terms = [term for f, term in wanted if f == field]
        for at in range(0, len(terms), _CHUNK):
            chunk = terms[at:at + _CHUNK]
            rows = db.run(rows_statement(len(chunk)), (name, field, *chunk))
            if rows is None:
                raise ValueError("the recall index's rows cannot be read")
            found.extend(rows)
    out = []
    for field, term, df, numbers_bytes, counts_bytes in found:
        if field not in (0, 1) or not isinstance(term, str) or not isinstance(df, int):
            raise TypeError("recall_term row of another shape")
        numbers, counts = array("i"), array("i")
        numbers.frombytes(numbers_bytes)
        counts.frombytes(counts_bytes)
        if not numbers or len(numbers) != len(counts) or not len(numbers) <= df <= n \
                or not 0 <= numbers[0] <= numbers[-1] < n or min(counts) < 1 \
                or not all(map(operator.lt, numbers, islice(numbers, 1, None))):
            raise ValueError(f"inconsistent postings of {term!r}")
        out.append((field, term, df, numbers, counts))
    return out


def _row_columns(rows: RowViews) -> dict[str, Sequence[Any]]:
    """What :func:`gitmem.context.recall.index_columns` gives of records, from the table's columns.

    The author is the record's own ``author`` field (``None`` for records that predate it:
    their neighbours are found among the other unknown authors' memories).
    """
    prov, author = rows.table.columns["prov"], rows.table.columns["author"]
    picked = rows.rows
    return {"observed": rows.observed,
            "authors": [author[r] for r in picked],
            "refs": [None if prov[r] is None else prov[r][2] for r in picked]}
