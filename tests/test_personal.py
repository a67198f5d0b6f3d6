"""Personal memories (docs/personal.md): one person's store, read beside every repository."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, learn, memory_ref, tur, tur_ok

PREFERENCE = "I prefer pytest fixtures over unittest setUp"


def _repo(path: Path, text: str = "x = 1\n") -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "init")
    return path


@pytest.fixture
def two(tmp_path) -> tuple[Path, Path]:
    """Two unrelated repositories, each with one project memory."""
    a, b = _repo(tmp_path / "a"), _repo(tmp_path / "b")
    learn(a, "Service A keeps its queue in SQLite")
    learn(b, "Service B talks to Postgres", "--file", "app.py")
    return a, b


def _store(home: Path) -> Path:
    return home / ".local" / "share" / "gitmem" / "personal.git"


def _ref_paths(repo: Path) -> str:
    return git(repo, "ls-tree", "-r", "--name-only", "refs/tur/memories")


def test_learned_in_one_repository_it_wakes_and_recalls_in_another(two, isolated_env):
    a, b = two
    refs_before = memory_ref(a), memory_ref(b)
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    assert _store(isolated_env).is_dir()
    assert (memory_ref(a), memory_ref(b)) == refs_before  # no project ref moved
    for repo in (a, b):
        assert mine not in _ref_paths(repo)

    wake = tur_ok(b, "wake")
    assert "Service B talks to Postgres" in wake
    assert f"- [personal] [{mine}] {PREFERENCE}" in wake
    assert "## Personal memories" in wake
    assert wake.index("Service B") < wake.index(PREFERENCE)

    entries = json.loads(tur_ok(b, "wake", "--format", "json"))["entries"]
    stores = {e["id"]: e.get("store") for e in entries}
    assert stores[mine] == "personal"
    assert all(store is None for key, store in stores.items() if key != mine)

    recall = tur_ok(b, "recall", "pytest fixtures")
    assert f"[personal] [{mine}]" in recall and "UNANCHORED" not in recall  # the mark says it
    hits = json.loads(tur_ok(b, "recall", "pytest fixtures", "--format", "json"))["hits"]
    assert [(h["id"], h.get("store")) for h in hits] == [(mine, "personal")]
    assert (memory_ref(a), memory_ref(b)) == refs_before


def test_ids_of_the_personal_store_resolve_everywhere_with_the_store_named(two):
    a, b = two
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    shown = tur(b, "show", mine[: mine.index("-") + 5])  # the type and 4 hex digits
    assert shown.code == 0 and f"content: {PREFERENCE}" in shown.out
    assert "personal store" in shown.err
    assert tur_ok(b, "list", "--personal").count(mine) == 1
    assert mine not in tur_ok(b, "list")
    tur_ok(b, "refute", mine, "--reason", "I changed my mind")
    assert "refuted" in tur_ok(a, "show", "--personal", mine)
    assert mine not in tur_ok(a, "wake")
    missing = tur(b, "show", "fact-00000000")
    assert missing.code != 0 and "no memory with id 'fact-00000000'" in missing.err


def test_personal_with_file_is_refused_and_nothing_is_written(two, isolated_env):
    a, _ = two
    before = memory_ref(a)
    r = tur(a, "learn", "Anchored somewhere", "--personal", "--file", "app.py")
    assert r.code == 2
    assert r.err.count("\n") == 1 and "never anchored" in r.err
    assert not _store(isolated_env).exists()
    assert memory_ref(a) == before


def test_without_a_personal_store_nothing_changes(two, isolated_env):
    a, _ = two
    before = tur_ok(a, "wake", "--format", "json")
    assert "personal" not in before
    assert tur(a, "list", "--personal").code == 0
    assert tur(a, "show", "--personal", "fact-00000000").code != 0
    assert not _store(isolated_env).exists()  # reads never create it


def test_a_damaged_personal_store_gives_one_warning_and_the_project_is_served(two, isolated_env):
    a, _ = two
    store = _store(isolated_env)
    store.mkdir(parents=True)
    (store / "garbage").write_text("not a repository\n")
    r = tur(a, "wake")
    assert r.code == 0
    assert "Service A keeps its queue" in r.out
    warnings = [line for line in r.err.splitlines() if "personal" in line]
    assert len(warnings) == 1 and warnings[0].startswith("tur: warning: personal memories left out")
    r = tur(a, "recall", "queue")
    assert r.code == 0 and "Service A" in r.out


def test_xdg_data_home_unset_puts_the_store_under_home(two, isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME")
    a, b = two
    mine = learn(a, PREFERENCE, "--personal")
    assert _store(isolated_env).is_dir()
    assert mine in tur_ok(b, "wake")
    monkeypatch.setenv("XDG_DATA_HOME", "")  # empty is unset (XDG Base Directory)
    assert mine in tur_ok(b, "wake")


def test_the_personal_share_bounds_personal_memories_and_returns_what_they_leave(two):
    a, b = two
    for i in range(40):
        learn(a, f"Personal habit number {i}: I like my editor configured in way {i}", "--personal")
    out = json.loads(tur_ok(b, "wake", "--token-budget", "600", "--format", "json"))
    assert out["tokens"] <= 600
    personal = [e for e in out["assembly"] if e.get("store") == "personal" and e["included"]]
    assert personal and sum(e["tokens"] for e in personal) <= 600 * 0.15 + 10
    assert "Service B talks to Postgres" in out["text"]
    for budget in (40, 90, 150, 300, 1000):  # the joined wake is held to any budget and cap
        out = json.loads(tur_ok(b, "wake", "--token-budget", str(budget), "--max-chars", str(budget * 3),
                                "--format", "json"))
        assert out["tokens"] <= budget and len(out["text"]) <= budget * 3
    (b / ".tur").mkdir()
    (b / ".tur" / "config.yaml").write_text("wake:\n  personal_share: 0\n")
    assert "[personal]" not in tur_ok(b, "wake")


def test_sync_to_a_bare_personal_remote_and_from_it_on_a_second_machine(two, tmp_path, monkeypatch):
    a, b = two
    remote = tmp_path / "mine.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    tur_ok(a, "remote", "setup", "--personal", str(remote))
    synced = tur_ok(a, "sync", "--personal", "--publish")
    assert "push" in synced
    assert git(remote, "rev-parse", "refs/tur/memories").strip()
    assert mine not in _ref_paths(a) and mine not in _ref_paths(b)
    assert not git(a, "remote").strip()  # the project got no remote

    # A second machine: another XDG_DATA_HOME, the same remote.
    first = os.environ["XDG_DATA_HOME"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "laptop"))
    assert mine not in tur_ok(b, "wake")
    tur_ok(b, "remote", "setup", "--personal", str(remote))
    tur_ok(b, "sync", "--personal")
    assert (tmp_path / "laptop" / "gitmem" / "personal.git").is_dir()
    assert f"[personal] [{mine}]" in tur_ok(b, "wake")
    other = learn(b, "I write commit messages in the imperative", "--personal")
    tur_ok(b, "sync", "--personal")

    monkeypatch.setenv("XDG_DATA_HOME", first)  # back on the first machine
    tur_ok(a, "sync", "--personal")
    assert other in tur_ok(a, "wake")


def test_hooks_and_mcp_include_personal_memories(two):
    from gitmem.api import Gitmem
    from gitmem.mcp.tools import GitmemTools

    a, b = two
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "cwd": str(b)})
    start = tur_ok(b, "hook", "session-start", stdin=payload)
    assert mine in start
    turn = json.dumps({"session_id": "s1", "prompt": "should I use pytest fixtures here?", "cwd": str(b)})
    assert mine in tur_ok(b, "hook", "pre-turn", stdin=turn)
    tools = GitmemTools(Gitmem.open(b))
    learned, _ = tools.learn("I review diffs before I commit", None, None, None, None, personal=True)
    assert learned.memory.id not in _ref_paths(b)
    assert learned.memory.id in tur_ok(a, "list", "--personal")
    from gitmem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="never anchored"):
        tools.learn("Anchored", None, "app.py", None, None, personal=True)
    assert mine in tools.wake(None, None)[0].text
    assert mine in tools.recall("pytest fixtures", None, False, None)[1]
    assert mine in tools.wake_text()


def test_the_tui_lists_personal_memories_marked(two):
    from gitmem.api import Gitmem
    from tui.rows import to_rows

    a, b = two
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    personal = Gitmem.open(b).personal
    assert personal is not None
    rows = to_rows(personal.status_view(full_records=False).rows, store="personal")
    assert [(r.id, r.store) for r in rows] == [(mine, "personal")]
    from tui.widgets.memory_table import MemoryTable

    assert str(MemoryTable._cell(rows[0], "content")).startswith("[personal] I prefer")


def test_personal_memories_that_do_not_fit_are_named_as_left_out(two):
    a, _ = two
    mid = tur_ok(a, "learn", "--personal", "a long personal preference about formatting " * 20).strip()
    explained = tur(a, "wake", "--token-budget", "300", "--explain")
    row = next(line for line in explained.out.splitlines() if mid in line)
    assert explained.code == 0 and row.endswith("excluded: over_budget")
    tur_ok(a, "hook", "session-start", "--token-budget", "300", stdin='{"session_id": "p1"}')
    log = tur_ok(a, "log", "--session", "p1")
    assert f"- [personal] {mid}" in log and "over_budget" in log


def test_undo_finds_a_personal_id_without_the_flag_and_its_hint_names_the_store(two):
    a, _ = two
    mid = tur_ok(a, "learn", "--personal", "I indent with four spaces").strip()
    assert f"`tur forget --undo {mid} --personal`" in tur_ok(a, "forget", mid)
    assert tur_ok(a, "forget", "--undo", mid).startswith(f"restored {mid}")
    tur_ok(a, "refute", mid, "--reason", "wrong")
    assert tur_ok(a, "refute", mid, "--undo").startswith(f"unrefuted {mid}")


def test_a_link_across_the_two_stores_is_one_line_and_nothing_moves(two, isolated_env):
    a, _ = two
    project = learn(a, "Service A retries its queue three times")
    mine = learn(a, PREFERENCE, "--personal", "--type", "preference")
    other = learn(a, "I read the tests before the code", "--personal")
    refs = memory_ref(a), git(isolated_env, "--git-dir", str(_store(isolated_env)), "rev-parse",
                              "refs/tur/memories")
    for args, words in (((project, mine), f"{project} is in this repository's store and {mine} in "
                                          "your personal store"),
                        ((mine, project), f"{mine} is in your personal store and {project} in "
                                          "this repository's"),
                        (("--personal", mine, project), f"{mine} is in your personal store")):
        r = tur(a, "link", *args, "--type", "supports")
        assert r.code == 2, r.err
        assert r.err.count("\n") == 1 and words in r.err and "a link joins two memories of one store" in r.err
    assert (memory_ref(a), git(isolated_env, "--git-dir", str(_store(isolated_env)), "rev-parse",
                               "refs/tur/memories")) == refs
    # Within one store, a link is made as before (the personal id found without the flag).
    linked = tur(a, "link", mine, other, "--type", "supports")
    assert linked.code == 0 and f"{mine} supports {other}" in linked.out
