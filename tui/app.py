"""``GitmemApp``: the Textual app of ``tur tui``, and :func:`make_app` shared by the CLI and the tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from textual.app import App
from textual.binding import Binding

from gitmem.api import Gitmem
from gitmem.errors import GitmemError
from tui.messages import RefMoved
from tui.screens.browse import BrowseScreen

__all__ = ["DEFAULT_POLL_S", "GitmemApp", "make_app"]

DEFAULT_POLL_S = 1.0
"""Seconds between checks of the memory ref's tip (another process may have written)."""


class GitmemApp(App[None]):
    """Browse, curate and preview the memories of one repository.

    Args:
        gm: the opened facade.
        clock: returns "now" (aware UTC) for weights and wake; ``None`` = the real clock.
            Tests pass a fixed one so that weights do not move.
        poll_interval: seconds between tip checks; the table reloads when the tip changes.
        editor: the editor command line the ``o`` key runs; ``None`` = ``$VISUAL`` or ``$EDITOR``.
        follow: follow working-tree edits as ``tur watch`` does (statuses and the detail pane).
    """

    CSS_PATH = "app.tcss"
    TITLE = "tur tui"
    BINDINGS = [Binding("q", "quit", "Quit")]

    def __init__(self, gm: Gitmem, clock: Callable[[], datetime] | None = None,
                 poll_interval: float = DEFAULT_POLL_S, editor: str | None = None,
                 follow: bool = True) -> None:
        super().__init__()
        self.follow = follow
        self.gm = gm
        self.clock = clock
        self.poll_interval = poll_interval
        self.editor = editor
        self.tip: str | None = None

    def on_mount(self) -> None:
        """Show the browse screen and start watching the ref."""
        self.sub_title = self.gm.cwd.name
        self.tip = self._read_tip()
        self.push_screen(BrowseScreen(self.gm, self.clock, on_write=self.refresh_tip, editor=self.editor,
                                      follow=self.follow))
        self.set_interval(self.poll_interval, self.check_ref, name="ref-watch")

    def _read_tip(self) -> str | None:
        try:
            return self.gm.tip()
        except GitmemError:
            return self.tip

    def refresh_tip(self) -> None:
        """Take the current tip as seen (after our own write, whose reload is already done)."""
        self.tip = self._read_tip()

    def check_ref(self) -> bool:
        """If the memory ref moved since last seen, tell every screen (:class:`RefMoved`).

        Returns:
            True when it moved.
        """
        tip = self._read_tip()
        if tip == self.tip:
            return False
        self.tip = tip
        for screen in self.screen_stack:
            screen.post_message(RefMoved(tip))
        return True


def make_app(gm: Gitmem, *, clock: Callable[[], datetime] | None = None,
             poll_interval: float = DEFAULT_POLL_S, editor: str | None = None,
             follow: bool = True) -> GitmemApp:
    """Build the app for ``gm`` (the CLI and the tests both start here); see :class:`GitmemApp`."""
    return GitmemApp(gm, clock=clock, poll_interval=poll_interval, editor=editor, follow=follow)
