"""Which files a session changed: the working tree at its start, and what differs from it since.

:func:`snapshot` takes HEAD and, for every path whose working-tree content is not what HEAD
holds (modified, added, deleted, untracked and not ignored), the blob id git would store for
it (``git hash-object``, through the path's clean filter). :func:`changed_since` compares a
later working tree with such a snapshot, path by path: a path counts as changed when its
content now (working tree, or HEAD's blob when it is clean) is not its content then. So a
file already modified before the session and left alone is not counted, a file committed
during the session is, and a change made and undone is not.

Read-only: ``git status`` runs with ``--no-optional-locks`` (see :mod:`gitmem.store.gitcli`)
and never refreshes the index. Only the ``git`` executable is run (libgit2 is not loaded: a
session-start hook that finds its wake planned loads no heavy library).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.store.gitcli import Git

__all__ = ["WorkSnapshot", "changed_since", "snapshot"]

_BATCH = 500
"""Paths per ``git ls-tree`` call."""
MAX_PATHS = 5_000
"""Paths not as HEAD has them past which a snapshot is not taken (say, an untracked
``node_modules`` that is not ignored): hashing them all at every turn would slow the hooks."""


@dataclass(frozen=True)
class WorkSnapshot:
    """The working tree at one moment.

    Attributes:
        head: HEAD's commit, or ``None`` when HEAD is unborn.
        files: path (from the top of the working tree) -> the blob id of its working-tree
            content, ``None`` when it is deleted, for every path not as HEAD has it.
        complete: ``False`` when more than :data:`MAX_PATHS` paths were not as HEAD has
            them: ``files`` is then empty, and nothing can be compared with it.
    """

    head: str | None
    files: Mapping[str, str | None] = field(default_factory=dict)
    complete: bool = True

    def to_plain(self) -> dict[str, Any]:
        """JSON-ready: ``{"head": ..., "files": {...}, "complete": ...}``."""
        return {"head": self.head, "files": dict(self.files), "complete": self.complete}

    @classmethod
    def from_plain(cls, data: object) -> WorkSnapshot | None:
        """Inverse of :meth:`to_plain`; ``None`` when ``data`` is not what it returns."""
        if not isinstance(data, dict):
            return None
        head, files = data.get("head"), data.get("files")
        if not (head is None or isinstance(head, str)) or not isinstance(files, dict):
            return None
        if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in files.items()):
            return None
        return cls(head, files, data.get("complete", True) is not False)


def _dirty_paths(git: Git) -> list[str]:
    """Paths whose index or working tree differs from HEAD, and untracked files not ignored."""
    out = git.output("status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames",
                     "--ignore-submodules=all")
    paths = []
    for record in out.split(b"\0"):
        if record[:2] == b"1 ":
            paths.append(record.split(b" ", 8)[8])
        elif record[:2] == b"u ":
            paths.append(record.split(b" ", 10)[10])
        elif record[:2] == b"? ":
            paths.append(record[2:])
    return [p.decode("utf-8", "surrogateescape") for p in paths]


def _worktree_ids(git: Git, paths: Iterable[str]) -> dict[str, str | None]:
    """The blob id git would store for each working-tree file; ``None``: not a file there."""
    found: dict[str, str | None] = {}
    present: list[str] = []
    for path in paths:
        if git.workdir is not None and "\n" not in path and os.path.isfile(git.workdir / path):
            present.append(path)
        else:
            found[path] = None
    if present:
        data = "".join(f"{path}\n" for path in present).encode("utf-8", "surrogateescape")
        out = git.run("hash-object", "--stdin-paths", data=data)
        ids = out.stdout.decode().split() if out.returncode == 0 else []
        for path, oid in zip(present, ids, strict=False):
            found[path] = oid
        for path in present[len(ids):]:  # hash-object stopped (a file vanished): unknown = absent
            found[path] = None
    return found


def _blob_ids(git: Git, commit: str | None, paths: list[str]) -> dict[str, str]:
    """The blob id of each of ``paths`` in ``commit``'s tree (paths it lacks are left out)."""
    found: dict[str, str] = {}
    if commit is None:
        return found
    wanted = set(paths)
    for start in range(0, len(paths), _BATCH):
        out = git.output("ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths[start:start + _BATCH])
        for record in out.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            parts = meta.split()
            path = name.decode("utf-8", "surrogateescape")
            if len(parts) == 3 and parts[1] == b"blob" and path in wanted:
                found[path] = parts[2].decode()
    return found


def _snapshot(git: Git, head: str | None) -> WorkSnapshot:
    paths = _dirty_paths(git)
    if len(paths) > MAX_PATHS:
        return WorkSnapshot(head, {}, complete=False)
    return WorkSnapshot(head, _worktree_ids(git, paths))


def snapshot(git_dir: Path, workdir: Path, head: str | None) -> WorkSnapshot:
    """HEAD and the content of every path not as HEAD has it, now.

    Args:
        git_dir: the worktree's git directory.
        workdir: its working tree.
        head: HEAD's commit now (``None``: unborn), as the store read it.

    Raises:
        GitmemError: git cannot be run, or ``git status`` failed.
    """
    return _snapshot(Git(git_dir, workdir), head)


def changed_since(git_dir: Path, workdir: Path, head: str | None, start: WorkSnapshot) -> list[str]:
    """The paths whose content is not what it was at ``start``, sorted (arguments as :func:`snapshot`).

    ``[]`` when ``start`` or the working tree now is not :attr:`~WorkSnapshot.complete`.

    Raises:
        GitmemError: git cannot be run, or one of its reads failed (``start.head`` no
            longer in the repository, for one).
    """
    git = Git(git_dir, workdir)
    now = _snapshot(git, head) if start.complete else None
    if now is None or not now.complete:
        return []
    candidates = set(start.files) | set(now.files)
    if start.head != now.head and now.head is not None:
        if start.head is None:
            out = git.output("ls-tree", "-r", "-z", "--name-only", "--full-tree", now.head)
        else:
            out = git.output("diff-tree", "-r", "-z", "--name-only", "--no-renames", start.head, now.head)
        candidates |= {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
    ordered = sorted(candidates)
    then_head = _blob_ids(git, start.head, [p for p in ordered if p not in start.files])
    now_head = _blob_ids(git, now.head, [p for p in ordered if p not in now.files])

    def then(path: str) -> str | None:
        return start.files[path] if path in start.files else then_head.get(path)

    def current(path: str) -> str | None:
        return now.files[path] if path in now.files else now_head.get(path)

    return [path for path in ordered if then(path) != current(path)]
