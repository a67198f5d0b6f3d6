"""The refute modal: asks why a memory is wrong; dismisses with the reason or ``None``."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from tui.text import literal

__all__ = ["RefuteScreen"]


class RefuteScreen(ModalScreen[str | None]):
    """Ask for a refutation reason; Enter or *Refute* submits, Escape cancels (``None``)."""

    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, memory_id: str, content: str) -> None:
        super().__init__()
        self.memory_id = memory_id
        self.content = content

    def compose(self) -> ComposeResult:
        """Title, the memory's content, the reason input and the buttons."""
        with Vertical(classes="dialog"):
            yield Label(literal(f"Refute {self.memory_id}"), classes="title")
            yield Label(literal(self.content))
            yield Input(placeholder="why is it wrong?", id="reason")
            yield Label("", id="error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Refute", id="ok", variant="error")

    @on(Input.Submitted, "#reason")
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        reason = self.query_one("#reason", Input).value
        if not reason.strip():
            self.query_one("#error", Label).update("a refutation needs a reason")
            return
        self.dismiss(reason.strip())

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without refuting."""
        self.dismiss(None)
