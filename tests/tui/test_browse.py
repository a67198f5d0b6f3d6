"""Pilot runs of the browse screen and its actions against a real repository."""

from __future__ import annotations

import pytest
from rich.text import Text

from gitmem.api import Gitmem
from gitmem.errors import UnknownMemory
from tests.conftest import commit_file
from tests.tui.pilot import cell, error_notes, run, select, table_ids, until
from tui import make_app
from tui.messages import MemoryChanged
from tui.screens.confidence import ConfidenceScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.refute import RefuteScreen
from tui.widgets.memory_table import MemoryTable


def test_the_table_lists_every_memory_with_status_weight_and_anchor(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        assert table_ids(app) == sorted(ids.values())
        table = app.screen.query_one(MemoryTable)
        assert table.column_names == ("id", "status", "content", "weight", "type", "anchor")
        port = [c.plain for c in table.get_row(ids["port"])]
        assert port == [ids["port"], "fresh", "The service listens on port 8080", "0.80", "fact",
                        "src/app.py#L3-L5"]

    run(app, scenario, size=(220, 40))


def test_content_is_shown_literally_never_as_markup(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        content = cell(app, ids["wal"], "content")
        assert isinstance(content, Text)
        assert content.plain == "Queue uses [bold]WAL[/bold] mode"
        assert content.spans == []
        await select(pilot, ids["wal"])
        summary = app.screen.query_one("#summary").render()
        assert "Queue uses [bold]WAL[/bold] mode" in str(summary)

    run(app, scenario)


def test_filter_by_status_and_search_narrow_the_table(tui_repo, clock):
    _, gm, ids = tui_repo
    gm.refute(ids["pref"], "we squash anyway")
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        app.screen.query_one("#status-filter").value = "refuted"
        await pilot.pause()
        assert table_ids(app) == [ids["pref"]]
        app.screen.query_one("#status-filter").clear()
        await pilot.pause()
        assert len(table_ids(app)) == 4
        await pilot.press("slash", *"PORT 80")
        await pilot.pause()
        assert table_ids(app) == [ids["port"]]
        assert str(app.screen.query_one("#summary-line").render()) == "1 of 4 memories"

    run(app, scenario)


def test_search_matches_the_anchor_so_a_file_finds_its_memories(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("slash", *"src/store.py")
        await pilot.pause()
        assert table_ids(app) == [ids["wal"]]
        app.screen.query_one("#search").value = "app.py#L3"
        await pilot.pause()
        assert table_ids(app) == [ids["port"]]

    run(app, scenario)


def test_refute_through_the_modal_records_the_reason(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)
    changes = []

    def hook(message):
        if isinstance(message, MemoryChanged):
            changes.append((message.memory_id, message.action))

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("r")
        assert isinstance(app.screen, RefuteScreen)
        await pilot.press(*"moved to 9090", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, RefuteScreen)
        stored = gm.get(ids["port"])
        assert stored.refutation.reason == "moved to 9090"
        assert stored.refutation.by == "Test User <test@example.com>"
        assert cell(app, ids["port"], "status").plain == "refuted"

    run(app, scenario, hook)
    assert set(changes) == {(ids["port"], "refute")}  # seen by the screen, then the app


def test_refute_cancelled_or_empty_writes_nothing(tui_repo, clock):
    repo, gm, ids = tui_repo
    tip = gm.store.tip()
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("r", "enter")
        assert isinstance(app.screen, RefuteScreen)  # an empty reason keeps the modal open
        assert str(app.screen.query_one("#error").render()) == "a refutation needs a reason"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RefuteScreen)

    run(app, scenario)
    assert gm.store.tip() == tip
    assert gm.get(ids["port"]).refutation is None


def test_forget_asks_first_and_removes_on_yes(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["pref"])
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert ids["pref"] in table_ids(app)
        await pilot.press("d", "y")
        await pilot.pause()
        assert ids["pref"] not in table_ids(app)
        assert len(table_ids(app)) == 3

    run(app, scenario)
    with pytest.raises(UnknownMemory):
        gm.get(ids["pref"])


def test_confidence_edit_rejects_out_of_range_and_stores_a_valid_value(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("c")
        assert isinstance(app.screen, ConfidenceScreen)
        assert app.screen.query_one("#value").value == "0.8"
        await pilot.press("ctrl+a", "ctrl+k", *"1.5", "enter")
        assert isinstance(app.screen, ConfidenceScreen)
        assert str(app.screen.query_one("#error").render()) == "not a number between 0 and 1: '1.5'"
        await pilot.press("backspace", "backspace", "backspace", *"0.25", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ConfidenceScreen)
        assert cell(app, ids["port"], "weight").plain == "0.25"

    run(app, scenario)
    assert gm.get(ids["port"]).confidence == 0.25


def test_verify_finds_the_working_tree_edit_and_marks_it_stale(tui_repo, clock):
    repo, gm, ids = tui_repo
    text = (repo / "src/app.py").read_text().replace("line 4\n", "line four\n")
    (repo / "src/app.py").write_text(text)
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("v")
        await pilot.pause()
        assert cell(app, ids["port"], "status").plain == "stale"
        notes = [n.message for n in app._notifications]
        assert notes[-1] == f"{ids['port']}: stale (working tree: line 4 modified)"

    run(app, scenario)
    # Uncommitted: stale in this clone's overlay, never on the shared record.
    assert gm.local_reasons() == {ids["port"]: "working tree: line 4 modified"}
    assert gm.get(ids["port"]).status.value == "fresh"


def test_detail_pane_shows_the_anchored_diff_and_history(tui_repo, clock):
    repo, gm, ids = tui_repo
    text = (repo / "src/app.py").read_text().replace("line 4\n", "line four\n")
    (repo / "src/app.py").write_text(text)
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        diff = str(app.screen.query_one("#diff").render()).splitlines()
        assert "-line 4" in diff and "+line four" in diff
        history = str(app.screen.query_one("#history").render()).splitlines()
        assert len(history) == 2
        assert history[1].endswith(f"learn {ids['port']}: The service listens on port 8080")

    run(app, scenario)


def test_detail_pane_says_how_a_moved_anchor_travelled(tui_repo, clock):
    repo, gm, ids = tui_repo
    # src/store.py L2-L4 go unchanged to src/wal.py: verify follows them there
    lines = (repo / "src/store.py").read_text().splitlines(keepends=True)
    commit_file(repo, "src/wal.py", "# write-ahead log\n" + "".join(lines[1:4]), "wal")
    commit_file(repo, "src/store.py", "".join(lines[:1] + lines[4:]), "move wal out")
    gm.verify()
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["wal"])
        history = str(app.screen.query_one("#history").render()).splitlines()
        start = history.index("How the anchor travelled")
        assert history[start + 1].endswith("learned: src/store.py#L2-L4")
        assert " moved: src/store.py#L2-L4 -> src/wal.py#L2-L4 (moved to src/wal.py#L2-L4 in " in (
            history[start + 2])

    run(app, scenario)


def test_another_process_writing_refreshes_the_table(tui_repo, clock):
    repo, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=0.05)

    async def scenario(pilot):
        other = Gitmem.open(repo)
        new = other.learn("Retries back off exponentially", now=clock()).memory.id
        other.forget(ids["axiom"])
        expected = sorted([ids["port"], ids["wal"], ids["pref"], new])
        await until(pilot, lambda: table_ids(app) == expected, what="the other process's writes")

    run(app, scenario)


def test_an_error_from_the_store_is_notified_not_raised(tui_repo, clock):
    repo, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await select(pilot, ids["pref"])
        Gitmem.open(repo).forget(ids["pref"])  # the table has not noticed yet
        await pilot.press("c", "ctrl+a", "ctrl+k", "0", "enter")
        await pilot.pause()
        assert error_notes(app) == [
            f"no memory with id '{ids['pref']}' — run `tur list` to see the ids"
        ]
        assert app.is_running

    run(app, scenario)


def test_search_finds_a_memory_by_the_id_it_had_before_import(tui_repo, clock, tmp_path):
    _, gm, ids = tui_repo
    record = tmp_path / "old.yaml"
    record.write_text('id: "fact-0badc0de"\ntype: fact\ncontent: Sessions expire after an hour\n')
    imported = gm.import_legacy([record]).imported[0]
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await pilot.press("slash", *"0badc0de")
        await pilot.pause()
        assert table_ids(app) == [imported]

    run(app, scenario)


def test_detail_pane_names_the_agents_a_bound_memory_is_for(tui_repo, clock):
    repo, gm, ids = tui_repo
    gm.edit(ids["port"], visibility=["claude", "codex"])
    app = make_app(gm, clock=clock)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        summary = str(app.screen.query_one("#summary").render()).splitlines()
        assert any(line.startswith("for") and line.endswith("claude, codex") for line in summary)

    run(app, scenario)
