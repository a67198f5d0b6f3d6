"""Paths in the work tree, refused when they leave it: the one check before any file there is opened.

A path comes from a record (``context_ref``, written by whoever pushed it), a command-line
argument, a hook's JSON or an MCP call. Joined to the work tree and opened as it is, ``..``
or a symbolic link to a directory (``link -> /home/user``) would let it read any file the user
can read, and a status that says whether that file changed is a one-bit oracle on it. git
never follows a symbolic link on the way to a tracked file (``git add link/x`` is refused as
"beyond a symbolic link"); this module holds gitmem to the same rule: every directory on the
way must resolve inside the work tree. The last component may itself be a symbolic link:
callers read it as git stores it (its target text, ``os.readlink``), never through it.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitmem.errors import OutsideWorkTree

__all__ = ["repo_relative", "worktree_path"]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _first_link_out(workdir: Path, parts: list[str], root: str) -> str:
    """The first directory of ``parts`` that is a symbolic link leading out, shown as ``a/b -> target``."""
    here = workdir
    for index, part in enumerate(parts):
        here = here / part
        if here.is_symlink() and not _within(os.path.realpath(here), root):
            return f"{'/'.join(parts[:index + 1])} -> {os.readlink(here)}"
    return "/".join(parts)


def worktree_path(workdir: Path, path: str, *, directory: bool = False) -> Path:
    """The file a repository path names in the work tree, checked to stay inside it.

    Args:
        workdir: the work tree's root.
        path: a repository path (POSIX, relative to the root), e.g. a record's anchor.
        directory: ``path`` names a directory to watch or list: it is resolved too.

    Returns:
        ``workdir / path``; every directory on the way resolves (symbolic links followed) to
        a directory inside the work tree. The last component is not resolved (unless
        ``directory``).

    Raises:
        OutsideWorkTree: ``path`` is empty, absolute, holds a NUL or a ``..`` component, or
            a directory on the way is a symbolic link that leads out of the work tree.
    """
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if (not parts or path.startswith("/") or "\x00" in path or ".." in parts):
        raise OutsideWorkTree(f"{path!r} leaves the work tree {workdir}; nothing there is read",
                              "give a path inside the repository")
    root = os.path.realpath(workdir)
    full = Path(workdir, *parts)
    way = parts if directory else parts[:-1]
    if way and not _within(os.path.realpath(Path(workdir, *way)), root):
        link = _first_link_out(Path(workdir), way, root)
        raise OutsideWorkTree(
            f"{path!r} leaves the work tree {workdir} through the symbolic link {link}; "
            "nothing there is read",
            "git does not follow a symbolic link to a tracked file either")
    return full


def repo_relative(workdir: Path, path: str | os.PathLike[str], base: Path) -> str:
    """A path as typed (absolute, or relative to ``base``) as a checked repository path.

    ``..`` is judged on the name as typed (``os.path.normpath``), directories through
    symbolic links as they resolve; a symbolic link inside the work tree keeps its own path.

    Returns:
        The POSIX path relative to the work tree's root, e.g. ``"src/app.py"``.

    Raises:
        OutsideWorkTree: the path is outside the work tree, is its root, or leads out of it.
    """
    lexical = Path(os.path.normpath(Path(base) / path))
    parent = Path(os.path.realpath(lexical.parent))
    root = Path(os.path.realpath(workdir))
    try:
        rel = (parent / lexical.name).relative_to(root).as_posix()
    except ValueError:
        raise OutsideWorkTree(f"{os.fspath(path)} is outside the repository",
                              f"give a path under {workdir}") from None
    if rel in ("", "."):
        raise OutsideWorkTree(f"{os.fspath(path)} is the repository's root, not a file in it")
    worktree_path(workdir, rel)
    return rel
