"""SVG snapshots (pytest-textual-snapshot) of the browse screen, its modals, help and the wake preview.

Each screen is shot at 80 and 160 columns (the browse table lays out differently on each).

Determinism (see ``conftest.py``): memories learned at ``LEARNED`` and shown with a clock
fixed there, code commits with fixed dates, a fixed terminal size; the detail pane's
history section (memory-ref commits carry the real time) is hidden before the shot.
Update with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after checking the
report (``snapshot_report.html``).
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from tests.tui.pilot import compiled
from tui import make_app
from tui.widgets.memory_table import MemoryTable

NARROW = (80, 30)
WIDE = (160, 40)
BOTH = pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80", "160"])


def prepare(memory_id, *keys):
    """Hide the history, select ``memory_id``, press ``keys``, then hold every cursor still.

    The keys are pressed here rather than by ``snap_compare`` so that the text cursors can be
    held still after them: an input's cursor blinks every half second, so on a loaded machine
    the shot would otherwise catch it shown or hidden depending on how long the shot took.
    """

    async def run_before(pilot):
        screen = pilot.app.screen
        screen.query_one("#history").display = False
        table = screen.query_one(MemoryTable)
        table.move_cursor(row=table.get_row_index(memory_id))
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await steady(pilot)

    return run_before


async def steady(pilot):
    """Stop the blinking of every text cursor on the screen: each stays shown (as when typing)."""
    await pilot.pause()
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


def modified(repo):
    path = repo / "src/app.py"
    path.write_text(path.read_text().replace("line 4\n", "line four\n"))


@BOTH
def test_browse_screen_with_the_detail_of_a_changed_anchor(tui_repo, clock, snap_compare, size):
    repo, gm, ids = tui_repo
    modified(repo)
    app = make_app(gm, clock=clock, poll_interval=3600)
    assert snap_compare(app, terminal_size=size, run_before=prepare(ids["port"]))


@BOTH
def test_refute_modal(tui_repo, clock, snap_compare, size):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    assert snap_compare(app, terminal_size=size,
                        run_before=prepare(ids["wal"], "r", *"checked: it is DELETE mode"))


@BOTH
def test_wake_preview_at_120_tokens(tui_repo, clock, snap_compare, size):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def run_before(pilot):
        await prepare(ids["port"])(pilot)
        await pilot.press("w")
        await compiled(pilot, pilot.app.screen, 4096)
        await pilot.press("ctrl+a", "ctrl+k", *"120")
        await compiled(pilot, pilot.app.screen, 120)
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@BOTH
def test_help_screen(tui_repo, clock, snap_compare, size):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    assert snap_compare(app, terminal_size=size, run_before=prepare(ids["port"], "question_mark"))


@BOTH
def test_learn_modal(tui_repo, clock, snap_compare, size):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    keys = ["n", *"Retries back off exponentially", "tab", "tab", *"src/app.py:6-8"]
    assert snap_compare(app, terminal_size=size, run_before=prepare(ids["port"], *keys))


@BOTH
def test_edit_modal(tui_repo, clock, snap_compare, size):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    assert snap_compare(app, terminal_size=size, run_before=prepare(ids["port"], "e"))
