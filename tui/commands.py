"""The command palette's gitmem commands (``ctrl+p``): every browse-screen action by name."""

from __future__ import annotations

from functools import partial

from textual.command import Hit, Hits, Provider

from tui.actions import BROWSE_ACTIONS, Action

__all__ = ["GitmemCommands"]


class GitmemCommands(Provider):
    """Lists :data:`tui.actions.BROWSE_ACTIONS`; choosing one runs it on the browse screen.

    Opened from another screen (the wake preview), the palette does not list them: the
    browse screen declares this provider in its ``COMMANDS``.
    """

    async def discover(self) -> Hits:
        """Every action, in the help screen's order (shown before anything is typed).

        Scored hits rather than :class:`~textual.command.DiscoveryHit`: those all score 0 and
        list in the order providers answer, which put Textual's own commands (theme, quit,
        screenshot) ahead of gitmem's. Descending scores keep the help screen's order.
        """
        for rank, action in enumerate(BROWSE_ACTIONS):
            title = self._title(action)
            yield Hit(1.0 - rank / 1000, title, partial(self._run, action), text=title, help=action.help)

    async def search(self, query: str) -> Hits:
        """The actions whose title fuzzily matches ``query``, best first."""
        matcher = self.matcher(query)
        for action in BROWSE_ACTIONS:
            title = self._title(action)
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), text=title,
                          help=action.help)

    @staticmethod
    def _title(action: Action) -> str:
        return f"{action.title} ({action.display})"

    async def _run(self, action: Action) -> None:
        await self.screen.run_action(action.action)
