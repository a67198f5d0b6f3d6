"""Statement rows: the live statements of one ``memories`` tree as rows of the cache database.

What ``learn`` compares a new statement with (its near-duplicate warning, and the memories
anchored to overlapping lines of the same file): the records of one tree that are not
refuted, as rows of the tables ``statement``, ``statement_term``, ``statement_df`` and
``statement_span`` (:mod:`gitmem.cache.db`), and one ``statements`` memo naming the tree they
are of. Nothing is saved whole: the write that makes a tree changes only the rows of the
records it changed, in the same transaction as their record rows (:meth:`StatementRows.after_write`).

A lookup costs what the new statement's terms and anchor select, not what the store holds:

- **Near-duplicates** (:func:`gitmem.context.similarity.find_similar`'s ids, in its order):
  a statement of ``s`` terms is one only if it shares ``need(min(q, s))`` of the new
  statement's ``q`` terms (:func:`~gitmem.context.similarity.shared_needed`), so it holds
  two of the ``q - need + 2`` rarest of them (prefix filtering: Chaudhuri, Ganti and
  Kaushik, ICDE 2006, with the count of prefix terms of Bayardo, Ma and Srikant, "Scaling
  up all pairs similarity search", WWW 2007). The postings are keyed by (term, size of the
  statement): each of the new statement's terms is looked up only for the sizes whose
  prefix it is in, the rows found twice are counted by SQLite, and only those are compared
  in full.
- **Anchors**: rows by (path, first line), so the memories on lines that meet ``a..b`` are
  those whose first line lies in ``a - span .. b`` (``span`` bounds the anchors of that path).

The rows follow the newest tree known (:meth:`StatementRows.current`): the state memo's tree
unless a reader saved a table of a tree since, which the rows are then moved to by the records
that differ between the two trees (``Store.record_changes``); with no state, they are built
once from the latest table. A state of another version or of the wrong shape is deleted
and reported, and the rows built again.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.context.analysis import VERSION as ANALYSIS
from gitmem.context.analysis import tokenize
from gitmem.context.similarity import MIN_OVERLAP, MIN_SHARED, Statement, probed, probes, shared_needed
from gitmem.errors import GitmemError

if TYPE_CHECKING:
    from gitmem.cache.table import RecordTable

__all__ = ["VERSION", "Entry", "StatementRows", "entry_of"]

VERSION = f"rows1 {ANALYSIS}"
"""Of the rows' layout and analysis: rows of another version are built again."""

Entry = tuple[str, "str | None"]
"""What the rows hold of a live record: (statement, ``context_ref`` or ``None``)."""

_KIND = "statements"
#: Trees the rows went through that the state remembers (a table saved for one of them later
#: is older than the rows, and is not moved back to).
_PASSED = 64
#: Above this share of a table's records changed, the rows are built again rather than moved.
_REBUILD_AT = 0.5
#: Rows prepared and inserted at a time when the rows are built (bounds the memory used).
_CHUNK = 20_000
#: What comparing one candidate in full costs, in postings read (measured: a row fetched and
#: its terms decoded in Python, against a posting counted by SQLite).
_COMPARE_COST = 10
#: The most prefix terms a candidate is asked to hold (past a few, each adds little).
_MOST_HITS = 6
#: A size no statement reaches: the upper end of "every size from here on".
_ANY_SIZE = 1 << 62

_ROW_COLUMNS = "row, id, content, ref, terms, size, path, first_line, last_line"
_INSERT_ROW = f"INSERT INTO statement ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_POSTING = "INSERT INTO statement_term VALUES (?, ?, ?)"
_DELETE_POSTING = "DELETE FROM statement_term WHERE term = ? AND size = ? AND row = ?"
_ADD_DF = "INSERT INTO statement_df VALUES (?, 1) ON CONFLICT (term) DO UPDATE SET n = n + 1"


