"""libgit2 where it can, the ``git`` executable where it cannot: the one place that decides.

The rest of the store asks :class:`GitAccess` for objects, the index's view of the
working tree and working-tree files, and never learns which of the two answered.
The common case runs on libgit2 alone, in process: a git subprocess starts only when
libgit2 cannot give the answer git would.

- An object missing in a partial or treeless clone: one ``git fetch`` of it and of every
  other missing object the caller names, as git's own lazy fetch runs it; then libgit2
  (which rereads the object store), or a persistent ``git cat-file --batch``.
- An index libgit2 cannot read (split index, sparse index, a newer extension):
  ``git status --porcelain=v2``, ``git ls-files -s`` and ``git check-attr``.
- Skip-worktree paths (sparse checkout) that libgit2 calls deleted or modified:
  ``git ls-files -t`` for those paths, only when the index is of a version that can
  hold the bit.
- A file with a clean/smudge filter driver or ``ident`` in ``.gitattributes``:
  ``git hash-object --stdin-paths`` (the files through their clean filter, into a
  temporary object directory); attributes decided once per path.
- Another user's repository: the error git gives, with its ``safe.directory`` fix; a
  write denied: :class:`~gitmem.errors.ReadOnlyRepository`; SHA-256 object ids:
  :class:`~gitmem.errors.UnsupportedRepository`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pygit2
from pygit2.enums import FileStatus

from gitmem.errors import (
    MissingObject,
    OutsideWorkTree,
    ReadOnlyRepository,
    UnsafeRepository,
    UnsupportedRepository,
)
from gitmem.store.gitcli import Git, PathStatus
from gitmem.store.paths import worktree_path

__all__ = [
    "WT_FLAGS",
    "GitAccess",
    "open_repository",
    "unsafe_error",
    "write_error",
]

#: Status bits of a working-tree change (against the index).
WT_FLAGS = (
    FileStatus.WT_MODIFIED | FileStatus.WT_DELETED | FileStatus.WT_RENAMED | FileStatus.WT_TYPECHANGE
)
_STAGED = {"M": FileStatus.INDEX_MODIFIED, "T": FileStatus.INDEX_TYPECHANGE, "A": FileStatus.INDEX_NEW,
           "D": FileStatus.INDEX_DELETED, "R": FileStatus.INDEX_RENAMED, "C": FileStatus.INDEX_NEW}
_UNSTAGED = {"M": FileStatus.WT_MODIFIED, "T": FileStatus.WT_TYPECHANGE, "D": FileStatus.WT_DELETED}
#: Attributes that make git run a path through a filter before it stores it (besides eol).
_FILTER_ATTRS = ("filter", "ident")
#: What libgit2 and git say about a repository whose owner is someone else.
_UNSAFE_MARKS = ("not owned by current user", "dubious ownership")
_DENIED_MARKS = ("permission denied", "read-only file system", "operation not permitted")


# -- opening ---------------------------------------------------------------------------------


def unsafe_error(path: Path | str) -> UnsafeRepository:
    """The error for a repository git refuses because another user owns it (``safe.directory``)."""
    return UnsafeRepository(
        f"detected dubious ownership in repository at '{path}': another user owns it, and git "
        "refuses to work in it",
        f"if you trust it, run: git config --global --add safe.directory {path}",
    )


def open_repository(path: str, top: Path | None = None) -> pygit2.Repository:
    """Open the repository at ``path`` (a git directory or a working tree) with libgit2.

    Args:
        path: what to open.
        top: the working tree (or git directory) named in an ownership error.

    Raises:
        UnsafeRepository: another user owns it and ``safe.directory`` does not list it.
        UnsupportedRepository: libgit2 cannot open it (SHA-256 object ids, an unknown
            extension).
    """
    try:
        return pygit2.Repository(path)
    except pygit2.GitError as exc:
        text = str(exc)
        if any(mark in text for mark in _UNSAFE_MARKS):
            raise unsafe_error(top or _owner_path(text, path)) from None
        if "object format" in text and "sha256" in text:
            raise UnsupportedRepository(
                f"the repository at {top or path} uses SHA-256 object ids, which the libgit2 "
                "under gitmem cannot read",
                "gitmem works in repositories with SHA-1 ids (git's default)",
            ) from None
        raise UnsupportedRepository(
            f"libgit2 cannot open the repository at {top or path}: {text}",
            "git can: please report this to gitmem with the message and `git --version`",
        ) from None


def _owner_path(message: str, fallback: str) -> str:
    """The path libgit2 names in "repository path '<p>' is not owned by current user"."""
    _, sep, rest = message.partition("repository path '")
    return rest.partition("'")[0] if sep else fallback


def write_error(exc: BaseException, where: Path) -> ReadOnlyRepository | None:
    """The error to show when writing to the repository at ``where`` failed with ``exc``, if it is denied.

    Returns:
        :class:`ReadOnlyRepository` when the cause is a permission (or a read-only file
        system); ``None`` for any other failure, which stays what it was.
    """
    lines = [line.strip() for line in str(exc).splitlines()
             if any(mark in line.lower() for mark in _DENIED_MARKS)]
    if not lines:
        return None
    return ReadOnlyRepository(
        f"the repository at {where} is not writable ({lines[0].removeprefix('fatal: ')}); "
        "nothing was stored",
        "run tur as a user who can write to it; commands that only read work as they are",
    )


# -- one repository --------------------------------------------------------------------------


class GitAccess:
    """libgit2 over one repository, with the ``git`` executable behind it where libgit2 falls short.

    Args:
        repo: the open libgit2 repository.
    """

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._git: Git | None = None
        self._promisors: list[str] | None = None
        self._filtered: dict[str, bool] = {}
        self._index_ids: dict[str, str | None] | None = None
        self._changed: list[str] = []  # working-tree changes of the last status
        self._cleaned: dict[str, bytes] = {}

    @property
    def git(self) -> Git:
        """The git executable for this repository (nothing runs until a command is asked for)."""
        if self._git is None:
            workdir = Path(self.repo.workdir) if self.repo.workdir else None
            self._git = Git(Path(self.repo.path), workdir)
        return self._git

    # -- objects ----------------------------------------------------------------------------

    def promisor_remotes(self) -> list[str]:
        """The remotes that promise missing objects (a partial clone's), in git's order."""
        if self._promisors is None:
            config = self.repo.config
            names: list[str] = []
            if "extensions.partialclone" in config:
                names.append(str(config["extensions.partialclone"]))
            for entry in config:
                name = entry.name
                if (name.startswith("remote.") and name.endswith(".promisor")
                        and str(entry.value).lower() in ("true", "yes", "on", "1")):
                    remote = name[len("remote.") : -len(".promisor")]
                    if remote not in names:
                        names.append(remote)
            self._promisors = names
        return self._promisors

    def _has(self, oid: str) -> bool:
        try:
            return oid in self.repo
        except ValueError:
            return False

    def ensure(self, oids: Iterable[str]) -> None:
        """Fetch, in one request, those of ``oids`` a partial clone lacks (nothing otherwise).

        Raises:
            MissingObject: the promisor remotes could not supply them.
        """
        remotes = self.promisor_remotes()
        if not remotes:
            return
        missing = sorted({oid for oid in oids if not self._has(oid)})
        reason = None
        for remote in remotes:
            if not missing:
                return
            reason = self.git.fetch_missing(remote, missing)
            missing = [oid for oid in missing if not self._has(oid)]
        if missing:
            raise self._missing(missing[0], reason)

    def _missing(self, oid: str, reason: str | None = None) -> MissingObject:
        remotes = self.promisor_remotes()
        if remotes:
            return MissingObject(
                f"object {oid[:12]} is not in this partial clone and could not be fetched from "
                f"{remotes[0]!r}" + (f": {reason}" if reason else ""),
                f"check that `git fetch {remotes[0]}` works, then run the command again",
            )
        return MissingObject(f"object {oid[:12]} is missing from the repository",
                             "the repository may be damaged: run `git fsck`")

    def get(self, oid: str, also: Callable[[], Iterable[str]] | None = None) -> pygit2.Object:
        """The object ``oid`` (full hex), fetched first if a partial clone lacks it.

        Args:
            oid: the object's id.
            also: on a miss, the ids of other objects likely to be wanted next, fetched in
                the same request (a partial clone's records, say).

        Raises:
            MissingObject: no such object, and no promisor remote could supply it.
        """
        try:
            return self.repo[oid]
        except KeyError:
            pass
        self.ensure([oid, *(also() if also is not None else ())])
        try:
            return self.repo[oid]  # libgit2 rereads the object store after a miss
        except KeyError:
            raise self._missing(oid) from None

    def tree_of(self, commit: str | pygit2.Commit) -> pygit2.Tree:
        """The root tree of ``commit`` (a full hex id or the commit), fetched if a treeless clone lacks it.

        Fetching a tree from a promisor remote brings its subtrees with it (the request
        filters out blobs only), so the paths below it can be read too.

        Raises:
            MissingObject: the commit or its tree is missing and cannot be fetched.
            TypeError: ``commit`` names an object that is not a commit (a caller's bug).
        """
        if isinstance(commit, str):
            found = self.get(commit)
            if not isinstance(found, pygit2.Commit):
                raise TypeError(f"object {commit} is a {found.type_str}, not a commit")
            commit = found
        tree = self.get(str(commit.tree_id))
        if not isinstance(tree, pygit2.Tree):
            raise TypeError(f"object {commit.tree_id} is a {tree.type_str}, not a tree")
        return tree

    def blob(self, oid: str, also: Callable[[], Iterable[str]] | None = None) -> bytes:
        """The content of the blob ``oid``.

        libgit2 first; on a miss in a partial clone, one fetch of ``oid`` and of ``also()``;
        what libgit2 still cannot read comes from ``git cat-file --batch``, which sees what
        git sees.

        Raises:
            MissingObject: git has no such object either.
            TypeError: ``oid`` names an object that is not a blob (a caller's bug).
        """
        try:
            obj = self.repo[oid]
        except KeyError:
            obj = None
        if obj is None and self.promisor_remotes():
            self.ensure([oid, *(also() if also is not None else ())])
            try:
                obj = self.repo[oid]
            except KeyError:
                obj = None
        if obj is None:
            found = self.git.cat.read(oid)
            if found is None:
                raise self._missing(oid)
            kind, data = found
            if kind != "blob":
                raise TypeError(f"object {oid} is a {kind}, not a blob")
            return data
        if not isinstance(obj, pygit2.Blob):
            raise TypeError(f"object {oid} is a {obj.type_str}, not a blob")
        return obj.data

    # -- the index and the working tree -----------------------------------------------------

    def status(self) -> dict[str, int]:
        """Tracked paths that differ from HEAD in the index or the working tree: ``{path: FileStatus bits}``.

        libgit2's status, corrected for skip-worktree paths; git's when libgit2 cannot read
        the index. Untracked files are not listed.
        """
        self._cleaned = {}
        try:
            found = dict(self.repo.status(untracked_files="no"))
        except pygit2.GitError:  # an index libgit2 cannot read: ask git
            found = self._git_status()
        else:
            self._index_ids = None
            changed = [path for path, flags in found.items() if flags & WT_FLAGS]
            if changed and self._index_has_extended_flags():
                # libgit2 ignores skip-worktree: a path outside a sparse checkout is not deleted.
                for path in self.git.skip_worktree(changed):
                    flags = found[path] & ~WT_FLAGS
                    if flags:
                        found[path] = flags
                    else:
                        del found[path]
        self._changed = [path for path, flags in found.items() if flags & WT_FLAGS]
        return found

    def _git_status(self) -> dict[str, int]:
        entries = self.git.status()
        self._index_ids = {path: entry.index_id for path, entry in entries.items()}
        return {path: _flags(entry) for path, entry in entries.items()}

    def _index_has_extended_flags(self) -> bool:
        """Whether the index can hold skip-worktree bits: version 3 or later (a 12-byte read)."""
        try:
            with open(Path(self.repo.path) / "index", "rb") as handle:
                header = handle.read(8)
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return header[:4] != b"DIRC" or int.from_bytes(header[4:8], "big") >= 3

    def index_id(self, path: str) -> str | None:
        """The blob id the index holds for ``path`` (stage 0), or ``None``."""
        if self._index_ids is not None and path in self._index_ids:
            return self._index_ids[path]
        try:
            entry = self.repo.index[path]
        except KeyError:
            return None
        except pygit2.GitError:
            return self.git.index_id(path)
        return str(entry.id)

    def worktree_file(self, path: str) -> bytes | None:
        """The working-tree file ``path`` as git would store it, or ``None`` when there is none.

        A file with a filter driver (or ``ident``) goes through git's clean filter; any
        other is its bytes on disk (a symbolic link: its target).

        Raises:
            OutsideWorkTree: ``path`` leaves the work tree (``..``, a symbolic link to a
                directory outside); nothing is opened (:func:`~gitmem.store.paths.worktree_path`).
            GitmemError: the filter failed.
        """
        workdir = self.repo.workdir
        if not workdir:
            return None
        full = str(worktree_path(Path(workdir), path))
        try:
            if os.path.islink(full):
                return os.readlink(full).encode("utf-8", errors="surrogateescape")
            with open(full, "rb") as handle:
                data = handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        if not self.is_filtered(path):
            return data
        if path not in self._cleaned:
            # Every filtered file the last status found changed, in one git process.
            batch = [p for p in self._filtered_among(self._changed)
                     if p not in self._cleaned and _confined_regular(Path(workdir), p)]
            self._cleaned.update(self.git.clean(batch if path in batch else [path]))
        return self._cleaned[path]

    def is_filtered(self, path: str) -> bool:
        """Whether git runs ``path`` through a filter driver or ``ident`` when it stores it (memoised)."""
        return path in self._filtered_among([path])

    def _filtered_among(self, paths: list[str]) -> list[str]:
        """Those of ``paths`` that have a filter driver or ``ident``; decided once per path."""
        unknown = [p for p in paths if p not in self._filtered]
        if unknown:
            try:
                attrs = {p: {name: self.repo.get_attr(p, name) for name in _FILTER_ATTRS} for p in unknown}
            except pygit2.GitError:  # attributes need the index, which libgit2 cannot read
                attrs = {p: {name: (True if value == "set" else value) for name, value in found.items()
                             if value != "unset"}
                         for p, found in self.git.attributes(unknown, _FILTER_ATTRS).items()}
            for path in unknown:
                driver = attrs.get(path, {}).get("filter")
                self._filtered[path] = attrs.get(path, {}).get("ident") is True or (
                    isinstance(driver, str) and self._has_driver(driver))
        return [p for p in paths if self._filtered[p]]

    def _has_driver(self, name: str) -> bool:
        config = self.repo.config
        return any(f"filter.{name}.{key}" in config for key in ("clean", "process"))


def _confined_regular(workdir: Path, path: str) -> bool:
    """Whether ``path`` is a regular file (not a link) reached without leaving the work tree."""
    try:
        full = worktree_path(workdir, path)
    except OutsideWorkTree:
        return False
    return full.is_file() and not full.is_symlink()


def _flags(entry: PathStatus) -> int:
    flags = 0
    if entry.conflicted:
        return int(FileStatus.CONFLICTED)
    flags |= _STAGED.get(entry.staged, 0)
    flags |= _UNSTAGED.get(entry.unstaged, 0)
    return flags
