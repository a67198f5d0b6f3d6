"""Repositories as people have them: partial clones, split and sparse indexes, sparse checkouts,
filter drivers, another user's repository, a read-only one.

Each case is a real repository built here with real git. Every state plain ``git status`` and
``git diff`` handle must work, or give one line that says what to do; "internal error" is for
gitmem's own bugs and never appears below.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem.record.models import Status
from tests.conftest import commit_file, git, learn, tur_ok
from tests.test_cli import Result, assert_one_line_error, memory_ref, tur
from tests.test_watch import status_of, watching

ROOT = Path(__file__).resolve().parent.parent
APP = "".join(f"line {i}\n" for i in range(1, 21))


def status_lines(repo: Path) -> dict[str, str]:
    """``{memory id: the rest of its line}`` from ``tur status -v`` (every memory, fresh ones too)."""
    out = tur_ok(repo, "status", "-v")
    return {line.split()[0]: line for line in out.splitlines() if line.startswith("fact-")}


def missing_objects(repo: Path, *revs: str) -> set[str]:
    """Objects reachable from ``revs`` that the (partial) clone does not have; fetches nothing."""
    out = git(repo, "rev-list", "--objects", "--missing=print", *revs)
    return {line[1:] for line in out.split() if line.startswith("?")}


# -- partial clone -------------------------------------------------------------------------------


@pytest.fixture
def partial(tmp_path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(source, origin, partial clone, memory ids): a ``--filter=blob:none`` clone with the memory ref.

    Memories are learned at the first commit; the second changes line 15 of src/app.py
    (outside the anchored lines 2-4) and renames docs/guide.md, so judging them needs blobs
    the clone never downloaded.
    """
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    commit_file(src, "src/app.py", APP, "initial")
    commit_file(src, "docs/guide.md", "".join(f"guide {i}\n" for i in range(1, 30)), "guide")
    ids = {
        "app": learn(src, "the app prints lines", "--file", "src/app.py#L2-L4"),
        "guide": learn(src, "the guide has thirty lines", "--file", "docs/guide.md#L1-L3"),
        "free": learn(src, "the team prefers small commits"),
    }
    (src / "src/app.py").write_text(APP.replace("line 15\n", "line fifteen\n"))
    git(src, "mv", "docs/guide.md", "docs/manual.md")
    git(src, "commit", "-qam", "line 15, guide renamed")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(src, "push", "-q", str(origin), "refs/tur/memories")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", origin.as_uri(), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/tur/memories:refs/tur/memories")
    assert missing_objects(clone, "refs/tur/memories"), "the memory blobs should be missing"
    return src, origin, clone, ids


def test_a_partial_clone_lists_wakes_and_verifies_fetching_what_it_lacks_in_one_go(partial):
    _, _, clone, ids = partial
    listed = tur_ok(clone, "list")
    assert all(mid in listed for mid in ids.values())
    assert missing_objects(clone, "refs/tur/memories") == set()
    assert "the team prefers small commits" in tur_ok(clone, "wake")
    rows = status_lines(clone)
    # line 15 changed at HEAD: lines 2-4 of the old blob (fetched on demand) are unchanged
    assert "fresh" in rows[ids["app"]]
    # the rename is found by similarity, which reads blobs the clone had not downloaded
    assert "-> docs/manual.md#L1-L3" in rows[ids["guide"]]
    verified = tur_ok(clone, "verify")
    assert "stale" not in verified


def test_a_partial_clone_syncs_with_its_origin(partial):
    src, origin, clone, ids = partial
    git(clone, "config", "--add", "remote.origin.fetch",
        "+refs/tur/memories:refs/tur/remotes/origin/memories")
    learn(src, "added on the source after the clone")
    git(src, "push", "-q", str(origin), "refs/tur/memories")
    learn(clone, "added in the partial clone")
    synced = tur_ok(clone, "sync")
    assert "merge origin" in synced and "push to origin done" in synced, synced
    listed = tur_ok(clone, "list")
    assert "added on the source" in listed and "added in the partial clone" in listed
    assert git(origin, "rev-parse", "refs/tur/memories").strip() == memory_ref(clone)


