"""Statement indexes, ``similar-<tree>.bin``: the terms of every live memory's statement.

What a write compares a new statement with (the near-duplicate warning of ``learn``): a
:class:`gitmem.context.similarity.StatementIndex` of the records of one ``memories`` tree that are
not refuted, so that the comparison counts postings instead of analysing every record.

An index is saved whole (``similar-<tree>.bin``) or, after a write, as its change to a whole
one (``similar-<tree>-<base>.bin``: the statements changed or removed since ``<base>``'s,
cumulated over the writes since that one), which its reader lays over the whole index
(:class:`~gitmem.context.similarity.ChangedIndex`: only those statements are analysed). At 100,000
memories a whole index is about 15 MB; a change, a few hundred bytes. Past
:data:`CHANGE_STATEMENTS` statements a write saves the index whole again. Both are named by
tree ids and the change names its base, so a reader never applies a change to another
tree's index; :meth:`gitmem.cache.db.CacheDB.prune` keeps the whole index a kept
change needs.

A whole index is read as it is used: its payload says where each part
(:meth:`~gitmem.context.similarity.StatementIndex.to_parts`) lies in the file's tail and holds the
CRC of each 4 KiB block of the tail, and a block is checked when it is first read. A
comparison reads the terms, the row sizes and marks, the ids it looks for, and the postings
and texts of the rows it looks at: about 4 of the 16 MB at 100,000 memories. A damaged
block is met only while the index is used: the file is then deleted and reported, and the
caller makes the index again (:meth:`StatementIndexes.guarded`).
"""

from __future__ import annotations

import weakref
import zlib
from array import array
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from gitmem.cache.db import CacheDB, Tail, Untrusted

__all__ = ["CHANGE_STATEMENTS", "StatementIndexes", "statements_name"]

#: Indexes kept in memory (the tip's, and the one a write derives from).
_KEPT = 2
#: Above this share of changed statements, an index is built rather than derived.
_DERIVE_AT_MOST = 0.5
#: Statements a saved change may hold (changed or removed since its whole index); past it a
#: write saves the index whole (every reader analyses the statements of the change).
CHANGE_STATEMENTS = 64
#: Bytes of the tail of a whole index checked by one CRC.
_BLOCK = 1 << 12

_T = TypeVar("_T")


def statements_name(tree: str, base: str | None = None) -> str:
    """The file name of ``tree``'s statement index: whole, or its change to ``base``'s."""
    return f"similar-{tree}.bin" if base is None else f"similar-{tree}-{base}.bin"


class _FileParts:
    """The parts of an index saved whole, read from its file's tail as they are asked for.

    Each block of :data:`_BLOCK` bytes is read once, and checked against its CRC first: a
    block that fails is never used (``damaged`` is told, then :class:`Untrusted` raised).
    The file stays open while the index is used, so every part comes from the file the
    payload was read from, even if another process replaces it.
    """

    def __init__(self, handle: Tail, start: int, parts: dict[str, tuple[int, int]], crcs: array,
                 damaged: Callable[[Untrusted], None]) -> None:
        self._handle = handle
        self._start = start
        self._parts = parts
        self._crcs = crcs
        self._damaged = damaged
        self._blocks: dict[int, bytes] = {}
        weakref.finalize(self, handle.close)

    def size(self, name: str) -> int:
        """Bytes of the part ``name``."""
        return self._parts[name][1]

    def read(self, name: str, start: int = 0, stop: int | None = None) -> bytes:
        """Bytes ``start`` to ``stop`` (default: the end) of the part ``name``.

        Raises:
            Untrusted: a block read fails its CRC, the file is cut short, or the bytes asked
                for are not in the part (the file was written wrong).
        """
        offset, length = self._parts[name]
        stop = length if stop is None else stop
        if not 0 <= start <= stop <= length:
            self._fail(Untrusted(f"bad structure: bytes {start}-{stop} of {name} asked for"))
        return self._bytes(offset + start, stop - start)

    def _bytes(self, offset: int, length: int) -> bytes:
        if not length:
            return b""
        first, last = offset // _BLOCK, (offset + length - 1) // _BLOCK
        missing = [b for b in range(first, last + 1) if b not in self._blocks]
        if missing:
            try:
                self._handle.seek(self._start + missing[0] * _BLOCK)
                data = self._handle.read((missing[-1] - missing[0] + 1) * _BLOCK)
            except (OSError, ValueError) as exc:
                self._fail(Untrusted(f"unreadable: {exc}"))
            for block in missing:
                chunk = data[(block - missing[0]) * _BLOCK:(block - missing[0] + 1) * _BLOCK]
                if block >= len(self._crcs) or zlib.crc32(chunk) != self._crcs[block]:
                    self._fail(Untrusted("length or checksum mismatch"))
                self._blocks[block] = chunk
        if first == last:
            at = offset - first * _BLOCK
            return self._blocks[first][at:at + length]
        joined = b"".join(self._blocks[b] for b in range(first, last + 1))
        at = offset - first * _BLOCK
        return joined[at:at + length]

    def _fail(self, exc: Untrusted) -> Any:
        self._damaged(exc)
        raise exc


