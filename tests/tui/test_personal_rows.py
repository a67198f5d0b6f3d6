"""Personal memories in the TUI (docs/personal.md): listed marked, and changed in their own store."""

from __future__ import annotations

from tests.tui.pilot import notes, run, select, table_ids
from tui import make_app
from tui.screens.edit import EditScreen


def test_a_personal_row_is_listed_and_its_edit_goes_to_the_personal_store(tui_repo, clock):
    _, gm, ids = tui_repo
    mine = gm.make_personal().learn("I prefer pytest fixtures over unittest setUp",
                                    type="preference").memory.id
    project_tip = gm.tip()
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        assert mine in table_ids(app) and ids["port"] in table_ids(app)
        await select(pilot, mine)
        await pilot.press("e")
        screen = app.screen
        assert isinstance(screen, EditScreen)
        screen.query_one("#content").value = "I prefer pytest fixtures, always"
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, EditScreen)
        assert f"edited {mine}" in notes(app), notes(app)

    run(app, scenario)
    personal = gm.reopen().personal
    assert personal is not None
    assert personal.get(mine).content == "I prefer pytest fixtures, always"
    assert gm.tip() == project_tip  # nothing of it reached the project's ref