def test_a_treeless_clone_fetches_whole_trees_it_lacks(partial, tmp_path):
    _, origin, _, ids = partial
    clone = tmp_path / "treeless"
    git(tmp_path, "clone", "-q", "--filter=tree:0", origin.as_uri(), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/tur/memories:refs/tur/memories")
    assert missing_objects(clone, "refs/tur/memories")
    assert all(mid in tur_ok(clone, "list") for mid in ids.values())
    rows = status_lines(clone)
    assert "fresh" in rows[ids["app"]]
    assert "-> docs/manual.md#L1-L3" in rows[ids["guide"]]
    assert "learn" in tur_ok(clone, "show", ids["app"])


def test_a_partial_clone_whose_remote_is_gone_says_which_object_it_cannot_fetch(partial, tmp_path):
    _, origin, clone, _ = partial
    shutil.move(origin, tmp_path / "moved.git")
    result = tur(clone, "list")
    assert_one_line_error(result, "is not in this partial clone and could not be fetched from 'origin'",
                          "git fetch origin")
    assert "internal error" not in result.err


# -- split index, sparse index, sparse checkout ------------------------------------------------


@pytest.fixture
def anchored(repo) -> tuple[Path, str, str]:
    """``repo`` with docs/guide.md added, a memory on src/app.py lines 2-4 and one on the guide."""
    commit_file(repo, "docs/guide.md", "the guide\n", "guide")
    app = learn(repo, "the app prints lines", "--file", "src/app.py#L2-L4")
    guide = learn(repo, "the guide exists", "--file", "docs/guide.md")
    return repo, app, guide


def test_a_split_index_is_read_through_git_for_status_verify_and_watch(anchored):
    repo, app, guide = anchored
    git(repo, "update-index", "--split-index")
    assert list(repo.joinpath(".git").glob("sharedindex.*"))
    rows = status_lines(repo)
    assert "fresh" in rows[app] and "fresh" in rows[guide]
    tur_ok(repo, "verify")
    (repo / "src/app.py").write_text(APP.replace("line 3\n", "line three\n"))
    git(repo, "add", "src/app.py")
    staged = status_lines(repo)[app]
    assert "index (staged): line 3 modified" in staged, staged
    git(repo, "reset", "-q", "src/app.py")
    git(repo, "checkout", "--", "src/app.py")
    assert "fresh" in status_lines(repo)[app]
    with watching(repo) as run:
        (repo / "src/app.py").write_text(APP.replace("line 4\n", "line four\n"))
        event = run.wait_for(lambda e: e.changes, "a status change")
        assert status_of(event, app)[0] is Status.STALE


def test_the_index_read_through_git_agrees_with_libgit2(repo):
    """Every kind of change, seen by libgit2 and then, after --split-index, through git."""
    import pygit2

    from gitmem.store.code import CodeHistory

    for name in ("staged", "both", "unstaged", "deleted", "removed", "typechange"):
        commit_file(repo, f"f/{name}.txt", f"{name}\n", name)
    for name in ("staged", "both"):
        (repo / f"f/{name}.txt").write_text(f"{name} staged\n")
        git(repo, "add", f"f/{name}.txt")
    (repo / "f/both.txt").write_text("both staged, then edited\n")
    (repo / "f/unstaged.txt").write_text("unstaged edit\n")
    (repo / "f/deleted.txt").unlink()
    git(repo, "rm", "-q", "f/removed.txt")
    (repo / "f/typechange.txt").unlink()
    (repo / "f/typechange.txt").symlink_to("staged.txt")
    (repo / "f/new.txt").write_text("new\n")
    git(repo, "add", "f/new.txt")

    def seen() -> tuple[dict[str, int], dict[str, list[tuple[str, bytes | None]]]]:
        history = CodeHistory(pygit2.Repository(str(repo)))
        status = history.access.status()
        state = history.worktree()
        head = history.head_sha()
        assert head is not None
        changes = {path: [(c.where, c.data) for c in state.changes(path, history.blob_at(head, path))]
                   for path in status}
        return status, changes

    by_libgit2 = seen()
    git(repo, "update-index", "--split-index")
    with pytest.raises(pygit2.GitError):
        pygit2.Repository(str(repo)).status()
    assert seen() == by_libgit2
    assert set(by_libgit2[0]) == {f"f/{name}.txt" for name in
                                  ("staged", "both", "unstaged", "deleted", "removed", "typechange", "new")}
    assert by_libgit2[1]["f/both.txt"] == [("index (staged)", b"both staged\n"),
                                           ("working tree", b"both staged, then edited\n")]


def test_a_file_outside_a_sparse_checkout_is_as_head_has_it_not_deleted(anchored):
    repo, app, guide = anchored
    git(repo, "sparse-checkout", "set", "src")
    assert not (repo / "docs/guide.md").exists()
    before = memory_ref(repo)
    rows = status_lines(repo)
    assert "fresh" in rows[guide] and "deleted" not in rows[guide]
    verified = tur_ok(repo, "verify")
    assert "stale" not in verified
    assert memory_ref(repo) == before  # nothing to record
    # an edit inside the cone is still seen
    (repo / "src/app.py").write_text(APP.replace("line 2\n", "line two\n"))
    assert "working tree: line 2 modified" in status_lines(repo)[app]


def test_a_sparse_index_is_read_through_git(anchored):
    repo, app, guide = anchored
    git(repo, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(repo, "sparse-checkout", "set", "src")
    assert "docs/" in git(repo, "ls-files", "--sparse")  # a directory entry: libgit2 cannot read it
    rows = status_lines(repo)
    assert "fresh" in rows[guide] and "fresh" in rows[app]
    (repo / "src/app.py").write_text(APP.replace("line 2\n", "line two\n"))
    assert "working tree: line 2 modified" in status_lines(repo)[app]


# -- filter drivers --------------------------------------------------------------------------

#: A keyword filter: the working tree shows ``$Rev: 42 $`` where git stores ``$Rev$``.
SMUDGE = r"""sed 's/\$Rev\$/$Rev: 42 $/'"""
CLEAN = r"""sed 's/\$Rev: [^$]*\$/$Rev$/'"""


@pytest.fixture
def filtered(empty_repo) -> Path:
    """A repository whose ``*.kw`` files go through the ``kw`` clean/smudge driver."""
    repo = empty_repo
    git(repo, "config", "filter.kw.smudge", SMUDGE)
    git(repo, "config", "filter.kw.clean", CLEAN)
    commit_file(repo, ".gitattributes", "*.kw filter=kw\n", "attributes")
    commit_file(repo, "f.kw", "a\n$Rev$\nb\nc\nd\n", "keyword file")
    (repo / "f.kw").unlink()
    git(repo, "checkout", "--", "f.kw")  # smudged on checkout
    assert "$Rev: 42 $" in (repo / "f.kw").read_text()
    assert git(repo, "status", "--porcelain") == ""
    return repo


def test_a_filtered_file_on_a_clean_tree_is_anchored_and_compared_through_its_clean_filter(filtered):
    repo = filtered
    ranged = learn(repo, "the keyword line", "--file", "f.kw#L1-L3")
    whole = learn(repo, "the keyword file", "--file", "f.kw")
    rows = status_lines(repo)
    assert "fresh" in rows[ranged] and "fresh" in rows[whole]
    (repo / "f.kw").write_text((repo / "f.kw").read_text().replace("d\n", "D\n"))
    rows = status_lines(repo)
    assert "fresh" in rows[ranged]
    assert "working tree: modified" in rows[whole]
    (repo / "f.kw").write_text((repo / "f.kw").read_text().replace("b\n", "B\n"))
    assert "working tree: line 3 modified" in status_lines(repo)[ranged]


def test_a_filtered_file_with_a_real_change_is_still_refused_as_uncommitted(filtered):
    repo = filtered
    (repo / "f.kw").write_text((repo / "f.kw").read_text().replace("a\n", "A\n"))
    before = memory_ref(repo)
    result = tur(repo, "learn", "x", "--type", "fact", "--file", "f.kw#L1-L2")
    assert_one_line_error(result, "has uncommitted changes")
    assert memory_ref(repo) == before


# -- another user's repository, a read-only one ----------------------------------------------


def _other_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no 'nobody' user to hand the repository to")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory outside pytest's private temporary tree, which another user can enter."""
    path = Path(tempfile.mkdtemp(prefix="tur-repo-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_another_users_repository_is_refused_with_the_safe_directory_fix(repo, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("giving the repository to another user needs root")
    learn(repo, "the team prefers small commits")
    other = _other_user()
    before = memory_ref(repo)
    subprocess.run(["chown", "-R", f"{other.pw_uid}:{other.pw_gid}", str(repo)], check=True)
    for command in (["list"], ["status"], ["wake"], ["learn", "x", "--type", "fact"]):
        result = tur(repo, *command)
        assert_one_line_error(result, "dubious ownership",
                              f"git config --global --add safe.directory {repo}")
        assert "internal error" not in result.err
    git(repo, "config", "--global", "--add", "safe.directory", str(repo))
    assert "small commits" in tur_ok(repo, "list")
    assert memory_ref(repo) == before


def _as_nobody(repo: Path, home: Path, *args: str) -> Result:
    """Run ``tur`` as the unprivileged user ``nobody`` (as root, permissions are not enforced)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
           "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "gitmem", "-C", str(repo), *args]
    if os.geteuid() == 0:
        other = _other_user()
        cmd = ["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_a_read_only_repository_reads_and_refuses_writes_in_one_line(shared_dir):
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("as root, permissions are only enforced for another user, and setpriv is missing")
    repo, home = shared_dir / "repo", shared_dir / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Reader\n\temail = reader@example.com\n")
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_file(repo, "src/app.py", APP, "initial")
    mid = learn(repo, "the app prints lines", "--file", "src/app.py#L2-L4")
    before = memory_ref(repo)
    if os.geteuid() == 0:
        other = _other_user()
        subprocess.run(["chown", "-R", f"{other.pw_uid}:{other.pw_gid}", str(shared_dir)], check=True)
    subprocess.run(["chmod", "-R", "a-w", str(repo / ".git")], check=True)
    try:
        for command in (["list"], ["wake"], ["status"], ["verify"], ["show", mid]):
            result = _as_nobody(repo, home, *command)
            assert result.code == 0, (command, result.err)
            assert mid in result.out or "1 fresh" in result.out, (command, result.out)
        for command in (["learn", "a new fact", "--type", "fact"], ["forget", mid]):
            result = _as_nobody(repo, home, *command)
            assert_one_line_error(result, "is not writable", "nothing was stored")
            assert "internal error" not in result.err
        assert git(repo, "-c", "safe.directory=*", "rev-parse", "refs/tur/memories").strip() == before
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(repo / ".git")], check=True)


def test_a_sha256_repository_is_refused_in_one_line(tmp_path):
    repo = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(repo))
    commit_file(repo, "a.txt", "a\n")
    for command in (["list"], ["status"], ["learn", "x", "--type", "fact"]):
        result = tur(repo, *command)
        assert_one_line_error(result, "uses SHA-256 object ids", "SHA-1")
        assert "internal error" not in result.err


# -- the common case ----------------------------------------------------------------------------


def test_reads_of_an_ordinary_repository_run_no_git_process(anchored, tmp_path):
    """libgit2 answers everything here: with no ``git`` on PATH, reads still work (cold cache)."""
    repo, app, _ = anchored
    (repo / "src/app.py").write_text(APP.replace("line 3\n", "line three\n"))
    shutil.rmtree(repo / ".git/tur/cache", ignore_errors=True)
    empty = tmp_path / "no-git"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": os.environ["HOME"], "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"]}
    outputs = {}
    for command in ("status", "list", "wake"):
        proc = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), command],
                              capture_output=True, text=True, env=env, check=False, timeout=120)
        assert proc.returncode == 0, (command, proc.stderr)
        outputs[command] = proc.stdout
    assert "working tree: line 3 modified" in outputs["status"]
