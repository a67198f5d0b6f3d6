"""The confidence modal: a number in [0, 1]; dismisses with it, or ``None`` on cancel."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.validation import Number
from textual.widgets import Button, Input, Label

from tui.text import literal

__all__ = ["ConfidenceScreen", "parse_confidence"]


def parse_confidence(text: str) -> float | None:
    """``text`` as a confidence in [0, 1], or ``None`` when it is not a number in range."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


class ConfidenceScreen(ModalScreen[float | None]):
    """Edit a memory's confidence; an out-of-range value shows an error and stays open."""

    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, memory_id: str, current: float) -> None:
        super().__init__()
        self.memory_id = memory_id
        self.current = current

    def compose(self) -> ComposeResult:
        """Title, the value input (pre-filled), an error line and the buttons."""
        with Vertical(classes="dialog"):
            yield Label(literal(f"Confidence of {self.memory_id} (0 to 1)"), classes="title")
            yield Input(value=f"{self.current:g}", id="value",
                        validators=[Number(minimum=0.0, maximum=1.0)])
            yield Label("", id="error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Set", id="ok", variant="primary")

    @on(Input.Submitted, "#value")
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        text = self.query_one("#value", Input).value.strip()
        value = parse_confidence(text)
        if value is None:
            self.query_one("#error", Label).update(literal(f"not a number between 0 and 1: {text!r}"))
            return
        self.dismiss(value)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without changing anything."""
        self.dismiss(None)
