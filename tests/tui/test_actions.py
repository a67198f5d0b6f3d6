"""Pilot runs of the daily-use keys: learn, edit, link, undo a refutation, $EDITOR, help, palette."""

from __future__ import annotations

import io
import stat

from rich.console import Console
from textual.widgets import Input

from tests.tui.pilot import error_notes, notes, palette_settled, run, select, table_ids, until
from tui import make_app
from tui.screens.edit import EditScreen
from tui.screens.help import HelpScreen
from tui.screens.learn import LearnScreen, anchor_arg, anchor_text
from tui.screens.link import LinkScreen
from tui.widgets.memory_table import MemoryTable


def test_anchor_fields_take_path_colon_range_and_show_stored_anchors_that_way():
    assert anchor_arg("src/app.py:3-5") == "src/app.py#L3-L5"
    assert anchor_arg(" src/app.py:7 ") == "src/app.py#L7-L7"
    assert anchor_arg("src/app.py") == "src/app.py"
    assert anchor_arg("src/app.py#L3-L5") == "src/app.py#L3-L5"
    assert anchor_arg("  ") is None
    assert anchor_text("src/app.py#L3-L5") == "src/app.py:3-5"
    assert anchor_text("src/app.py") == "src/app.py"
    assert anchor_text(None) == ""


def test_learn_stores_the_memory_with_type_and_anchor_and_selects_it(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("n")
        assert isinstance(app.screen, LearnScreen)
        await pilot.press("enter")  # no content: the dialog stays open and says why
        assert isinstance(app.screen, LearnScreen)
        assert str(app.screen.query_one("#error").render()) == "a memory needs some content"
        await pilot.press(*"Retries back off exponentially")
        app.screen.query_one("#type").value = "insight"
        app.screen.query_one("#anchor").value = "src/app.py:6-8"
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, LearnScreen)
        assert len(table_ids(app)) == 5
        new = app.screen.query_one(MemoryTable).selected_id
        assert new is not None and new.startswith("insight-")
        memory = gm.get(new)
        assert memory.content == "Retries back off exponentially"
        assert memory.provenance.context_ref == "src/app.py#L6-L8"
        assert error_notes(app) == []
        assert f"learned {new}" in notes(app)
        await pilot.press("n", *"Retries back off exponentially", "enter")  # the same statement
        await pilot.pause()
        assert f"{new} was already known; re-verified it" in notes(app)
        assert len(table_ids(app)) == 5

    run(app, scenario)


def test_a_bad_anchor_is_a_notification_and_stores_nothing(tui_repo, clock):
    _, gm, _ = tui_repo
    tip = gm.tip()
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("n", *"About a file that is not there")
        app.screen.query_one("#anchor").value = "src/nope.py:1-2"
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, LearnScreen)
        assert len(error_notes(app)) == 1
        assert "src/nope.py" in error_notes(app)[0]
        assert len(table_ids(app)) == 4

    run(app, scenario)
    assert gm.tip() == tip


def test_edit_changes_only_what_was_changed_and_keeps_the_id(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("e")
        screen = app.screen
        assert isinstance(screen, EditScreen)
        assert screen.query_one("#content").value == "The service listens on port 8080"
        assert screen.query_one("#anchor").value == "src/app.py:3-5"
        assert screen.query_one("#type").value == "fact"
        screen.query_one("#content").value = "The service listens on port 9090"
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, EditScreen)
        assert f"edited {ids['port']}" in notes(app)
        await pilot.press("e", "enter")  # nothing changed: nothing written
        await pilot.pause()
        assert "nothing changed" in notes(app)
        await pilot.press("e")
        app.screen.query_one("#anchor").value = ""  # edit cannot remove an anchor: it says so
        await pilot.press("enter")
        await pilot.pause()
        assert any(n.startswith("the anchor stays src/app.py#L3-L5") for n in notes(app)), notes(app)

    tip_before = gm.tip()
    run(app, scenario)
    memory = gm.get(ids["port"])
    assert memory.content == "The service listens on port 9090"
    assert memory.provenance.context_ref == "src/app.py#L3-L5"
    assert memory.type.value == "fact"
    assert len(gm.history(ids["port"])) == 2  # learn, one edit
    assert gm.tip() != tip_before


def test_link_relates_the_selected_memory_and_an_unknown_target_is_a_notification(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await select(pilot, ids["wal"])
        await pilot.press("l")
        assert isinstance(app.screen, LinkScreen)
        app.screen.query_one("#kind").value = "refines"
        await pilot.press(*ids["axiom"][:10], "enter")
        await pilot.pause()
        assert not isinstance(app.screen, LinkScreen)
        await pilot.press("l", *"fact-ffffffff", "enter")
        await pilot.pause()
        assert len(error_notes(app)) == 1

    run(app, scenario)
    relations = [(r.type.value, r.target) for r in gm.get(ids["wal"]).relations]
    assert relations == [("refines", ids["axiom"])]


def test_a_marked_memory_is_the_target_the_next_link_offers(tui_repo, clock):
    _, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await select(pilot, ids["axiom"])
        await pilot.press("m")
        await select(pilot, ids["wal"])
        await pilot.press("l")
        assert isinstance(app.screen, LinkScreen)
        assert app.screen.query_one("#target", Input).value == ids["axiom"]
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, LinkScreen)
        await pilot.press("l")  # the link cleared the mark
        assert app.screen.query_one("#target", Input).value == ""
        await pilot.press("escape")

    run(app, scenario)
    relations = [(r.type.value, r.target) for r in gm.get(ids["wal"]).relations]
    assert relations == [("supports", ids["axiom"])]


