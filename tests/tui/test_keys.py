"""Pilot runs of the keys people type first: j/k/g/G, Enter and Esc in the search box, confirm, ?."""

from __future__ import annotations

from textual.widgets import Input

from tests.conftest import commit_file
from tests.tui.pilot import error_notes, notes, run, select, table_ids
from tui import make_app
from tui.screens.help import HelpScreen, keys_table
from tui.widgets.memory_table import MemoryTable


def test_j_k_g_and_shift_g_move_the_table_cursor(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        table = app.screen.query_one(MemoryTable)
        ids = table_ids(app)
        assert table.selected_id == ids[0]
        await pilot.press("j")
        await pilot.pause()
        assert table.selected_id == ids[1]
        await pilot.press("j", "j")
        await pilot.pause()
        assert table.selected_id == ids[3]
        await pilot.press("k")
        await pilot.pause()
        assert table.selected_id == ids[2]
        await pilot.press("G")
        await pilot.pause()
        assert table.selected_id == ids[-1]
        await pilot.press("g")
        await pilot.pause()
        assert table.selected_id == ids[0]

    run(app, scenario)


def test_enter_in_the_search_keeps_the_filter_and_gives_the_keys_back_to_the_table(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        search = app.screen.query_one("#search", Input)
        await pilot.press("slash", *"8080")
        await pilot.pause()
        assert app.focused is search and table_ids(app) == [ids["port"]]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.focused, MemoryTable)
        assert table_ids(app) == [ids["port"]]  # the filter stays
        await pilot.press("v")  # an action key acts: it does not join the query
        await pilot.pause()
        assert search.value == "8080"
        assert any(n.startswith(f"{ids['port']}: ") for n in notes(app))
        await pilot.press("slash", "z", "z")
        await pilot.pause()
        assert search.value == "zz" and table_ids(app) == []  # focus selects the old query
        await pilot.press("escape")
        await pilot.pause()
        assert search.value == "" and isinstance(app.focused, MemoryTable)
        assert len(table_ids(app)) == 4

    run(app, scenario)


def test_t_confirms_a_stale_memory_that_is_still_true_where_its_lines_went(tui_repo, clock):
    repo, gm, ids = tui_repo
    # L3-L5 move up two lines and gain a line inside: git's diff maps them to L1-L4.
    body = ["line 3\n", "line 4\n", "# a comment\n", "line 5\n"] + [f"line {i}\n" for i in range(6, 21)]
    commit_file(repo, "src/app.py", "".join(body), "shorter, with a comment")
    gm.verify([ids["port"]])
    assert gm.get(ids["port"]).status.value == "stale"
    app = make_app(gm, clock=clock, poll_interval=3600, follow=False)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("t")
        await pilot.pause()
        assert error_notes(app) == []
        assert f"{ids['port']}: fresh, confirmed at HEAD (src/app.py#L1-L4)" in notes(app)
        memory = gm.get(ids["port"])
        assert memory.status.value == "fresh" and memory.provenance.context_ref == "src/app.py#L1-L4"

    run(app, scenario)


def test_t_refuses_a_stale_memory_whose_lines_are_gone_and_names_the_file_form(tui_repo, clock):
    repo, gm, ids = tui_repo
    commit_file(repo, "src/app.py", "".join(f"line {i}\n" for i in range(6, 21)), "drop the top")
    gm.verify([ids["port"]])
    app = make_app(gm, clock=clock, poll_interval=3600, follow=False)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("t")
        await pilot.pause()
        assert any(f"tur edit {ids['port']} --file path#Lx-Ly" in n for n in error_notes(app))
        memory = gm.get(ids["port"])
        assert memory.status.value == "stale" and memory.provenance.context_ref == "src/app.py#L3-L5"

    run(app, scenario)


def test_question_mark_lists_the_movement_keys_and_confirm(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    keys = [str(row) for row in keys_table().columns[0].cells]
    for key in ("j / ↓", "k / ↑", "g / Home", "G / End", "Enter", "Esc", "t"):
        assert key in keys

    async def scenario(pilot):
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)

    run(app, scenario)
