"""Sharing memories through a real bare remote and real clones: sync, merge rules, races, bad input."""

from __future__ import annotations

import io
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem import codec
from gitmem.api import Gitmem
from gitmem.cache.reader import record_path
from gitmem.errors import FormatVersion, RemoteError
from gitmem.sharing.sync import merge_plan
from gitmem.store import MEMORY_REF, Mutation
from tests.conftest import clock_reaches, clone, commit_file, git, remote_tip, tur

T1 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)
T3 = datetime(2026, 2, 3, 9, 0, tzinfo=UTC)


def ids(gm: Gitmem) -> set[str]:
    return {m.id for m in gm.memories()[0]}


def learn(gm: Gitmem, text: str, now: datetime = T1) -> str:
    return gm.learn(text, now=now).memory.id


def write_raw(gm: Gitmem, path: str, data: bytes | None, message: str = "raw edit") -> None:
    gm.store.transact(lambda tip: Mutation({path: data}, message))


def edit(gm: Gitmem, memory_id: str, fn) -> None:
    gm._editor._edit(memory_id, "edit", fn)


# -- the protocol: push, adopt, fast-forward, merge ------------------------------------------------


def test_first_sync_pushes_and_a_clone_that_never_set_up_adopts_the_memories(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    first = learn(a, "the queue retries five times")
    second = learn(a, "workers ack after commit")
    pushed = a.sync()
    assert (pushed.status, pushed.pushed) == ("pushed", True)
    assert pushed.remote_before is None
    assert remote_tip(origin) == a.store.tip() == pushed.remote_after == pushed.local_after

    adopted = b.sync()
    assert (adopted.status, adopted.pushed) == ("adopted", False)
    assert adopted.local_before is None
    assert b.store.tip() == a.store.tip() == adopted.local_after
    assert ids(b) == {first, second}
    assert b.store.tip("refs/tur/remotes/origin/memories") == a.store.tip()


def test_sync_fast_forwards_when_only_the_remote_moved_and_is_then_up_to_date(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    learn(a, "one")
    a.sync()
    b.sync()
    later = learn(a, "two")
    a.sync()
    result = b.sync()
    assert (result.status, result.pushed, result.behind, result.ahead) == ("fast-forward", False, 1, 0)
    assert b.store.tip() == a.store.tip()
    assert later in ids(b)
    again = b.sync()
    assert (again.status, again.pushed, again.local_after) == ("up-to-date", False, a.store.tip())


def test_concurrent_learn_refute_forget_merge_into_one_history_holding_the_union(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    m1, m2, m3 = learn(a, "uses sqlite"), learn(a, "port is 8080"), learn(a, "retries are 5")
    a.sync()
    b.sync()
    # Concurrently: A learns, refutes m1 and forgets m2; B learns, edits m3 and forgets m1.
    m4 = learn(a, "cache is redis")
    a.refute(m1, "moved to postgres")
    a.forget(m2)
    m5 = learn(b, "logs go to stdout")
    b.set_confidence(m3, 0.5)
    b.forget(m1)
    b_local = b.store.tip()

    assert a.sync().status == "pushed"
    a_pushed = remote_tip(origin)
    result = b.sync()
    assert (result.status, result.pushed) == ("merged", True)
    assert sorted((r.memory_id, r.status) for r in result.merged) == sorted(
        [(m4, "added"), (m1, "kept"), (m2, "forgotten")]
    )
    merge = b.store.log(limit=1)[0]
    assert merge.parents == (b_local, a_pushed)
    assert merge.message.splitlines()[0] == "sync: merge origin (1 added, 0 merged, 0 conflicts resolved)"
    assert a.sync().status == "fast-forward"

    assert a.store.tip() == b.store.tip() == remote_tip(origin)
    assert ids(a) == {m1, m3, m4, m5}
    assert a.get(m1).refutation.reason == "moved to postgres"  # forgotten vs refuted: kept
    assert a.get(m3).confidence == 0.5


@pytest.mark.parametrize("order", ["abc", "cab", "bca", "acb"])
def test_three_clones_syncing_in_any_order_converge_on_identical_refs(origin, order):
    clones = {n: Gitmem.open(clone(origin, n)) for n in "abc"}
    shared = learn(clones["a"], "shared fact")
    clones["a"].sync()
    for name in "bc":
        clones[name].sync()
    expected = {shared}
    for name, gm in clones.items():
        expected.add(learn(gm, f"learned only by {name}"))
        expected.add(learn(gm, f"second thing from {name}", now=T2))
    clones["b"].refute(shared, "wrong on b")
    clones["c"].set_confidence(shared, 0.25)
    for name in order + order[:-1]:
        clones[name].sync()
    tips = {gm.store.tip() for gm in clones.values()}
    assert tips == {remote_tip(origin)}
    for gm in clones.values():
        assert ids(gm) == expected
        merged = gm.get(shared)
        assert (merged.refutation.reason, merged.confidence) == ("wrong on b", 0.25)


# -- the merge rule for one record changed on both sides -------------------------------------------


def _diverge_on_one_record(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    m1, m2, m3 = learn(a, "deploys run on fridays"), learn(a, "target two"), learn(a, "target three")
    a.sync()
    b.sync()
    # A: refutes and links; content rewritten at an earlier verification time.
    a.refute(m1, "deploys moved to mondays")
    a.link(m1, m3, "supports")

    def a_edit(m):
        m.content = "deploys run on fridays (A)"
        m.decay.last_verified_at = T2
        return m

    edit(a, m1, a_edit)
    # B: re-observes later, with a different content text and another link.
    b.link(m1, m2, "refines")

    def b_edit(m):
        m.content = "deploys run on fridays (B)"
        m.decay.last_verified_at = T3
        m.confidence = 0.7
        return m

    edit(b, m1, b_edit)
    return a, b, m1, m2, m3


def test_record_changed_on_both_sides_is_merged_by_the_documented_rule(origin):
    a, b, m1, m2, m3 = _diverge_on_one_record(origin)
    a.sync()
    result = b.sync()
    assert result.status == "merged"
    (row,) = [r for r in result.merged if r.memory_id == m1]
    assert row.status == "conflict-resolved"
    assert row.reason.startswith("both changed content: kept here (changed ")
    assert "decay: kept here" in row.reason and row.reason.endswith("origin lost")
    a.sync()
    for gm in (a, b):
        merged = gm.get(m1)
        assert merged.content == "deploys run on fridays (B)"  # the later change wins
        assert merged.decay.last_verified_at == T3
        assert merged.confidence == 0.7  # changed on B only
        assert merged.refutation.reason == "deploys moved to mondays"  # never silently undone
        assert merged.status.value == "refuted"
        assert [(r.type.value, r.target) for r in merged.relations] == [("refines", m2), ("supports", m3)]
    assert a.store.tip() == b.store.tip()


def test_merge_result_is_the_same_whichever_clone_merges(origin):
    a, b, m1, _, _ = _diverge_on_one_record(origin)
    git(b.store.workdir, "fetch", "-q", str(a.store.git_dir), f"{MEMORY_REF}:refs/heads/a-memories")
    a_tip, b_tip = b.store.tip("refs/heads/a-memories"), b.store.tip()
    forward = merge_plan(b.store, b_tip, a_tip, "a")
    backward = merge_plan(b.store, a_tip, b_tip, "b")
    path = record_path(m1)
    from_b = forward.changes.get(path, b.store.read_path(b_tip, path))
    from_a = backward.changes.get(path, b.store.read_path(a_tip, path))
    assert from_b == from_a
    assert codec.load(from_b, "merged").content == "deploys run on fridays (B)"
    assert forward.base == backward.base


def test_merge_keeps_unknown_keys_and_comments_of_the_winning_record(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    m1 = learn(a, "keep my comment")
    path = record_path(m1)
    data = a.store.read_path(a.store.tip(), path)
    write_raw(a, path, b"# team note\n" + data + b"x_custom: 42\n")
    a.sync()
    b.sync()
    a.set_confidence(m1, 0.3)
    edit(b, m1, lambda m: (setattr(m.decay, "last_verified_at", T3), m)[1])
    a.sync()
    b.sync()
    merged = b.store.read_path(b.store.tip(), path)
    assert merged.startswith(b"# team note\n")
    assert b"x_custom: 42\n" in merged
    memory = b.get(m1)
    assert (memory.confidence, memory.decay.last_verified_at) == (0.3, T3)


def test_same_content_learned_independently_on_two_clones_merges_to_one_record(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    first = learn(a, "builds use make", now=T1)
    second = learn(b, "Builds use make.", now=T2)
    assert first == second
    a.sync()
    result = b.sync()  # unrelated histories: merged as if the base were empty
    assert result.status == "merged"
    assert [(r.memory_id, r.status) for r in result.merged] == [(first, "conflict-resolved")]
    assert b.get(first).decay.last_verified_at == T2
    assert b.get(first).content == "Builds use make."


def test_persona_changed_on_both_sides_keeps_the_later_version_and_notes_union(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    learn(a, "seed")
    a.sync()
    b.sync()
    write_raw(a, "persona.yaml", b"name: from-a\n")
    write_raw(a, "continuity/a-note.md", b"note a\n")
    b.store.transact(lambda tip: Mutation({"continuity/b-note.md": b"note b\n"}, "note"))
    # Commit times have one-second resolution: B's persona edit is made in a later second.
    clock_reaches(datetime.fromtimestamp(int(time.time()) + 1, UTC))
    write_raw(b, "persona.yaml", b"name: from-b\n")
    a.sync()
    b.sync()
    a.sync()
    for gm in (a, b):
        tip = gm.store.tip()
        assert gm.store.read_path(tip, "persona.yaml") == b"name: from-b\n"
        assert gm.store.list_dir(tip, "continuity").keys() == {"a-note.md", "b-note.md"}


# -- races -----------------------------------------------------------------------------------------


def test_push_race_is_recovered_by_fetch_merge_and_push_without_loss(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    base = learn(a, "base fact")
    a.sync()
    b.sync()
    from_b = learn(b, "pushed by b during a's push")
    from_a = learn(a, "learned by a")
    # A real race: A's pre-push hook pushes B's memories after A fetched and before A's push lands.
    hook = a.store.git_dir / "hooks" / "pre-push"
    hook.parent.mkdir(exist_ok=True)
    marker = a.store.git_dir / "raced"
    hook.write_text(
        "#!/bin/sh\n"
        f"[ -e '{marker}' ] && exit 0\n"
        f"touch '{marker}'\n"
        "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
        f"git -C '{b.store.workdir}' push -q --no-verify origin {MEMORY_REF} >/dev/null 2>&1\n"
        "exit 0\n"
    )
    hook.chmod(0o755)
    b_pushed = b.store.tip()
    result = a.sync()
    assert marker.exists()
    assert (result.status, result.pushed, result.attempts) == ("merged", True, 2)
    assert result.remote_before != b_pushed
    tip = remote_tip(origin)
    assert tip == a.store.tip() == result.remote_after
    assert a.store.repo.descendant_of(tip, b_pushed)  # B's push was not overwritten
    assert ids(a) == {base, from_a, from_b}
    b.sync()
    assert b.store.tip() == tip


def test_a_remote_that_keeps_moving_fails_after_bounded_attempts_and_is_never_overwritten(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    learn(a, "base fact")
    a.sync()
    b.sync()
    mine = learn(a, "a's fact")
    # Every push of A is preceded by a new push from B: A can never win the race.
    hook = a.store.git_dir / "hooks" / "pre-push"
    hook.parent.mkdir(exist_ok=True)
    root = Path(__file__).resolve().parent.parent
    counter = a.store.git_dir / "races"
    hook.write_text(
        "#!/bin/sh\n"
        "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
        f"echo x >> '{counter}'\n"
        f"PYTHONPATH='{root}' '{sys.executable}' -m gitmem -C '{b.store.workdir}' "
        f"learn \"race $(wc -l < '{counter}')\" >/dev/null\n"
        f"git -C '{b.store.workdir}' push -q --no-verify origin {MEMORY_REF} >/dev/null 2>&1\n"
    )
    hook.chmod(0o755)
    with pytest.raises(RemoteError) as err:
        a.sync(attempts=3)
    assert err.value.message == (
        f"{MEMORY_REF} on origin kept moving: 3 pushes were rejected; nothing was overwritten"
    )
    assert remote_tip(origin) == b.store.tip()
    assert {m.content for m in b.memories()[0]} == {"base fact", "race 1", "race 2", "race 3"}
    hook.unlink()
    assert (a.sync().pushed, b.sync().status) == (True, "fast-forward")
    assert a.store.tip() == b.store.tip() == remote_tip(origin)
    assert {m.content for m in b.memories()[0]} == {"base fact", "a's fact", "race 1", "race 2", "race 3"}
    assert mine in ids(b)


# -- interoperation with plain git -----------------------------------------------------------------


def test_plain_git_push_and_fetch_of_the_ref_interoperate_with_sync(origin):
    a_path, b_path = clone(origin, "a"), clone(origin, "b")
    a, b = Gitmem.open(a_path), Gitmem.open(b_path)
    m1 = learn(a, "pushed with plain git")
    git(a_path, "push", "-q", "origin", MEMORY_REF)
    assert remote_tip(origin) == a.store.tip()
    git(b_path, "fetch", "-q", "origin", f"{MEMORY_REF}:refs/tur/remotes/origin/memories")
    assert b.store.tip("refs/tur/remotes/origin/memories") == a.store.tip()
    assert b.store.tip() is None  # fetched, not yet adopted
    git(b_path, "fetch", "-q", "origin", f"{MEMORY_REF}:{MEMORY_REF}")
    assert ids(b) == {m1}
    m2 = learn(b, "then synced")
    assert b.sync().status == "pushed"
    git(a_path, "fetch", "-q", "origin", f"{MEMORY_REF}:{MEMORY_REF}")  # a fast-forward in plain git
    assert ids(a) == {m1, m2}


def test_remote_setup_adds_only_a_fetch_refspec_idempotently_and_plain_fetch_brings_memories(origin):
    a_path, b_path = clone(origin, "a"), clone(origin, "b")
    a, b = Gitmem.open(a_path), Gitmem.open(b_path)
    assert b.setup_remote("origin") is True
    assert b.setup_remote("origin") is False
    assert git(b_path, "config", "--get-all", "remote.origin.fetch").splitlines() == [
        "+refs/heads/*:refs/remotes/origin/*",
        "+refs/tur/memories:refs/tur/remotes/origin/memories",
    ]
    assert git(b_path, "config", "--get-all", "remote.origin.push", check=False) == ""

    learn(a, "reaches b by plain fetch")
    commit_file(a_path, "README", "hi\n")
    git(a_path, "push", "-q")  # a default push carries the branch, not the memory ref
    assert remote_tip(origin) is None
    a.sync()
    git(b_path, "fetch", "-q")
    assert b.store.tip("refs/tur/remotes/origin/memories") == a.store.tip()
    assert b.sync().status == "adopted"


# -- bad input -------------------------------------------------------------------------------------


def test_unknown_remote_is_refused_with_the_known_names(origin):
    a = Gitmem.open(clone(origin, "a"))
    with pytest.raises(RemoteError) as err:
        a.sync("upstream")
    assert err.value.message == "no remote named 'upstream' (remotes: origin)"
    with pytest.raises(RemoteError):
        a.setup_remote("--upload-pack=evil")


def test_unreachable_remote_is_a_clear_error_and_leaves_the_local_ref_untouched(origin, tmp_path):
    a_path = clone(origin, "a")
    a = Gitmem.open(a_path)
    learn(a, "stays put")
    before = a.store.tip()
    git(a_path, "remote", "add", "gone", str(tmp_path / "nowhere.git"))
    with pytest.raises(RemoteError) as err:
        a.sync("gone")
    assert "does not appear to be a git repository" in err.value.message
    assert err.value.message.startswith(f"cannot fetch {MEMORY_REF} from gone (")
    assert a.store.tip() == before
    assert a.store.tip("refs/tur/remotes/gone/memories") is None


def test_a_push_the_remote_refuses_is_a_clear_error_and_nothing_is_forced(origin):
    a = Gitmem.open(clone(origin, "a"))
    hook = origin / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'memories are frozen' >&2\nexit 1\n")
    hook.chmod(0o755)
    learn(a, "will not get through")
    local = a.store.tip()
    with pytest.raises(RemoteError) as err:
        a.sync()
    assert err.value.message.startswith(f"cannot push {MEMORY_REF} to origin (")
    assert "pre-receive hook declined" in err.value.message
    assert (a.store.tip(), remote_tip(origin)) == (local, None)


def test_nothing_on_either_side_is_up_to_date(origin):
    a = Gitmem.open(clone(origin, "a"))
    result = a.sync()
    assert (result.status, result.pushed, result.local_after, result.remote_after) == (
        "up-to-date", False, None, None)


def test_a_remote_ref_that_is_not_a_memory_history_is_refused(origin):
    a_path, b_path = clone(origin, "a"), clone(origin, "b")
    git(a_path, "push", "-q", "origin", f"main:{MEMORY_REF}")  # a code branch pushed to the ref
    b = Gitmem.open(b_path)
    learn(b, "mine")
    before = b.store.tip()
    with pytest.raises(FormatVersion) as err:
        b.sync()
    sha = remote_tip(origin)
    assert err.value.message == (
        f"refusing {MEMORY_REF} from origin: commit {sha[:12]} is not a gitmem memory history "
        "(its tree holds src)"
    )
    assert b.store.tip() == before
    assert remote_tip(origin) == git(a_path, "rev-parse", "main").strip()


def test_a_malformed_remote_record_is_kept_and_reported_and_never_stops_the_merge(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    m1 = learn(a, "valid record")
    a.sync()
    b.sync()
    bad_path = "memories/de/fact-deadbeef.yaml"
    write_raw(a, bad_path, b"id: fact-deadbeef\ncontent: [unclosed\n")
    write_raw(a, record_path(m1), b"id: !!python/object nope\n")  # both changed: B's valid one wins
    b.refute(m1, "refuted on b")
    mine = learn(b, "b's own")
    a.sync()
    result = b.sync()
    assert result.status == "merged"
    rows = {r.memory_id: r for r in result.merged}
    assert rows["fact-deadbeef"].status == "invalid"
    assert rows["fact-deadbeef"].reason.endswith("kept as is from origin")
    assert rows[m1].status == "invalid"
    assert rows[m1].reason.endswith("kept the other side's valid version")
    assert len(result.warnings) == 2
    assert all(w.startswith("warning: ") for w in result.warnings)
    tip = b.store.tip()
    assert b.store.read_path(tip, bad_path) == b"id: fact-deadbeef\ncontent: [unclosed\n"
    memories, skipped = b.memories()
    assert {m.id for m in memories} == {m1, mine}
    assert [s.memory_id for s in skipped] == ["fact-deadbeef"]
    assert b.get(m1).refutation.reason == "refuted on b"
    assert remote_tip(origin) == tip


# -- dry run and the command line ------------------------------------------------------------------


def test_dry_run_shows_what_would_be_merged_and_pushed_and_changes_nothing(origin):
    a_path, b_path = clone(origin, "a"), clone(origin, "b")
    a, b = Gitmem.open(a_path), Gitmem.open(b_path)
    learn(a, "base")
    a.sync()
    b.sync()
    added = learn(a, "new on a")
    a.sync()
    learn(b, "new on b")
    local, remote = b.store.tip(), remote_tip(origin)
    result = b.sync(dry_run=True)
    assert (result.status, result.dry_run, result.pushed) == ("merged", True, True)
    assert [(r.memory_id, r.status) for r in result.merged] == [(added, "added")]
    assert (result.ahead, result.behind) == (1, 1)
    assert (b.store.tip(), remote_tip(origin), result.local_after) == (local, remote, local)

    code, out, err = tur(b_path, "sync", "--dry-run")
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith(f"would merge origin: local {local[:12]} -> {local[:12]}")
    assert out.splitlines()[1].split() == ["added", added, "new", "on", "origin"]
    assert out.splitlines()[2] == "would push to origin"
    assert b.store.tip() == local


def test_cli_remote_setup_and_sync_report_what_they_did(origin):
    a_path = clone(origin, "a")
    learn(Gitmem.open(a_path), "via the cli")
    assert tur(a_path, "remote", "setup") == (
        0, "added: remote.origin.fetch +refs/tur/memories:refs/tur/remotes/origin/memories\n", "")
    assert tur(a_path, "remote", "setup", "origin")[1].startswith("already configured: ")
    code, out, _ = tur(a_path, "sync")  # origin has no memory ref: publishing is asked for
    assert code == 0
    assert out.startswith("origin has no memories yet, nothing pushed: local ")
    assert out.rstrip().endswith("`tur sync origin --publish` shares your memories with everyone "
                                 "who can fetch from origin")
    assert remote_tip(origin) is None
    code, out, _ = tur(a_path, "sync", "--publish")
    assert code == 0
    assert out.startswith("push to origin: local ")
    assert remote_tip(origin) is not None
    code, _, err = tur(a_path, "sync", "nope")
    assert code == 1
    assert err.startswith("tur: error: no remote named 'nope' (remotes: origin) — ")
    code, out, _ = tur(a_path, "sync", "--format", "json")
    assert code == 0 and '"status": "up-to-date"' in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "published"), [("y\n", True), ("\n", False), ("no\n", False)])
def test_the_first_sync_on_a_terminal_asks_before_publishing(origin, answer, published):
    from gitmem.cli import Env, main

    a_path = clone(origin, "a")
    learn(Gitmem.open(a_path), "shared only after a yes")
    out, err = _Terminal(), _Terminal()
    code = main(["-C", str(a_path), "sync"], Env(inp=_Terminal(answer), out=out, err=err))
    assert code == 0
    assert "Publish this clone's memories there, for everyone who can fetch from origin" in err.getvalue()
    assert (remote_tip(origin) is not None) is published
    assert ("not published" in out.getvalue()) is not published
    again = tur(a_path, "sync")  # on a pipe nothing is asked: published stays, unpublished too
    assert again.code == 0 and ("not published" in again.out) is not published
