"""What the parts of the store ask of its object memo, handed to them by :class:`~gitmem.store.Store`.

The memo itself (what it is, where it lives) belongs to the store; the parts (trees,
identity, refs) only remember lookups of immutable objects through these three calls, so
that the memo can change without them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Lookups", "ObjectMemo"]


class ObjectMemo(Protocol):
    """A memo of string keys (naming immutable object ids) to plain values."""

    def get(self, key: str) -> Any:
        """The value of ``key``, or a sentinel of the memo's own when it has none."""

    def put(self, key: str, value: Any) -> None:
        """Remember ``value`` for ``key``."""

    def put_many(self, items: dict[str, Any]) -> None:
        """Remember every key of ``items``."""

    def snapshot(self) -> dict[str, Any]:
        """A copy of every remembered lookup."""


@dataclass(frozen=True)
class Lookups:
    """The store's memo, as its parts use it.

    Attributes:
        memo: the memo, opened on first call.
        memoized: ``memoized(key, compute)``: the remembered value of ``key``, else
            ``compute()``, remembered.
        lacks: ``lacks(key)``: whether the memo has no value for ``key``.
    """

    memo: Callable[[], ObjectMemo]
    memoized: Callable[[str, Callable[[], Any]], Any]
    lacks: Callable[[str], bool]
