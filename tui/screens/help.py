"""The help screen (``?``): every key of the browse screen and what it does."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from tui.actions import BROWSE_ACTIONS, GLOBAL_KEYS, MOVEMENT_KEYS

__all__ = ["HelpScreen", "keys_table"]


def keys_table() -> Table:
    """Key, name, what it does: moving in the table, the browse actions, then the global keys."""
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("what it does", ratio=1)
    for key, name, what in MOVEMENT_KEYS:
        table.add_row(Text(key), Text(name), Text(what, style="dim"))
    table.add_row("", "", "")
    for action in BROWSE_ACTIONS:
        table.add_row(Text(action.display), Text(action.title), Text(action.help, style="dim"))
    table.add_row("", "", "")
    for key, name, what in GLOBAL_KEYS:
        table.add_row(Text(key), Text(name), Text(what, style="dim"))
    return table


class HelpScreen(ModalScreen[None]):
    """The keys, over the browse screen; ``?``, ``q`` or Escape closes it."""

    CSS_PATH = "help.tcss"
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        """A titled dialog holding the keys table."""
        with Vertical(id="help-dialog"):
            yield Label("Keys of tur tui", id="help-title")
            with VerticalScroll(id="help-keys"):
                yield Static(keys_table())
            yield Label("Esc, ? or q closes · docs/tui.md has the details", id="help-foot")

    def action_close(self) -> None:
        """Back to the browse screen."""
        self.dismiss(None)
