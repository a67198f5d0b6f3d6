"""Following the working tree from the TUI: what to watch, and what a batch of changes re-checks.

The same triggers as ``tur watch`` (:mod:`gitmem.watch`), through the same facade calls: an
anchored file edited, replaced or deleted re-checks the memories anchored to it; an index
change with HEAD still re-checks those on the paths whose index entries changed
(:meth:`gitmem.api.Gitmem.index_entries`); a HEAD move re-checks every memory. Each check is
``Gitmem.verify(ids, explicit=False)``: the working tree's verdicts go to this clone's overlay
only, and the memory ref is written only for a HEAD move, as the watcher writes it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gitmem.api import Gitmem, VerifyOutcome

__all__ = ["Check", "WorktreeFollow"]

#: Files of a worktree's git directory whose change means HEAD or the index moved.
_GIT_FILES = frozenset({"HEAD", "index", "packed-refs"})


@dataclass(frozen=True)
class Check:
    """One re-check to run.

    Attributes:
        trigger: ``"files"`` (anchored files changed), ``"index"`` or ``"head"``.
        paths: the anchored files concerned (repository-relative), sorted.
        ids: the memories to re-check, sorted; ``None`` for every memory (HEAD moved).
    """

    trigger: str
    paths: tuple[str, ...]
    ids: tuple[str, ...] | None


class WorktreeFollow:
    """The state between batches: anchored files, HEAD and the index as last seen.

    Args:
        gm: a handle of its own (``Gitmem.reopen()``); built off the UI thread (it reads
            the anchored paths and the index).

    Raises:
        InvalidInput: never; a bare repository just gives nothing to watch (:attr:`root` is None).
    """

    def __init__(self, gm: Gitmem) -> None:
        paths = gm.paths
        self.root = _real(paths.workdir) if paths.workdir is not None else None
        self.git_dir = _real(paths.git_dir)
        self.common_dir = _real(paths.common_dir)
        self.tip = gm.tip()
        self.anchors = gm.anchored_paths()
        self.head = gm.head()
        self.index = gm.index_entries(self.anchors)

    def watch_dirs(self) -> list[str]:
        """Directories to watch, each without its subdirectories (none for a bare repository).

        The working tree's root, every directory holding an anchored file and its parents
        (a deleted directory is seen), the git directories (``HEAD``, ``index``,
        ``packed-refs``) and ``refs/heads`` with its subdirectories (a commit moves a branch).
        """
        if self.root is None:
            return []
        dirs = {self.root, self.git_dir, self.common_dir}
        for path in self.anchors:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                full = os.path.join(self.root, *parts[:i])
                if os.path.isdir(full):
                    dirs.add(full)
        for top, _subdirs, _files in os.walk(os.path.join(self.common_dir, "refs", "heads")):
            dirs.add(top)
        return sorted(dirs)

    def keep(self, change: object, path: str) -> bool:
        """True for a change that can trigger a check (the filter the browse screen applies to each batch)."""
        return self._kind(path) is not None

    def _kind(self, path: str) -> str | None:
        for git_dir in (self.git_dir, self.common_dir):
            if _under(path, git_dir):
                rel = os.path.relpath(path, git_dir).replace(os.sep, "/")
                if rel in _GIT_FILES or (rel.startswith("refs/heads/") and not rel.endswith(".lock")):
                    return "git"
                return None
        if self.root is None or not _under(path, self.root) or path == self.root:
            return None
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        return None if ".git" in rel.split("/") else "file"

    def check(self, gm: Gitmem, changed: set[str]) -> Check | None:
        """The re-check a batch of changed absolute paths calls for, or ``None``.

        Updates what was last seen (HEAD, the index entries); reads through ``gm``.
        """
        files = {os.path.relpath(p, self.root).replace(os.sep, "/")
                 for p in changed if self.root is not None and self._kind(p) == "file"}
        git_state = any(self._kind(p) == "git" for p in changed)
        paths = self._affected(files)
        if git_state:
            head = gm.head()
            if head != self.head:
                self.head = head
                self.index = gm.index_entries(self.anchors)
                return Check("head", tuple(sorted(paths)), None)
            entries = gm.index_entries(self.anchors)
            staged = {p for p in self.anchors if entries.get(p) != self.index.get(p)}
            self.index = entries
            if staged:
                paths |= staged
                return Check("index", tuple(sorted(paths)), self._ids(paths))
        if not paths:
            return None
        return Check("files", tuple(sorted(paths)), self._ids(paths))

    def run(self, gm: Gitmem, check: Check) -> VerifyOutcome:
        """Run ``check`` as a background re-check (``verify(..., explicit=False)``).

        Raises:
            GitmemError: the verify failed (an id forgotten meanwhile, HEAD unborn).
        """
        ids = list(check.ids) if check.ids is not None else None
        return gm.verify(ids, explicit=False, write=check.trigger == "head")

    def _affected(self, rels: set[str]) -> set[str]:
        hit = set()
        for rel in rels:
            if rel in self.anchors:
                hit.add(rel)
            else:  # a deleted or renamed directory
                hit.update(p for p in self.anchors if p.startswith(rel + "/"))
        return hit

    def _ids(self, paths: set[str]) -> tuple[str, ...]:
        return tuple(sorted({i for p in paths for i in self.anchors.get(p, ())}))


def _real(path: os.PathLike[str] | str) -> str:
    return os.path.realpath(path).rstrip(os.sep) or os.sep


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + os.sep)
