"""No file outside the work tree is read: paths from records, arguments, hooks and MCP are confined.

A symbolic link to a directory outside (``sub -> ../outside``) in the working tree, or ``..``
in a path, must never let gitmem open a file there: ``tur status`` on a memory anchored
through the link reports the path refused, the same whether the outside file changed or
not, and a process audit (Python's ``open`` audit event, no strace) shows nothing outside
the work tree and the git directory was opened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.errors import OutsideWorkTree
from gitmem.store import repo_relative, worktree_path
from tests.conftest import commit_file, tur

#: Runs ``tur`` with an audit hook that writes every path Python opens to the file in $OPENED.
_AUDITED = """
import os, runpy, sys
opened = open(os.environ["OPENED"], "w")
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        opened.write(os.fsdecode(args[0]) + "\\n"); opened.flush()
sys.addaudithook(hook)
sys.argv = ["tur", *sys.argv[1:]]
runpy.run_module("gitmem", run_name="__main__")
"""


def linked_out(repo: Path, tmp_path: Path) -> tuple[str, Path]:
    """A memory anchored to ``sub/f.txt``, then ``sub`` replaced by a link to a directory outside."""
    commit_file(repo, "sub/f.txt", "one\ntwo\n", "sub")
    mid = tur(repo, "learn", "sub/f.txt starts with one", "--file", "sub/f.txt#L1").out.strip()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("one\ntwo\n")
    (repo / "sub" / "f.txt").unlink()
    (repo / "sub").rmdir()
    (repo / "sub").symlink_to(outside)
    return mid, outside


def audited(repo: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    record = tmp_path / "opened.txt"
    done = subprocess.run([sys.executable, "-c", _AUDITED, "-C", str(repo), *args], capture_output=True,
                          text=True, check=False, timeout=120, env=dict(os.environ, OPENED=str(record)))
    return done, record.read_text().splitlines()


def test_status_through_a_symlinked_directory_reports_it_refused_and_never_reads_the_file(repo, tmp_path):
    mid, outside = linked_out(repo, tmp_path)
    first, opened = audited(repo, tmp_path, "status")
    assert first.returncode == 0, first.stderr
    assert f"{mid}  stale" in first.stdout
    assert "working tree: refused: 'sub/f.txt' leaves the work tree" in first.stdout
    assert "through the symbolic link sub -> " in first.stdout
    assert not [p for p in opened if str(outside) in os.path.realpath(p)]
    # Change the outside file: status must say exactly the same (no one-bit oracle).
    (outside / "f.txt").write_text("something else entirely\n")
    second, opened = audited(repo, tmp_path, "status")
    assert second.stdout == first.stdout and second.returncode == first.returncode
    assert not [p for p in opened if str(outside) in os.path.realpath(p)]
    verify, _ = audited(repo, tmp_path, "verify", "--format", "json")
    assert verify.returncode == 0 and "refused" in verify.stdout


def test_command_line_and_hook_paths_through_the_link_are_refused(repo, tmp_path):
    linked_out(repo, tmp_path)
    listed = tur(repo, "list", "--file", "sub/f.txt")
    assert listed.code != 0 and listed.err.count("\n") == 1
    assert listed.err.startswith("tur: error: ") and "outside the repository" in listed.err
    learned = tur(repo, "learn", "read through the link", "--file", "sub/f.txt")
    assert learned.code != 0 and "outside the repository" in learned.err
    payload = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read",
                          "tool_input": {"file_path": str(repo / "sub" / "f.txt")}, "cwd": str(repo)})
    hooked = tur(repo, "hook", "pre-tool", stdin=payload)
    assert (hooked.code, hooked.out) == (0, "{}\n")


@pytest.mark.parametrize("path", ["../etc/passwd", "src/../../x", "/etc/passwd", "a\x00b", ""])
def test_worktree_path_refuses_what_leaves_the_tree_by_name(repo, path):
    with pytest.raises(OutsideWorkTree, match="leaves the work tree"):
        worktree_path(repo, path)


def test_worktree_path_keeps_links_that_stay_inside_and_a_final_link_unresolved(repo, tmp_path):
    (repo / "inner").symlink_to(repo / "src")
    assert worktree_path(repo, "inner/app.py") == repo / "inner" / "app.py"
    (repo / "src" / "out.txt").symlink_to(tmp_path)  # the last component is read as a link, never through
    assert worktree_path(repo, "src/out.txt") == repo / "src" / "out.txt"
    assert repo_relative(repo, "src/app.py", repo / "src" / "..") == "src/app.py"
    with pytest.raises(OutsideWorkTree, match="outside the repository"):
        repo_relative(repo, "../elsewhere.txt", repo)
    with pytest.raises(OutsideWorkTree, match="root"):
        repo_relative(repo, ".", repo)


def test_the_watcher_never_watches_a_directory_outside_through_a_link(repo, tmp_path):
    from tests.test_watch import watching

    _, outside = linked_out(repo, tmp_path)
    with watching(repo) as run:
        dirs = [os.path.realpath(d) for d in run.watcher.watch_dirs()]
        # A change outside wakes nothing: nothing there is watched.
        (outside / "f.txt").write_text("changed outside\n")
    assert str(repo.resolve()) in dirs
    assert not [d for d in dirs if d.startswith(str(outside.resolve()))]
