"""The learn modal: a new memory's text, type and optional anchor; dismisses with a :class:`Draft`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from gitmem.vocabulary import MemoryType
from tui.text import literal

__all__ = ["Draft", "LearnScreen", "anchor_arg", "anchor_text"]

#: ``path:start-end`` or ``path:line`` (the form the dialogs take).
_COLON_RANGE = re.compile(r"^(?P<path>.+):(?P<start>\d+)(?:-(?P<end>\d+))?$")
#: ``path#Lstart-Lend`` (the stored form, which the dialogs show).
_STORED_RANGE = re.compile(r"^(?P<path>.+)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")


def anchor_arg(text: str) -> str | None:
    """The facade's ``file`` argument for an anchor typed as ``path:start-end``.

    ``src/app.py:3-5`` → ``src/app.py#L3-L5``; ``src/app.py:7`` → ``src/app.py#L7-L7``;
    ``src/app.py`` (the whole file) and the stored form ``src/app.py#L3-L5`` pass as they
    are; blank → ``None`` (no anchor). The facade checks the rest (``InvalidAnchor``).
    """
    text = text.strip()
    if not text:
        return None
    found = _COLON_RANGE.match(text)
    if found is None:
        return text
    start = found["start"]
    return f"{found['path']}#L{start}-L{found['end'] or start}"


def anchor_text(ref: str | None) -> str:
    """A stored anchor (``path#L3-L5``) in the dialogs' form (``path:3-5``); ``""`` for none."""
    if not ref:
        return ""
    found = _STORED_RANGE.match(ref)
    if found is None:
        return ref
    return f"{found['path']}:{found['start']}-{found['end'] or found['start']}"


@dataclass(frozen=True)
class Draft:
    """What the learn (or edit) dialog was given.

    Attributes:
        content: the statement, stripped.
        type: a memory type value (``fact`` …).
        file: the facade's ``file`` argument (``path`` or ``path#Lstart-Lend``) or ``None``.
    """

    content: str
    type: str
    file: str | None


class LearnScreen(ModalScreen[Draft | None]):
    """Ask for a memory: content (required), type (default ``fact``), anchor ``path:start-end``.

    Enter in a field or *Learn* submits; Escape or *Cancel* dismisses with ``None``.
    """

    CSS_PATH = ["modal.tcss", "learn.tcss"]
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    TITLE_TEXT = "Learn a memory"
    OK_LABEL = "Learn"

    def __init__(self, content: str = "", type: str = MemoryType.FACT.value, anchor: str = "") -> None:
        super().__init__()
        self.anchor_field = anchor
        """The anchor field's text (``path:start-end``)."""
        self.initial = Draft(content, type, anchor_arg(anchor))
        """What the dialog started with (``file`` in the facade's form)."""

    def compose(self) -> ComposeResult:
        """Title, content, type and anchor fields, an error line and the buttons."""
        with Vertical(classes="dialog"):
            yield Label(literal(self.TITLE_TEXT), classes="title")
            yield Label("content")
            yield Input(self.initial.content, placeholder="what is true about this code?", id="content")
            with Horizontal(classes="fields"):
                with Vertical(classes="field"):
                    yield Label("type")
                    yield Select([(t.value, t.value) for t in MemoryType], value=self.initial.type,
                                 allow_blank=False, id="type")
                with Vertical(classes="field anchor"):
                    yield Label("anchor (optional): path:start-end")
                    yield Input(self.anchor_field, placeholder="src/app.py:3-5", id="anchor")
            yield Label("", id="error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button(self.OK_LABEL, id="ok", variant="primary")

    def draft(self) -> Draft:
        """What the fields hold now."""
        kind = self.query_one("#type", Select).value
        return Draft(
            content=self.query_one("#content", Input).value.strip(),
            type=kind if isinstance(kind, str) else MemoryType.FACT.value,
            file=anchor_arg(self.query_one("#anchor", Input).value),
        )

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        draft = self.draft()
        if not draft.content:
            self.query_one("#error", Label).update("a memory needs some content")
            self.query_one("#content", Input).focus()
            return
        self.dismiss(draft)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        """Close without learning anything."""
        self.dismiss(None)
