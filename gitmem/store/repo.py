"""The repository the memory ref lives in: finding it, its paths, HEAD, and commit queries.

:class:`Repository` is the part of :class:`~gitmem.store.Store` that knows where the git
files are. It opens libgit2 only when a caller needs an object: a warm read answers its
questions (paths, HEAD, a ref) from the files alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import EmptyRepository, GitmemError, NotARepository
from gitmem.store.gitdir import Located, Unsupported, foreign_owner, locate, read_ref

if TYPE_CHECKING:
    import pygit2

    from gitmem.store.code import CodeHistory
    from gitmem.store.fallback import GitAccess

__all__ = ["HEX", "Repository", "pg"]

HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A full object id: SHA-1 (40 hex digits) or SHA-256 (64)."""


def pg() -> Any:
    """The pygit2 module, imported on first use.

    libgit2 costs ~0.13 s to load: a warm read that finds everything in the cache
    reads its two refs from files and never loads it.
    """
    import pygit2

    return pygit2


def _layout_set_elsewhere(located: Located | None) -> bool:
    """Whether git would place this repository otherwise than the ``.git`` found by walking up.

    True when git's layout variables are set (:func:`~gitmem.store.gitcli.layout_variables_set`),
    or the config of the repository found sets ``core.worktree`` (the work tree lives
    elsewhere). One small file read; the config text is searched for the key, and a false
    positive only costs one ``git rev-parse``.
    """
    from gitmem.store.gitcli import layout_variables_set

    if layout_variables_set():
        return True
    if located is None:
        return False
    for config in (located.common_dir / "config", located.git_dir / "config.worktree"):
        try:
            text = config.read_text(errors="replace")
        except OSError:
            continue
        if re.search(r"^\s*worktree\s*=", text, re.IGNORECASE | re.MULTILINE):
            return True
    return False


def _located_by_git(start: Path) -> Located | None:
    """Where git itself, run in ``start``, puts the repository (see :func:`~gitmem.store.gitcli.layout`)."""
    from gitmem.store.gitcli import layout

    found = layout(start)
    return None if found is None else Located(*found)


def _differs(libgit2_workdir: str | None, workdir: Path) -> bool:
    return libgit2_workdir is None or Path(libgit2_workdir).resolve() != workdir.resolve()


