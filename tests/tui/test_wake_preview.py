"""Pilot runs of the wake preview: tokens within the budget, recompiled when the budget changes."""

from __future__ import annotations

import asyncio

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
        assert screen.result.budget == 4096
        full = screen.result
        assert full.tokens <= 4096
        assert [outcome for _, outcome in assembly(screen)] == ["included"] * 4
        await pilot.press("ctrl+a", "ctrl+k", *"120")
        await pilot.pause()
        small = screen.result
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
        await pilot.press("ctrl+a", "ctrl+k", "-", "x")
        await pilot.pause()
        assert screen.result.budget == 4096  # unchanged; no crash
        await pilot.press("0")
        await pilot.pause()
        assert screen.result.budget is None  # 0 is unbounded

    run(app, scenario)
