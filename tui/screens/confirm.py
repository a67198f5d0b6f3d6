"""A yes/no modal (used by forget); dismisses with ``True`` only on an explicit yes."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tui.text import literal

__all__ = ["ConfirmScreen"]


class ConfirmScreen(ModalScreen[bool]):
    """Ask ``question``; ``y`` / *Yes* → ``True``, ``n`` / Escape / *No* → ``False``."""

    CSS_PATH = "modal.tcss"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        """The question, the detail text and the buttons (No is focused)."""
        with Vertical(classes="dialog"):
            yield Label(literal(self.question), classes="title")
            if self.detail:
                yield Label(literal(self.detail))
            with Horizontal(classes="buttons"):
                yield Button("No", id="no")
                yield Button("Yes", id="yes", variant="error")

    def on_mount(self) -> None:
        """Focus the safe answer."""
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Dismiss with ``yes``."""
        self.dismiss(yes)
