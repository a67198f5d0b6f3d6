"""What the staleness check found for one anchor at one HEAD, and the cache of those findings.

Apart from :mod:`gitmem.staleness.verdicts` (which imports the code history, libgit2), so
that a reader of the cache (the point of use: :func:`gitmem.api.stale.stale_notes`) loads
no libgit2 when the outcomes it needs are cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem.vocabulary import Status

__all__ = ["Located", "Outcome", "VerifyCache"]


@dataclass(frozen=True)
class Located:
    """Where the anchored code is at HEAD when it is unchanged there."""

    path: str
    start: int | None
    end: int | None


@dataclass(frozen=True)
class Outcome:
    """Intermediate result at HEAD: located (``reason`` says how it travelled), or final."""

    located: Located | None = None
    status: Status = Status.STALE
    reason: str | None = None
    hint: str | None = None
    last_text: str | None = None
    moved_to: str | None = None
    maps_to: str | None = None


class VerifyCache:
    """Where anchored code stands at HEAD, keyed by (observed SHA, HEAD SHA, anchor, fingerprint).

    Every key part is immutable (commits and blob contents never change), so an entry
    never goes stale; only the working-tree comparison is redone on each run. Keep
    one across runs (in memory, or as :meth:`to_plain` in the read cache's
    ``verify.bin``) to make a verify with nothing changed cost a status scan plus a
    lookup per memory. Outcomes also depend on the ``verify`` settings: ``tag``
    (:meth:`gitmem.config.settings.VerifySettings.tag`) names them, and a stored cache with
    another tag is not loaded.
    """

    VERSION = 4

    def __init__(self, tag: str = "") -> None:
        self.tag = tag
        self._entries: dict[tuple[str, str, str, str], Outcome] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple[str, str, str, str]) -> Outcome | None:
        """The stored outcome for ``key``, or ``None``."""
        return self._entries.get(key)

    def put(self, key: tuple[str, str, str, str], outcome: Outcome) -> None:
        """Store the outcome for ``key``."""
        self._entries[key] = outcome

    def to_plain(self, head_sha: str | None = None) -> dict[str, Any]:
        """Plain form (dicts, lists, strings, ints); with ``head_sha`` only that HEAD's entries."""
        rows = []
        for (obs, head, ref, fp), out in self._entries.items():
            if head_sha is not None and head != head_sha:
                continue
            loc = out.located
            rows.append([
                obs, head, ref, fp,
                None if loc is None else [loc.path, loc.start, loc.end],
                out.status.value, out.reason, out.hint, out.last_text, out.moved_to, out.maps_to,
            ])
        return {"version": self.VERSION, "tag": self.tag, "entries": rows}

    @classmethod
    def from_plain(cls, doc: Any, tag: str = "") -> VerifyCache:
        """Load :meth:`to_plain` output made with ``tag``.

        Anything else, another version or another ``tag`` gives an empty cache (with ``tag``).
        """
        cache = cls(tag)
        try:
            if doc.get("version") != cls.VERSION or doc.get("tag") != tag:
                return cache
            for obs, head, ref, fp, loc, status, reason, hint, last, moved, maps in doc["entries"]:
                located = None if loc is None else Located(loc[0], loc[1], loc[2])
                cache._entries[(obs, head, ref, fp)] = Outcome(
                    located, Status(status), reason, hint, last, moved, maps
                )
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            return cls(tag)
        return cache