class Repository:
    """Where a repository's files are, and the libgit2 handle opened on first use.

    Made from a pygit2 repository, a :class:`~gitmem.store.gitdir.Located` git directory
    (the usual layout, read without libgit2), or both.

    Raises:
        ValueError: neither is given.
    """

    def __init__(self, repo: pygit2.Repository | None = None, located: Located | None = None):
        if repo is None and located is None:
            raise ValueError("Store needs a pygit2 repository or a located git directory")
        self._repo = repo
        self._located = located
        self._code: CodeHistory | None = None
        self._access: GitAccess | None = None

    @classmethod
    def discover(cls, path: str | os.PathLike[str] = ".") -> Repository:
        """See :meth:`gitmem.store.Store.discover`."""
        start = Path(path).resolve()
        if not start.exists():
            raise NotARepository(f"no such directory: {path}", "pass an existing directory to -C")
        try:
            located = locate(start)
        except (Unsupported, OSError):
            located = None
        if _layout_set_elsewhere(located):
            located = _located_by_git(start)
        if located is not None:
            found_here = cls(located=located)
            if foreign_owner(located):
                _ = found_here.repo  # libgit2 applies safe.directory as git does
            return found_here
        found = pg().discover_repository(str(start))
        if found is None:
            raise NotARepository(
                f"not a git repository (or any parent up to /): {start}",
                "run tur inside a git repository, or `git init` one first",
            )
        from gitmem.store.fallback import open_repository

        return cls(open_repository(found))

    def drop_object_cache(self) -> None:
        """Free libgit2's parsed objects of this repository; its handles reopen on next use.

        libgit2 keeps every commit and tree it parsed (up to 256 MiB a process, counted
        below their real cost), and each write to the memory ref makes the old tip's trees
        dead weight: a long-running process (``tur mcp``, ``tur serve``, the watcher) grew by
        them on every write (about 2.5 KiB a call, GitHub issue 29). Objects a caller still
        holds stay valid.
        """
        if self._repo is not None:
            self._repo.free()

    @property
    def is_open(self) -> bool:
        """Whether libgit2 has opened the repository (a warm read never opens it)."""
        return self._repo is not None

    @property
    def repo(self) -> pygit2.Repository:
        """See :meth:`gitmem.store.Store.repo`."""
        if self._repo is None:
            assert self._located is not None
            from gitmem.store.fallback import open_repository

            where = self._located
            repo = open_repository(str(where.git_dir), where.workdir or where.git_dir)
            if where.workdir is not None and _differs(repo.workdir, where.workdir):
                # GIT_WORK_TREE is git's, not libgit2's: libgit2 opens the git dir as bare.
                repo.workdir = str(where.workdir)
            self._repo = repo
        return self._repo

    @property
    def access(self) -> GitAccess:
        """Objects, index and working tree through libgit2, or git where libgit2 falls short."""
        if self._access is None:
            from gitmem.store.fallback import GitAccess

            self._access = GitAccess(self.repo)
        return self._access

    def code(self) -> CodeHistory:
        """The :class:`~gitmem.store.code.CodeHistory` of this repository (one per repository)."""
        if self._code is None:
            from gitmem.store.code import CodeHistory

            self._code = CodeHistory(self.repo, self.access)
        return self._code

    @property
    def workdir(self) -> Path | None:
        """Root of the working tree, or ``None`` for a bare repository."""
        if self._located is not None:
            return self._located.workdir
        return Path(self.repo.workdir) if self.repo.workdir else None

    @property
    def git_dir(self) -> Path:
        """The ``.git`` directory of this worktree."""
        if self._located is not None:
            return self._located.git_dir
        return Path(self.repo.path)

    @property
    def common_dir(self) -> Path:
        """The git directory shared by all worktrees (where refs and objects live)."""
        if self._located is not None:
            return self._located.common_dir
        marker = self.git_dir / "commondir"
        if marker.exists():
            return (self.git_dir / marker.read_text().strip()).resolve()
        return self.git_dir

    @property
    def cache_dir(self) -> Path:
        """``<git common dir>/tur/cache``: derived data only, safe to delete at any time."""
        return self.common_dir / "tur" / "cache"

    @property
    def is_bare(self) -> bool:
        """True for a bare repository (no working tree)."""
        if self._located is not None:
            return self._located.workdir is None
        return bool(self.repo.is_bare)

    def file_ref(self, name: str) -> tuple[bool, str | None]:
        """(answered, sha) from the ref files; not answered when libgit2 must decide."""
        if self._located is None:
            return False, None
        try:
            return True, read_ref(self._located, name)
        except (Unsupported, OSError):
            return False, None

    def index_entries(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """See :meth:`gitmem.store.Store.index_entries`."""
        from gitmem.store.index import index_entries

        workdir = self.workdir
        return {} if workdir is None else index_entries(workdir, paths)

    def unborn_head(self) -> EmptyRepository:
        """See :meth:`gitmem.store.Store.unborn_head`."""
        from gitmem.store.gitcli import Git

        try:  # git itself: this is only reached on an error path, and reads any repository
            git = Git(self.git_dir, self.workdir)
            head = git.run("symbolic-ref", "-q", "HEAD").stdout.decode("utf-8", "replace").strip()
            listed = git.run("for-each-ref", "--format=%(refname:short)", "refs/heads/").stdout
            branches = sorted(listed.decode("utf-8", "replace").split())
        except GitmemError:
            head, branches = "", []
        if not branches or not head:
            return EmptyRepository("the repository has no commits yet", "commit something first")
        name = head.removeprefix("refs/heads/")
        shown = ", ".join(branches[:5]) + (f" and {len(branches) - 5} more" if len(branches) > 5 else "")
        return EmptyRepository(f"HEAD names branch '{name}', which has no commits (branches: {shown})",
                               f"point HEAD at one: git symbolic-ref HEAD refs/heads/{branches[0]}")

    def loose_commit_parents(self, sha: str) -> list[str] | None:
        """See :meth:`gitmem.store.Store.loose_commit_parents`."""
        import zlib

        common = self.common_dir
        if ((common / "shallow").exists()
                or (common / "info" / "grafts").exists() or (common / "refs" / "replace").exists()
                or not HEX.fullmatch(sha)):
            return None
        try:
            packed = (common / "packed-refs").read_bytes()
        except OSError:
            packed = b""
        if b" refs/replace/" in packed:
            return None
        try:
            data = zlib.decompress((common / "objects" / sha[:2] / sha[2:]).read_bytes())
        except (OSError, zlib.error):
            return None
        header, _, body = data.partition(b"\0")
        if not header.startswith(b"commit "):
            return None
        parents = []
        for line in body.split(b"\n"):
            if line.startswith(b"parent "):
                parents.append(line[7:].decode("ascii", "replace"))
            elif not line.startswith(b"tree "):
                break
        return parents

    def head_sha(self) -> str | None:
        """Full SHA of HEAD's commit, or ``None`` when HEAD is unborn (no commits yet)."""
        answered, sha = self.file_ref("HEAD")
        if answered:
            return sha
        if self.repo.head_is_unborn:
            return None
        return str(self.repo.head.target)

    def has_commit(self, sha: str) -> bool:
        """Whether ``sha`` is a commit in the object database."""
        try:
            return isinstance(self.repo[sha], pg().Commit)
        except (KeyError, ValueError):
            return False

    def is_ancestor(self, ancestor: str, of: str) -> bool:
        """True when ``ancestor`` is ``of`` or one of its ancestors."""
        return ancestor == of or bool(self.repo.descendant_of(of, ancestor))
