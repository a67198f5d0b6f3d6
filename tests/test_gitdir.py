"""Reading refs from files (the warm path) agrees with git itself, in every repository layout."""

from __future__ import annotations

import pytest

from gitmem.cache import RecordCache
from gitmem.store import Store
from gitmem.store.gitdir import Unsupported, locate, read_ref
from tests.conftest import commit_file, git


def rev(repo, name: str) -> str | None:
    out = git(repo, "rev-parse", "-q", "--verify", name, check=False).strip()
    return out or None


def test_loose_and_packed_refs_read_as_git_reads_them(repo):
    where = locate(repo / "src")
    assert where is not None and where.workdir == repo and where.git_dir == repo / ".git"
    head = rev(repo, "HEAD")
    assert read_ref(where, "HEAD") == head
    git(repo, "update-ref", "refs/tur/memories", head)
    assert read_ref(where, "refs/tur/memories") == head
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "tur" / "memories").exists()
    assert read_ref(where, "refs/tur/memories") == head
    assert read_ref(where, "HEAD") == head
    # A loose ref written after packing wins over the packed one, as in git.
    newer = commit_file(repo, "b.txt", "b\n", "b")
    git(repo, "update-ref", "refs/tur/memories", newer)
    assert read_ref(where, "refs/tur/memories") == newer == rev(repo, "refs/tur/memories")
    assert read_ref(where, "refs/tur/missing") is None


def test_an_unborn_head_reads_as_none(empty_repo):
    assert read_ref(locate(empty_repo), "HEAD") is None
    assert Store.discover(empty_repo).head_sha() is None


def test_a_detached_head_reads_as_its_commit(repo):
    head = rev(repo, "HEAD")
    commit_file(repo, "c.txt", "c\n", "c")
    git(repo, "checkout", "-q", "--detach", head)
    assert read_ref(locate(repo), "HEAD") == head


def test_linked_worktree_has_its_own_head_and_shares_refs(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    commit_file(wt, "side.txt", "side\n", "side")
    git(repo, "update-ref", "refs/tur/memories", rev(repo, "HEAD"))
    where = locate(wt)
    assert where.workdir == wt and where.common_dir == (repo / ".git").resolve()
    assert read_ref(where, "HEAD") == rev(wt, "HEAD") != rev(repo, "HEAD")
    assert read_ref(where, "refs/tur/memories") == rev(repo, "HEAD")
    store = Store.discover(wt)
    assert store.head_sha() == rev(wt, "HEAD") and store.tip() == rev(repo, "HEAD")


def test_bare_repository(repo, tmp_path):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    where = locate(bare)
    assert where.workdir is None and read_ref(where, "HEAD") == rev(repo, "HEAD")
    assert Store.discover(bare).is_bare


def test_a_malformed_ref_file_is_left_to_libgit2(repo):
    where = locate(repo)
    (repo / ".git" / "refs" / "tur").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "refs" / "tur" / "memories").write_text("not a sha\n")
    with pytest.raises(Unsupported):
        read_ref(where, "refs/tur/memories")


def test_the_memo_of_tree_lookups_is_keyed_by_immutable_ids(repo):
    def with_memo(store: Store) -> Store:
        store.memo = RecordCache.for_store(store).object_memo()  # as the facade injects it
        return store

    store = with_memo(Store.discover(repo))
    head = rev(repo, "HEAD")
    assert store.blob_id_at(head, "src/app.py") == rev(repo, f"{head}:src/app.py")
    # A second store (another process) answers from the cache database, without libgit2.
    again = with_memo(Store.discover(repo))
    assert again.blob_id_at(head, "src/app.py") == rev(repo, f"{head}:src/app.py")
    assert not again.opened
    assert again.blob_id_at(head, "missing.py") is None
