"""``tur watch`` and :mod:`gitmem.watch` on real repositories with real file edits (no mocks).

The watcher runs in a thread (or a ``tur watch`` subprocess) with a short debounce;
every wait is bounded, so a broken watcher fails a test instead of hanging it.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.cli import Env, main
from gitmem.record.models import Status
from gitmem.watch import Watcher, WatchEvent, anchored_paths
from tests.conftest import add_filler_memories, commit_file, git, memory_ref

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_S = 60.0  # bounds a failure only: every wait returns as soon as its state holds
LEARNED_AT = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def record(repo: Path, memory_id: str):
    return Gitmem.open(repo).get(memory_id)


class Running:
    """A watcher in a thread, its events collected in order."""

    def __init__(self, watcher: Watcher):
        self.watcher = watcher
        self.events: list[WatchEvent] = []
        self.seen: set[str] = set()
        """Every path of every batch the watcher has handled."""
        watcher.on_batch = self.seen.update
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for event in self.watcher.events():
                self.events.append(event)
        except BaseException as exc:
            self.failure = exc

    def wait_for(self, predicate, what: str) -> WatchEvent:
        """The first event after those already seen... that satisfies ``predicate``."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            assert self.failure is None, repr(self.failure)
            for event in list(self.events):
                if predicate(event):
                    return event
            time.sleep(0.02)
        raise AssertionError(f"no event {what} within {DEADLINE_S}s; got {self.events}")

    def handled(self, path: Path) -> None:
        """Wait until the watcher has handled a batch holding ``path``, and so every change before it."""
        target = os.path.realpath(path)
        deadline = time.monotonic() + DEADLINE_S
        while target not in self.seen:
            assert self.failure is None, repr(self.failure)
            assert time.monotonic() < deadline, f"{target} never handled; saw {sorted(self.seen)}"
            time.sleep(0.02)

    def settle(self, directory: Path) -> None:
        """Make a change in the watched ``directory`` that triggers nothing, and wait until it is handled.

        The OS watch reports changes in order: every change made before this one has then been
        handled too, so what they did (or did not do) can be checked, without waiting a time.
        """
        sentinel = directory / f"settle-{len(self.seen)}.txt"  # an untracked file: no memory on it
        sentinel.write_text("settle\n")
        self.handled(sentinel)

    def verifies(self) -> list[WatchEvent]:
        return [e for e in self.events if e.trigger != "start"]


@contextmanager
def watching(repo: Path, **kwargs):
    watcher = Watcher(Gitmem.open(repo), debounce_ms=40, tick_ms=100, **kwargs)
    run = Running(watcher)
    run.thread.start()
    try:
        assert watcher.ready.wait(DEADLINE_S), "the watcher never started"
        run.wait_for(lambda e: e.trigger == "start", "start")
        yield run
    finally:
        watcher.stop_event.set()
        run.thread.join(DEADLINE_S)
    assert not run.thread.is_alive(), "the watcher did not stop"
    assert run.failure is None, repr(run.failure)


def other_learn(repo: Path, mid: str) -> str:
    other = next(m.id for m in Gitmem.open(repo).memories()[0] if m.id != mid)
    return f"{other}: the team prefers small commits"


def status_of(event: WatchEvent, memory_id: str):
    return next((c.new, c.reason) for c in event.changes if c.memory_id == memory_id)


@pytest.fixture
def learned(repo):
    """``repo`` with one memory anchored to src/app.py lines 4-6 and one unanchored."""
    gm = Gitmem.open(repo)
    anchored = gm.learn("lines four to six matter", file="src/app.py#L4-L6", now=LEARNED_AT)
    gm.learn("the team prefers small commits", now=LEARNED_AT)
    return repo, anchored.memory.id


