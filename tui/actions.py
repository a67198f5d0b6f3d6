"""The browse screen's actions in one table, read by its key bindings, the help screen and the palette."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

__all__ = ["BROWSE_ACTIONS", "GLOBAL_KEYS", "MOVEMENT_KEYS", "Action", "browse_bindings"]


@dataclass(frozen=True)
class Action:
    """One thing the user can do on the browse screen.

    Attributes:
        key: the Textual key name (``question_mark``); ``display`` is how it is shown.
        display: the key as the help screen and the footer show it (``?``).
        action: the screen's action name (``action_<name>``).
        title: the command palette's title (``verify``).
        help: one line: what it does.
        footer: shown in the footer (the rest are in the help screen and the palette).
        label: the footer's word for it when shorter than the title (80 columns hold every
            footer key), else ``""``.
    """

    key: str
    display: str
    action: str
    title: str
    help: str
    footer: bool = False
    label: str = ""


BROWSE_ACTIONS: tuple[Action, ...] = (
    Action("v", "v", "verify", "verify", "check the selected memory against the code", True),
    Action("r", "r", "refute", "refute", "mark it wrong, with a reason", True),
    Action("u", "u", "unrefute", "undo refutation", "withdraw its refutation"),
    Action("d", "d", "forget", "forget", "remove it (the ref's history keeps it)"),
    Action("t", "t", "confirm", "confirm (still true)",
           "stale but still true: fresh, re-anchored where its lines are at HEAD (tur verify ID --confirm)",
           True, "True"),
    Action("c", "c", "confidence", "confidence", "set its confidence, 0 to 1"),
    Action("w", "w", "wake", "wake preview", "what an agent reads at start, under a budget", True, "Wake"),
    Action("i", "i", "injections", "what the agent saw",
           "each session's injections: what went in, what was left out and why (tur log)"),
    Action("n", "n", "learn", "learn", "a new memory: text, type, optional anchor", True),
    Action("e", "e", "edit", "edit", "change its content, type or anchor", True),
    Action("m", "m", "mark", "mark for link", "mark it; `l` on another memory links the two"),
    Action("l", "l", "link", "link", "relate it to another (the marked one, if any)"),
    Action("o", "o", "open_editor", "open in $EDITOR", "its anchored lines, in $EDITOR"),
    Action("s", "s", "sync", "sync", "fetch, merge and push memories with origin"),
    Action("f", "f", "filter", "filter", "filter by type and status"),
    Action("slash", "/", "search", "search", "search content, id and anchor"),
    Action("question_mark", "?", "help", "help", "this list of keys", True),
)
"""Every browse-screen action, in the order the help screen lists them."""

MOVEMENT_KEYS: tuple[tuple[str, str, str], ...] = (
    ("j / ↓", "down", "the next memory"),
    ("k / ↑", "up", "the previous memory"),
    ("g / Home", "first", "the first memory"),
    ("G / End", "last", "the last memory"),
    ("Enter", "apply search", "in the search box: keep the filter, back to the table"),
    ("Esc", "clear search", "in the search box: clear it, back to the table"),
)
"""The table's movement keys and the search box's two (the help screen lists them first)."""

GLOBAL_KEYS: tuple[tuple[str, str, str], ...] = (
    ("ctrl+p", "command palette", "every action above, by name"),
    ("esc", "back", "to the table, or out of a dialog"),
    ("q", "quit", "leave tur tui"),
)
"""Keys that work everywhere: key, name, what it does (the help screen lists them last)."""


def browse_bindings() -> list[Binding]:
    """The browse screen's bindings, from :data:`BROWSE_ACTIONS`."""
    return [Binding(a.key, a.action, a.label or a.title[:1].upper() + a.title[1:], show=a.footer,
                    key_display=a.display) for a in BROWSE_ACTIONS]
