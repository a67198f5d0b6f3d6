"""The TUI follows working-tree edits as ``tur watch`` does: real file edits, commits and reverts."""

from __future__ import annotations

import threading
import time

from tests.conftest import git
from tests.tui.pilot import cell, error_notes, notes, run, select, until
from tui import make_app
from tui.follow import WorktreeFollow
from tui.messages import WorktreeChecked


def edit_line(repo, path, old, new):
    file = repo / path
    file.write_text(file.read_text().replace(old, new))


def test_an_edit_of_anchored_lines_turns_the_row_stale_and_a_revert_fresh_again(tui_repo, clock):
    repo, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    checks: list[WorktreeChecked] = []

    def hook(message):
        if isinstance(message, WorktreeChecked):
            checks.append(message)

    def status():
        return cell(app, ids["port"], "status").plain

    def diff():
        return str(app.screen.query_one("#diff").render())

    async def scenario(pilot):
        await select(pilot, ids["port"])
        await until(pilot, lambda: app.screen.watching, what="the watch in place")
        edit_line(repo, "src/app.py", "line 4\n", "line four\n")
        await until(pilot, lambda: status() == "stale", what="stale")
        assert "line four" in diff()
        assert checks[-1].trigger == "files"
        assert checks[-1].paths == ("src/app.py",)
        assert checks[-1].changed == (ids["port"],)
        assert cell(app, ids["wal"], "status").plain == "fresh"  # not anchored there: not re-checked
        git(repo, "checkout", "--", "src/app.py")
        await until(pilot, lambda: status() == "fresh", what="fresh again")
        assert "line four" not in diff()

    run(app, scenario, hook)
    assert gm.get(ids["port"]).decay.staleness_status.value == "fresh"  # the ref never saw the edit


def test_a_commit_that_changes_the_anchored_lines_is_a_head_move(tui_repo, clock):
    repo, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600)
    checks: list[WorktreeChecked] = []

    async def scenario(pilot):
        await until(pilot, lambda: app.screen.watching, what="the watch in place")
        edit_line(repo, "src/store.py", "store 3\n", "store three\n")
        git(repo, "commit", "-q", "-am", "store three")
        await until(pilot, lambda: any(c.trigger == "head" for c in checks), what="a head check")
        await until(pilot, lambda: cell(app, ids["wal"], "status").plain == "stale", what="stale")

    run(app, scenario, lambda m: checks.append(m) if isinstance(m, WorktreeChecked) else None)


def test_the_follower_stops_with_the_app(tui_repo, clock):
    _, gm, _ = tui_repo
    before = threading.active_count()
    app = make_app(gm, clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await until(pilot, lambda: app.screen.watching, what="the watch in place")
        assert threading.active_count() > before

    run(app, scenario)
    deadline = time.monotonic() + 60  # bounds a failure only
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_the_follower_watches_only_anchored_directories_and_the_git_state(tui_repo):
    repo, gm, _ = tui_repo
    (repo / "docs").mkdir()
    follow = WorktreeFollow(gm)
    root = follow.root
    dirs = follow.watch_dirs()
    assert f"{root}/src" in dirs and root in dirs
    assert f"{root}/docs" not in dirs
    assert follow.keep(None, f"{root}/src/app.py")
    assert follow.keep(None, f"{follow.git_dir}/index")
    assert not follow.keep(None, f"{follow.git_dir}/objects/ab/cdef")
    assert follow.check(gm, {f"{root}/docs/readme.md"}) is None  # nothing anchored there


def test_a_repository_without_commits_or_memories_opens_and_follows_quietly(empty_repo, clock):
    from gitmem.api import Gitmem

    app = make_app(Gitmem.open(empty_repo), clock=clock, poll_interval=3600)

    async def scenario(pilot):
        await until(pilot, lambda: app.screen.watching, what="the watch in place")
        assert "no memories yet" in str(app.screen.query_one("#summary").render())
        (empty_repo / "notes.txt").write_text("hello\n")
        await until(pilot, lambda: app.screen.batches >= 1, what="the edit handled")
        assert error_notes(app) == [] and notes(app) == []
        assert "no memories yet" in str(app.screen.query_one("#summary").render())
        assert str(app.screen.query_one("#summary-line").render()) == "0 of 0 memories"

    run(app, scenario)


def test_without_follow_an_edit_changes_nothing_until_a_verify(tui_repo, clock):
    repo, gm, ids = tui_repo
    app = make_app(gm, clock=clock, poll_interval=3600, follow=False)
    checks: list[WorktreeChecked] = []

    async def scenario(pilot):
        await select(pilot, ids["port"])
        # Nothing follows the working tree: no worker, no watch, so an edit cannot be seen.
        assert [w for w in app.workers if w.group == "follow"] == []
        edit_line(repo, "src/app.py", "line 4\n", "line four\n")
        await pilot.pause()
        assert not app.screen.watching and app.screen.batches == 0
        assert cell(app, ids["port"], "status").plain == "fresh"
        await pilot.press("v")
        await until(pilot, lambda: cell(app, ids["port"], "status").plain == "stale", what="stale on v")

    run(app, scenario, lambda m: checks.append(m) if isinstance(m, WorktreeChecked) else None)
    assert checks == []
