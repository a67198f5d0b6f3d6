"""The browse table's layout: the content is the wide column, optional columns go on narrow terminals."""

from __future__ import annotations

import asyncio

from tui import make_app
from tui.widgets.memory_table import MemoryTable, plan_columns


def widths(app) -> dict[str, int]:
    table = app.screen.query_one(MemoryTable)
    return {name: table.columns[name].width for name in table.column_names}


def test_the_plan_drops_weight_then_type_then_anchor_as_the_table_narrows():
    wide = plan_columns(220, id_width=13, anchor_width=16)
    assert [name for name, _ in wide] == ["id", "status", "content", "weight", "type", "anchor"]
    assert [name for name, _ in plan_columns(120, 19, 28)] == ["id", "status", "content", "anchor"]
    assert [name for name, _ in plan_columns(80, 19, 16)] == ["id", "status", "content"]
    for width in (80, 106, 120, 160, 220):
        plan = dict(plan_columns(width, 19, 28))
        assert plan["content"] >= 0.4 * (width - 2)


def test_at_80_columns_the_content_is_readable_and_the_detail_goes_under_the_table(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def main():
        async with app.run_test(size=(80, 30)) as pilot:
            await pilot.pause()
            assert app.screen.has_class("narrow")
            table = app.screen.query_one(MemoryTable)
            assert table.column_names == ("id", "status", "content")
            assert widths(app)["content"] >= 40
            assert table.size.width == 80
            assert table.get_cell(ids["port"], "content").plain == "The service listens on port 8080"

    asyncio.run(main())


def test_from_120_columns_the_anchor_shows_and_at_160_the_content_is_not_cut_at_50(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            table = app.screen.query_one(MemoryTable)
            assert table.size.width == 120  # the detail goes under the table
            assert table.column_names[:3] == ("id", "status", "content")
            assert "anchor" in table.column_names
            await pilot.resize_terminal(160, 45)
            await pilot.pause()
            assert table.column_names == ("id", "status", "content", "weight", "type", "anchor")
            assert widths(app)["content"] >= 70
            await pilot.resize_terminal(80, 30)
            await pilot.pause()
            assert table.column_names == ("id", "status", "content")
            await pilot.resize_terminal(240, 40)
            await pilot.pause()
            assert not app.screen.has_class("narrow")  # wide enough for the detail beside it
            assert table.column_names == ("id", "status", "content", "weight", "type", "anchor")
            assert widths(app)["content"] >= 70
            assert table.row_count == 4

    asyncio.run(main())


def test_thousands_of_memories_show_a_first_screen_then_every_row(repo, clock):
    from gitmem.api import Gitmem
    from tests.conftest import add_filler_memories
    from tests.tui.pilot import until

    ids = add_filler_memories(repo, 1200)
    app = make_app(Gitmem.open(repo), clock=clock, poll_interval=3600, follow=False)

    async def main():
        async with app.run_test(size=(160, 40)) as pilot:
            table = app.screen.query_one(MemoryTable)
            await until(pilot, lambda: table.row_count > 0, what="a first screen")
            await until(pilot, lambda: table.complete, what="every row")
            assert [key.value for key in table.rows] == ids
            app.screen.query_one("#search").value = ids[-1]  # the last row is found too
            await pilot.pause()
            assert [key.value for key in table.rows] == [ids[-1]]
            assert table.selected_id == ids[-1]

    asyncio.run(main())
