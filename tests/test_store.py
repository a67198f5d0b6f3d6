"""The memory ref: orphan commits, fan-out trees, compare-and-swap, lock files, concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gitmem.errors import FormatVersion, NotARepository, RefLocked
from gitmem.store import MEMORY_REF, Mutation, Store
from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent


def test_a_change_is_one_orphan_commit_with_a_readable_message(repo):
    store = Store.discover(repo)
    commit, _ = store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "learn x"))
    assert commit is not None and commit.parents == ()
    assert store.tip() == commit.sha
    assert git(repo, "log", "--format=%s", MEMORY_REF).strip() == "learn x"
    assert store.entries(store.tip()) == {
        "fact-ab000001": git(repo, "rev-parse", f"{MEMORY_REF}:memories/ab/fact-ab000001.yaml").strip()
    }


def test_a_change_that_leaves_the_tree_as_it_was_makes_no_commit(repo):
    store = Store.discover(repo)
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "one"))
    before = store.tip()
    commit, _ = store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "two"))
    assert commit is None
    assert store.tip() == before


def test_one_record_change_rewrites_only_its_shard(repo):
    store = Store.discover(repo)
    changes = {f"memories/{i:02x}/fact-{i:02x}000000.yaml": b"x\n" for i in range(40)}
    store.transact(lambda tip: Mutation(changes, "bulk"))
    old_tree = {line.split()[3]: line.split()[2] for line in
                git(repo, "ls-tree", f"{MEMORY_REF}:memories").splitlines()}
    store.transact(lambda tip: Mutation({"memories/05/fact-05000000.yaml": b"y\n"}, "edit"))
    new_tree = {line.split()[3]: line.split()[2] for line in
                git(repo, "ls-tree", f"{MEMORY_REF}:memories").splitlines()}
    differing = sorted(k for k in old_tree if old_tree[k] != new_tree[k])
    assert differing == ["05"]


def test_deleting_the_last_record_of_a_shard_prunes_the_shard(repo):
    store = Store.discover(repo)
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "add"))
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": None}, "forget"))
    assert git(repo, "ls-tree", "--name-only", MEMORY_REF).split() == [".gitmem"]
    # ...and the record is still in history.
    assert git(repo, "show", f"{MEMORY_REF}~1:memories/ab/fact-ab000001.yaml") == "a\n"


def test_compare_and_swap_rebuilds_on_the_new_tip(repo):
    store = Store.discover(repo)
    other = Store.discover(repo)
    seen_tips = []

    def build(tip):
        seen_tips.append(tip)
        if len(seen_tips) == 1:
            # Another writer commits between our read and our ref update.
            other.transact(lambda t: Mutation({"memories/cd/fact-cd000001.yaml": b"theirs\n"}, "theirs"))
        return Mutation({"memories/ab/fact-ab000001.yaml": b"ours\n"}, "ours")

    store.transact(build)
    assert len(seen_tips) == 2 and seen_tips[0] is None and seen_tips[1] is not None
    assert set(store.entries(store.tip())) == {"fact-ab000001", "fact-cd000001"}


def test_a_leftover_lock_file_is_reported_after_bounded_retries(repo):
    store = Store.discover(repo)
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "one"))
    lock = repo / ".git" / "refs" / "tur" / "memories.lock"
    lock.write_text("stale\n")
    before = store.tip()
    started = time.monotonic()
    with pytest.raises(RefLocked) as info:
        store.transact(lambda tip: Mutation({"memories/ab/fact-ab000002.yaml": b"b\n"}, "two"),
                       lock_wait_seconds=0.3)
    assert time.monotonic() - started < 5
    assert "memories.lock" in str(info.value) and "safe to delete" in str(info.value)
    assert store.tip() == before
    lock.unlink()
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000002.yaml": b"b\n"}, "two"))


def test_a_ref_that_is_not_a_memory_history_is_refused(repo):
    store = Store.discover(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", MEMORY_REF, head)
    with pytest.raises(FormatVersion, match="not a gitmem memory history"):
        store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "x"))
    assert store.tip() == head


def test_discover_outside_a_repository_raises(tmp_path):
    with pytest.raises(NotARepository, match="not a git repository"):
        Store.discover(tmp_path)


def test_author_is_the_repository_identity_or_a_fixed_fallback(repo, isolated_env):
    store = Store.discover(repo)
    store.transact(lambda tip: Mutation({"memories/ab/fact-ab000001.yaml": b"a\n"}, "one"))
    assert git(repo, "log", "-1", "--format=%an <%ae>", MEMORY_REF).strip() == "Test User <test@example.com>"
    (isolated_env / ".gitconfig").write_text("")
    store2 = Store.discover(repo)
    store2.transact(lambda tip: Mutation({"memories/ab/fact-ab000002.yaml": b"b\n"}, "two"))
    assert git(repo, "log", "-1", "--format=%an <%ae>", MEMORY_REF).strip() == "tur <tur@localhost>"


def test_concurrent_learners_lose_no_write(repo):
    """Eight processes each learn five memories at once; all forty end up on the ref."""
    script = textwrap.dedent(
        """
        import sys
        from gitmem.api import Gitmem
        gm = Gitmem.open(sys.argv[1])
        for i in range(5):
            gm.learn(f"worker {sys.argv[2]} memory {i} about the cache layer", type="fact")
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(repo), str(w)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(8)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    out = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "list", "--format", "json"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    contents = {m["content"] for m in json.loads(out)}
    assert contents == {f"worker {w} memory {i} about the cache layer" for w in range(8) for i in range(5)}
    assert git(repo, "rev-list", "--count", MEMORY_REF).strip() == "40"
