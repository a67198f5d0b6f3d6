"""The browse screen: filter bar, memory table, detail pane, and the curation actions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from gitmem.api import Gitmem
from gitmem.errors import GitmemError
from tui.detail import load_detail
from tui.messages import FilterChanged, MemoryChanged, RefMoved
from tui.rows import Filter, Row, apply_filter, to_rows
from tui.screens.confidence import ConfidenceScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.refute import RefuteScreen
from tui.screens.wake_preview import WakePreviewScreen
from tui.text import first_line
from tui.widgets.filter_bar import FilterBar
from tui.widgets.memory_detail import MemoryDetail
from tui.widgets.memory_table import MemoryTable

__all__ = ["NARROW_WIDTH", "BrowseScreen"]

NARROW_WIDTH = 120
"""Below this many columns the detail pane goes under the table instead of beside it."""


class BrowseScreen(Screen[None]):
    """Every memory in a filterable table with a detail pane; ``v r d c w /`` act on the selection."""

    CSS_PATH = "browse.tcss"
    BINDINGS = [
        Binding("v", "verify", "Verify"),
        Binding("r", "refute", "Refute"),
        Binding("d", "forget", "Forget"),
        Binding("c", "confidence", "Confidence"),
        Binding("w", "wake", "Wake preview"),
        Binding("slash", "search", "Search"),
        Binding("escape", "focus_table", "Table", show=False),
    ]

    def __init__(self, gm: Gitmem, clock: Callable[[], datetime] | None = None,
                 on_write: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.gm = gm
        self.clock = clock
        self.on_write = on_write
        """Called right after this screen wrote to the memory ref (the app takes the new tip as seen)."""
        self.rows: list[Row] = []
        self.filter = Filter()
        self.skipped = 0
        self._shown: tuple | None = None  # (row, any rows, tip) the detail pane shows

    def compose(self) -> ComposeResult:
        """Header, filter bar, table + detail, a summary line and the footer."""
        yield Header()
        yield FilterBar()
        with Horizontal(id="main"):
            yield MemoryTable(id="memories")
            yield MemoryDetail(id="detail")
        yield Static("", id="summary-line", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Load the memories and focus the table."""
        self.reload()
        self.table.focus()

    def on_resize(self, event: events.Resize) -> None:
        """Stack the detail under the table on a narrow terminal, beside it on a wide one."""
        self.set_class(event.size.width < NARROW_WIDTH, "narrow")

    @property
    def table(self) -> MemoryTable:
        """The memory table."""
        return self.query_one(MemoryTable)

    def _now(self) -> datetime | None:
        return self.clock() if self.clock else None

    # -- loading -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read every memory (statuses and weights) and redraw the table and the detail."""
        try:
            view = self.gm.status_view(now=self._now(), full_records=False)
            legacy = self.gm.legacy_ids()
        except GitmemError as exc:
            self.notify(str(exc), title="load", severity="error", markup=False)
            return
        self.rows = to_rows(view.rows, legacy)
        self.skipped = len(view.skipped)
        self._redraw()

    def _redraw(self) -> None:
        shown = apply_filter(self.rows, self.filter)
        self.table.show(shown)
        line = f"{len(shown)} of {len(self.rows)} memories"
        if self.skipped:
            line += f" · {self.skipped} malformed record(s) skipped"
        self.query_one("#summary-line", Static).update(Text(line))
        self._show_detail()

    def _selected_row(self) -> Row | None:
        selected = self.table.selected_id
        return next((r for r in self.rows if r.id == selected), None)

    def _show_detail(self) -> None:
        detail = self.query_one(MemoryDetail)
        row = self._selected_row()
        # A redraw highlights the same row up to three times (clear, add, move): load once
        # per row and ref tip (the detail reads the record, its history and a git diff).
        shown = (row, bool(self.rows), self.gm.tip())
        if shown == self._shown:
            return
        self._shown = shown
        if row is None:
            detail.show(None, "no memory matches" if self.rows else "no memories yet: tur learn …")
            return
        try:
            detail.show(load_detail(self.gm, row))
        except GitmemError as exc:
            detail.show(None, str(exc))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor moved: show that memory."""
        if event.data_table is self.table:
            self._show_detail()

    def on_filter_changed(self, message: FilterChanged) -> None:
        """Apply the new filter."""
        self.filter = message.filter
        self._redraw()

    def on_ref_moved(self, message: RefMoved) -> None:
        """Another write (ours or another process's): reload."""
        self.reload()

    # -- actions -----------------------------------------------------------------------------

    def _target(self) -> Row | None:
        row = self._selected_row()
        if row is None:
            self.notify("no memory selected", severity="warning")
        return row

    def _run(self, what: str, memory_id: str, call: Callable[[], object]) -> bool:
        """Run a facade call; notify a GitmemError instead of raising. True on success."""
        try:
            call()
        except GitmemError as exc:
            self.notify(str(exc), title=f"{what} {memory_id}", severity="error", markup=False)
            return False
        self.post_message(MemoryChanged(memory_id, what))
        if self.on_write is not None:
            self.on_write()
        self.reload()
        return True

    def action_verify(self) -> None:
        """Verify the selected memory explicitly (restarts its decay when fresh)."""
        row = self._target()
        if row is None:
            return
        outcome = []

        def call() -> None:
            outcome.extend(self.gm.verify([row.id], now=self._now()).rows)

        if self._run("verify", row.id, call) and outcome:
            r = outcome[0]
            text = f"{row.id}: {r.status.value}" + (f" ({r.reason})" if r.reason else "")
            self.notify(text, title="verify", markup=False)

    def action_refute(self) -> None:
        """Ask for a reason, then refute the selected memory."""
        row = self._target()
        if row is None:
            return

        def done(reason: str | None) -> None:
            if reason:
                self._run("refute", row.id, lambda: self.gm.refute(row.id, reason, by=self._identity()))

        self.app.push_screen(RefuteScreen(row.id, first_line(row.content, 200)), done)

    def _identity(self) -> str | None:
        try:
            return self.gm.identity()
        except GitmemError:
            return None

    def action_forget(self) -> None:
        """Confirm, then forget the selected memory (it stays in the ref's history)."""
        row = self._target()
        if row is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self._run("forget", row.id, lambda: self.gm.forget(row.id))

        self.app.push_screen(
            ConfirmScreen(f"Forget {row.id}?", first_line(row.content, 200)), done
        )

    def action_confidence(self) -> None:
        """Ask for a new confidence in [0, 1] for the selected memory."""
        row = self._target()
        if row is None:
            return

        def done(value: float | None) -> None:
            if value is not None:
                self._run("confidence", row.id, lambda: self.gm.set_confidence(row.id, value))

        self.app.push_screen(ConfidenceScreen(row.id, row.confidence), done)

    def action_wake(self) -> None:
        """Open the wake preview at the configured budget."""
        try:
            budget = self.gm.settings.wake.token_budget
        except GitmemError as exc:
            self.notify(str(exc), title="wake", severity="error", markup=False)
            return
        self.app.push_screen(WakePreviewScreen(self.gm, budget, self.clock))

    def action_search(self) -> None:
        """Focus the search input."""
        self.query_one("#search", Input).focus()

    def action_focus_table(self) -> None:
        """Back from the filter bar to the table."""
        self.table.focus()
