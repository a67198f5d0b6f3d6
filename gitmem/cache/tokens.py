"""Token counts, kept so that a warm wake never loads the BPE tables.

A ``tokens`` memo keyed ``<tree>:e<entry format>:<encoding>`` holds a column per records table
(the tokens of each record's entry, as :func:`gitmem.context.entry.format_entry` of that
:data:`~gitmem.context.entry.ENTRY_FORMAT` writes it: a count of an older entry text is never read),
a ``counts`` memo keyed by the encoding the counts of other texts by their digest, and those of the
pieces tiktoken splits texts into (:func:`gitmem.context.tokens.light_pieces`): a text never counted
before whose pieces all were (a memory just learned, the wake text after a write) is counted
without loading the BPE tables. Each payload records the exact key it was built for (tree,
tokenizer and row count; the tokenizer), and one whose key is not the one asked for is
deleted and reported, never used: an entry copied from another tree must not pass because its
row count matches.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

try:  # hashlib's own BLAKE2b: importing hashlib loads OpenSSL (~2 ms), which no read needs
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.context.entry import ENTRY_FORMAT

if TYPE_CHECKING:
    from gitmem.cache.table import RecordTable

__all__ = ["TokenCounts"]

_MAX_COUNTS = 50_000  # memoised text token counts kept per encoding
_MAX_PIECES = 200_000  # memoised piece counts kept per encoding


def _tokens_prefix(tree: str | None) -> str:
    return f"{tree}:e{ENTRY_FORMAT}:"


def _column_key(table: RecordTable, encoding: str) -> tuple[str | None, str, int]:
    """The key a token column is exact for: tree (it fixes every row's text), tokenizer, rows."""
    return (table.tree, encoding, len(table))


def _counts_for(payload: object, key: tuple[str | None, str, int]) -> array | None:
    """The counts in a tokens payload built for exactly ``key`` (tree, tokenizer, rows)."""
    if not isinstance(payload, dict) or payload.get("key") != key:
        return None
    loaded = array("i")
    try:
        loaded.frombytes(payload["counts"])
    except (TypeError, ValueError, KeyError):
        return None
    return loaded if len(loaded) == key[2] else None


class TokenCounts:
    """Token counts gathered by this process and those saved by earlier ones.

    A count depends only on the text and the encoding, so a saved one never goes stale.
    Counts gathered here are written by :meth:`flush`. Callers hold :attr:`files`'s lock.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files
        self._columns: dict[tuple[str, str], array] = {}
        self._tables: dict[tuple[str, str], RecordTable] = {}
        self._dirty_columns: set[tuple[str, str]] = set()
        self._memos: dict[str, dict[bytes, int]] = {}
        self._pieces: dict[str, dict[str, int]] = {}
        self._dirty_memos: set[str] = set()
        self._counters: dict[str, Any] = {}

    def _column(self, table: RecordTable, encoding: str) -> array:
        """The saved or in-memory column of ``table`` (``-1``: not counted yet)."""
        key = (table.tree or "", encoding)
        self._tables[key] = table
        counts = self._columns.get(key)
        if counts is None:
            counts = array("i", [-1]) * len(table)
            if table.tree is not None:
                name = _tokens_prefix(table.tree) + encoding
                payload = self.files.get("tokens", name)
                if payload is not None:
                    loaded = _counts_for(payload, _column_key(table, encoding))
                    if loaded is None:
                        self.files.reject("tokens", name,
                                          Untrusted("built for another tree, tokenizer or row set"))
                    else:
                        counts = loaded
            self._columns[key] = counts
        return counts

    def carry(self, base: RecordTable, table: RecordTable, origin: array) -> None:
        """Give ``table`` the counts of the rows it shares with ``base`` (``origin``: see ``Tables``).

        So that one learned memory costs one count, not a tokenizer load and 10,000 counts.
        """
        prefix = _tokens_prefix(base.tree)
        own = {name.rpartition(":")[2] for name in self.files.keys("tokens", _tokens_prefix(table.tree))}
        for name in self.files.keys("tokens", prefix):
            encoding = name[len(prefix):]
            if encoding in own:  # saved by an earlier reader of the same tree
                continue
            old = self._column(base, encoding)
            new = array("i", [old[j] if j >= 0 else -1 for j in origin])
            self._columns[(table.tree or "", encoding)] = new
            self._tables[(table.tree or "", encoding)] = table
            self._dirty_columns.add((table.tree or "", encoding))

    def column(self, table: RecordTable, encoding: str) -> array:
        """Tokens of ``format_entry`` of every row of ``table`` as committed, counting only rows not cached.

        Returns:
            One count per row (``array("i")``), in row order; the cache's own array.

        Raises:
            TokenizerUnavailable: some row must be counted and the encoding cannot load.
        """
        counts = self._column(table, encoding)
        if -1 in counts:
            from gitmem.context.entry import format_entry

            for row, value in enumerate(counts):
                if value < 0:
                    # As committed: the column is kept per tree, whatever this clone's overlay.
                    counts[row] = self.count(encoding, format_entry(table.view(row, local=False)))
            self._dirty_columns.add((table.tree or "", encoding))
        return counts

    def _memo(self, encoding: str) -> tuple[dict[bytes, int], dict[str, int]]:
        """The saved counts of texts (by digest) and of pieces for ``encoding``."""
        memo = self._memos.get(encoding)
        if memo is None:
            payload = self.files.get("counts", encoding)
            memo, pieces = {}, {}
            if isinstance(payload, dict) and payload.get("encoding") == encoding \
                    and isinstance(payload.get("memo"), dict) and isinstance(payload.get("pieces"), dict):
                memo, pieces = payload["memo"], payload["pieces"]
            elif payload is not None:
                self.files.reject("counts", encoding, Untrusted("built for another tokenizer"))
            self._memos[encoding] = memo
            self._pieces[encoding] = pieces
        return memo, self._pieces[encoding]

    def count(self, encoding: str, text: str) -> int:
        """Tokens of ``text``: the sum of its pieces' saved counts, or tiktoken's count.

        Only pieces never counted before, or a text :func:`gitmem.context.tokens.light_pieces`
        cannot split, load the BPE tables.

        Raises:
            TokenizerUnavailable: the encoding must be loaded and cannot be.
        """
        from gitmem.context.tokens import TokenCounter, light_pieces

        counter = self._counters.get(encoding)
        if counter is None:
            counter = self._counters[encoding] = TokenCounter(encoding)
        split = light_pieces(encoding, text)
        if split is None:
            return counter(text)
        pieces = self._memo(encoding)[1]
        total = 0
        for piece in split:
            value = pieces.get(piece)
            if not isinstance(value, int):
                try:
                    value = pieces[piece] = counter.count_piece(piece)
                    if "0" not in pieces:
                        self._seed(pieces, counter)
                except AttributeError:  # a tiktoken without single-piece encoding
                    return counter(text)
                self._dirty_memos.add(encoding)
            total += value
        return total

    @staticmethod
    def _seed(pieces: dict[str, int], counter: Any) -> None:
        """Count the pieces every new memory id and number splits into, while the tables are loaded.

        Runs of up to three digits, and runs of up to four of the letters ``a-f`` alone or
        after ``-`` (an id's hex part): about 4,000 pieces, a few milliseconds, so that the
        entry of a memory just learned, and a wake text's numbers, never load them again.
        """
        from itertools import product

        runs = [f"{n:0{width}d}" for width in (1, 2, 3) for n in range(10 ** width)]
        letters = ["".join(p) for width in (1, 2, 3, 4) for p in product("abcdef", repeat=width)]
        for piece in [*runs, *letters, *(f"-{run}" for run in letters)]:
            if piece not in pieces:
                pieces[piece] = counter.count_piece(piece)

    def counter(self, encoding: str) -> Callable[[str], int]:
        """A token counter for ``encoding`` that remembers counts across processes.

        Same results as :class:`gitmem.context.tokens.TokenCounter` (a count depends only on the
        text and the encoding); the BPE tables load only for a text whose pieces were never
        counted before (see :meth:`count`). The memo is keyed by a BLAKE2b digest of the text.
        """
        memo = self._memo(encoding)[0]

        def count(text: str) -> int:
            key = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            value = memo.get(key)
            if not isinstance(value, int):
                value = memo[key] = self.count(encoding, text)
                self._dirty_memos.add(encoding)
            return value

        return count

    def flush(self) -> None:
        """Save the counts gathered since the last flush (no-op when none)."""
        for tree, encoding in sorted(self._dirty_columns):
            counts = self._columns.get((tree, encoding))
            table = self._tables.get((tree, encoding))
            if tree and counts is not None and table is not None:
                payload = {"key": _column_key(table, encoding), "counts": counts.tobytes()}
                self.files.put("tokens", _tokens_prefix(tree) + encoding, payload)
        self._dirty_columns.clear()
        # A long-running process (``tur mcp``) sees a new tree per write: once saved, the
        # columns of older trees are only read again from the database, so hold the newest
        # tree's column per encoding and no more (memory stays flat per write).
        newest = {encoding: key for key in self._columns for encoding in (key[1],)}
        for key in [k for k in self._columns if newest[k[1]] != k]:
            del self._columns[key]
            self._tables.pop(key, None)
        for encoding in sorted(self._dirty_memos):
            memo, pieces = self._memo(encoding)
            if len(memo) > _MAX_COUNTS:  # keep the newest (dicts keep insertion order)
                memo = self._memos[encoding] = dict(list(memo.items())[-_MAX_COUNTS // 2:])
            if len(pieces) > _MAX_PIECES:
                pieces = self._pieces[encoding] = dict(list(pieces.items())[-_MAX_PIECES // 2:])
            self.files.put("counts", encoding, {"encoding": encoding, "memo": memo, "pieces": pieces})
        self._dirty_memos.clear()

    def forget(self) -> None:
        """Drop every count held in memory, saved or not (the database is cleared by the caller)."""
        self._columns.clear()
        self._tables.clear()
        self._dirty_columns.clear()
        self._memos.clear()
        self._pieces.clear()
        self._dirty_memos.clear()
