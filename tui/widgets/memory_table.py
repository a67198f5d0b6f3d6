"""The memory table: id, type, status, weight, anchor and the content's first line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tui.rows import Row
from tui.text import first_line, literal

__all__ = ["STATUS_STYLES", "MemoryTable"]

STATUS_STYLES = {"fresh": "green", "stale": "yellow", "unanchored": "cyan", "refuted": "red"}
COLUMNS = ("id", "type", "status", "weight", "anchor", "content")


class MemoryTable(DataTable):
    """A row-cursor table keyed by memory id; every cell is literal text (no markup)."""

    DEFAULT_CSS = """
    MemoryTable { height: 1fr; }
    """

    def on_mount(self) -> None:
        """Set up the columns."""
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in COLUMNS:
            self.add_column(name, key=name)

    @property
    def selected_id(self) -> str | None:
        """The id under the cursor, or ``None`` when the table is empty."""
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return key.value

    def show(self, rows: list[Row]) -> None:
        """Replace the rows, keeping the cursor on the same memory when it is still listed."""
        keep = self.selected_id
        old_index = self.cursor_row
        self.clear()
        for row in rows:
            self.add_row(
                literal(row.id),
                literal(row.type),
                Text(row.status, style=STATUS_STYLES.get(row.status, "")),
                Text(f"{row.weight:.2f}", justify="right"),
                literal(row.anchor or "-", keep_newlines=False),
                Text(first_line(row.content, 60)),
                key=row.id,
            )
        if not rows:
            return
        ids = [r.id for r in rows]
        index = ids.index(keep) if keep in ids else min(old_index, len(rows) - 1)
        self.move_cursor(row=index)
