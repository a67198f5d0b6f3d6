"""Commit distances to HEAD, ``distances.bin``: how many commits each observed SHA is behind one HEAD."""

from __future__ import annotations

from gitmem.cache.files import CacheFiles

__all__ = ["Distances"]

_NAME, _KIND = "distances.bin", "distances"


class Distances:
    """Known commit distances from observed SHAs to one HEAD, kept across processes.

    The payload is ``{"head": <sha>, "d": {<observed sha>: <commits>}}``; one for another
    HEAD, or of another shape, counts as empty. Callers hold :attr:`files`'s lock.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheFiles) -> None:
        self.files = files
        self._known: tuple[str, dict[str, int]] | None = None
        self._dirty = False

    def to(self, head: str) -> dict[str, int]:
        """Known distances (commits) from observed SHAs to ``head``; the caller adds new ones.

        The dict is this object's own: entries added by the caller are saved by
        :meth:`flush` once :meth:`mark` is called.
        """
        if self._known is None or self._known[0] != head:
            payload = self.files.read_payload(_NAME, _KIND)
            known: dict[str, int] = {}
            if isinstance(payload, dict) and payload.get("head") == head:
                table = payload.get("d")
                if isinstance(table, dict):
                    known = {k: v for k, v in table.items()
                             if isinstance(k, str) and isinstance(v, int)}
            self._known = (head, known)
        return self._known[1]

    def mark(self) -> None:
        """Note that the dict from :meth:`to` gained entries (saved by :meth:`flush`)."""
        self._dirty = True

    def flush(self) -> None:
        """Save the distances if they gained entries (no-op otherwise)."""
        if self._dirty and self._known is not None:
            head, known = self._known
            self.files.write_payload(_NAME, _KIND, {"head": head, "d": known})
            self._dirty = False

    def forget(self) -> None:
        """Drop the distances held in memory (the file is cleared by the caller)."""
        self._known = None
