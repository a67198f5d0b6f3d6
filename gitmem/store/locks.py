"""Who can hold a ref lock: live processes, the owner files gitmem writes, and their pruning.

git takes ``<ref>.lock`` by creating it and keeps no file descriptor on it while a transaction
waits (``git update-ref --stdin`` after ``prepare`` holds the lock with the file closed), so
an open descriptor cannot tell a held lock from a left one. What can: whether a process that
could hold it still runs. A lock is removed only when none can (see
:meth:`gitmem.store.refs.Refs._clear_stale_lock`):

- the ``git update-ref`` gitmem started for it, recorded in ``<common dir>/tur/locks/<sha>``
  (host and pid), is gone; or
- no live ``git`` process on this host works in the repository (its working directory, a
  ``--git-dir`` / ``-C`` argument or ``GIT_DIR`` inside the git directory or the work tree),
  except read-only commands that never lock a ref (``cat-file --batch``, ``log``...). A git
  process this user may not inspect counts as one that could hold it.

On a host without ``/proc`` nothing can be inspected, and only the recorded owner decides.
"""

from __future__ import annotations

import os
import socket
from contextlib import suppress
from pathlib import Path

__all__ = ["alive", "can_inspect", "git_processes_in", "prune_owners"]

#: git commands that never take a ref lock: their processes cannot hold one.
_READ_ONLY = frozenset({
    "blame", "cat-file", "check-attr", "check-ignore", "commit-graph", "config", "diff",
    "diff-files", "diff-index", "diff-tree", "for-each-ref", "grep", "hash-object", "help",
    "log", "ls-files", "ls-remote", "ls-tree", "merge-base", "name-rev", "rev-list",
    "rev-parse", "show", "show-ref", "status", "var", "version",
})
#: Options of ``git`` itself that take a value as the next argument.
_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                     "--config-env"})


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one we may not signal counts as running).

    A zombie (killed, not yet reaped: what a killed git whose parent died too can stay as
    in a container whose init does not reap) is not running.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def can_inspect() -> bool:
    """Whether this host lists its processes in ``/proc`` (Linux)."""
    return Path("/proc/self/cmdline").exists()


def _within(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _subcommand(args: list[str]) -> str:
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return ""


def _works_in(pid: str, args: list[str], roots: list[str]) -> bool:
    """Whether the git process ``pid`` (command line ``args``) works in one of ``roots``."""
    base = Path("/proc") / pid
    cwd = os.readlink(base / "cwd")
    if _within(cwd, roots):
        return True
    for index, arg in enumerate(args[:-1]):
        if arg in ("-C", "--git-dir", "--work-tree") and _within(os.path.join(cwd, args[index + 1]), roots):
            return True
        if arg.startswith(("--git-dir=", "--work-tree=")) and _within(
                os.path.join(cwd, arg.partition("=")[2]), roots):
            return True
    for item in (base / "environ").read_bytes().split(b"\0"):
        if item.startswith((b"GIT_DIR=", b"GIT_COMMON_DIR=", b"GIT_WORK_TREE=")) and _within(
                os.path.join(cwd, os.fsdecode(item.partition(b"=")[2])), roots):
            return True
    return False


def git_processes_in(dirs: list[Path]) -> list[str]:
    """Live ``git`` processes on this host that could hold a ref lock of the repository at ``dirs``.

    Args:
        dirs: the repository's git directory, common directory and work tree.

    Returns:
        One description a process, e.g. ``"git process 4242 (git update-ref --stdin)"``;
        ``[]`` when ``/proc`` cannot be read. Read-only git commands (this process's own
        ``cat-file --batch``) do not count.
    """
    roots = [os.path.realpath(d) for d in dirs]
    me = os.getpid()
    found: list[str] = []
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    for pid in entries:
        base = Path("/proc") / pid
        try:
            stat = (base / "stat").read_text()
            comm = stat[stat.index("(") + 1: stat.rindex(")")]
            state = stat.rsplit(")", 1)[-1].split()[0]
            if not (comm == "git" or comm.startswith("git-")) or state == "Z" or int(pid) == me:
                continue
            args = [os.fsdecode(a) for a in (base / "cmdline").read_bytes().split(b"\0") if a]
        except (OSError, ValueError):
            continue  # gone while we looked
        if _subcommand(args) in _READ_ONLY:
            continue
        try:
            works_here = _works_in(pid, args, roots)
        except PermissionError:
            works_here = True  # another user's git: it might hold it
        except OSError:
            continue
        if works_here:
            found.append(f"git process {pid} ({' '.join(args)[:80]})")
    return found


def prune_owners(locks: Path) -> None:
    """Remove the owner files in ``locks`` (``<common dir>/tur/locks``) whose process is gone.

    An owner file names ``<host> <pid>`` of a ``git update-ref`` gitmem started; one stays
    behind when tur itself is killed while git runs. Files of another host are kept (their
    process cannot be asked), as is anything that cannot be read.
    """
    host = socket.gethostname()
    try:
        names = os.listdir(locks)
    except OSError:
        return
    for name in names:
        path = locks / name
        try:
            owner_host, pid = path.read_text().split()
        except (OSError, ValueError):
            continue
        if owner_host == host and pid.isdigit() and not alive(int(pid)):
            with suppress(OSError):
                path.unlink()
