"""The memory table: id, status, the content (the wide column), then weight, type and anchor if room."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widgets import DataTable

from tui.rows import Row
from tui.text import first_line, literal, printable

__all__ = ["COLUMNS", "STATUS_STYLES", "MemoryTable", "plan_columns"]

STATUS_STYLES = {"fresh": "green", "stale": "yellow", "unanchored": "cyan", "refuted": "red"}
#: Every column, in display order; ``weight``, ``type`` and ``anchor`` are optional.
COLUMNS = ("id", "status", "content", "weight", "type", "anchor")
#: The optional columns in the order they are dropped when the table gets narrow: the
#: anchor last, since where a memory points is what a reader checks it against.
DROP_ORDER = ("weight", "type", "anchor")
#: Content width (cells) the table keeps at least before it shows an optional column ...
MIN_CONTENT = 30
#: ... and the share of the table's width the content keeps at least.
MIN_CONTENT_SHARE = 0.4
#: Widest anchor column (cells); a longer anchor is cut with an ellipsis.
MAX_ANCHOR = 28
#: Widest id column (cells): ``preference-`` + 16 hex digits fits.
MAX_ID = 27
#: Cells taken by the vertical scrollbar, reserved whether or not it shows.
_SCROLLBAR = 2
#: Longest content line handed to the table (it cuts what does not fit).
_CONTENT_CHARS = 400
#: Rows added at once by :meth:`MemoryTable.show` (a few screens); the rest follow in
#: chunks of :data:`CHUNK_ROWS` between refreshes, so that thousands of memories never
#: hold the first screen back (Textual measures every cell of every row it adds).
FIRST_ROWS = 200
CHUNK_ROWS = 500


def plan_columns(width: int, id_width: int, anchor_width: int,
                 padding: int = 1) -> tuple[tuple[str, int], ...]:
    """The columns to show in a table ``width`` cells wide, and each one's width in cells.

    ``id`` and ``status`` always show, then ``content``, which gets what is left. The
    optional ``weight``, ``type`` and ``anchor`` show only while the content keeps at least
    :data:`MIN_CONTENT` cells and :data:`MIN_CONTENT_SHARE` of the width; they are
    dropped in :data:`DROP_ORDER` (the anchor last).

    Args:
        width: the table's width in cells (scrollbar included).
        id_width: the longest id shown (cells).
        anchor_width: the longest anchor shown (cells; 0 when no memory is anchored).
        padding: cells added on each side of every column (``DataTable.cell_padding``).

    Returns:
        ``(column, width)`` pairs in :data:`COLUMNS` order.
    """
    fixed = {"id": max(2, min(id_width, MAX_ID)), "status": len("unanchored"),
             "weight": len("weight"), "type": len("preference"),
             "anchor": max(len("anchor"), min(anchor_width, MAX_ANCHOR))}
    available = max(0, width - _SCROLLBAR)
    shown = [name for name in COLUMNS if name != "content"]
    for drop in (None, *DROP_ORDER):
        if drop is not None:
            shown.remove(drop)
        used = sum(fixed[name] + 2 * padding for name in shown) + 2 * padding
        content = available - used
        if content >= max(MIN_CONTENT, MIN_CONTENT_SHARE * available):
            break
    widths = {**fixed, "content": max(content, 8)}
    return tuple((name, widths[name]) for name in COLUMNS if name == "content" or name in shown)


class MemoryTable(DataTable):
    """A row-cursor table keyed by memory id; every cell is literal text (no markup).

    The columns follow the table's width (:func:`plan_columns`), re-planned on every resize;
    until the table has a width, :meth:`show` only keeps the rows. The first
    :data:`FIRST_ROWS` rows show at once, the rest are added after the screen is drawn.
    """

    DEFAULT_CSS = """
    MemoryTable { height: 1fr; }
    """
    # vi's and less's movement keys, next to the arrows, Home and End DataTable binds.
    BINDINGS = [Binding("j", "cursor_down", "Down", show=False),
                Binding("k", "cursor_up", "Up", show=False),
                Binding("g", "scroll_top", "First", show=False),
                Binding("G", "scroll_bottom", "Last", show=False)]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._rows: list[Row] = []
        self._plan: tuple[tuple[str, int], ...] = ()
        self._keep: str | None = None
        self._generation = 0  # bumped by every show(): a fill of older rows stops

    @property
    def column_names(self) -> tuple[str, ...]:
        """The columns shown now, in order."""
        return tuple(name for name, _ in self._plan)

    @property
    def selected_id(self) -> str | None:
        """The id under the cursor, or ``None`` when the table is empty."""
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return key.value

    def show(self, rows: list[Row]) -> None:
        """Replace the rows, keeping the cursor on the same memory when it is still listed."""
        keep = self.selected_id or self._keep
        old_index = self.cursor_row
        self._rows = rows
        if self.size.width == 0:  # not laid out yet: the first resize fills the table
            self._keep = keep
            return
        plan = self._plan_for(self.size.width)
        if plan != self._plan:
            self._plan = plan
            self.clear(columns=True)
            for name, width in plan:
                self.add_column(name, key=name, width=width)
        else:
            self.clear()
        self._generation += 1
        if not rows:
            return
        ids = [r.id for r in rows]
        index = ids.index(keep) if keep in ids else min(old_index, len(rows) - 1)
        loaded = max(FIRST_ROWS, index + 1)
        self.add_rows_keyed(rows[:loaded])
        self.move_cursor(row=index)
        if loaded < len(rows):
            self.call_after_refresh(self._fill, self._generation, loaded)

    @property
    def complete(self) -> bool:
        """True when every row given to :meth:`show` is in the table."""
        return self.row_count == len(self._rows)

    def _fill(self, generation: int, start: int) -> None:
        if generation != self._generation:
            return  # show() was called again meanwhile
        end = start + CHUNK_ROWS
        self.add_rows_keyed(self._rows[start:end])
        if end < len(self._rows):
            self.call_after_refresh(self._fill, generation, end)

    def add_rows_keyed(self, rows: Iterable[Row]) -> None:
        """Append ``rows`` (cells for the shown columns), each keyed by its memory id."""
        names = self.column_names
        for row in rows:
            self.add_row(*(self._cell(row, name) for name in names), key=row.id)

    def update_row(self, row: Row) -> None:
        """Redraw one listed memory's cells (its status or reason changed); unlisted: nothing."""
        self._rows = [row if r.id == row.id else r for r in self._rows]
        if row.id not in self.rows:
            return
        for name in self.column_names:
            self.update_cell(row.id, name, self._cell(row, name))

    def _plan_for(self, width: int) -> tuple[tuple[str, int], ...]:
        id_width = max((len(r.id) for r in self._rows), default=2)
        anchor_width = max((len(r.anchor) for r in self._rows), default=0)
        return plan_columns(width, id_width, anchor_width, self.cell_padding)

    @staticmethod
    def _cell(row: Row, name: str) -> Text:
        if name == "id":
            return literal(row.id)
        if name == "status":
            return Text(row.status, style=STATUS_STYLES.get(row.status, ""))
        if name == "content":
            mark = f"[{row.store}] " if row.store else ""  # a personal memory: every repository's
            return Text(mark + first_line(row.content, _CONTENT_CHARS), no_wrap=True, overflow="ellipsis")
        if name == "weight":
            return Text(f"{row.weight:.2f}", justify="right")
        if name == "type":
            return literal(row.type)
        return Text(printable(row.anchor or "-", keep_newlines=False), no_wrap=True, overflow="ellipsis")

    def on_resize(self, event: events.Resize) -> None:
        """Re-plan the columns for the new width (and fill the table the first time)."""
        if event.size.width and self._plan_for(event.size.width) != self._plan:
            self.show(self._rows)