def _tail(parts: dict[str, bytes]) -> tuple[dict[str, tuple[int, int]], bytes, bytes]:
    """Where each part lies in the tail, the tail, and the CRC of each of its blocks."""
    where, at = {}, 0
    for name, data in parts.items():
        where[name] = (at, len(data))
        at += len(data)
    tail = b"".join(parts.values())
    crcs = array("I", (zlib.crc32(tail[i:i + _BLOCK]) for i in range(0, len(tail), _BLOCK)))
    return where, tail, crcs.tobytes()


def _check_key(payload: Any, tree: str) -> None:
    """Check that ``payload`` was saved for ``tree`` by this version of the index.

    Raises:
        Untrusted: another version (``foreign``: deleted and rebuilt like the files of an
            older gitmem).
        ValueError: another tree, or not such a payload.
    """
    from gitmem.context.similarity import StatementIndex

    key = payload.get("key") if isinstance(payload, dict) else None
    if isinstance(key, tuple) and len(key) == 2 and key[0] == tree and key[1] != StatementIndex.VERSION:
        raise Untrusted(f"index version {key[1]!r}, not {StatementIndex.VERSION!r}", foreign=True)
    if key != (tree, StatementIndex.VERSION):
        raise ValueError("saved for another tree")


class StatementIndexes:
    """:class:`~gitmem.context.similarity.StatementIndex` objects saved per ``memories`` tree.

    A whole index's payload is ``{"key": (tree, version), "index": {"rows": n, "parts":
    {name: (offset, length)}, "crcs": bytes}}`` and its tail the parts; a change's
    ``{"key": (tree, version), "base": base tree, "changes": {id: statement or None}}``.
    One whose key is not the one asked for (a file copied from another tree) or of the
    wrong structure is deleted and reported, never used; one of another version is deleted
    as such. A write derives the index of the tree it made from its parent's
    (:meth:`after_write`: only the statements it changed are analysed); a tree with no
    index gets one derived from the latest saved index by the statements that differ, or
    built (:meth:`for_table`).

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files
        self._kept: dict[str, Any] = {}
        #: Tree -> how its index is saved: ``None`` whole, else the tree of the whole index
        #: its change applies to (kept in memory as a :class:`ChangedIndex` on that index).
        self._saved: dict[str, str | None] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the files are cleared by the caller)."""
        self._kept.clear()
        self._saved.clear()

    def saved(self, tree: str) -> bool:
        """Whether an index of ``tree`` is saved, whole or as a change (none is read)."""
        return tree in self._saved or self.files.exists(statements_name(tree)) \
            or bool(self.files.newest_first(f"similar-{tree}-*.bin"))

    def guarded(self, use: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
        """``use()``, or, when it meets a damaged part of a saved index, ``fallback()``.

        The damaged file is deleted and reported by then (:class:`_FileParts`) and no index
        is held in memory any more: ``fallback`` makes them again.
        """
        try:
            return use()
        except Untrusted:
            return fallback()

    def load(self, tree: str) -> Any:
        """The saved index of ``tree``, or ``None`` (absent, or untrusted: then deleted and reported).

        A :class:`~gitmem.context.similarity.StatementIndex`, or for a change a
        :class:`~gitmem.context.similarity.ChangedIndex` on the whole index it names; a change whose
        whole index is gone is not used (the caller derives or builds the index again).
        """
        found = self._kept.get(tree)
        if found is not None:
            return found
        index = self._load_whole(tree)
        if index is not None:
            return index
        for name in self.files.newest_first(f"similar-{tree}-*.bin"):
            index = self._load_change(tree, name.removesuffix(".bin")[len(f"similar-{tree}-"):])
            if index is not None:
                return index
        return None

    def for_table(self, table: Any, live: Mapping[str, str]) -> Any:
        """The index of ``table``'s tree, whose live statements are ``live`` (id -> content).

        Loaded; else derived from the latest saved index by the statements that differ;
        else built. Saved.
        """
        from gitmem.context.similarity import StatementIndex

        tree = table.tree
        index = self.load(tree)
        if index is not None:
            return index

        def derived() -> Any:
            base_tree, base = self._latest(tree)
            if base_tree is None or base is None:
                return None
            old = base.statements()
            changes: dict[str, str | None] = {i: c for i, c in live.items() if old.get(i) != c}
            changes.update((i, None) for i in old if i not in live)
            if len(changes) > _DERIVE_AT_MOST * max(len(live), 1):
                return None
            return self._save_derived(tree, base_tree, base, changes)

        index = self.guarded(derived, lambda: None)
        return index if index is not None else self._save_whole(tree, StatementIndex.build(live.items()))

    def after_write(self, base: str, tree: str, changes: Mapping[str, str | None]) -> None:
        """Save ``tree``'s index derived from ``base``'s by ``changes``, when ``base``'s is saved.

        Args:
            base: the ``memories`` tree the write was built on.
            tree: the one it made.
            changes: id -> new statement, or ``None`` for a record removed or refuted.
        """
        def derive() -> None:
            index = self.load(base)
            if index is not None:
                self._save_derived(tree, base, index, index.changes(changes))

        # A damaged base: nothing is saved, and the next reader makes the index again.
        self.guarded(derive, lambda: None)

    # -- reading and writing ------------------------------------------------------------------

    def _load_whole(self, tree: str) -> Any:
        """The index saved whole for ``tree`` (held in memory, or read as it is used), or ``None``."""
        from gitmem.context.similarity import StatementIndex

        kept = self._kept.get(tree)
        if isinstance(kept, StatementIndex) and tree in self._saved and self._saved[tree] is None:
            return kept
        name = statements_name(tree)
        path = name
        got = self.files.open(name, "similar")
        if got is None:
            return None
        payload, end, handle = got
        try:
            _check_key(payload, tree)
            meta = payload["index"]
            parts, crcs = meta["parts"], array("I")
            crcs.frombytes(meta["crcs"])
            if not isinstance(parts, dict) or not all(
                    isinstance(n, str) and isinstance(p, tuple) and len(p) == 2
                    and all(isinstance(x, int) and x >= 0 for x in p) for n, p in parts.items()):
                raise ValueError("parts of the wrong type")
            reader = _FileParts(handle, end, parts, crcs, lambda exc: self._damaged(path, exc))
            index = StatementIndex.stored(meta["rows"], reader)
        except Untrusted as exc:
            handle.close()
            self.files.reject(path, exc)
            return None
        except (KeyError, TypeError, ValueError) as exc:
            handle.close()
            self.files.reject(path, Untrusted(f"bad structure: {exc}"))
            return None
        self._saved[tree] = None
        return self._keep(tree, index)

    def _damaged(self, path: str, exc: Untrusted) -> None:
        """A saved index met a damaged part: delete and report the file, hold no index any more."""
        self.files.reject(path, exc)
        self.forget()

    def _load_change(self, tree: str, base: str) -> Any:
        """``tree``'s index from its change to ``base``'s whole index, or ``None``."""
        from gitmem.context.similarity import ChangedIndex

        name = statements_name(tree, base)
        payload = self.files.read_payload(name, "similar")
        if payload is None:
            return None
        try:
            _check_key(payload, tree)
            if payload.get("base") != base or base == tree:
                raise ValueError("made for another base")
            changes = payload["changes"]
            if not isinstance(changes, dict) or not all(
                    isinstance(i, str) and (c is None or isinstance(c, str)) for i, c in changes.items()):
                raise ValueError("changes of the wrong type")
        except Untrusted as exc:
            self.files.reject(name, exc)
            return None
        except (KeyError, TypeError, ValueError) as exc:
            self.files.reject(name, Untrusted(f"bad structure: {exc}"))
            return None
        whole = self._load_whole(base)
        if whole is None:
            return None  # pruned or cleared: the caller derives the index again
        self._saved[tree] = base
        return self._keep(tree, ChangedIndex(whole, changes))

    def _save_derived(self, tree: str, parent: str, index: Any, changes: Mapping[str, str | None]) -> Any:
        """Save ``index`` (``parent``'s) derived by ``changes`` as ``tree``'s; return the new index.

        As a change to the whole index ``index`` is or changes, when that one is saved and
        the change stays within :data:`CHANGE_STATEMENTS`; else whole.
        """
        from gitmem.context.similarity import ChangedIndex, StatementIndex

        base = self._saved.get(parent, "")
        whole: StatementIndex | None = None
        if base is None and isinstance(index, StatementIndex):
            base, whole, merged = parent, index, dict(changes)
        elif base and isinstance(index, ChangedIndex):
            whole, merged = index.base, {**index.changed, **changes}
        if whole is not None and base != tree and len(merged) <= CHANGE_STATEMENTS:
            payload = {"key": (tree, StatementIndex.VERSION), "base": base, "changes": merged}
            if self.files.write(statements_name(tree, base), "similar", payload):
                self._saved[tree] = base
            return self._keep(tree, ChangedIndex(whole, merged))
        derived = index.derive(changes)
        return self._save_whole(tree, derived.whole() if isinstance(derived, ChangedIndex) else derived)

    def _save_whole(self, tree: str, index: Any) -> Any:
        """Write ``index`` (a whole one) as ``tree``'s and keep it in memory; return it."""
        from gitmem.context.similarity import StatementIndex

        rows, parts = index.to_parts()
        where, tail, crcs = _tail(parts)
        payload = {"key": (tree, StatementIndex.VERSION),
                   "index": {"rows": rows, "parts": where, "crcs": crcs}}
        if self.files.write(statements_name(tree), "similar", payload, [tail]):
            self._saved[tree] = None
        return self._keep(tree, index)

    def _keep(self, tree: str, index: Any) -> Any:
        self._kept.pop(tree, None)
        self._kept[tree] = index
        while len(self._kept) > _KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> tuple[str | None, Any]:
        """The most recently saved index but ``exclude``'s, and its tree; or ``(None, None)``."""
        for kept in reversed(self._kept):  # held in memory and saved: what a change can be saved to
            if kept != exclude and kept in self._saved:
                return kept, self._kept[kept]
        for name in self.files.newest_first("similar-*.bin")[:2]:
            tree = name.removesuffix(".bin").split("-", 2)[1]
            if tree != exclude:
                found = self.load(tree)
                if found is not None:
                    return tree, found
        for kept in reversed(self._kept):  # not saved (the directory cannot be written)
            if kept != exclude:
                return kept, self._kept[kept]
        return None, None
