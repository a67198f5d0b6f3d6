"""Finding a repository and reading refs from files, without libgit2.

The warm path of ``tur wake`` and ``tur recall`` needs only two refs (HEAD and
``refs/tur/memories``); opening libgit2 to read them costs more than the rest of
the command. This module reads them as git stores them: ``.git`` (a directory,
or a ``gitdir:`` file for linked worktrees), ``commondir``, loose ref files,
then ``packed-refs``. Anything it does not fully understand (reftable storage,
a malformed file) raises :class:`Unsupported`, and the caller asks libgit2.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Located", "Unsupported", "foreign_owner", "locate", "read_ref"]

_HEX = frozenset("0123456789abcdef")


class Unsupported(Exception):
    """The repository uses something this reader does not handle; use libgit2 instead."""


@dataclass(frozen=True)
class Located:
    """Where a repository's files are: per-worktree git dir, shared common dir, work tree."""

    git_dir: Path
    common_dir: Path
    workdir: Path | None


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and ((path / "objects").is_dir() or (path / "commondir").is_file())


def _from_git_dir(git_dir: Path, workdir: Path | None) -> Located:
    common = git_dir
    marker = git_dir / "commondir"
    if marker.is_file():
        common = (git_dir / marker.read_text().strip()).resolve()
    if (common / "reftable").exists():
        raise Unsupported("reftable ref storage")
    return Located(git_dir, common, workdir)


def locate(start: Path) -> Located | None:
    """The repository containing ``start``, found as git does, or ``None`` when there is none.

    Raises:
        Unsupported: a layout this reader does not handle (the caller falls back to libgit2).
    """
    path = start.resolve()
    for candidate in (path, *path.parents):
        dot = candidate / ".git"
        if dot.is_dir() and _is_git_dir(dot):
            return _from_git_dir(dot, candidate)
        if dot.is_file():
            text = dot.read_text().strip()
            if not text.startswith("gitdir:"):
                raise Unsupported(f"{dot} is not a gitdir file")
            target = Path(text[len("gitdir:"):].strip())
            git_dir = (candidate / target).resolve() if not target.is_absolute() else target
            if not _is_git_dir(git_dir):
                raise Unsupported(f"{git_dir} is not a git directory")
            return _from_git_dir(git_dir, candidate)
        if _is_git_dir(candidate):
            if candidate.name == ".git":
                raise Unsupported("inside a .git directory")
            return _from_git_dir(candidate, None)  # a bare repository
    return None


def foreign_owner(where: Located) -> bool:
    """Whether another user owns the working tree or the git directory (two ``stat`` calls).

    git refuses such a repository unless ``safe.directory`` lists it; the caller asks
    libgit2, which reads that setting as git does, only when this is true.
    """
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None:
        return False
    try:
        owners = {(where.workdir or where.git_dir).stat().st_uid, where.git_dir.stat().st_uid}
    except OSError:
        return False
    return owners != {uid}


def _per_worktree(name: str) -> bool:
    return name == "HEAD" or "/" not in name or name.startswith(("refs/bisect/", "refs/worktree/"))


def _packed(common_dir: Path, name: str) -> str | None:
    try:
        text = (common_dir / "packed-refs").read_text()
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if not line or line[0] in "#^":
            continue
        sha, _, ref = line.partition(" ")
        if ref == name:
            return _checked(sha, name)
    return None


def _checked(sha: str, name: str) -> str:
    if len(sha) != 40 or not set(sha) <= _HEX:
        raise Unsupported(f"ref {name} does not hold a SHA-1 object id")
    return sha


def read_ref(where: Located, name: str, depth: int = 0) -> str | None:
    """The commit SHA ``name`` (``HEAD`` or ``refs/...``) points at, following symbolic refs.

    Returns:
        40 hex digits, or ``None`` when the ref (or the branch HEAD names) does not exist.

    Raises:
        Unsupported: a malformed ref file or a symbolic-ref chain deeper than 5.
    """
    if depth > 5:
        raise Unsupported(f"symbolic ref chain too deep at {name}")
    base = where.git_dir if _per_worktree(name) else where.common_dir
    try:
        text = (base / name).read_text().strip()
    except FileNotFoundError:
        text = ""
    except (IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        raise Unsupported(str(exc)) from None
    if text.startswith("ref:"):
        return read_ref(where, text[4:].strip(), depth + 1)
    if text:
        return _checked(text, name)
    return _packed(where.common_dir, name)