def entry_of(table: RecordTable, memory_id: str) -> Entry | None:
    """The entry of ``memory_id`` in ``table``, ``None`` when it is not there or refuted."""
    from gitmem.vocabulary import Status

    ids = table.ids
    r = bisect_left(ids, memory_id)
    if r == len(ids) or ids[r] != memory_id or table.columns["status"][r] == Status.REFUTED.value:
        return None
    prov = table.columns["prov"][r]
    return table.columns["content"][r], prov[2] if prov is not None else None


def _entries(table: RecordTable) -> Iterator[tuple[str, Entry]]:
    """(id, entry) of every live record of ``table``, in id order."""
    from gitmem.vocabulary import Status

    refuted, c = Status.REFUTED.value, table.columns
    for r, (memory_id, status) in enumerate(zip(table.ids, c["status"], strict=True)):
        if status != refuted:
            prov = c["prov"][r]
            yield memory_id, (c["content"][r], prov[2] if prov is not None else None)


def _cheapest_hits(df: list[int], need: int, rows: int) -> int:
    """How many prefix terms a candidate should hold for the cheapest lookup (at least 1).

    ``df``: the rows holding each of the new statement's terms, rarest first; ``need``: the
    shared terms a statement at least as long as the new one needs; ``rows``: about how many
    rows there are. Asking for ``h`` terms of the ``q - need + h`` rarest reads their postings
    and compares every row holding ``h`` of them: the candidates are estimated as if the
    terms were independent (a Poisson binomial tail), the cost in postings read.
    """
    q, best, cheapest = len(df), 1, None
    for hits in range(1, min(need, _MOST_HITS) + 1):
        prefix = df[:q - need + hits]
        chances = [min(n / rows, 1.0) if rows else 0.0 for n in prefix]
        at_least = [1.0] + [0.0] * hits  # at_least[j]: P(j or more of the terms seen so far)
        for p in chances:
            for j in range(hits, 0, -1):
                at_least[j] = at_least[j] * (1 - p) + at_least[j - 1] * p
        cost = sum(prefix) + _COMPARE_COST * rows * at_least[hits]
        if cheapest is None or cost < cheapest:
            best, cheapest = hits, cost
    return best


def _anchor(ref: str | None) -> tuple[str | None, int | None, int | None]:
    """(path, first line, last line) of a ``context_ref``; lines ``None`` for a whole file.

    All ``None`` without an anchor or for one that does not parse (it overlaps nothing).
    """
    if not ref:
        return None, None, None
    from gitmem.record.anchors import InvalidAnchor, parse_anchor

    try:
        anchor = parse_anchor(ref)
    except InvalidAnchor:
        return None, None, None
    if anchor.start is None or anchor.end is None:
        return anchor.path, None, None
    return anchor.path, anchor.start, anchor.end


