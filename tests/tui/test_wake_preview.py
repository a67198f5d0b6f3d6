"""Pilot runs of the wake preview: tokens within the budget, recompiled when the budget changes."""

from __future__ import annotations

import asyncio

from textual import events

from tests.conftest import add_filler_memories
from tests.tui.pilot import compiled
from tui import make_app
from tui.screens.wake_preview import WakePreviewScreen


def run(app, scenario):
    async def main():
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())


def assembly(screen) -> list[tuple[str, str]]:
    table = screen.query_one("#assembly")
    return [(table.get_row_at(i)[1].plain, table.get_row_at(i)[4].plain)
            for i in range(table.row_count)]


def test_wake_preview_fits_the_budget_and_recompiles_when_it_changes(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WakePreviewScreen)
        await compiled(pilot, screen, 4096)
        assert screen.result.budget == 4096
        full = screen.result
        assert full.tokens <= 4096
        assert [outcome for _, outcome in assembly(screen)] == ["included"] * 4
        await pilot.press("ctrl+a", "ctrl+k", *"120")
        small = await compiled(pilot, screen, 120)
        assert small.budget == 120
        assert small.tokens <= 120
        assert small.text != full.text
        usage = str(screen.query_one("#usage").render())
        assert usage.startswith(f"wake: {small.tokens}/120 tokens; excluded: ")
        assert any(outcome == "excluded: over_budget" for _, outcome in assembly(screen))
        assert ids["axiom"] in small.text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, WakePreviewScreen)

    run(app, scenario)


def test_wake_preview_ignores_a_budget_that_is_not_a_number(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        await compiled(pilot, screen, 4096)
        field = screen.query_one("#budget")
        await pilot.press("ctrl+a", "ctrl+k")
        await pilot.pause()
        assert str(screen.query_one("#usage").render()) == "type a token budget (0 = unbounded)"
        compiles = screen.compiles
        await pilot.press("-", "x", "+", "_", "\u0663")  # the field takes none of them
        await pilot.pause()  # every key handled
        assert field.value == ""
        assert screen.budget == 4096  # no budget taken from them, so no compile is coming
        assert screen.result.budget == 4096 and screen.compiles == compiles  # unchanged; no crash
        await pilot.press("6", "\u0663", "0")  # an Arabic-Indic three is not a digit here
        await compiled(pilot, screen, 60)
        assert field.value == "60"
        await pilot.press("ctrl+a", "ctrl+k", "0")
        await compiled(pilot, screen, 0)
        assert screen.result.budget is None  # 0 is unbounded

    run(app, scenario)


def test_typing_a_budget_fast_keeps_every_digit_and_compiles_once(repo, clock):
    """Keys arrive faster than a wake of 3,000 memories compiles: the field is never rewritten."""
    from gitmem.api import Gitmem

    add_filler_memories(repo, 3000)
    gm = Gitmem.open(repo)
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("w")
        screen = app.screen
        await compiled(pilot, screen, 4096)
        field = screen.query_one("#budget")
        await pilot.press("ctrl+a", "ctrl+k")
        before = screen.compiles
        for key in "20481024":  # no pause between keys
            field.post_message(events.Key(key, key))
        result = await compiled(pilot, screen, 20481024)
        assert field.value == "20481024"
        assert result.budget == 20481024
        assert screen.compiles - before == 1  # one compile for the burst, for the final number
        await pilot.press("ctrl+a", "ctrl+k", *"512")
        result = await compiled(pilot, screen, 512)
        assert field.value == "512"
        assert result.budget == 512 and result.tokens <= 512
        assert str(screen.query_one("#usage").render()).startswith(f"wake: {result.tokens}/512 tokens")

    run(app, scenario)
