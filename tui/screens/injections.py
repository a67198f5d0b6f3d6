"""What the agent saw: the injection log by session, each injection with what went in and what not."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from gitmem.api import Gitmem, Injection, render_injection
from gitmem.errors import GitmemError
from tui.text import literal

__all__ = ["NO_SESSION", "InjectionsScreen"]

NO_SESSION = "(no session)"
"""How the sessions table names the injections without a session id (``tur wake``, MCP)."""


class InjectionsScreen(Screen[None]):
    """The sessions of the injection log (newest first), the injections of the one selected, and one's record.

    Read in a thread (the log holds up to ``log.files × log.max_bytes`` bytes); ``r`` reads it
    again. Selecting a session lists its injections, oldest first; selecting an injection
    shows its record as ``tur log`` prints it (:func:`gitmem.api.render_injection`).
    """

    CSS_PATH = "injections.tcss"
    BINDINGS = [Binding("escape", "close", "Back"), Binding("r", "reload", "Reload")]

    def __init__(self, gm: Gitmem) -> None:
        super().__init__()
        self.gm = gm
        self.sessions: list[tuple[str, list[Injection]]] = []
        """The log by session, as last read (see :meth:`gitmem.api.injections.InjectionLog.sessions`)."""
        self.session: str | None = None
        """The session whose injections are listed."""
        self.loads = 0
        """Reads of the log shown so far."""

    def compose(self) -> ComposeResult:
        """Sessions on the left; the session's injections and the record of one on the right."""
        yield Header()
        yield Static("", id="summary", markup=False)
        with Horizontal(id="log-panes"):
            yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with Vertical(id="session-pane"):
                yield DataTable(id="injections", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="record-scroll"):
                    yield Static("", id="record", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Set up the columns and read the log."""
        self.sub_title = "what the agent saw"
        sessions = self.query_one("#sessions", DataTable)
        for name in ("session", "last", "injections"):
            sessions.add_column(name, key=name)
        injections = self.query_one("#injections", DataTable)
        for name in ("time", "surface", "kind", "in", "out"):
            injections.add_column(name, key=name)
        self.action_reload()

    def action_reload(self) -> None:
        """Read the log again (in a thread)."""
        self._load()

    @work(thread=True, group="injections", exclusive=True)
    def _load(self) -> None:
        try:
            sessions = self.gm.injections.sessions()
        except GitmemError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="log", severity="error", markup=False)
            return
        self.app.call_from_thread(self._loaded, sessions)

    def _loaded(self, sessions: list[tuple[str, list[Injection]]]) -> None:
        self.sessions = sessions
        self.loads += 1
        total = sum(len(records) for _, records in sessions)
        self.query_one("#summary", Static).update(Text(
            f"{total} injection{'s' if total != 1 else ''} in {len(sessions)} "
            f"session{'s' if len(sessions) != 1 else ''} (this clone's log: tur log)"
            if total else "no injection logged yet: hooks, MCP reads, tur wake and tur recall are"))
        table = self.query_one("#sessions", DataTable)
        table.clear()
        for session, records in sessions:
            table.add_row(literal(session or NO_SESSION), Text(f"{records[-1].at:%Y-%m-%d %H:%M:%S}"),
                          Text(str(len(records)), justify="right"), key=session)
        if sessions:
            keep = self.session if self.session in dict(sessions) else sessions[0][0]
            table.move_cursor(row=table.get_row_index(keep))
            self._show_session(keep)

    @on(DataTable.RowHighlighted, "#sessions")
    def _session_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._show_session(event.row_key.value)

    def _show_session(self, session: str) -> None:
        self.session = session
        records = dict(self.sessions).get(session, [])
        table = self.query_one("#injections", DataTable)
        table.clear()
        for n, record in enumerate(records):
            table.add_row(Text(f"{record.at:%H:%M:%S}"), literal(record.via.surface), Text(record.kind),
                          Text(str(len(record.included)), justify="right"),
                          Text(str(sum(record.counts.values())), justify="right"), key=str(n))
        if records:
            table.move_cursor(row=len(records) - 1)
            self._show_record(records[-1])

    @on(DataTable.RowHighlighted, "#injections")
    def _injection_highlighted(self, event: DataTable.RowHighlighted) -> None:
        records = dict(self.sessions).get(self.session or "", [])
        if event.row_key.value is not None and int(event.row_key.value) < len(records):
            self._show_record(records[int(event.row_key.value)])

    def _show_record(self, record: Injection) -> None:
        self.query_one("#record", Static).update(literal(render_injection(record).rstrip("\n")))

    def action_close(self) -> None:
        """Back to the browse screen."""
        self.dismiss(None)