def test_undo_refutation_brings_the_status_back_and_refuses_a_memory_not_refuted(tui_repo, clock):
    _, gm, ids = tui_repo
    gm.refute(ids["port"], "moved to 9090")
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("u")
        await pilot.pause()
        assert app.screen.query_one(MemoryTable).get_cell(ids["port"], "status").plain == "fresh"
        assert error_notes(app) == []
        await pilot.press("u")  # not refuted any more: the facade says so, as a notification
        await pilot.pause()
        assert len(error_notes(app)) == 1

    run(app, scenario)
    assert gm.get(ids["port"]).refutation is None


def recording_editor(tmp_path, name):
    """An executable called ``name`` that writes its arguments, one a line, to ``args.txt``."""
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path}/args.txt"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_open_runs_the_editor_on_the_anchored_lines(tui_repo, clock, tmp_path):
    repo, gm, ids = tui_repo
    editor = recording_editor(tmp_path, "vi")
    app = make_app(gm, clock=clock, poll_interval=3600, editor=f"{editor} -R")

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await pilot.press("o")
        await pilot.pause()
        assert error_notes(app) == []
        await select(pilot, ids["axiom"])  # no anchor: says so, runs nothing
        (tmp_path / "args.txt").unlink()
        await pilot.press("o")
        await pilot.pause()
        assert f"{ids['axiom']} has no anchor to open" in notes(app)
        assert not (tmp_path / "args.txt").exists()

    run(app, scenario)


def test_open_passes_plus_line_and_reports_a_missing_editor(tui_repo, clock, tmp_path, monkeypatch):
    repo, gm, ids = tui_repo
    editor = recording_editor(tmp_path, "nano")
    app = make_app(gm, clock=clock, poll_interval=3600, editor=str(editor))

    async def scenario(pilot):
        await select(pilot, ids["wal"])
        await pilot.press("o")
        await pilot.pause()

    run(app, scenario)
    assert (tmp_path / "args.txt").read_text().splitlines() == ["+2", str(repo / "src/store.py")]

    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def unset(pilot):
        await select(pilot, ids["wal"])
        await pilot.press("o")
        await pilot.pause()
        assert any("set $EDITOR" in n for n in notes(app, "warning"))

    run(app, unset)


def test_question_mark_opens_the_help_screen_listing_every_key(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=100, file=io.StringIO(), record=True)
        console.print(app.screen.query_one("#help-keys Static").visual._renderable)
        text = console.export_text()
        for words in ("verify", "undo refutation", "learn", "edit", "link", "open in $EDITOR",
                      "sync", "ctrl+p"):
            assert words in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

    run(app, scenario)


def test_the_command_palette_lists_gitmem_actions_and_runs_the_chosen_one(tui_repo, clock):
    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"learn")
        await palette_settled(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LearnScreen)

    run(app, scenario)


def test_the_palette_opens_with_gitmem_actions_first_in_the_help_screens_order(tui_repo, clock):
    from textual.command import CommandList

    from tui.actions import BROWSE_ACTIONS

    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await pilot.press("ctrl+p")
        await palette_settled(pilot)
        listed = app.screen.query_one(CommandList)
        shown = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        first = shown[: len(BROWSE_ACTIONS)]
        assert [line.split("\n")[0] for line in first] == [
            f"{a.title} ({a.display})" for a in BROWSE_ACTIONS]
        assert len(shown) > len(BROWSE_ACTIONS)  # Textual's own commands follow

    run(app, scenario)


def test_the_palette_provider_offers_every_action_the_issue_names(tui_repo, clock):
    from tui.commands import GitmemCommands

    _, gm, _ = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        found = [hit.text async for hit in GitmemCommands(app.screen).discover()]
        for name in ("verify", "refute", "forget", "confidence", "wake preview", "filter", "learn",
                     "edit", "link", "sync"):
            assert any(text.startswith(f"{name} (") for text in found), name

    run(app, scenario)


def test_sync_pushes_to_origin_in_the_background_and_a_missing_remote_is_a_notification(
        origin, clock, tui_repo):
    from gitmem.api import Gitmem
    from tests.conftest import clone, remote_tip, tur

    here = clone(origin, "here", who="Ada")
    gm = Gitmem.open(here)
    mid = gm.learn("Deploys go through the queue", file="src/app.py#L2-L3").memory.id
    app = make_app(gm, clock=clock, poll_interval=3600, follow=False)

    async def scenario(pilot):
        await pilot.press("s")  # origin has no memories: the TUI does not publish them
        await until(pilot, lambda: any("not published" in n for n in notes(app)), what="the sync")
        assert remote_tip(origin) is None
        assert tur(here, "sync", "--publish").code == 0  # publishing: at the command line
        gm.learn("Releases are tagged by the bot")
        await pilot.press("s")
        await until(pilot, lambda: any(n.startswith("pushed") for n in notes(app)), what="the push")
        assert mid in table_ids(app)

    run(app, scenario)
    assert remote_tip(origin) == gm.tip()

    _, lonely, _ = tui_repo  # no remote at all
    app = make_app(lonely, clock=clock, poll_interval=3600, follow=False)

    async def no_remote(pilot):
        await pilot.press("s")
        await until(pilot, lambda: error_notes(app), what="the error")
        assert "origin" in error_notes(app)[0]

    run(app, no_remote)

