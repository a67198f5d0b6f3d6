"""The memory ref ``refs/tur/memories``: fan-out trees, blobs, and compare-and-swap commits.

This is the only code that writes the memory ref. It deals in bytes and object
ids; parsing records is the codec's job. The ref is an orphan commit chain:
every change is one commit whose tree is::

    .gitmem                  format marker ("format: 1")
    memories/<2 hex>/<id>.yaml
    persona.yaml             optional
    continuity/<name>.md     optional spark notes

A change rewrites only the trees on the paths it touches (O(1) trees for one
record, whatever the number of records).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from gitmem.errors import (
    EmptyRepository,
    FormatVersion,
    GitmemError,
    NotARepository,
    RefConflict,
    RefLocked,
)
from gitmem.record.ids import shard_of
from gitmem.store.gitdir import Located, Unsupported, foreign_owner, locate, read_ref
from gitmem.store.memo import MISS, DictMemo, ObjectMemo
from gitmem.vocabulary import ID_PATTERN

__all__ = [
    "FORMAT_PATH",
    "FORMAT_VERSION",
    "MEMORY_REF",
    "STALE_LOCK_SECONDS",
    "CommitInfo",
    "LayoutProblem",
    "Mutation",
    "Store",
    "StoredBlob",
]

if TYPE_CHECKING:
    import pygit2

    from gitmem.store.code import CodeHistory
    from gitmem.store.fallback import GitAccess

MEMORY_REF = "refs/tur/memories"
FORMAT_PATH = ".gitmem"
FORMAT_VERSION = 1
_FORMAT_BLOB = f"format: {FORMAT_VERSION}\n".encode()
_ZERO = "0" * 40
_FALLBACK_NAME = "tur"
_FALLBACK_EMAIL = "tur@localhost"


@dataclass(frozen=True)
class CommitInfo:
    """One commit on the memory ref, as shown by ``tur show`` and ``tur log``."""

    sha: str
    message: str
    author: str
    time: datetime
    parents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """A blob already in the object database (written by :meth:`Store.write_blob`), by its id.

    A :class:`Mutation` may map a path to one instead of bytes: a write of many records
    then holds their ids, not their bytes, until the tree is built (and built again on a
    retry).
    """

    oid: str


@dataclass
class Mutation:
    """A change to the memory tree: ``changes`` maps a tree path to new bytes, or ``None`` to delete.

    New content is bytes, or a :class:`StoredBlob` already written. ``parents_extra`` adds
    parents after the current tip (a sync merge).
    """

    changes: Mapping[str, bytes | StoredBlob | None]
    message: str
    parents_extra: tuple[str, ...] = ()
    allow_empty: bool = False
    result: object = field(default=None)
    written: dict[str, str] = field(default_factory=dict)
    """Set by :meth:`Store.transact`: the blob id of each path it wrote (the read cache's key)."""


STALE_LOCK_SECONDS = 5.0
"""Age (seconds) after which a ref lock is taken for one left by a killed process and removed."""

_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REGULAR = (0o100644, 0o100755)  # file modes of regular files (not links, trees or submodules)


@dataclass(frozen=True, order=True)
class LayoutProblem:
    """An entry of a memory tree that is not where, or not what, gitmem reads.

    Attributes:
        path: the entry's path in the tree (``memories/zz/fact-8f2a1b9c.yaml``).
        object_id: the id of the blob, tree or commit it points at.
        reason: what is wrong, one phrase (``is not where its id says: …``).
        misplaced: a regular record file in another directory than its id names, whose id
            has no record where it belongs.
    """

    path: str
    object_id: str
    reason: str
    misplaced: bool = False
    """A regular file named for an id whose record is missing: it can move to where its id says."""


def _kind(entry: Any) -> str:
    """What a tree entry is, in words: directory, symbolic link, submodule, executable file, file."""
    mode = entry.filemode
    if mode == 0o040000:
        return "directory"
    if mode == 0o120000:
        return "symbolic link"
    if mode == 0o160000:
        return "submodule"
    return "file"


def _encode_problems(problems: list[LayoutProblem]) -> str | None:
    # The object memo holds strings; NUL and newline never occur in a tree path or a reason.
    return "\n".join(f"{p.path}\0{p.object_id}\0{p.reason}" for p in problems) or None


def _decode_problems(text: Any) -> list[LayoutProblem]:
    if not isinstance(text, str) or not text:
        return []
    found = []
    for line in text.split("\n"):
        parts = line.split("\0")
        if len(parts) == 3:
            found.append(LayoutProblem(parts[0], parts[1], parts[2]))
    return found


class Store:
    """Git access for gitmem: the memory ref, its objects, and the repository it lives in.

    Open with :meth:`discover`. Reads go through pygit2; the ref update goes
    through ``git update-ref`` because that is git's own atomic compare-and-swap
    under the ref lock, which libgit2's bindings do not expose.
    """

    def __init__(self, repo: pygit2.Repository | None = None, located: Located | None = None,
                 memo: ObjectMemo | None = None):
        if repo is None and located is None:
            raise ValueError("Store needs a pygit2 repository or a located git directory")
        self._repo = repo
        self._located = located
        self._code: CodeHistory | None = None
        self._access: GitAccess | None = None
        self._prefetched = False
        self.memo = memo
        """Where lookups of immutable objects are remembered (injected; default: in memory)."""
        self._notices: list[str] = []
        self._identity: tuple[str, str] | None = None
        self.guard: Callable[[Store, str | None], None] | None = None
        """Called once, on the first read of the memory ref's tip, with that tip: what
        checks that no rewrite outside gitmem lost a tip gitmem wrote (set by the facade)."""
        self._guarded = False

    def _object_memo(self) -> ObjectMemo:
        if self.memo is None:
            self.memo = DictMemo()
        return self.memo

    def _memo_lacks(self, key: str) -> bool:
        return self._object_memo().get(key) is MISS

    def _memoized(self, key: str, compute: Callable[[], Any]) -> Any:
        memo = self._object_memo()
        found = memo.get(key)
        if found is MISS:
            found = compute()
            memo.put(key, found)
        return found

    @property
    def repo(self) -> pygit2.Repository:
        """The libgit2 repository, opened on first use (reads of refs alone never open it).

        Raises:
            UnsafeRepository: another user owns it and ``safe.directory`` does not list it.
        """
        if self._repo is None:
            assert self._located is not None
            from gitmem.store.fallback import open_repository

            where = self._located
            self._repo = open_repository(str(where.git_dir), where.workdir or where.git_dir)
        return self._repo

    @property
    def access(self) -> GitAccess:
        """Objects, index and working tree through libgit2, or git where libgit2 falls short."""
        if self._access is None:
            from gitmem.store.fallback import GitAccess

            self._access = GitAccess(self.repo)
        return self._access

    def code(self) -> CodeHistory:
        """The :class:`~gitmem.store.code.CodeHistory` of this repository (one per store)."""
        if self._code is None:
            from gitmem.store.code import CodeHistory

            self._code = CodeHistory(self.repo, self.access)
        return self._code

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def discover(cls, path: str | os.PathLike[str] = ".") -> Store:
        """Find the repository containing ``path`` as git does (subdirectories, linked worktrees).

        The repository's files are located without libgit2 where the layout is the usual
        one; anything unusual is left to libgit2's own discovery.

        Raises:
            NotARepository: ``path`` is not inside a git repository.
            UnsafeRepository: another user owns it and ``safe.directory`` does not list it.
            UnsupportedRepository: libgit2 cannot open it (SHA-256 object ids, say).
        """
        start = Path(path).resolve()
        if not start.exists():
            raise NotARepository(f"no such directory: {path}", "pass an existing directory to -C")
        try:
            located = locate(start)
        except (Unsupported, OSError):
            located = None
        else:
            if located is not None:
                store = cls(located=located)
                if foreign_owner(located):
                    _ = store.repo  # libgit2 applies safe.directory as git does
                return store
        found = _pg().discover_repository(str(start))
        if found is None:
            raise NotARepository(
                f"not a git repository (or any parent up to /): {start}",
                "run tur inside a git repository, or `git init` one first",
            )
        from gitmem.store.fallback import open_repository

        return cls(open_repository(found))

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

    def _file_ref(self, name: str) -> tuple[bool, str | None]:
        """(answered, sha) from the ref files; not answered when libgit2 must decide."""
        if self._located is None:
            return False, None
        try:
            return True, read_ref(self._located, name)
        except (Unsupported, OSError):
            return False, None

    def index_entries(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """The index entries of ``paths`` (all when ``None``), read by git: see :mod:`gitmem.store.index`.

        Empty for a bare repository.
        """
        from gitmem.store.index import index_entries

        workdir = self.workdir
        return {} if workdir is None else index_entries(workdir, paths)

    def unborn_head(self) -> EmptyRepository:
        """The error for an unborn HEAD: no commit at all, or HEAD naming a branch that has none.

        A bare repository whose HEAD still says ``master`` while ``main`` was pushed is the
        usual case of the second: the message names the branches that do exist.
        """
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
        """The parents of commit ``sha`` read from its loose object, without libgit2.

        What a commit just made by ``git commit`` is stored as. ``None`` when the object is
        not loose here, is not a commit, or the history may be rewritten for readers
        (a shallow clone, grafts, replace refs).
        """
        import zlib

        common = self.common_dir
        if ((common / "shallow").exists()
                or (common / "info" / "grafts").exists() or (common / "refs" / "replace").exists()
                or not _HEX.fullmatch(sha)):
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
        answered, sha = self._file_ref("HEAD")
        if answered:
            return sha
        if self.repo.head_is_unborn:
            return None
        return str(self.repo.head.target)

    # -- reading the memory ref ------------------------------------------------------------

    def tip(self, ref: str = MEMORY_REF) -> str | None:
        """Commit SHA the ref points at, or ``None`` when the ref does not exist.

        The first read of the memory ref runs :attr:`guard` (which may move the ref: it
        then reads the ref again).
        """
        sha = self._read_tip(ref)
        if ref == MEMORY_REF and not self._guarded and self.guard is not None:
            self._guarded = True
            self.guard(self, sha)
            sha = self._read_tip(ref)
        return sha

    def _read_tip(self, ref: str) -> str | None:
        answered, sha = self._file_ref(ref)
        if answered:
            return sha
        try:
            return str(self.repo.references[ref].resolve().target)
        except KeyError:
            return None

    # -- the last tip gitmem wrote -----------------------------------------------------------

    @property
    def last_tip_file(self) -> Path:
        """``<git common dir>/tur/tip``: the memory ref's tip as gitmem last wrote it."""
        return self.common_dir / "tur" / "tip"

    def last_written_tip(self) -> str | None:
        """The tip gitmem last wrote to the memory ref (from :attr:`last_tip_file`), or ``None``."""
        try:
            text = self.last_tip_file.read_text().strip()
        except OSError:
            return None
        return text if _HEX.fullmatch(text) else None

    def note_tip(self, sha: str | None) -> None:
        """Remember ``sha`` as the memory ref's tip gitmem wrote (``None``: forget it)."""
        path = self.last_tip_file
        with suppress(OSError):
            if sha is None:
                path.unlink(missing_ok=True)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"tip.{os.getpid()}.tmp")
            tmp.write_text(sha + "\n")
            os.replace(tmp, path)

    def last_authors(self, tip: str, paths: set[str]) -> dict[str, str]:
        """Who last changed each of ``paths``: the author (``Name <email>``) of the newest commit.

        Commits reachable from ``tip``; merges that only carry one side's version do not count.

        One ``git log --name-only`` run, stopped as soon as every path is found: what a record
        written before gitmem stored its writer falls back to.
        """
        found: dict[str, str] = {}
        if not paths:
            return found
        import subprocess  # lazy: a warm read imports no process machinery (see _update_ref)

        proc = subprocess.Popen(
            ["git", "--git-dir", str(self.git_dir), "log", "--no-renames", "--format=%x00%an <%ae>",
             "--name-only", tip, "--", "memories/"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            text=True, errors="replace",
        )
        assert proc.stdout is not None
        author = ""
        try:
            for line in proc.stdout:
                line = line.rstrip("\n")
                if line.startswith("\0"):
                    author = line[1:]
                elif line in paths and line not in found:
                    found[line] = author
                    if len(found) == len(paths):
                        break
        finally:
            proc.kill()
            proc.communicate()
        return found

    def known_authors(self) -> list[str]:
        """Writers ``tur sync`` has reported as new (``<common dir>/tur/authors``, one a line)."""
        try:
            return [line for line in (self.common_dir / "tur" / "authors").read_text().splitlines() if line]
        except (OSError, UnicodeDecodeError):
            return []

    def add_known_authors(self, authors: list[str]) -> None:
        """Remember ``authors`` as seen (see :meth:`known_authors`); best effort."""
        path = self.common_dir / "tur" / "authors"
        with suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.writelines(a.replace("\n", " ") + "\n" for a in authors)

    def has_commit(self, sha: str) -> bool:
        """Whether ``sha`` is a commit in the object database."""
        try:
            return isinstance(self.repo[sha], _pg().Commit)
        except (KeyError, ValueError):
            return False

    def is_ancestor(self, ancestor: str, of: str) -> bool:
        """True when ``ancestor`` is ``of`` or one of its ancestors."""
        return ancestor == of or bool(self.repo.descendant_of(of, ancestor))

    def _root(self, commit_sha: str | None) -> pygit2.Tree | None:
        return None if commit_sha is None else self._commit_tree(commit_sha)

    def _commit_tree(self, commit_sha: str) -> pygit2.Tree:
        commit = self.access.get(commit_sha)
        if not isinstance(commit, _pg().Commit):
            raise FormatVersion(f"{commit_sha[:12]} on the memory ref is not a commit")
        return self.access.tree_of(commit)

    def _tree(self, tree_id: str | pygit2.Oid) -> pygit2.Tree:
        """The tree ``tree_id``: an id git records as a tree (an entry of type tree, a written tree)."""
        return cast("pygit2.Tree", self.access.get(str(tree_id)))

    def _blob_data(self, blob_id: str) -> bytes:
        """The content of ``blob_id``: an id git records as a blob (an entry of type blob).

        In a partial clone, the first blob found missing brings every missing blob of the
        memory trees with it, in one fetch.
        """
        return self.access.blob(blob_id, also=self._memory_blobs)

    def _memory_blobs(self) -> set[str]:
        """Ids of every blob in the trees of ``refs/tur/memories`` and its remote-tracking refs.

        Only once per store: after the first miss, a further one is a single blob.
        """
        if self._prefetched:
            return set()
        self._prefetched = True
        tips = {self.tip()} | {
            self.tip(name) for name in self.repo.references
            if name.startswith("refs/tur/remotes/") and name.endswith("/memories")
        }
        found: set[str] = set()
        for tip in tips - {None}:
            assert tip is not None
            pending = [self._commit_tree(tip)]
            while pending:
                for entry in pending.pop():
                    if entry.type_str == "tree":
                        pending.append(self._tree(entry.id))
                    elif entry.type_str == "blob":
                        found.add(str(entry.id))
        return found

    def _id_at(self, commit_sha: str | None, path: str, kind: str) -> str | None:
        """Id of the ``kind`` ("blob" or "tree") object at ``path`` in the commit's tree, or ``None``."""
        if commit_sha is None:
            return None
        return self._memoized(f"{kind}:{commit_sha}:{path}",
                              lambda: self._lookup(commit_sha, path, kind))

    def _lookup(self, commit_sha: str, path: str, kind: str) -> str | None:
        root = self._root(commit_sha)
        if root is None:
            return None
        try:
            obj = root[path]
        except KeyError:
            return None
        return str(obj.id) if obj.type_str == kind else None

    def check_format(self, commit_sha: str | None) -> None:
        """Check the format marker of the tree at ``commit_sha``.

        Raises:
            FormatVersion: the tree is not a gitmem memory tree, or from a newer gitmem.
        """
        if commit_sha is None:
            return
        root = self._commit_tree(commit_sha)
        names = _names(root)
        if FORMAT_PATH in names:
            marker = root[FORMAT_PATH]
            if marker.type_str != "blob":
                raise FormatVersion(
                    f"commit {commit_sha[:12]} is not a gitmem memory history "
                    f"(its {FORMAT_PATH} is not a file)",
                    "check which ref you are reading",
                )
            text = self._blob_data(str(marker.id)).decode("utf-8", "replace")
            version = text.strip().removeprefix("format:").strip()
            if version != str(FORMAT_VERSION):
                raise FormatVersion(
                    f"memory ref {commit_sha[:12]} has format {version!r}, this gitmem reads "
                    f"{FORMAT_VERSION}",
                    "upgrade gitmem (pip install -U gitmem)",
                )
        elif names - {"memories", "persona.yaml", "continuity"}:
            raise FormatVersion(
                f"commit {commit_sha[:12]} is not a gitmem memory history "
                f"(its tree holds {', '.join(sorted(names)[:4])})",
                "check which ref you are reading",
            )

    def entry_kind(self, commit_sha: str | None, path: str) -> str | None:
        """``"blob"``, ``"tree"`` or ``"commit"`` (a submodule): what is at ``path``, or ``None``."""
        root = self._root(commit_sha)
        if root is None:
            return None
        try:
            return str(root[path].type_str)
        except KeyError:
            return None

    def subtree_id(self, commit_sha: str | None, path: str) -> str | None:
        """Id of the tree at ``path`` in the commit's tree (``memories`` → the record tree)."""
        return self._id_at(commit_sha, path, "tree")

    def entries(self, commit_sha: str | None) -> dict[str, str]:
        """Map each record id to its blob id, walking ``memories/<2 hex>/<id>.yaml``.

        Returns:
            ``{id: blob hex}``; empty when the ref or the directory is missing. Only
            entries where their id says (see :meth:`record_layout`) are listed.
        """
        return self.record_layout(commit_sha)[0]

    def record_layout(self, commit_sha: str | None) -> tuple[dict[str, str], list[LayoutProblem]]:
        """The records of the commit's ``memories`` tree, and every entry that is not one.

        A record is a regular file ``memories/<2 hex>/<id>.yaml`` whose shard directory is
        the first two hex digits of its id. Anything else under ``memories/`` is a
        :class:`LayoutProblem`: a file where a shard directory should be, an entry that
        is not a regular file (a tree, a symbolic link, a submodule), a name that is not
        an id, and a record in another directory (said to be *a second record* when its
        id also has a record where it belongs). Such an entry is never read as a record, so a blob
        planted in another shard can neither shadow nor outlive the real one.

        Returns:
            ``({id: blob hex}, problems)``; both empty when the ref or the directory is
            missing.
        """
        root = self._root(commit_sha)
        if root is None or "memories" not in _names(root):
            return {}, []
        top = root["memories"]
        if top.type_str != "tree":
            return {}, [LayoutProblem("memories", str(top.id),
                                      f"is a {_kind(top)}, not the records directory: no record is read")]
        out: dict[str, str] = {}
        problems: list[LayoutProblem] = []
        misplaced: list[tuple[str, str, str]] = []
        for shard in self._tree(top.id):
            shard_path = f"memories/{shard.name}"
            if shard.type_str != "tree":  # a directory of another name is walked: its records are named
                problems.append(LayoutProblem(shard_path, str(shard.id),
                                              "is not a shard directory (memories/<2 hex>/)"))
                continue
            for entry in self._tree(shard.id):
                name = entry.name or ""
                path, oid = f"{shard_path}/{name}", str(entry.id)
                memory_id = name[: -len(".yaml")] if name.endswith(".yaml") else ""
                if entry.type_str != "blob" or entry.filemode not in _REGULAR:
                    problems.append(LayoutProblem(path, oid, f"is a {_kind(entry)}, not a record file"))
                elif not ID_PATTERN.match(memory_id):
                    problems.append(LayoutProblem(path, oid, "is not named <type>-<hex>.yaml"))
                elif shard_of(memory_id) != shard.name:
                    misplaced.append((path, oid, memory_id))
                else:
                    out[memory_id] = oid
        for path, oid, memory_id in misplaced:
            right = f"memories/{shard_of(memory_id)}/{memory_id}.yaml"
            reason = (f"is a second record for {memory_id}, whose record is {right}" if memory_id in out
                      else f"is not where its id says: {memory_id} belongs at {right}")
            problems.append(LayoutProblem(path, oid, reason, misplaced=memory_id not in out))
        return out, sorted(problems)

    def root_problems(self, commit_sha: str | None) -> list[LayoutProblem]:
        """Entries of the commit's tree, outside ``memories/``, that are not what gitmem reads.

        ``persona.yaml`` must be a regular file, ``continuity`` a directory of regular
        files; any other name beside them and ``.gitmem`` and ``memories`` is unknown.
        Remembered per commit, so a warm read asks libgit2 nothing.
        """
        if commit_sha is None:
            return []
        found = self._memoized(f"root:{commit_sha}",
                               lambda: _encode_problems(self._root_problems(commit_sha)))
        return _decode_problems(found)

    def _root_problems(self, commit_sha: str) -> list[LayoutProblem]:
        root = self._commit_tree(commit_sha)
        problems = []
        for entry in root:
            name, oid = entry.name or "", str(entry.id)
            if name in (FORMAT_PATH, "memories"):
                continue
            if name == "persona.yaml":
                if entry.type_str != "blob" or entry.filemode not in _REGULAR:
                    problems.append(LayoutProblem(name, oid, f"is a {_kind(entry)}, not a persona file"))
            elif name == "continuity":
                if entry.type_str != "tree":
                    problems.append(LayoutProblem(name, oid, f"is a {_kind(entry)}, not the notes directory"))
                    continue
                for note in self._tree(entry.id):
                    if note.type_str != "blob" or note.filemode not in _REGULAR:
                        problems.append(LayoutProblem(f"continuity/{note.name}", str(note.id),
                                                      f"is a {_kind(note)}, not a note"))
            else:
                problems.append(LayoutProblem(name, oid, "is not part of a memory tree"))
        return sorted(problems)

    def list_dir(self, commit_sha: str | None, directory: str) -> dict[str, str]:
        """Map the names of regular files directly under ``directory`` to their blob ids."""
        tree_id = self.subtree_id(commit_sha, directory)
        if tree_id is None:
            return {}
        key = f"ls:{tree_id}"
        if not self._memo_lacks(key):
            return self._memoized(key, dict)
        listing = {
            e.name: str(e.id) for e in self._tree(tree_id)
            if e.type_str == "blob" and e.filemode in _REGULAR and e.name is not None
        }
        if len(listing) <= 64:  # small directories (continuity notes) only: the memo stays small
            self._object_memo().put(key, listing)
        return listing

    def read_note(self, blob_id: str, limit: int = 8192) -> str:
        """A small text blob (a continuity note), decoded; remembered across processes.

        Raises:
            KeyError: no such object.
        """
        key = f"note:{blob_id}"
        if not self._memo_lacks(key):
            return cast(str, self._object_memo().get(key))
        data = self.read_blob(blob_id)
        text = data.decode("utf-8", "replace")
        if len(data) <= limit:  # larger notes are not remembered
            self._object_memo().put(key, text)
        return text

    def blob_size(self, blob_id: str, remember: bool = False) -> int:
        """Bytes of a blob, read from the object header (the content is not loaded).

        With ``remember`` the size is kept across processes (what a warm wake asks of its
        note and persona without loading libgit2); a bulk caller (sync) leaves it out.

        Raises:
            KeyError: no such object.
        """
        key = f"size:{blob_id}"
        if remember:
            found = self._object_memo().get(key)
            if isinstance(found, str) and found.isdigit():
                return int(found)
        try:
            size = int(self.repo.odb.read_header(blob_id)[1])
        except (KeyError, ValueError):
            # Not here (a partial clone): read it as every blob is read, which fetches it.
            size = len(self._blob_data(blob_id))
        if remember:
            self._object_memo().put(key, str(size))
        return size

    def read_blob(self, blob_id: str) -> bytes:
        """Return the bytes of a blob.

        Raises:
            KeyError: no such object.
        """
        return self._blob_data(blob_id)

    def read_path(self, commit_sha: str | None, path: str) -> bytes | None:
        """Bytes of the blob at ``path`` in the commit's tree, or ``None`` when absent."""
        blob_id = self._id_at(commit_sha, path, "blob")
        return None if blob_id is None else self._blob_data(blob_id)

    def blob_id_at(self, commit_sha: str | None, path: str) -> str | None:
        """Blob id at ``path`` in the commit's tree, or ``None``."""
        return self._id_at(commit_sha, path, "blob")

    def log(self, path: str | None = None, ref: str = MEMORY_REF, limit: int = 200) -> list[CommitInfo]:
        """Commits on the ref, newest first; with ``path``, only those that changed it.

        A commit "changes" a path when the path's blob differs from every parent's
        (so a sync merge that only carries one side's version is not listed).
        """
        tip = self.tip(ref)
        if tip is None:
            return []
        out: list[CommitInfo] = []
        for commit in self.repo.walk(tip, _pg().enums.SortMode.TOPOLOGICAL | _pg().enums.SortMode.TIME):
            if path is not None:
                tree_of = self.access.tree_of
                here = _blob_at(tree_of(commit), path)
                before = [_blob_at(tree_of(p), path) for p in commit.parents] or [None]
                if all(here == b for b in before):
                    continue
            out.append(_info(commit))
            if len(out) >= limit:
                break
        return out

    # -- writing ---------------------------------------------------------------------------

    def signature(self) -> pygit2.Signature:
        """The repository's git identity (user.name/user.email), or ``tur <tur@localhost>``."""
        name, email = self._identity_parts()
        return _pg().Signature(name, email)

    def identity(self) -> str:
        """``Name <email>`` of the repository's git identity: the author of gitmem's commits.

        Read with ``git config`` (no libgit2), once per store; ``tur <tur@localhost>`` when
        no identity is configured.
        """
        name, email = self._identity_parts()
        return f"{name} <{email}>"

    def _identity_parts(self) -> tuple[str, str]:
        if self._identity is None:
            # Remembered across processes while the config files are unchanged, so that a
            # warm read starts no git process (and loads no libgit2) for it.
            key = "identity:" + ":".join(str(_mtime_ns(p)) for p in self._config_files())
            found_memo = self._object_memo().get(key)
            if isinstance(found_memo, str) and "\n" in found_memo:
                name, _, email = found_memo.partition("\n")
                self._identity = (name, email)
                return self._identity
            found: dict[str, str] = {}
            import subprocess  # lazy, as in _update_ref

            try:
                proc = subprocess.run(
                    ["git", "--git-dir", str(self.git_dir), "config", "--get-regexp",
                     r"^user\.(name|email)$"],
                    capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
                )
                for line in proc.stdout.splitlines():
                    name_key, _, value = line.partition(" ")
                    found[name_key.lower()] = value.strip()  # the last value wins, as in git
            except OSError:  # no git executable: libgit2 reads the same configuration
                config = self.repo.config
                for name_key in ("user.name", "user.email"):
                    if name_key in config:
                        found[name_key] = str(config[name_key])
            self._identity = (found.get("user.name") or _FALLBACK_NAME,
                              found.get("user.email") or _FALLBACK_EMAIL)
            self._object_memo().put(key, "\n".join(self._identity))
        return self._identity

    def _config_files(self) -> list[Path]:
        """The git configuration files an identity can come from (repository, global, XDG)."""
        home = Path.home()
        return [self.common_dir / "config", self.git_dir / "config", home / ".gitconfig",
                home / ".config" / "git" / "config"]

    def write_blob(self, data: bytes) -> StoredBlob:
        """Write ``data`` as a blob to the object database now (no tree, no ref); return its id.

        An id no commit ends up naming is left for ``git gc`` to prune, as the blobs of a
        write that lost its compare-and-swap are.

        Raises:
            ReadOnlyRepository: writing the object database was denied.
            OSError, pygit2.GitError: it failed otherwise (as :meth:`transact`'s writes).
        """
        try:
            return StoredBlob(str(self.repo.create_blob(data)))
        except (OSError, _pg().GitError) as exc:
            raise self._write_error(exc) from None

    def write_tree(self, base_commit: str | None, changes: Mapping[str, bytes | StoredBlob | None],
                   written: dict[str, str] | None = None) -> str:
        """Write the tree of ``base_commit`` with ``changes`` applied; return the new root tree id.

        Only trees on the changed paths are rewritten. Empty directories are pruned. The
        blob id of each path written (bytes, or a :class:`StoredBlob`) is put in
        ``written``, when given.
        """
        root = self._root(base_commit)
        all_changes = dict(changes)
        if root is None or FORMAT_PATH not in _names(root):
            all_changes.setdefault(FORMAT_PATH, _FORMAT_BLOB)
        return str(self._apply(root, _nest(all_changes), written, ""))

    def _apply(self, tree: pygit2.Tree | None, nested: dict, written: dict[str, str] | None = None,
               prefix: str = "") -> pygit2.Oid:
        builder = self.repo.TreeBuilder(tree) if tree is not None else self.repo.TreeBuilder()
        for name, change in nested.items():
            if isinstance(change, dict):
                sub = None
                if tree is not None and name in tree and tree[name].type_str == "tree":
                    sub = self._tree(tree[name].id)
                oid = self._apply(sub, change, written, f"{prefix}{name}/")
                if len(self._tree(oid)) == 0:
                    if builder.get(name) is not None:
                        builder.remove(name)
                else:
                    builder.insert(name, oid, _pg().enums.FileMode.TREE)
            elif change is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                blob = (_pg().Oid(hex=change.oid) if isinstance(change, StoredBlob)
                        else self.repo.create_blob(change))
                builder.insert(name, blob, _pg().enums.FileMode.BLOB)
                if written is not None:
                    written[prefix + name] = str(blob)
        return builder.write()

    def commit_on(self, base: str, changes: Mapping[str, bytes | StoredBlob | None], message: str) -> str:
        """Write a commit whose parent is ``base`` and whose tree is base's with ``changes``; return it.

        The commit is only written to the object database: no ref moves (the caller
        publishes it with :meth:`update_ref`).
        """
        tree = self.write_tree(base, changes)
        sig = self.signature()
        return str(self.repo.create_commit(None, sig, sig, message, tree, [base]))

    def transact(
        self,
        build: Callable[[str | None], Mutation | None],
        *,
        ref: str = MEMORY_REF,
        attempts: int = 40,
        lock_wait_seconds: float = STALE_LOCK_SECONDS + 3.0,
    ) -> tuple[CommitInfo | None, Mutation | None]:
        """Build a change on the current tip and commit it with compare-and-swap.

        ``build(tip)`` sees the tip the change is built on and returns a
        :class:`Mutation` (or ``None`` for nothing to do). If another writer moves
        the ref first, ``build`` runs again on the new tip, so no write is lost.
        A change that leaves the tree as it was makes no commit.

        Returns:
            ``(commit, mutation)``; ``commit`` is ``None`` when nothing changed.

        A lock left by a writer that is gone is removed on the way (see
        :meth:`_clear_stale_lock`).

        Raises:
            RefLocked: ``<ref>.lock`` stayed in place for ``lock_wait_seconds``.
            RefConflict: the ref moved on every one of ``attempts`` tries.
        """
        locked_since: float | None = None
        for attempt in range(attempts):
            tip = self.tip(ref)
            self.check_format(tip)
            mutation = build(tip)
            if mutation is None:
                return None, None
            mutation.written = {}
            try:
                tree = self.write_tree(tip, mutation.changes, mutation.written)
                base_tree = str(self._commit_tree(tip).id) if tip else None
                if tree == base_tree and not mutation.allow_empty and not mutation.parents_extra:
                    return None, mutation
                sig = self.signature()
                parents = ([tip] if tip else []) + list(mutation.parents_extra)
                new = str(self.repo.create_commit(None, sig, sig, mutation.message, tree, parents))
            except (OSError, _pg().GitError) as exc:
                raise self._write_error(exc) from None
            outcome = self._update_ref(ref, new, tip, mutation.message)
            if outcome == "ok":
                if tip is not None and not mutation.parents_extra:
                    self._carry_lookups(tip, new, mutation.changes)
                return _info(cast("pygit2.Commit", self.repo[new])), mutation
            if outcome == "locked":
                locked_since = locked_since or time.monotonic()
                if time.monotonic() - locked_since > lock_wait_seconds:
                    raise self._locked_error(ref)
            else:
                locked_since = None
            # Jittered back-off so that writers racing for the ref spread out.
            import random

            time.sleep(random.uniform(0.005, 0.02) * min(attempt + 1, 8))
        raise RefConflict(
            f"{ref} kept moving during {attempts} attempts; nothing was committed",
            "try again",
        )

    def _carry_lookups(self, parent: str, new: str,
                       changes: Mapping[str, bytes | StoredBlob | None]) -> None:
        """Remember for ``new`` the lookups known for ``parent`` at paths its changes did not touch.

        ``new`` is ``parent``'s tree with ``changes``: what is at any other path (the persona,
        the notes directory, the root's problems when only ``memories/`` changed) is the
        same object, so the first read of ``new`` (a wake after a learn) needs no libgit2.
        """
        memo = self._object_memo()
        data = memo.snapshot()
        changed = [path.strip("/") for path in changes]

        def untouched(path: str) -> bool:
            return not any(c == path or c.startswith(path + "/") or path.startswith(c + "/")
                           for c in changed)

        carried = {}
        for key, value in data.items():
            kind, _, rest = key.partition(":")
            if kind in ("blob", "tree") and rest.startswith(parent + ":"):
                path = rest[len(parent) + 1:]
                if path and untouched(path):
                    carried[f"{kind}:{new}:{path}"] = value
        if f"root:{parent}" in data and all(c.startswith("memories/") for c in changed):
            carried[f"root:{new}"] = data[f"root:{parent}"]
        if carried:
            memo.put_many(carried)

    def _update_ref(self, ref: str, new: str, old: str | None, message: str = "") -> str:
        """Run ``git update-ref``; return ``"ok"``, ``"locked"`` or ``"moved"``.

        Every move writes a reflog entry (``--create-reflog``: also where
        ``core.logAllRefUpdates`` is off, as in a bare repository), whose message is
        ``tur: `` and the first line of ``message``. A move of the memory ref is remembered
        in :attr:`last_tip_file`.

        While git runs, ``<common dir>/tur/locks/<new>`` records this host and git's pid,
        so that a lock git leaves behind when it is killed can be told from a live one (see
        :meth:`_clear_stale_lock`).

        Raises:
            GitmemError: git failed otherwise, or was killed (then its lock is removed).
        """
        # Imported here: reads never move a ref, and these cost a warm read ~20 ms to import.
        import socket
        import subprocess

        owner = self.common_dir / "tur" / "locks" / new
        proc = subprocess.Popen(
            ["git", "--git-dir", str(self.git_dir), "update-ref", "--create-reflog",
             "-m", _reflog_message(message), ref, new, old or _ZERO],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            with suppress(OSError):
                owner.parent.mkdir(parents=True, exist_ok=True)
                owner.write_text(f"{socket.gethostname()} {proc.pid}\n")
            _, err = proc.communicate()
        finally:
            with suppress(OSError):
                owner.unlink()
        if proc.returncode == 0:
            if ref == MEMORY_REF:
                self.note_tip(new)
            return "ok"
        if proc.returncode < 0:
            return self._killed(ref, new, -proc.returncode)
        from gitmem.store.fallback import unsafe_error, write_error

        denied = write_error(RuntimeError(err), self.common_dir)
        if denied is not None:
            raise denied
        if "dubious ownership" in err:
            raise unsafe_error(self.workdir or self.git_dir)
        if ".lock" in err and ("exists" in err or "Unable to create" in err):
            return "moved" if self._clear_stale_lock(ref) else "locked"
        if "but expected" in err or "already exists" in err or "reference already exists" in err:
            return "moved"
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}, no message"
        raise GitmemError(f"git update-ref {ref} failed: {last}")

    def _killed(self, ref: str, new: str, signum: int) -> str:
        """After ``git update-ref`` died of signal ``signum``: done, or its lock removed and an error."""
        if self._read_tip(ref) == new:
            if ref == MEMORY_REF:
                self.note_tip(new)
            return "ok"  # killed after the rename: the change is in
        lock = self.common_dir / (ref + ".lock")
        with suppress(OSError):
            if lock.read_text().strip() == new:  # the lock our git wrote: nobody else writes this commit
                lock.unlink()
        try:
            import signal

            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        raise GitmemError(
            f"git update-ref {ref} was killed ({name}) before it moved the ref; nothing was committed",
            "run the command again",
        )

    def _clear_stale_lock(self, ref: str) -> bool:
        """Remove ``<ref>.lock`` if its creator is gone; say whether it was removed.

        Gone means: the ``git update-ref`` that gitmem recorded for it (see
        :meth:`_update_ref`) is no longer running on this host, or the lock is older than
        :data:`STALE_LOCK_SECONDS` (git holds a ref lock for milliseconds). Each removal
        adds one line to :meth:`take_notices`.
        """
        lock = self.common_dir / (ref + ".lock")
        try:
            before = lock.stat()
            content = lock.read_text(errors="replace").strip()
        except OSError:
            return True  # gone already: try again at once
        why = None
        owner = self.common_dir / "tur" / "locks" / content if _HEX.fullmatch(content) else None
        try:
            host, pid = owner.read_text().split() if owner is not None else ("", "")
        except (OSError, ValueError):
            host, pid = "", ""
        import socket

        if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
            why = f"its git process {pid} is no longer running"
        age = time.time() - before.st_mtime
        if why is None and age > STALE_LOCK_SECONDS:
            why = f"it is {age:.0f} s old; git holds a ref lock for milliseconds"
        if why is None:
            return False
        try:
            now = lock.stat()
            if (now.st_ino, now.st_mtime_ns) != (before.st_ino, before.st_mtime_ns):
                return True  # another lock took its place: try again
            lock.unlink()
        except OSError:
            return True
        if owner is not None:
            with suppress(OSError):
                owner.unlink()
        self._notices.append(f"tur: removed the stale lock {lock} ({why})")
        return True

    def _write_error(self, exc: Exception) -> Exception:
        """``exc`` as :class:`~gitmem.errors.ReadOnlyRepository` when writing was denied, else itself."""
        from gitmem.store.fallback import write_error

        return write_error(exc, self.common_dir) or exc

    def _locked_error(self, ref: str) -> RefLocked:
        lock = self.common_dir / (ref + ".lock")
        when = ""
        try:
            mtime = datetime.fromtimestamp(lock.stat().st_mtime, UTC)
            when = f" (created {mtime:%Y-%m-%d %H:%M:%S} UTC)"
        except OSError:
            pass
        return RefLocked(
            f"{lock} exists{when}: another process holds the memory ref",
            f"if no tur or git process is running, it is safe to delete that file (tur removes it "
            f"once it is {STALE_LOCK_SECONDS:.0f} s old)",
        )

    def add_notice(self, line: str) -> None:
        """Add one line for stderr (see :meth:`take_notices`)."""
        self._notices.append(line)

    def take_notices(self) -> list[str]:
        """Lines for stderr gathered since the last call (a stale lock removed), each once."""
        taken, self._notices = self._notices, []
        return taken

    def update_ref(self, ref: str, new: str, old: str | None, message: str = "") -> bool:
        """Compare-and-swap ``ref`` from ``old`` (``None``: must not exist) to ``new``.

        ``message`` goes into the reflog entry (see :meth:`_update_ref`).

        Returns:
            True on success, False when the ref no longer points at ``old``.

        Raises:
            RefLocked: the ref's lock file is held.
        """
        outcome = self._update_ref(ref, new, old, message)
        if outcome == "locked":
            raise self._locked_error(ref)
        return outcome == "ok"


def _reflog_message(message: str) -> str:
    """``tur: <first line of message>`` (``tur`` alone for none), one line."""
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    return f"tur: {first}" if first else "tur"


def _alive(pid: int) -> bool:
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


def _pg():
    # libgit2 costs ~0.13 s to load: a warm read that finds everything in the cache
    # reads its two refs from files and never loads it.
    import pygit2

    return pygit2


def _nest(changes: Mapping[str, bytes | StoredBlob | None]) -> dict:
    nested: dict = {}
    for path, data in changes.items():
        parts = path.strip("/").split("/")
        node = nested
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = data
    return nested


def _names(tree: pygit2.Tree) -> set[str]:
    """Names of a tree's entries (objects read from a tree always have one)."""
    return {entry.name for entry in tree if entry.name is not None}


def _blob_at(tree: pygit2.Tree, path: str) -> str | None:
    try:
        return str(tree[path].id)
    except KeyError:
        return None


def _info(commit: pygit2.Commit) -> CommitInfo:
    return CommitInfo(
        sha=str(commit.id),
        message=commit.message.strip(),
        author=f"{commit.author.name} <{commit.author.email}>",
        time=datetime.fromtimestamp(commit.commit_time, UTC),
        parents=tuple(str(p) for p in commit.parent_ids),
    )


def _mtime_ns(path: Path) -> int:
    """Modification time of ``path`` in nanoseconds, or 0 when it does not exist."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
