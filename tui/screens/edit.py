"""The edit modal: the learn dialog pre-filled with a memory; dismisses with only what changed."""

from __future__ import annotations

from tui.screens.learn import Draft, LearnScreen, anchor_text

__all__ = ["EditScreen", "changes"]


def changes(before: Draft, after: Draft) -> dict[str, str]:
    """The facade's ``edit`` keywords for what differs (``content``, ``type``, ``file``).

    An anchor cleared in the dialog is not a change: ``tur edit`` re-anchors, it never
    removes an anchor.
    """
    out = {}
    if after.content != before.content:
        out["content"] = after.content
    if after.type != before.type:
        out["type"] = after.type
    if after.file is not None and after.file != before.file:
        out["file"] = after.file
    return out


class EditScreen(LearnScreen):
    """Change a memory's content, type or anchor (re-anchored at HEAD); Escape cancels.

    Dismisses with the edited :class:`Draft`; :func:`changes` against :attr:`initial` says
    what to pass to ``Gitmem.edit``.
    """

    CSS_PATH = ["modal.tcss", "learn.tcss", "edit.tcss"]
    OK_LABEL = "Save"

    def __init__(self, memory_id: str, content: str, type: str, anchor: str | None) -> None:
        super().__init__(content, type, anchor_text(anchor))
        self.memory_id = memory_id
        self.TITLE_TEXT = f"Edit {memory_id}"