def _row(row: int | None, memory_id: str, entry: Entry) -> tuple:
    """The ``statement`` row of ``entry`` (``row`` ``None``: numbered by SQLite).

    Texts are stored as UTF-8 bytes (lone surrogates passed through, as a record read from
    an escaped YAML string may hold them), the terms as a JSON array (SQLite's ``json_each``
    makes the postings from it).
    """
    content, ref = entry
    terms = sorted(set(tokenize(content)))
    path, first, last = _anchor(ref)
    return (row, memory_id, _enc(content), None if ref is None else _enc(ref), json.dumps(terms), len(terms),
            None if path is None else _enc(path), first, last)


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _dec(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


class StatementRows:
    """The statement rows of one cache database (see the module docstring).

    Every method runs under the database's lock; those that change rows run in one
    transaction (:meth:`CacheDB.batch`). None raises for a database that cannot be read or
    written: a lookup then finds nothing.

    Args:
        db: the cache database.
    """

    def __init__(self, db: CacheDB) -> None:
        self.db = db

    # -- the state ----------------------------------------------------------------------------------

    def tree(self) -> str | None:
        """The tree the rows are of, or ``None`` (no rows; a bad state is deleted and reported)."""
        state = self._state()
        return None if state is None else state[0]

    def _state(self) -> tuple[str, list[str]] | None:
        """(tree, trees passed before it) of the state memo, or ``None``."""
        payload = self.db.get(_KIND, "")
        if payload is None:
            return None
        try:
            if not isinstance(payload, dict):
                raise Untrusted("bad structure: not a mapping")
            if payload.get("version") != VERSION:
                raise Untrusted(f"rows version {payload.get('version')!r}, not {VERSION!r}", foreign=True)
            tree, passed = payload.get("tree"), payload.get("passed")
            if not (isinstance(tree, str) and isinstance(passed, list)
                    and all(isinstance(t, str) for t in passed)):
                raise Untrusted("bad structure: tree")
        except Untrusted as exc:
            self.db.reject(_KIND, "", exc)
            return None
        return tree, passed

    def _set_state(self, tree: str, before: tuple[str, list[str]] | None) -> bool:
        passed = [] if before is None else [before[0], *before[1]][:_PASSED]
        return self.db.put(_KIND, "", {"tree": tree, "version": VERSION, "passed": passed})

    def _drop_state(self) -> None:
        # First, so that rows changed halfway (a database that stopped taking writes) are
        # never taken for those of any tree: with no state they are built again.
        self.db.run("DELETE FROM memo WHERE kind = ? AND key = ''", (_KIND,), write=True)

    # -- keeping the rows current -------------------------------------------------------------------

    def current(self, latest_table: Callable[[], RecordTable | None],
                load_table: Callable[[str], RecordTable | None], store: Any) -> str | None:
        """Bring the rows to the newest tree known; return it (``None``: no rows, no table).

        Args:
            latest_table: the table held or saved last (built from when there are no rows).
            load_table: the saved table of a tree, or ``None``.
            store: what :meth:`gitmem.store.Store.record_changes` is asked.
        """
        with self.db.lock:
            state = self._state()
            newest = self.db.newest(_KIND, "table")
            if state is not None and (newest in (None, "", state[0]) or newest in state[1]):
                return state[0]  # the usual case, read without taking the write lock
            with self.db.batch():
                return self._catch_up(latest_table, load_table, store)

    def _catch_up(self, latest_table: Callable[[], RecordTable | None],
                  load_table: Callable[[str], RecordTable | None], store: Any) -> str | None:
        """:meth:`current` in a write transaction: build or move the rows (read again under it)."""
        state = self._state()
        if state is None:
            table = latest_table()
            if table is None or table.tree is None:
                return None
            # (a database that cannot be written keeps no rows: nothing to compare with)
            return table.tree if self.build(table.tree, _entries(table)) else None
        newest = self.db.newest(_KIND, "table")
        if newest in (None, "", state[0]) or newest in state[1]:
            return state[0]
        table = load_table(newest)
        if table is None:
            return state[0]
        try:
            changes = store.record_changes(state[0], newest)
        except GitmemError:  # the rows' tree is no longer in the repository
            changes = None
        if changes is None or len(changes) > _REBUILD_AT * max(len(table.ids), 1):
            done = self.build(newest, _entries(table))
        else:
            self._drop_state()
            done = self._apply({i: entry_of(table, i) for i in changes}) and self._set_state(newest, state)
        return newest if done else None

    def build(self, tree: str, entries: Iterable[tuple[str, Entry]]) -> bool:
        """Make the rows those of ``tree``, whose live records are ``entries`` ((id, entry), each id once).

        Returns:
            Whether they were made (``False``: the database cannot be written).
        """
        with self.db.lock, self.db.batch():
            self._drop_state()
            for name in ("statement_term", "statement_df", "statement_span", "statement"):
                self.db.run(f"DELETE FROM {name}", write=True)
            entries = iter(entries)
            number = 0
            while chunk := list(islice(entries, _CHUNK)):
                rows = [_row(number + n, i, e) for n, (i, e) in enumerate(chunk, 1)]
                number += len(rows)
                if not self.db.run_many(_INSERT_ROW, rows):
                    return False
            # The postings, counts and spans are made by SQLite from the rows (C, not Python).
            for sql in ("INSERT INTO statement_term SELECT j.value, s.size, s.row FROM statement AS s,"
                        " json_each(s.terms) AS j ORDER BY 1, 2, 3",
                        "INSERT INTO statement_df SELECT term, count(*) FROM statement_term GROUP BY term",
                        "INSERT INTO statement_span SELECT path, max(last_line - first_line) FROM statement"
                        " WHERE first_line IS NOT NULL GROUP BY path"):
                if self.db.run(sql, write=True) is None:
                    return False
            return self._set_state(tree, None)

    def after_write(self, base: str, tree: str, changes: Mapping[str, Entry | None]) -> None:
        """Move the rows from ``base`` to ``tree`` by ``changes``, when they are of ``base``.

        Rows of any other tree are left as they are (a concurrent write moved them, or none
        were built): they are moved or built when next used (:meth:`current`).

        Args:
            base: the ``memories`` tree the write was built on.
            tree: the one it made.
            changes: id -> entry, or ``None`` for a record removed or refuted: every record
                the write changed.
        """
        with self.db.lock, self.db.batch():
            state = self._state()
            if state is None or state[0] != base:
                return
            self._drop_state()
            if self._apply(changes):
                self._set_state(tree, state)

    def _apply(self, changes: Mapping[str, Entry | None]) -> bool:
        """Change the rows of the ids of ``changes`` (entry; ``None``: no row); whether it was done."""
        found = self.db.run(f"SELECT {_ROW_COLUMNS} FROM statement WHERE id IN"
                            " (SELECT value FROM json_each(?))", (json.dumps(list(changes)),))
        old = {r[1]: r for r in found or ()}
        gone, added = [], []
        for memory_id, entry in changes.items():
            row = old.get(memory_id)
            if row is not None and entry is not None and \
                    (_dec(row[2]), None if row[3] is None else _dec(row[3])) == entry:
                continue  # e.g. a verify that changed other fields
            if row is not None:
                gone.append(row)
            if entry is not None:
                added.append(_row(None, memory_id, entry))
        if gone:
            terms = [(t, r[5], r[0]) for r in gone for t in json.loads(r[4])]
            if not (self.db.run_many(_DELETE_POSTING, terms)
                    and self.db.run_many("UPDATE statement_df SET n = n - 1 WHERE term = ?",
                                         [(t,) for t, _, _ in terms])
                    and self.db.run("DELETE FROM statement_df WHERE n <= 0 AND term IN"
                                    " (SELECT value FROM json_each(?))",
                                    (json.dumps(sorted({t for t, _, _ in terms})),), write=True) is not None
                    and self.db.run_many("DELETE FROM statement WHERE row = ?", [(r[0],) for r in gone])):
                return False
        for values in added:
            made = self.db.run(f"{_INSERT_ROW} RETURNING row", values, write=True)
            if not made:
                return False
            number, size = made[0][0], values[5]
            terms = json.loads(values[4])
            if not (self.db.run_many(_INSERT_POSTING, [(t, size, number) for t in terms])
                    and self.db.run_many(_ADD_DF, [(t,) for t in terms])):
                return False
            if values[6] is not None and values[7] is not None and self.db.run(
                    "INSERT INTO statement_span VALUES (?, ?) ON CONFLICT (path)"
                    " DO UPDATE SET span = max(span, excluded.span)",
                    (values[6], values[8] - values[7]), write=True) is None:
                return False
        return True

    # -- lookups ------------------------------------------------------------------------------------

    def similar(self, text: str, skip: Iterable[str] = (), limit: int = 3,
                hits: int | None = None) -> list[str]:
        """:func:`~gitmem.context.similarity.find_similar` of ``text`` over the rows but ``skip``'s.

        The same ids in the same order as that function over every row's (id, statement),
        whatever ``hits`` is.

        Args:
            text: the new statement.
            skip: ids left out.
            limit: most ids returned.
            hits: how many of its prefix terms a candidate must hold (see the module
                docstring); ``None``: the number :func:`_cheapest_hits` expects to cost least.
        """
        new = Statement.of(text)
        q = len(new.terms)
        if q < MIN_SHARED:
            return []
        wanted = sorted(new.terms)
        df = dict(self.db.run("SELECT term, n FROM statement_df WHERE term IN"
                              " (SELECT value FROM json_each(?))", (json.dumps(wanted),)) or ())
        order = sorted(wanted, key=lambda t: (df.get(t, 0), t))
        needs = [shared_needed(size) for size in range(q + 1)]  # a size above q needs needs[q]
        if hits is None:
            top = self.db.run("SELECT max(row) FROM statement")
            hits = _cheapest_hits([df.get(t, 0) for t in order], needs[q], (top or [(0,)])[0][0] or 0)
        # A statement of s terms sharing need = needs[min(q, s)] of the q terms holds at least
        # h = min(hits, need) of the q - need + h rarest: the k-th rarest term is looked up for
        # every size whose prefix it is in (those sizes run from MIN_SHARED up, as need grows).
        held = [min(hits, n) for n in needs]
        lookups = []
        for k, term in enumerate(order):
            if not df.get(term):
                continue
            if k < q - needs[q] + held[q]:
                lookups.append((term, _ANY_SIZE))
                continue
            sizes = [size for size in range(MIN_SHARED, q) if k < q - needs[size] + held[size]]
            if sizes:
                lookups.append((term, max(sizes)))
        if not lookups:
            return []
        found = self.db.run(
            "SELECT id, content, terms, size FROM statement WHERE row IN (SELECT p.row FROM json_each(?) AS j"
            " CROSS JOIN statement_term AS p ON p.term = json_extract(j.value, '$[0]')"
            " AND p.size BETWEEN ? AND json_extract(j.value, '$[1]') GROUP BY p.row"
            " HAVING count(*) >= json_extract(?, '$[' || min(p.size, ?) || ']'))",
            (json.dumps(lookups), MIN_SHARED, json.dumps(held), q))
        skipped = set(skip)
        words: list[str] | None = None
        scored: list[tuple[float, str]] = []
        for memory_id, content, terms, size in found or ():
            shared = len(new.terms.intersection(json.loads(terms)))
            overlap = shared / min(q, size)
            if shared < MIN_SHARED or overlap < MIN_OVERLAP or memory_id in skipped:
                continue
            if words is None:
                words = list(probes(text))
            if probed(words, _dec(content)):
                scored.append((-overlap, memory_id))
        return [memory_id for _, memory_id in sorted(scored)[:limit]]

    def anchored(self, ref: str, skip: Iterable[str] = ()) -> list[str]:
        """Ids of the rows anchored to lines of ``ref``'s file that meet ``ref``'s, by id.

        A whole-file anchor meets only whole-file anchors of the same file; one that does not
        parse meets nothing.
        """
        path, first, last = _anchor(ref)
        if path is None:
            return []
        if first is None or last is None:
            found = self.db.run("SELECT id FROM statement WHERE path = ? AND first_line IS NULL ORDER BY id",
                                (_enc(path),))
        else:
            span = self.db.run("SELECT span FROM statement_span WHERE path = ?", (_enc(path),))
            if not span:
                return []
            found = self.db.run("SELECT id FROM statement WHERE path = ? AND first_line BETWEEN ? AND ?"
                                " AND last_line >= ? ORDER BY id",
                                (_enc(path), first - span[0][0], last, first))
        skipped = set(skip)
        return [i for (i,) in found or () if i not in skipped]

    def statements_of(self, tree: str, ids: Iterable[str]) -> tuple[str | None, ...]:
        """The statements of ``ids`` in the rows (``None`` for one with no row); empty unless of ``tree``."""
        ids = list(ids)
        with self.db.lock:
            if self.tree() != tree:
                return ()
            found = self.db.run("SELECT id, content FROM statement WHERE id IN"
                                " (SELECT value FROM json_each(?))", (json.dumps(ids),))
        held = {i: _dec(c) for i, c in found or ()}
        return tuple(held.get(i) for i in ids)

    def statements(self) -> dict[str, str]:
        """Id -> statement of every row (a check of the rows against the records)."""
        return {i: _dec(c) for i, c in self.db.run("SELECT id, content FROM statement") or ()}
