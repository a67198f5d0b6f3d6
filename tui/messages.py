"""Messages between the app, its screens and widgets."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from tui.rows import Filter

__all__ = ["FilterChanged", "MemoryChanged", "RefMoved", "WorktreeChecked"]


@dataclass
class RefMoved(Message):
    """``refs/tur/memories`` moved (this or another process wrote); ``tip`` is the new SHA or None."""

    tip: str | None


@dataclass
class MemoryChanged(Message):
    """The TUI changed a memory: ``action`` names it (verify, refute, learn, edit, link ...)."""

    memory_id: str
    action: str


@dataclass
class FilterChanged(Message):
    """The filter bar's state changed."""

    filter: Filter


@dataclass
class WorktreeChecked(Message):
    """The working-tree follower re-checked memories after edits, an index change or a HEAD move.

    ``trigger`` is files | index | head; ``paths`` the anchored files concerned; ``changed``
    the ids whose status or reason the check changed; ``error`` one line when it failed.
    """

    trigger: str
    paths: tuple[str, ...]
    changed: tuple[str, ...]
    error: str | None = None
