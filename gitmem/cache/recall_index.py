"""Recall indexes, ``recall-<tree>-<digest>.bin``: the BM25 and trigram postings of one candidate list."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.cache.table import RowViews

__all__ = ["KEPT", "RecallIndexes"]

#: Indexes kept in memory: the candidate lists of one tip with and without stale memories.
KEPT = 2

_BASES_TRIED = 2

#: Documents changed (removed plus added) up to which a derived index is saved as its change
#: to a whole one; past it, whole (a reader would apply a large change at every load).
CHANGE_DOCUMENTS = 512


class RecallIndexes:
    """:class:`gitmem.context.recall.RecallIndex` objects saved per candidate list.

    An index is keyed by the ``memories`` tree and a digest of the candidate ids, which
    fix every document's text, and of :attr:`RecallIndex.VERSION`, which fixes the analysis.
    The payload is ``{"key": (tree, digest, version), "index": RecallIndex.to_payload()}``;
    an index whose key is not the one asked for (a file copied from another tree) is deleted
    and reported, never used. A missing index is derived from the most recently saved one
    (:meth:`gitmem.context.recall.RecallIndex.derive`: after a write, only the memories it changed
    are indexed), or built. The last :data:`KEPT` indexes provided (one per candidate list:
    with and without stale memories) are also kept in memory under their file names, so that
    a long-running process (``tur mcp``) recalling again at the same tip reads no file.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files
        self._kept: dict[str, Any] = {}
        #: File name -> key of the indexes known to be saved whole: what a change can be saved to.
        self._whole: dict[str, tuple[str | None, str, str]] = {}

    def forget(self) -> None:
        """Drop the indexes held in memory (the files are cleared by the caller)."""
        self._kept.clear()
        self._whole.clear()

    def provider(self, tree: str | None) -> Callable[[Sequence[Any]], Any]:
        """A function ``candidates -> RecallIndex``, loading, deriving or building (and saving) the index.

        ``candidates`` is a :class:`RowViews` or a sequence of records (anything with ``id``
        and ``content``). With ``tree`` ``None`` (no records) nothing is saved. A saved index
        of the wrong structure is deleted, reported and built again.
        """
        from gitmem.context.recall import RecallIndex, observed_times

        def provide(candidates: Sequence[Any]) -> RecallIndex:
            listed = candidates.ids if isinstance(candidates, RowViews) else [m.id for m in candidates]
            keyed = "\n".join([RecallIndex.VERSION, *listed]).encode()
            digest = hashlib.blake2b(keyed, digest_size=12).hexdigest()
            name = f"recall-{tree}-{digest}.bin" if tree else None
            key = (tree, digest, RecallIndex.VERSION)
            if name is not None and name in self._kept:
                return self._kept[name]
            if name is not None:
                payload = self.files.read_payload(name, "recall")
                if payload is not None:
                    try:
                        if not isinstance(payload, dict) or payload.get("key") != key:
                            raise ValueError("built for another tree or candidate list")
                        loaded = self._load(payload)[1]
                        if loaded is not None and "index" in payload:
                            self._whole[name] = key
                        if loaded is not None and loaded.size != len(candidates):
                            raise ValueError("index of another document list")
                    except (KeyError, TypeError, ValueError) as exc:
                        self.files.reject(name, Untrusted(f"bad structure: {exc}"))
                    else:
                        if loaded is not None:  # None: the index it changes is gone; derived again
                            return self._keep(name, loaded).bind(listed)
            observed: Sequence[Any]
            if isinstance(candidates, RowViews):
                texts, observed = candidates.contents, candidates.observed
            else:
                texts, observed = [m.content for m in candidates], observed_times(candidates)
            base_name, base = self._latest(name) if name is not None else (None, None)
            index = (base.derive(listed, texts, observed) if base is not None
                     else RecallIndex.build(texts, observed, ids=listed))
            if name is not None:
                if index.change is not None and base_name in self._whole and \
                        len(index.change[0]) + len(index.change[1]) <= CHANGE_DOCUMENTS:
                    # The change from a whole index saved on disk: its documents and the new
                    # norms, a fraction of the index's size (see _load).
                    self.files.write_payload(name, "recall", {
                        "key": key, "base": base_name, "base_key": self._whole[base_name],
                        "change": index.change_payload()})
                else:
                    self.files.write_payload(name, "recall", {"key": key, "index": index.to_payload()})
                    self._whole[name] = key
                self._keep(name, index)
            return index.bind(listed)

        return provide

    def _load(self, payload: dict[str, Any]) -> tuple[tuple[str, Any] | None, Any]:
        """The index of a saved payload: whole, or a change to a whole index saved beside it.

        A change is applied to the index it names, with the norms it carries (those of the
        index derived at once, bit for bit), so that its reader recomputes none. ``None`` when
        that index is gone (pruned, or cleared) or no longer the one the change was made on.
        With it, for a change, the file name and index it was applied to (else ``None``).

        Raises:
            ValueError, TypeError, KeyError: a payload of the wrong structure.
        """
        from gitmem.context.recall import RecallIndex

        if "index" in payload:
            return None, RecallIndex.from_payload(payload["index"])
        base_name, base_key = payload["base"], payload["base_key"]
        change, norms = RecallIndex.change_from_payload(payload["change"])
        if not isinstance(base_name, str) or not base_name.startswith("recall-") or "/" in base_name:
            raise ValueError("a change of no recall index")
        base = self.files.read_payload(base_name, "recall")
        if not isinstance(base, dict) or base.get("key") != base_key or "index" not in base:
            return None, None
        try:
            whole = RecallIndex.from_payload(base["index"])
            changed = whole.changed(change, norms)
        except (KeyError, TypeError, ValueError):
            return None, None  # the base's own reader reports and rebuilds it
        self._whole[base_name] = base_key
        return (base_name, whole), changed

    def _keep(self, name: str, index: Any) -> Any:
        self._kept[name] = index
        while len(self._kept) > KEPT:
            del self._kept[next(iter(self._kept))]  # dicts keep insertion order: the oldest
        return index

    def _latest(self, exclude: str) -> tuple[str | None, Any]:
        """The most recently saved index but ``exclude``, to derive a new one from; or ``None``.

        With it, its file name (a change to it is saved only if that file holds it whole:
        :attr:`_whole`). An index held in memory is taken first if it is saved whole; one saved
        as a change is not: the whole index that change applies to is read instead, so that
        what is derived from it is saved as a change too.
        """
        for kept_name in reversed(self._kept):  # held in memory (``tur mcp``): no file to read
            if kept_name != exclude and kept_name in self._whole:
                return kept_name, self._kept[kept_name]
        for name in self.files.newest_first("recall-*.bin")[:_BASES_TRIED]:
            if name == exclude:
                continue
            payload = self.files.read_payload(name, "recall")
            try:
                whole, loaded = self._load(payload)
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # another version, or damaged: not a base (its own reader rebuilds it)
            if loaded is None:
                continue
            if whole is None:
                self._whole[name] = payload["key"]
                return name, loaded
            # A change: derive from the whole index it changes, so that the new index is
            # saved as a change to it too, while that change stays small.
            if len(loaded.change[0]) + len(loaded.change[1]) < CHANGE_DOCUMENTS:
                return whole
            return name, loaded
        for kept_name in reversed(self._kept):  # saved as a change to an index now gone
            if kept_name != exclude:
                return kept_name, self._kept[kept_name]
        return None, None
