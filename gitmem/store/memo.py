"""Where the store remembers lookups of immutable objects: a protocol, and the in-memory default.

The store never knows how lookups are kept across processes: whoever creates it for the
facade injects the read cache's memo (``ObjectMemo`` of the cache package); a store without
one remembers them for its own lifetime only.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["MISS", "DictMemo", "ObjectMemo"]

MISS: Any = object()
"""What :meth:`ObjectMemo.get` returns for a key never remembered (``None`` is a value)."""


class ObjectMemo(Protocol):
    """Lookups keyed by commit, tree or blob ids (which never change meaning), so never stale.

    Values are strings, ``None`` (no object at that path) or, for ``ls:`` keys,
    ``{name: blob id}`` dicts.
    """

    def get(self, key: str) -> Any:
        """The value of ``key``, or :data:`MISS`."""

    def snapshot(self) -> dict[str, Any]:
        """A copy of every remembered lookup."""

    def put(self, key: str, value: Any) -> None:
        """Remember one lookup."""

    def put_many(self, items: dict[str, Any]) -> None:
        """Remember several lookups at once."""


class DictMemo:
    """An :class:`ObjectMemo` in a plain dict, for the store's own lifetime."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        """The value of ``key``, or :data:`MISS`."""
        return self.data.get(key, MISS)

    def snapshot(self) -> dict[str, Any]:
        """A copy of every remembered lookup."""
        return dict(self.data)

    def put(self, key: str, value: Any) -> None:
        """Remember one lookup."""
        self.data[key] = value

    def put_many(self, items: dict[str, Any]) -> None:
        """Remember several lookups at once."""
        self.data.update(items)
