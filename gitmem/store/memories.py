"""The memory ref ``refs/tur/memories`` and the repository it lives in: :class:`Store`.

This is the only code that writes the memory ref. It deals in bytes and object
ids; parsing records is the codec's job. :class:`Store` is the one entry point; it is
composed of one part per job, each in its own module:

- :mod:`gitmem.store.repo` (:class:`~gitmem.store.repo.Repository`): finding the
  repository, its paths, HEAD, commit queries; libgit2 opened on first use;
- :mod:`gitmem.store.tree` (:class:`~gitmem.store.tree.Trees`): the format marker, the
  fan-out layout of records, blobs, and the trees a change writes;
- :mod:`gitmem.store.refs` (:class:`~gitmem.store.refs.Refs`): tips, compare-and-swap
  ref updates, :meth:`Store.transact`, stale locks;
- :mod:`gitmem.store.people` (:class:`~gitmem.store.people.People`): the git identity
  commits are signed with, and the authors of records.

The object memo (lookups of immutable objects, kept across processes) stays here, with
the store, and reaches the parts as :class:`~gitmem.store.lookups.Lookups`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.store.lookups import Lookups
from gitmem.store.memo import MISS, DictMemo, ObjectMemo
from gitmem.store.people import People
from gitmem.store.refs import MEMORY_REF, STALE_LOCK_SECONDS, CommitInfo, Mutation, Refs
from gitmem.store.repo import Repository
from gitmem.store.tree import FORMAT_PATH, FORMAT_VERSION, LayoutProblem, StoredBlob, Trees

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

    from gitmem.errors import EmptyRepository
    from gitmem.store.code import CodeHistory
    from gitmem.store.fallback import GitAccess
    from gitmem.store.gitdir import Located

class Store:
    """Git access for gitmem: the memory ref, its objects, and the repository it lives in.

    Open with :meth:`discover`. Reads go through pygit2; the ref update goes
    through ``git update-ref`` because that is git's own atomic compare-and-swap
    under the ref lock, which libgit2's bindings do not expose. Each method is one
    delegation to the part whose job it is (see the module docstring).

    Raises:
        ValueError: neither ``repo`` nor ``located`` is given.
    """

    def __init__(self, repo: pygit2.Repository | None = None, located: Located | None = None, *,
                 repository: Repository | None = None, memo: ObjectMemo | None = None):
        self._repository = repository if repository is not None else Repository(repo, located)
        self.memo = memo
        """Where lookups of immutable objects are remembered (injected; default: in memory)."""
        lookups = Lookups(memo=self._object_memo, memoized=self._memoized, lacks=self._memo_lacks)
        self._people = People(self._repository, lookups)
        self._trees = Trees(self._repository, lookups, self.tip)
        self._refs = Refs(self._repository, self._trees, self._people, self.tip)
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
    def opened(self) -> bool:
        """Whether libgit2 has opened the repository (a warm read never opens it)."""
        return self._repository.is_open

    @property
    def repo(self) -> pygit2.Repository:
        """The libgit2 repository, opened on first use (reads of refs alone never open it).

        Raises:
            UnsafeRepository: another user owns it and ``safe.directory`` does not list it.
        """
        return self._repository.repo

    @property
    def access(self) -> GitAccess:
        """Objects, index and working tree through libgit2, or git where libgit2 falls short.

        See :attr:`~gitmem.store.repo.Repository.access`.
        """
        return self._repository.access

    def code(self) -> CodeHistory:
        """The :class:`~gitmem.store.code.CodeHistory` of this repository (one per store).

        See :meth:`~gitmem.store.repo.Repository.code`.
        """
        return self._repository.code()

    # -- opening (gitmem.store.repo) ---------------------------------------------------------

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
        return cls(repository=Repository.discover(path))

    @property
    def workdir(self) -> Path | None:
        """Root of the working tree, or ``None`` for a bare repository.

        See :attr:`~gitmem.store.repo.Repository.workdir`.
        """
        return self._repository.workdir

    @property
    def git_dir(self) -> Path:
        """The ``.git`` directory of this worktree (:attr:`~gitmem.store.repo.Repository.git_dir`)."""
        return self._repository.git_dir

    @property
    def common_dir(self) -> Path:
        """The git directory shared by all worktrees (where refs and objects live).

        See :attr:`~gitmem.store.repo.Repository.common_dir`.
        """
        return self._repository.common_dir

    @property
    def cache_dir(self) -> Path:
        """``<git common dir>/tur/cache``: derived data only, safe to delete at any time.

        See :attr:`~gitmem.store.repo.Repository.cache_dir`.
        """
        return self._repository.cache_dir

    @property
    def is_bare(self) -> bool:
        """True for a bare repository (no working tree) (:attr:`~gitmem.store.repo.Repository.is_bare`)."""
        return self._repository.is_bare

    def index_entries(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """The index entries of ``paths`` (all when ``None``), read by git: see :mod:`gitmem.store.index`.

        See :meth:`~gitmem.store.repo.Repository.index_entries`.
        """
        return self._repository.index_entries(paths)

    def unborn_head(self) -> EmptyRepository:
        """The error for an unborn HEAD: no commit at all, or HEAD naming a branch that has none.

        A bare repository whose HEAD still says ``master`` while ``main`` was pushed is the
        usual case of the second: the message names the branches that do exist.
        """
        return self._repository.unborn_head()

    def loose_commit_parents(self, sha: str) -> list[str] | None:
        """The parents of commit ``sha`` read from its loose object, without libgit2.

        What a commit just made by ``git commit`` is stored as. ``None`` when the object is
        not loose here, is not a commit, or the history may be rewritten for readers
        (a shallow clone, grafts, replace refs).
        """
        return self._repository.loose_commit_parents(sha)

    def head_sha(self) -> str | None:
        """Full SHA of HEAD's commit, or ``None`` when HEAD is unborn (no commits yet).

        See :meth:`~gitmem.store.repo.Repository.head_sha`.
        """
        return self._repository.head_sha()

    def has_commit(self, sha: str) -> bool:
        """Whether ``sha`` is a commit in the object database.

        See :meth:`~gitmem.store.repo.Repository.has_commit`.
        """
        return self._repository.has_commit(sha)

    def is_ancestor(self, ancestor: str, of: str) -> bool:
        """True when ``ancestor`` is ``of`` or one of its ancestors.

        See :meth:`~gitmem.store.repo.Repository.is_ancestor`.
        """
        return self._repository.is_ancestor(ancestor, of)

    # -- reading the memory ref (gitmem.store.refs) ----------------------------------------

    def tip(self, ref: str = MEMORY_REF) -> str | None:
        """Commit SHA the ref points at, or ``None`` when the ref does not exist.

        The first read of the memory ref runs :attr:`guard` (which may move the ref: it
        then reads the ref again).

        Raises:
            FormatVersion: the memory ref's ``.gitmem`` marker names a format this gitmem
                does not read (``format: 99``); see :meth:`check_marker`.
        """
        sha = self._refs.read_tip(ref)
        if ref == MEMORY_REF and not self._guarded and self.guard is not None:
            self._guarded = True
            self.guard(self, sha)
            sha = self._refs.read_tip(ref)
        if ref == MEMORY_REF:
            self._trees.check_marker(sha)  # readers refuse a newer format as writers do
        return sha

    @property
    def last_tip_file(self) -> Path:
        """``<git common dir>/tur/tip``: the memory ref's tip as gitmem last wrote it.

        See :attr:`~gitmem.store.refs.Refs.last_tip_file`.
        """
        return self._refs.last_tip_file

    def last_written_tip(self) -> str | None:
        """The tip gitmem last wrote to the memory ref (from :attr:`last_tip_file`), or ``None``.

        See :meth:`~gitmem.store.refs.Refs.last_written_tip`.
        """
        return self._refs.last_written_tip()

    def note_tip(self, sha: str | None) -> None:
        """Remember ``sha`` as the memory ref's tip gitmem wrote (``None``: forget it).

        See :meth:`~gitmem.store.refs.Refs.note_tip`.
        """
        return self._refs.note_tip(sha)

    def log(self, path: str | None = None, ref: str = MEMORY_REF, limit: int = 200) -> list[CommitInfo]:
        """Commits on the ref, newest first (at most ``limit``); with ``path``, only those that changed it.

        A commit "changes" a path when the path's blob differs from every parent's
        (so a sync merge that only carries one side's version is not listed). With
        ``path`` the walk is git's (``git log -- PATH`` from the tip and every merge's parents,
        in ``--date-order``: see :meth:`~gitmem.store.gitcli.Git.path_log`),
        which reads the commit-graph and its Bloom filters that gitmem keeps for the
        memory ref (:mod:`gitmem.store.history`); the answer is the same without them.
        Without ``path``: libgit2's topological walk, newest first.

        Raises:
            GitmemError: git cannot walk the history (``path`` given).
        """
        return self._refs.log(path, ref, limit)

    def path_changes(self, tip: str, path: str) -> list[str]:
        """Commits reachable from ``tip`` whose version of ``path`` differs from every parent's, newest first.

        Raises:
            GitmemError: git cannot walk the history.
        """
        return self._refs.history.changes(tip, path)

    def deletions(self, tip: str, directory: str, limit: int = 20) -> list[tuple[str, str, str]]:
        """``(commit, its parent, path)`` of the files under ``directory`` recent commits deleted.

        Newest first; see :meth:`~gitmem.store.history.History.deletions`. Remembered per
        tip across processes, so a warm read starts no git process.

        Raises:
            GitmemError: git cannot walk the history.
        """
        key = f"deleted:{tip}:{directory}:{limit}"
        memo = self._object_memo()
        found = memo.get(key)
        if not isinstance(found, str):
            found = "\n".join(" ".join(row) for row in self._refs.history.deletions(tip, directory, limit))
            memo.put(key, found)
        rows = (line.split(" ", 2) for line in found.split("\n") if line)
        return [(row[0], row[1], row[2]) for row in rows if len(row) == 3]

    # -- authors and identity (gitmem.store.people) ------------------------------------------

    def last_authors(self, tip: str, paths: set[str]) -> dict[str, str]:
        """Who last changed each of ``paths``: the author (``Name <email>``) of the newest commit.

        Commits reachable from ``tip``; merges that only carry one side's version do not count.

        One ``git log --name-only`` run, stopped as soon as every path is found: what a record
        written before gitmem stored its writer falls back to.
        """
        return self._people.last_authors(tip, paths)

    def attribution(self, tip: str, paths: set[str], since: str | None = None, *,
                    descends: bool = False, require_signatures: bool = False) -> dict[str, tuple[str, ...]]:
        """Who made the version of each of ``paths`` at ``tip``, as git says (``Name <email>``, newest first).

        The author of the newest commit reachable from ``tip`` whose version of the path
        differs from every parent's (``git log --cc``): one author. When that commit is a
        merge (a record merged field by field, or a merge made with plumbing), the merge's
        author and everyone who changed the path on any side since the sides' common base
        (``git merge-base --octopus``; all of its history without one), since each may have
        written part of it. A path with no such commit (none at ``tip``) is left out.

        With ``since`` (an ancestor of ``tip``; otherwise ignored), only the paths changed
        by commits after it are returned: the others' attribution is the one at ``since``.
        ``descends``: the caller knows ``tip`` descends from ``since`` (no check is run).

        Signatures (docs/sharing.md, Signatures): the author of a commit whose signature git
        does not verify (``%G?`` not ``G`` or ``N``) ends with
        :data:`~gitmem.vocabulary.SIGNATURE_NOT_VERIFIED`; with ``require_signatures``, the
        author of an unsigned commit ends with :data:`~gitmem.vocabulary.UNSIGNED`. Git
        verifies in the same ``git log`` (one ``gpg``/``ssh-keygen`` run per signed commit
        it prints); the result is cached per tip like the rest.
        Costs one ``git log`` (and a ``merge-base`` and a ``git log`` per merge that made a
        version), stopped once every path is found; the commit-graph's changed-path filters
        make it skip other commits.
        """
        return self._people.attribution(tip, paths, since, descends=descends,
                                        require_signatures=require_signatures)

    def known_authors(self) -> list[str]:
        """Writers ``tur sync`` has reported as new (``<common dir>/tur/authors``, one a line).

        See :meth:`~gitmem.store.people.People.known_authors`.
        """
        return self._people.known_authors()

    def add_known_authors(self, authors: list[str]) -> None:
        """Remember ``authors`` as seen (see :meth:`known_authors`); best effort.

        See :meth:`~gitmem.store.people.People.add_known_authors`.
        """
        return self._people.add_known_authors(authors)

    def accepted(self) -> set[str]:
        """Blob ids of the personas and notes this clone accepted (``tur persona accept``).

        Kept in ``<common dir>/tur/accepted``: one person's decision, never on the shared ref.
        """
        return self._people.accepted()

    def accept(self, blob_id: str) -> None:
        """Add ``blob_id`` to :meth:`accepted`.

        Raises:
            OSError: the file cannot be written.
        """
        self._people.accept(blob_id)

    def signature(self) -> pygit2.Signature:
        """The author of gitmem's next commit, as git chooses it (``GIT_AUTHOR_*``, config, fallback).

        See :meth:`~gitmem.store.people.People.signature`.
        """
        return self._people.signature()

    def identity(self) -> str:
        """``Name <email>`` of the repository's git identity: the author of gitmem's commits.

        Read with ``git config`` (no libgit2), once per store; ``tur <tur@localhost>`` when
        no identity is configured.
        """
        return self._people.identity()

    # -- the memory tree (gitmem.store.tree) -------------------------------------------------

    def check_format(self, commit_sha: str | None) -> None:
        """Check the format marker of the tree at ``commit_sha``.

        Raises:
            FormatVersion: the tree is not a gitmem memory tree, or from a newer gitmem.
        """
        return self._trees.check_format(commit_sha)

    def check_marker(self, commit_sha: str | None) -> bool:
        """Check the ``.gitmem`` marker at ``commit_sha``, if there is one: whether there is.

        Memoised per marker blob, so a warm read pays two memo lookups and no libgit2.

        Raises:
            FormatVersion: the marker names another format than this gitmem's.
        """
        return self._trees.check_marker(commit_sha)

    def entry_kind(self, commit_sha: str | None, path: str) -> str | None:
        """``"blob"``, ``"tree"`` or ``"commit"`` (a submodule): what is at ``path``, or ``None``.

        See :meth:`~gitmem.store.tree.Trees.entry_kind`.
        """
        return self._trees.entry_kind(commit_sha, path)

    def subtree_id(self, commit_sha: str | None, path: str) -> str | None:
        """Id of the tree at ``path`` in the commit's tree (``memories`` → the record tree).

        See :meth:`~gitmem.store.tree.Trees.subtree_id`.
        """
        return self._trees.subtree_id(commit_sha, path)

    def entries(self, commit_sha: str | None) -> dict[str, str]:
        """Map each record id to its blob id, walking ``memories/<2 hex>/<id>.yaml``.

        Returns:
            ``{id: blob hex}``; empty when the ref or the directory is missing. Only
            entries where their id says (see :meth:`record_layout`) are listed.
        """
        return self._trees.entries(commit_sha)

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
        return self._trees.record_layout(commit_sha)

    def record_changes(self, old_tree: str, new_tree: str) -> dict[str, str | None] | None:
        """The records that differ between two ``memories`` trees (ids of trees, not commits).

        Shards whose tree ids are equal are not read, so two trees a write apart cost two
        listings of 256 entries and the shards the write touched. Remembered in the object
        memo (up to 512 records), so that a write can answer it for the next reader, which
        then loads no libgit2.

        Returns:
            ``{id: blob hex in new_tree, or None: not there}`` for each record that differs;
            ``None`` when a shard that differs holds anything :meth:`record_layout` would
            call a layout problem (the caller then reads the whole layout).
        """
        return self._trees.record_changes(old_tree, new_tree)

    def id_in_tree(self, tree_id: str, path: str) -> str | None:
        """Id of the object at ``path`` in the tree ``tree_id`` (as :meth:`write_tree` returns), or ``None``.

        Raises:
            MissingObject: ``tree_id`` is not in the object database.
        """
        return self._trees.id_in_tree(tree_id, path)

    def changed_records(self, old_tree: str | None,
                        new_tree: str | None) -> dict[str, tuple[str | None, str | None]]:
        """Records whose blob differs between two ``memories`` trees: id -> (old blob, new blob).

        ``None`` on a side: no record of that id there (or no tree). Shards with the same
        tree id are not read, so the cost is O(shards + records of the shards that differ),
        never O(records). Entries that are not records in their place (see
        :meth:`record_layout`) are left out; :meth:`record_changes` walks the same way.

        Raises:
            MissingObject: a tree id not in the object database.
        """
        return self._trees.changed_records(old_tree, new_tree)

    def root_problems(self, commit_sha: str | None) -> list[LayoutProblem]:
        """Entries of the commit's tree, outside ``memories/``, that are not what gitmem reads.

        ``persona.yaml`` must be a regular file, ``continuity`` a directory of regular
        files; any other name beside them and ``.gitmem`` and ``memories`` is unknown.
        Remembered per commit, so a warm read asks libgit2 nothing.
        """
        return self._trees.root_problems(commit_sha)

    def list_dir(self, commit_sha: str | None, directory: str) -> dict[str, str]:
        """Map the names of regular files directly under ``directory`` to their blob ids.

        See :meth:`~gitmem.store.tree.Trees.list_dir`.
        """
        return self._trees.list_dir(commit_sha, directory)

    def read_note(self, blob_id: str, limit: int = 8192) -> str:
        """A small text blob (a continuity note), decoded; remembered across processes.

        Raises:
            KeyError: no such object.
        """
        return self._trees.read_note(blob_id, limit)

    def blob_size(self, blob_id: str, remember: bool = False) -> int:
        """Bytes of a blob, read from the object header (the content is not loaded).

        With ``remember`` the size is kept across processes (what a warm wake asks of its
        note and persona without loading libgit2); a bulk caller (sync) leaves it out.

        Raises:
            KeyError: no such object.
        """
        return self._trees.blob_size(blob_id, remember)

    def read_blob_head(self, blob_id: str, limit: int) -> bytes:
        """The first ``limit`` bytes of a blob, reading no more of it than that.

        For what a reader uses only the beginning of (a continuity note over its size
        limit, pushed by another tool): a loose object is inflated up to ``limit`` bytes, a
        packed one streamed by ``git cat-file blob`` and cut.

        Raises:
            MissingObject: no such object.
        """
        return self._trees.read_blob_head(blob_id, limit)

    def read_blob(self, blob_id: str) -> bytes:
        """Return the bytes of a blob.

        Raises:
            KeyError: no such object.
        """
        return self._trees.read_blob(blob_id)

    def read_path(self, commit_sha: str | None, path: str) -> bytes | None:
        """Bytes of the blob at ``path`` in the commit's tree, or ``None`` when absent.

        See :meth:`~gitmem.store.tree.Trees.read_path`.
        """
        return self._trees.read_path(commit_sha, path)

    def blob_id_at(self, commit_sha: str | None, path: str) -> str | None:
        """Blob id at ``path`` in the commit's tree, or ``None``.

        See :meth:`~gitmem.store.tree.Trees.blob_id_at`.
        """
        return self._trees.blob_id_at(commit_sha, path)

    def write_blob(self, data: bytes) -> StoredBlob:
        """Write ``data`` as a blob to the object database now (no tree, no ref); return its id.

        An id no commit ends up naming is left for ``git gc`` to prune, as the blobs of a
        write that lost its compare-and-swap are.

        Raises:
            ReadOnlyRepository: writing the object database was denied.
            OSError, pygit2.GitError: it failed otherwise (as the writes of
                :meth:`~gitmem.store.refs.Refs.transact`).
        """
        return self._trees.write_blob(data)

    def write_tree(self, base_commit: str | None, changes: Mapping[str, bytes | StoredBlob | None],
                   written: dict[str, str] | None = None) -> str:
        """Write the tree of ``base_commit`` with ``changes`` applied; return the new root tree id.

        Only trees on the changed paths are rewritten. Empty directories are pruned. The
        blob id of each path written (bytes, or a :class:`StoredBlob`) is put in
        ``written``, when given.
        """
        return self._trees.write_tree(base_commit, changes, written)

    # -- writing (gitmem.store.refs) ---------------------------------------------------------

    def commit_on(self, base: str, changes: Mapping[str, bytes | StoredBlob | None], message: str) -> str:
        """Write a commit whose parent is ``base`` and whose tree is base's with ``changes``; return it.

        The commit is only written to the object database: no ref moves (the caller
        publishes it with :meth:`update_ref`).
        """
        return self._refs.commit_on(base, changes, message)

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
        :meth:`~gitmem.store.refs.Refs._clear_stale_lock`).

        Raises:
            RefLocked: ``<ref>.lock`` stayed in place for ``lock_wait_seconds``.
            RefConflict: the ref moved on every one of ``attempts`` tries.
        """
        return self._refs.transact(build, ref=ref, attempts=attempts, lock_wait_seconds=lock_wait_seconds)

    def add_notice(self, line: str) -> None:
        """Add one line for stderr (see :meth:`take_notices`) (:meth:`~gitmem.store.refs.Refs.add_notice`)."""
        return self._refs.add_notice(line)

    def take_notices(self) -> list[str]:
        """Lines for stderr gathered since the last call (a stale lock removed), each once.

        See :meth:`~gitmem.store.refs.Refs.take_notices`.
        """
        return self._refs.take_notices()

    def update_ref(self, ref: str, new: str, old: str | None, message: str = "") -> bool:
        """Compare-and-swap ``ref`` from ``old`` (``None``: must not exist) to ``new``.

        ``message`` goes into the reflog entry (see :meth:`~gitmem.store.refs.Refs._update_ref`).

        Returns:
            True on success, False when the ref no longer points at ``old``.

        Raises:
            RefLocked: the ref's lock file is held.
        """
        return self._refs.update_ref(ref, new, old, message)
