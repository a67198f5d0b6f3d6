"""The filter bar: type and status selects and a free-text search over content."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Select

from gitmem.vocabulary import MemoryType, Status
from tui.messages import FilterChanged
from tui.rows import Filter

__all__ = ["STATUSES", "TYPES", "FilterBar"]

#: The choices of the two selects, in the vocabulary's order.
TYPES = tuple(t.value for t in MemoryType)
STATUSES = tuple(s.value for s in Status)


class FilterBar(Horizontal):
    """Type select, status select, search input; posts :class:`FilterChanged` on every change."""

    DEFAULT_CSS = """
    FilterBar { height: auto; padding: 0 1; }
    FilterBar Select { width: 22; margin-right: 1; }
    FilterBar #search { width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        """Two selects and the search input."""
        yield Select([(t, t) for t in TYPES], prompt="any type", id="type-filter")
        yield Select([(s, s) for s in STATUSES], prompt="any status", id="status-filter")
        yield Input(placeholder="/ search content, id or anchor", id="search")

    @property
    def filter(self) -> Filter:
        """The current state."""
        kind = self.query_one("#type-filter", Select).value
        status = self.query_one("#status-filter", Select).value
        return Filter(
            type=kind if isinstance(kind, str) else None,
            status=status if isinstance(status, str) else None,
            text=self.query_one("#search", Input).value,
        )

    @on(Select.Changed)
    @on(Input.Changed, "#search")
    def _changed(self, event: Select.Changed | Input.Changed) -> None:
        event.stop()
        self.post_message(FilterChanged(self.filter))