def test_editing_an_anchored_line_records_stale_and_reverting_records_fresh(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    original = app.read_text()
    before = memory_ref(repo)
    with watching(repo) as run:
        app.write_text(original.replace("line 4\n", "line four\n"))
        stale = run.wait_for(lambda e: e.changes, "stale")
        assert (stale.trigger, stale.paths, stale.ids) == ("files", ("src/app.py",), (mid,))
        assert status_of(stale, mid) == (Status.STALE, "working tree: line 4 modified")
        assert stale.changes[0].old is Status.FRESH and stale.changes[0].local
        # Local state: shown here, never committed (docs/sharing.md).
        assert memory_ref(repo) == before and stale.outcome.commit is None
        assert Gitmem.open(repo).local_reasons() == {mid: "working tree: line 4 modified"}
        assert record(repo, mid).status is Status.FRESH
        assert record(repo, mid).decay.last_verified_at == LEARNED_AT

        app.write_text(original)
        fresh = run.wait_for(lambda e: e is not stale and e.changes, "fresh")
        assert status_of(fresh, mid) == (Status.FRESH, None)
        assert fresh.changes[0].local  # back to the recorded status: here only, as the edit was
        assert memory_ref(repo) == before
        assert Gitmem.open(repo).local_reasons() == {}


def test_saving_other_lines_of_an_anchored_file_rechecks_without_a_commit(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    before = memory_ref(repo)
    with watching(repo) as run:
        app.write_text(app.read_text().replace("line 15\n", "line fifteen\n"))
        event = run.wait_for(lambda e: e.trigger == "files", "re-check")
    assert (event.paths, event.ids, event.changes) == (("src/app.py",), (mid,), ())
    assert event.outcome.commit is None
    assert memory_ref(repo) == before
    # A background re-check is not an explicit check: the decay clock did not restart.
    assert record(repo, mid).decay.last_verified_at == LEARNED_AT


def test_an_atomic_save_by_rename_over_the_file_is_seen(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    with watching(repo) as run:
        tmp = repo / "src/.app.py.swp-new"
        tmp.write_text(app.read_text().replace("line 5\n", "line five\n"))
        os.replace(tmp, app)
        event = run.wait_for(lambda e: e.changes, "stale after rename")
    assert status_of(event, mid) == (Status.STALE, "working tree: line 5 modified")
    assert event.paths == ("src/app.py",)


def test_deleting_the_anchored_file_or_its_directory_marks_it_stale(learned):
    repo, mid = learned
    with watching(repo) as run:
        (repo / "src/app.py").unlink()
        event = run.wait_for(lambda e: e.changes, "stale after delete")
        assert status_of(event, mid) == (Status.STALE, "working tree: deleted")
        git(repo, "checkout", "--", "src/app.py")
        run.wait_for(lambda e: e.changes and e.changes[0].new is Status.FRESH, "restored")
        os.rename(repo / "src", repo / "source")
        moved = run.wait_for(lambda e: e.changes and e.changes[0].new is Status.STALE
                             and e is not event, "stale after directory rename")
    assert status_of(moved, mid) == (Status.STALE, "working tree: deleted")
    assert moved.paths == ("src/app.py",)


def test_checking_out_a_branch_that_changed_the_lines_marks_the_memory_stale(learned):
    repo, mid = learned
    git(repo, "checkout", "-q", "-b", "other")
    text = (repo / "src/app.py").read_text().replace("line 6\n", "line six\n")
    changed_at = commit_file(repo, "src/app.py", text, "rewrite line 6")
    git(repo, "checkout", "-q", "main")
    with watching(repo) as run:
        git(repo, "checkout", "-q", "other")
        event = run.wait_for(lambda e: e.trigger == "head", "HEAD moved")
        assert status_of(event, mid) == (Status.STALE, f"line 6 changed in {changed_at[:7]}")
        # Every memory is re-checked when HEAD moves, not only the anchored one.
        assert len(event.ids) == 2
        git(repo, "checkout", "-q", "main")
        back = run.wait_for(lambda e: e.trigger == "head" and e is not event, "HEAD back")
    assert status_of(back, mid) == (Status.FRESH, None)


def test_a_commit_that_changes_no_status_writes_nothing(learned):
    repo, mid = learned
    before = memory_ref(repo)
    observed = record(repo, mid).provenance.git_sha
    with watching(repo) as run:
        commit_file(repo, "README.md", "hello\n", "add readme")
        event = run.wait_for(lambda e: e.trigger == "head", "HEAD moved")
    assert event.changes == ()
    assert event.outcome.commit is None and memory_ref(repo) == before
    assert record(repo, mid).provenance.git_sha == observed  # `tur verify` moves it when asked


def test_unanchored_ignored_and_git_internal_files_trigger_no_verify(learned):
    repo, mid = learned
    (repo / ".gitignore").write_text("build/\n")
    commit_file(repo, "docs/notes.md", "notes\n", "notes")
    gm = Gitmem.open(repo)
    gm.verify()  # settle the anchors at the new HEAD before watching
    before = memory_ref(repo)
    with watching(repo) as run:
        (repo / "docs/notes.md").write_text("changed notes\n")
        (repo / "build").mkdir()
        (repo / "build/out.txt").write_text("artefact\n")
        (repo / "untracked.txt").write_text("scratch\n")
        objects = repo / ".git/objects/ff"
        objects.mkdir(exist_ok=True)
        (objects / "scratch").write_text("x")
        (repo / ".git/tur").mkdir(exist_ok=True)
        (repo / ".git/tur/junk").write_text("x")
        run.settle(repo)
        assert run.verifies() == []
        assert memory_ref(repo) == before
        # The watcher is alive: an anchored edit after all that is the first verify.
        (repo / "src/app.py").write_text("rewritten\n")
        event = run.wait_for(lambda e: e.trigger != "start", "verify")
        assert run.verifies() == [event]
    assert (event.trigger, event.paths, event.ids) == ("files", ("src/app.py",), (mid,))


def test_staging_an_edit_with_head_unchanged_rechecks_anchored_memories(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    original = app.read_text()
    with watching(repo) as run:
        app.write_text(original.replace("line 4\n", "line four\n"))
        run.wait_for(lambda e: e.changes, "stale")
        app.write_text(original)  # the index still has the old stat: git add refreshes it
        # Stage a different edit via the index only, leaving the working tree clean.
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, check=True,
                              input=original.replace("line 6\n", "LINE 6\n"),
                              capture_output=True, text=True).stdout.strip()
        git(repo, "update-index", "--cacheinfo", f"100644,{blob},src/app.py")
        event = run.wait_for(lambda e: any(c.reason and "index" in c.reason
                                           for c in e.changes), "staged change")
    assert status_of(event, mid) == (Status.STALE, "index (staged): line 6 modified")


def test_a_memory_learned_by_another_process_is_watched_from_then_on(learned):
    repo, mid = learned
    commit_file(repo, "lib/util.py", "def f():\n    return 1\n", "util")
    Gitmem.open(repo).verify()
    with watching(repo) as run:
        assert set(run.watcher.anchored_paths()) == {"src/app.py"}
        other = Gitmem.open(repo).learn("f returns one", file="lib/util.py#L2")
        lib = os.path.realpath(repo / "lib")
        # The ref move is seen, and lib/ watched from then on.
        wait_watching(run, lambda watched: lib in watched, "lib/ watched")
        assert run.verifies() == []  # the ref move alone verifies nothing
        (repo / "lib/util.py").write_text("def f():\n    return 2\n")
        event = run.wait_for(lambda e: e.changes, "new memory stale")
        assert set(run.watcher.anchored_paths()) == {"src/app.py", "lib/util.py"}
    assert (event.paths, event.ids) == (("lib/util.py",), (other.memory.id,))
    assert status_of(event, other.memory.id) == (Status.STALE, "working tree: line 2 modified")


def test_a_linked_worktree_is_watched_with_its_own_head(learned, tmp_path):
    repo, mid = learned
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    assert anchored_paths(Gitmem.open(linked)) == {"src/app.py": (mid,)}
    with watching(linked) as run:
        (repo / "src/app.py").write_text("main's copy changed\n")  # another worktree
        run.settle(linked)
        assert run.verifies() == []
        text = (linked / "src/app.py").read_text().replace("line 4\n", "line IV\n")
        sha = commit_file(linked, "src/app.py", text, "edit in linked worktree")
        event = run.wait_for(lambda e: e.trigger == "head", "linked HEAD moved")
    assert status_of(event, mid) == (Status.STALE, f"line 4 changed in {sha[:7]}")


def test_explicit_false_narrows_verify_without_restarting_the_decay_clock(learned):
    repo, mid = learned
    gm = Gitmem.open(repo)
    quiet = gm.verify([mid], explicit=False, now=datetime(2026, 3, 1, tzinfo=UTC))
    assert [r.memory_id for r in quiet.rows] == [mid]
    assert (quiet.commit, record(repo, mid).decay.last_verified_at) == (None, LEARNED_AT)
    loud = gm.verify([mid], now=datetime(2026, 3, 1, tzinfo=UTC))
    assert loud.commit is not None
    assert record(repo, mid).decay.last_verified_at == datetime(2026, 3, 1, tzinfo=UTC)


def test_watch_on_a_bare_repository_is_a_one_line_error(tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(bare), "watch", "--timeout", "1"], Env(out=out, err=err))
    assert code == 2
    assert err.getvalue().splitlines() == [
        "tur: error: a bare repository has no working tree to watch — "
        "run `tur watch` in a clone with a working tree"
    ]
    assert out.getvalue() == ""


def _start_tur_watch(repo: Path) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem", "-C", str(repo), "watch", "--debounce", "40"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),
                     daemon=True).start()
    deadline = time.monotonic() + DEADLINE_S
    while not lines and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert lines, proc.stderr.read() if proc.poll() is not None else "no header"
    return proc, lines


def _wait_line(lines: list[str], needle: str) -> str:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = [line for line in lines if needle in line]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no line with {needle!r}: {lines}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_tur_watch_prints_status_changes_and_stops_cleanly_on_a_signal(learned, sig):
    repo, mid = learned
    proc, lines = _start_tur_watch(repo)
    try:
        assert lines[0] == f"watching 1 anchored file in {os.path.realpath(repo)} (Ctrl-C to stop)\n"
        app = repo / "src/app.py"
        app.write_text(app.read_text().replace("line 4\n", "line four\n"))
        line = _wait_line(lines, mid)
        assert line.split(" ", 1)[1] == (
            f'{mid} "lines four to six matter" fresh -> stale: working tree: line 4 modified (here only)\n')
        assert len(line.split(" ", 1)[0]) == len("12:03:04")
        sent = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(timeout=DEADLINE_S)
        assert time.monotonic() - sent < 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0
    assert proc.stderr.read() == ""
    _wait_line(lines, "stopped")
    assert lines[-1] == "stopped: 1 status change, 0 commits on refs/tur/memories\n"


def test_an_empty_repository_is_watched_until_its_first_commit(empty_repo):
    with watching(empty_repo) as run:
        assert run.events[0].outcome is None  # nothing to verify against yet
        (empty_repo / "a.txt").write_text("a\n")
        run.handled(empty_repo / "a.txt")
        assert run.verifies() == []
        commit_file(empty_repo, "a.txt", "a\n", "first")
        event = run.wait_for(lambda e: e.trigger == "head", "first commit")
    assert (event.error, event.ids, event.outcome.commit) == (None, (), None)


# -- what is watched, and at what scale ---------------------------------------------------------


def test_only_the_directories_of_anchored_files_and_the_git_state_are_watched(learned):
    repo, mid = learned
    for name in ("docs/guide/intro.md", "build/deep/out.txt", "src/sub/other.py"):
        commit_file(repo, name, "x\n", f"add {name}")
    gm = Gitmem.open(repo)
    gm.learn("guide intro", file="docs/guide/intro.md")
    watcher = Watcher(gm)
    git_dir = os.path.realpath(repo / ".git")
    root = os.path.realpath(repo)
    expected = {root, f"{root}/src", f"{root}/docs", f"{root}/docs/guide", git_dir,
                f"{git_dir}/refs", f"{git_dir}/refs/heads", f"{git_dir}/refs/tur"}
    assert {str(d) for d in watcher.watch_dirs()} == expected  # not build/, not src/sub/


def test_an_anchored_directory_that_comes_back_is_watched_again(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    original = app.read_text()
    with watching(repo) as run:
        git(repo, "rm", "-q", "-r", "--cached", "src")
        os.rename(repo / "src", repo / "gone")
        run.wait_for(lambda e: e.changes and e.changes[0].new is Status.STALE, "stale")
        src = os.path.realpath(repo / "src")
        wait_watching(run, lambda watched: src not in watched, "src/ no longer watched")
        (repo / "src").mkdir()
        app.write_text(original)
        git(repo, "add", "src/app.py")
        back = run.wait_for(lambda e: e.changes and e.changes[0].new is Status.FRESH, "fresh again")
        # The watch on the new src/ is put in place after the event that found it: wait for it.
        wait_watching(run, lambda watched: src in watched, "the new src/ watched")
        app.write_text(original.replace("line 5\n", "line V\n"))  # a watch on the new src/
        edited = run.wait_for(lambda e: e is not back and e.changes
                              and e.changes[0].new is Status.STALE and e.trigger == "files", "edit")
    assert status_of(edited, mid) == (Status.STALE, "working tree: line 5 modified")


def wait_watching(run, predicate, what: str) -> None:
    """Wait until ``predicate(run.watcher.watching)`` holds (the OS watch's directories)."""
    deadline = time.monotonic() + DEADLINE_S  # bounds a failure only
    while not predicate(run.watcher.watching):
        assert time.monotonic() < deadline, f"{what}: never; watching {run.watcher.watching}"
        time.sleep(0.02)


def test_polling_sees_edits_like_the_os_watch(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    with watching(repo, polling=True) as run:
        edit_seen_by_polling(app, "line 4\n", "line four\n")
        event = run.wait_for(lambda e: e.changes, "stale by polling")
    assert status_of(event, mid) == (Status.STALE, "working tree: line 4 modified")


def edit_seen_by_polling(file: Path, old: str, new: str) -> None:
    """Edit ``file`` so that a polling watcher sees it however soon after the watch started.

    Polling compares modification times to the second: the edit's time is set two seconds
    on, instead of waiting for the clock to pass a second.
    """
    mtime = file.stat().st_mtime
    file.write_text(file.read_text().replace(old, new))
    os.utime(file, (mtime + 2, mtime + 2))


def _in_user_namespace_with_watch_limit(limit: int) -> list[str] | None:
    """A command prefix running in a new user namespace whose inotify watch limit is ``limit``.

    The limit of a user namespace is its own (/proc/sys/user/max_inotify_watches): nothing
    outside it is affected. ``None`` where user namespaces are not available.
    """
    probe = subprocess.run(["unshare", "-U", "-r", "sh", "-c",
                            f"echo {limit} > /proc/sys/user/max_inotify_watches"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return None
    return ["unshare", "-U", "-r", "sh", "-c",
            f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$@"', "sh"]


def test_at_the_os_watch_limit_tur_watch_polls_and_says_so_in_one_line(learned):
    repo, mid = learned
    prefix = _in_user_namespace_with_watch_limit(2)
    if prefix is None:
        pytest.skip("no user namespaces here to lower the inotify watch limit in")
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "gitmem", "-C", str(repo), "watch", "--debounce", "40"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    try:
        header = _wait_line(lines, "watching")
        assert "(polling, Ctrl-C to stop)" in header
        edit_seen_by_polling(repo / "src/app.py", "line 4\n", "line four\n")
        _wait_line(lines, f"{mid} \"lines four to six matter\" fresh -> stale")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().splitlines()
    assert len(err) == 1, err
    assert "limit on file watches is reached" in err[0] and "polling" in err[0]
    assert "Traceback" not in err[0]


def test_an_index_only_revert_rechecks_only_that_paths_memories_among_thousands(learned):
    repo, mid = learned
    add_filler_memories(repo, 2000)
    Gitmem.open(repo).verify()  # settled at the new HEAD
    app = repo / "src/app.py"
    original = app.read_text()
    with watching(repo, initial=False) as run:
        app.write_text(original.replace("line 5\n", "line five\n"))
        stale = run.wait_for(lambda e: e.changes, "stale")
        assert (stale.trigger, stale.ids) == ("files", (mid,))
        git(repo, "add", "src/app.py")  # the index only: the working tree is as it was
        staged = run.wait_for(lambda e: e.trigger == "index", "staged")
        assert (staged.paths, staged.ids) == (("src/app.py",), (mid,))
        assert status_of(staged, mid) == (Status.STALE, "index (staged): line 5 modified")
        started = time.monotonic()
        git(repo, "checkout", "HEAD", "--", "src/app.py")  # index and file back, one git command
        fresh = run.wait_for(lambda e: e.changes and e.changes[0].new is Status.FRESH, "reverted")
        took = time.monotonic() - started
    assert fresh.ids == (mid,), "only the memories on the reverted path are re-checked"
    assert status_of(fresh, mid) == (Status.FRESH, None)
    print(f"revert seen as fresh after {took:.2f} s among 2,001 memories")  # a figure, not a limit


def test_two_watchers_on_one_repository_each_report_every_status_change(learned):
    repo, mid = learned
    app = repo / "src/app.py"
    original = app.read_text()
    before = memory_ref(repo)
    with watching(repo) as first, watching(repo) as second:
        app.write_text(original.replace("line 6\n", "line six\n"))
        for run in (first, second):
            event = run.wait_for(lambda e: e.changes, "stale")
            assert status_of(event, mid) == (Status.STALE, "working tree: line 6 modified")
            assert event.changes[0].local  # uncommitted: shown by both, recorded by neither
        assert memory_ref(repo) == before
        git(repo, "commit", "-qam", "line six")
        for run in (first, second):
            event = run.wait_for(lambda e: e.trigger == "head" and e.changes, "committed")
            change = event.changes[0]
            assert (change.old, change.new, change.local) == (Status.STALE, Status.STALE, False)
            assert change.reason.startswith("line 6 changed in ")
    # One record of the change on the ref, whichever watcher wrote it.
    log = git(repo, "log", "--format=%B%x00", "refs/tur/memories").split("\0")
    assert log[0].strip().startswith("verify: ") and "1 record rewritten (1 newly stale)" in log[0]
    assert "newly stale" not in log[1]


def test_tur_watch_format_jsonl_prints_one_json_event_a_line(learned):
    import json

    repo, mid = learned
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem", "-C", str(repo), "watch", "--debounce", "40",
         "--format", "jsonl"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    try:
        start = json.loads(_wait_line(lines, '"event": "start"'))
        assert (start["anchored_files"], start["polling"]) == (1, False)
        app = repo / "src/app.py"
        app.write_text(app.read_text().replace("line 4\n", "line four\n"))
        event = json.loads(_wait_line(lines, mid))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (event["event"], event["trigger"], event["paths"], event["ids"]) == (
        "verify", "files", ["src/app.py"], [mid])
    assert event["changes"] == [{"id": mid, "old": "fresh", "new": "stale",
                                 "reason": "working tree: line 4 modified", "new_ref": None,
                                 "local": True}]
    _wait_line(lines, '"stopped"')
    assert [json.loads(line)["event"] for line in lines] == ["start", "verify", "stopped"]


def test_tur_watch_and_status_say_nothing_per_unchanged_legacy_memory(learned, tmp_path):
    from tests.conftest import legacy_records, tur

    repo, mid = learned
    assert tur(repo, "import", str(legacy_records(tmp_path / "legacy", 40))).code == 0
    status = tur(repo, "status")
    assert status.out.splitlines() == [
        "2 fresh, 40 unanchored",
        "40 unanchored memories unchanged (no anchor to check; -v lists them)"]
    assert len(tur(repo, "status", "-v").out.splitlines()) == 1 + 42
    proc, lines = _start_tur_watch(repo)
    try:
        app = repo / "src/app.py"
        app.write_text(app.read_text().replace("line 4\n", "line four\n"))
        _wait_line(lines, mid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _wait_line(lines, "stopped")
    assert [line for line in lines if "unanchored" in line] == []
    assert lines[-1] == "stopped: 1 status change, 0 commits on refs/tur/memories\n"
