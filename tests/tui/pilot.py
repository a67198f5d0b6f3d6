"""Helpers shared by the Pilot tests: run a scenario, move the cursor, read the table and notes."""

from __future__ import annotations

import asyncio
import time

from rich.text import Text

from tui.widgets.memory_table import MemoryTable

SIZE = (140, 40)


def run(app, scenario, message_hook=None, size=SIZE):
    """Run ``scenario(pilot)`` inside ``app.run_test`` (no async test plugin needed)."""

    async def main():
        async with app.run_test(size=size, message_hook=message_hook) as pilot:
            await pilot.pause()
            await scenario(pilot)

    asyncio.run(main())


def table_ids(app) -> list[str]:
    return [key.value for key in app.screen.query_one(MemoryTable).rows]


async def select(pilot, memory_id):
    """Move the table cursor onto ``memory_id``."""
    table = pilot.app.screen.query_one(MemoryTable)
    table.move_cursor(row=table.get_row_index(memory_id))
    await pilot.pause()
    assert table.selected_id == memory_id


def cell(app, memory_id: str, column: str) -> Text:
    """The table's cell of ``memory_id`` in ``column`` (by name: the shown columns vary)."""
    return app.screen.query_one(MemoryTable).get_cell(memory_id, column)


def notes(app, severity: str | None = None) -> list[str]:
    """The notifications shown so far (of one ``severity`` when given)."""
    return [n.message for n in app._notifications if severity is None or n.severity == severity]


def error_notes(app) -> list[str]:
    return notes(app, "error")


async def compiled(pilot, screen, budget, timeout=60.0):
    """Wait until the preview shows the wake compiled at ``budget`` (it compiles in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # the deadline only bounds a failure
        await pilot.pause()
        if screen.shown_budget == budget:
            return screen.result
    raise AssertionError(f"no wake compiled at {budget}: field {screen.query_one('#budget').value!r}")


async def until(pilot, predicate, timeout=60.0, what="condition"):
    """Pause until ``predicate()`` holds (the follower works in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await pilot.pause()
    raise AssertionError(f"timed out waiting for {what}")


async def palette_settled(pilot, timeout=60.0):
    """Wait until the open command palette has gathered every command for what is typed in it."""
    from textual.command import CommandPalette

    palette = pilot.app.screen
    assert isinstance(palette, CommandPalette), palette
    group = CommandPalette._GATHER_COMMANDS_GROUP
    await pilot.pause()  # the last key typed has started its search

    def settled():
        return palette.has_class("-ready") and not any(
            w.group == group and not w.is_finished for w in pilot.app.workers)

    await until(pilot, settled, timeout, "the palette's commands")
