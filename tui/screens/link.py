"""The link modal: relate the selected memory to another; dismisses with a :class:`LinkRequest`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Select

from gitmem.vocabulary import RelationType
from tui.text import literal

__all__ = ["LinkRequest", "LinkScreen"]


@dataclass(frozen=True)
class LinkRequest:
    """``source --kind--> target``: ``target`` as typed (an id or a unique prefix)."""

    source: str
    target: str
    kind: str


class LinkScreen(ModalScreen[LinkRequest | None]):
    """Ask for the other memory (id or unique prefix) and the relation; Escape cancels.

    ``target`` fills the field (the memory marked with ``m``); ``ids`` are suggested as the
    user types (right arrow accepts). The ids are checked by the facade (``Gitmem.link``).
    """

    CSS_PATH = ["modal.tcss", "link.tcss"]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, source: str, content: str, target: str = "",
                 ids: Sequence[str] = ()) -> None:
        super().__init__()
        self.source = source
        self.content = content
        self.target = target
        self.ids = [i for i in ids if i != source]

    def compose(self) -> ComposeResult:
        """Title, the source's content, relation and target fields, an error line, buttons."""
        with Vertical(classes="dialog"):
            yield Label(literal(f"Link {self.source}"), classes="title")
            yield Label(literal(self.content))
            with Horizontal(classes="fields"):
                with Vertical(classes="field"):
                    yield Label("relation")
                    yield Select([(k.value, k.value) for k in RelationType],
                                 value=RelationType.SUPPORTS.value, allow_blank=False, id="kind")
                with Vertical(classes="field target"):
                    yield Label("to memory (id or unique prefix)")
                    yield Input(self.target, placeholder="fact-1a2b", id="target",
                                suggester=SuggestFromList(self.ids) if self.ids else None)
            yield Label("", id="error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Link", id="ok", variant="primary")

    def on_mount(self) -> None:
        """Start in the target field."""
        self.query_one("#target", Input).focus()

    @on(Input.Submitted, "#target")
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        target = self.query_one("#target", Input).value.strip()
        if not target:
            self.query_one("#error", Label).update("name the memory to link to")
            return
        kind = self.query_one("#kind", Select).value
        self.dismiss(LinkRequest(self.source, target,
                                 kind if isinstance(kind, str) else RelationType.SUPPORTS.value))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without linking."""
        self.dismiss(None)
