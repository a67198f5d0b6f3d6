"""Pilot runs of "what the agent saw": the injection log by session, and one injection's record."""

from __future__ import annotations

from datetime import timedelta

from gitmem.api import Via
from tests.tui.conftest import LEARNED
from tests.tui.pilot import run
from tui import make_app
from tui.screens.injections import NO_SESSION, InjectionsScreen


async def loaded(pilot, screen, loads: int = 1) -> None:
    """Wait until the screen has shown ``loads`` reads of the log (a thread reads it)."""
    while screen.loads < loads:
        await pilot.pause()


def column(table, n: int) -> list[str]:
    return [table.get_row_at(i)[n].plain for i in range(table.row_count)]


def test_i_lists_the_sessions_and_shows_what_each_injection_gave_and_left_out(tui_repo, clock):
    _, gm, ids = tui_repo
    wake, _ = gm.wake(token_budget=60, now=LEARNED)
    gm.injections.wake(wake, Via("hook:session-start", "claude", "s-old"), at=LEARNED)
    gm.injections.wake(wake, Via("cli:wake"), at=LEARNED + timedelta(minutes=1))
    gm.injections.wake(wake, Via("hook:session-start", "claude", "s-new"), at=LEARNED + timedelta(minutes=2))
    recall, _ = gm.recall("which port does the service listen on")
    gm.injections.recall(recall, Via("hook:pre-turn", "claude", "s-new"), "text",
                         at=LEARNED + timedelta(minutes=5))
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, InjectionsScreen)
        await loaded(pilot, screen)
        sessions = screen.query_one("#sessions")
        assert column(sessions, 0) == ["s-new", NO_SESSION, "s-old"]  # the newest first
        assert column(sessions, 2) == ["2", "1", "1"]
        injections = screen.query_one("#injections")
        assert column(injections, 1) == ["hook:session-start", "hook:pre-turn"]
        record = str(screen.query_one("#record").render())
        assert "hook:pre-turn" in record and f"+ {ids['port']}" in record  # the newest one
        await pilot.press("tab", "up")  # the session's first injection: its wake
        await pilot.pause()
        record = str(screen.query_one("#record").render())
        assert "session s-new" in record and "over_budget" in record
        for memory_id in wake.shown:
            assert f"+ {memory_id}" in record
        gm.injections.wake(wake, Via("mcp:wake", "", "s-later"), at=LEARNED + timedelta(hours=1))
        await pilot.press("r")
        await loaded(pilot, screen, 2)
        assert column(sessions, 0)[0] == "s-later"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, InjectionsScreen)

    run(app, scenario)


def test_what_the_agent_saw_says_when_nothing_was_logged(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("i")
        screen = app.screen
        await loaded(pilot, screen)
        assert "no injection logged yet" in str(screen.query_one("#summary").render())
        assert screen.query_one("#sessions").row_count == 0

    run(app, scenario)
