"""Every layout git opens works for learn, wake, status and verify, run as real ``tur`` processes.

The layouts: ``GIT_DIR`` + ``GIT_WORK_TREE`` (the bare-repository dotfiles set-up),
``core.worktree``, ``GIT_COMMON_DIR``, and a linked worktree. Each test runs ``tur`` in a
subprocess with the environment git would see, so that the repository is found from the
same variables and files git reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git


def tur_in(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tur ARGS`` as its own process in ``cwd``, with ``env`` added to the environment."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "gitmem", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, check=False, timeout=120)


def tur_says(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = tur_in(cwd, *args, env=env)
    assert done.returncode == 0, f"tur {' '.join(args)} failed: {done.stderr}"
    return done.stdout


def daily_use(cwd: Path, edit: Path, env: dict[str, str] | None = None) -> None:
    """learn, wake, status and verify see the memory, and a working-tree edit makes it stale."""
    memory_id = tur_says(cwd, "learn", "the layout keeps its memories", "--file", "notes.txt#L1",
                         env=env).strip()
    assert memory_id.startswith("fact-")
    assert memory_id in tur_says(cwd, "wake", env=env)
    assert "1 fresh" in tur_says(cwd, "status", env=env)
    edit.write_text("changed\nline two\n")
    status = tur_says(cwd, "status", env=env)
    assert "1 stale" in status and "working tree: line 1 modified" in status
    verify = tur_says(cwd, "verify", env=env)
    assert memory_id in verify and "stale" in verify


def commit_notes(work: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    """Commit ``notes.txt`` at the top of the work tree ``work``, running git in ``cwd``."""
    (work / "notes.txt").write_text("first line\nline two\n")
    run_env = dict(os.environ)
    run_env.update(env or {})
    for args in (("add", "notes.txt"), ("commit", "-q", "-m", "notes")):
        subprocess.run(["git", *args], cwd=cwd or work, env=run_env, check=True, capture_output=True)


def test_git_dir_with_git_work_tree_the_dotfiles_set_up(tmp_path):
    bare = tmp_path / "dotfiles.git"
    home = tmp_path / "home"
    home.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(bare))
    env = {"GIT_DIR": str(bare), "GIT_WORK_TREE": str(home)}
    commit_notes(home, env)
    daily_use(home, home / "notes.txt", env)
    assert git(tmp_path, "--git-dir", str(bare), "rev-parse", "-q", "--verify", "refs/tur/memories").strip()


def test_without_the_variables_the_dotfiles_work_tree_is_not_a_repository(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = tur_in(home, "status")
    assert done.returncode != 0 and done.stderr.startswith("tur: error: not a git repository")


def test_core_worktree_names_the_work_tree(tmp_path):
    meta = tmp_path / "meta"
    work = tmp_path / "work"
    work.mkdir()
    git(tmp_path, "init", "-q", str(meta))
    git(meta, "config", "core.worktree", str(work))
    commit_notes(work, cwd=meta)
    assert (work / "notes.txt").is_file() and not (meta / "notes.txt").exists()
    # Run where git finds the repository (beside .git); paths are taken from the work tree's top.
    daily_use(meta, work / "notes.txt")


def test_git_common_dir_names_where_refs_and_objects_live(repo, tmp_path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    commit_notes(linked)
    env = {"GIT_DIR": str(repo / ".git" / "worktrees" / "linked"),
           "GIT_COMMON_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(linked)}
    daily_use(linked, linked / "notes.txt", env)
    # The memory ref is shared: the main worktree sees the memory learned in the linked one.
    assert "the layout keeps its memories" in tur_says(repo, "wake")


@pytest.mark.parametrize("where", ["root", "subdirectory"])
def test_linked_worktree_shares_the_memory_ref(repo, tmp_path, where):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    commit_notes(linked)
    (linked / "deep").mkdir()
    cwd = linked if where == "root" else linked / "deep"
    memory_id = tur_says(cwd, "learn", "linked worktrees share memories", "--file",
                         str(linked / "notes.txt")).strip()
    assert memory_id in tur_says(repo, "wake")
    assert "1 fresh" in tur_says(cwd, "status")
    (linked / "notes.txt").write_text("edited\n")
    assert "1 stale" in tur_says(cwd, "status")
    assert "stale" in tur_says(cwd, "verify")


def test_git_dir_alone_names_a_bare_repository(tmp_path):
    bare = tmp_path / "store.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(bare)}
    memory_id = tur_says(elsewhere, "learn", "a bare repository keeps memories too", env=env).strip()
    assert memory_id in tur_says(elsewhere, "wake", env=env)
    assert memory_id in git(tmp_path, "--git-dir", str(bare), "log", "--format=%s", "refs/tur/memories")
