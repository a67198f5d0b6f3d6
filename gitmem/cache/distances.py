"""Commit distances to HEAD, the ``distances`` memo: how many commits each observed SHA is behind one HEAD."""

from __future__ import annotations

from gitmem.cache.db import CacheDB

__all__ = ["Distances"]

_KIND = "distances"


class Distances:
    """Known commit distances from observed SHAs to one HEAD, kept across processes.

    The payload is ``{"head": <sha>, "d": {<observed sha>: <commits>}, "behind": [<sha>...]}``
    (``behind``: the SHAs whose distance counts commits HEAD is behind them, HEAD being
    their ancestor); one for another HEAD, or of another shape, counts as empty, except
    that :meth:`previous` offers it. Callers hold :attr:`files`'s lock.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files
        self._known: tuple[str, dict[str, int]] | None = None
        self._behind: set[str] = set()
        self._previous: tuple[str, dict[str, int], set[str]] | None = None
        self._dirty = False

    def to(self, head: str) -> dict[str, int]:
        """Known distances (commits) from observed SHAs to ``head``; the caller adds new ones.

        The dict is this object's own: entries added by the caller are saved by
        :meth:`flush` once :meth:`mark` is called.
        """
        if self._known is None or self._known[0] != head:
            payload = self.files.get(_KIND, "")
            known: dict[str, int] = {}
            behind: set[str] = set()
            if isinstance(payload, dict) and isinstance(payload.get("d"), dict) \
                    and isinstance(payload.get("head"), str):
                table = {k: v for k, v in payload["d"].items()
                         if isinstance(k, str) and isinstance(v, int)}
                listed = payload.get("behind", [])
                behind = {k for k in listed if isinstance(k, str)} if isinstance(listed, list) else set()
                if payload["head"] == head:
                    known = table
                elif isinstance(listed, list):  # files that say which are behind ones only
                    self._previous = (payload["head"], table, behind)
                    behind = set()
            self._known = (head, known)
            self._behind = behind
        return self._known[1]

    def previous(self) -> tuple[str, dict[str, int], set[str]] | None:
        """The distances saved for another HEAD, as the last :meth:`to` found them.

        (that HEAD, the distances, the SHAs among them that are behind ones); ``None`` when
        there are none.
        """
        return self._previous

    def note_behind(self, sha: str) -> None:
        """Note that the distance of ``sha`` in the dict from :meth:`to` counts commits HEAD is behind."""
        self._behind.add(sha)

    def mark(self) -> None:
        """Note that the dict from :meth:`to` gained entries (saved by :meth:`flush`)."""
        self._dirty = True

    def flush(self) -> None:
        """Save the distances if they gained entries (no-op otherwise)."""
        if self._dirty and self._known is not None:
            head, known = self._known
            self.files.put(_KIND, "", {"head": head, "d": known,
                                                    "behind": sorted(self._behind)})
            self._dirty = False

    def forget(self) -> None:
        """Drop the distances held in memory (the database is cleared by the caller)."""
        self._known = None
        self._previous = None
        self._behind = set()
