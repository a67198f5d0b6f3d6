"""Read-only access to the *code* history (HEAD, trees, blobs, diffs, walks, working tree).

The only module besides the rest of ``gitmem.store`` that touches pygit2 for the
user's code. Every answer keyed by immutable object ids (blob diffs, rename maps,
commit distances, walks) is memoised for the life of the :class:`CodeHistory`, so a
long-lived instance (the watcher, the TUI) makes repeated verifies cheap; the working
tree is read through a fresh :class:`WorktreeState` snapshot per run.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus, DiffFind, FileMode, FileStatus, SortMode

from gitmem.errors import OutsideWorkTree
from gitmem.record.anchors import Hunk, LinesChanged, is_binary, map_range
from gitmem.store.fallback import GitAccess
from gitmem.store.names import tree_name

__all__ = ["CodeHistory", "Distance", "WorktreeChange", "WorktreeState"]

#: Length of the abbreviated SHAs put in reasons (``changed in 3f2a1b9``).
SHORT = 7
#: Commit distances to one HEAD answered by libgit2's ahead/behind walk before the whole
#: history of that HEAD is walked once (a first wake after a commit asks for a few SHAs;
#: verifying thousands of memories observed at thousands of commits asks for many).
_WALKS_BEFORE_GRAPH = 64

_INDEX_FLAGS = (
    FileStatus.INDEX_MODIFIED
    | FileStatus.INDEX_DELETED
    | FileStatus.INDEX_RENAMED
    | FileStatus.INDEX_TYPECHANGE
)
_WT_FLAGS = (
    FileStatus.WT_MODIFIED
    | FileStatus.WT_DELETED
    | FileStatus.WT_RENAMED
    | FileStatus.WT_TYPECHANGE
    | FileStatus.CONFLICTED
)


@dataclass(frozen=True)
class Distance:
    """Commit distance between an observed commit and HEAD.

    Attributes:
        ahead: commits reachable from HEAD and not from the observed commit.
        behind: commits reachable from the observed commit and not from HEAD.
        diverged: HEAD does not descend from the observed commit.
        merge_base: full SHA of the best common ancestor (``None`` if unrelated).
    """

    ahead: int
    behind: int
    diverged: bool
    merge_base: str | None

    @property
    def commits(self) -> int:
        """Distance in commits: ``ahead``, or ``behind`` when HEAD is an ancestor.

        Never 0 unless HEAD is the observed commit.
        """
        return self.ahead if self.ahead else self.behind


@dataclass(frozen=True)
class WorktreeChange:
    """One uncommitted version of a file that differs from HEAD's blob.

    Attributes:
        where: ``"index (staged)"`` or ``"working tree"``.
        data: the content, ``None`` when the file is deleted there (or refused).
        refused: why the file was not read (its path leaves the work tree), else ``None``.
    """

    where: str
    data: bytes | None
    refused: str | None = None


class WorktreeState:
    """Snapshot of index and working-tree changes against HEAD, taken once per verify run.

    In a bare repository there is nothing to compare and every path is clean. The status,
    index and files come from :class:`~gitmem.store.fallback.GitAccess`: as git sees them
    (skip-worktree paths are as the index has them, filtered files are compared cleaned).
    """

    def __init__(self, access: GitAccess) -> None:
        repo = access.repo
        self._access = access
        self.bare = repo.is_bare or repo.workdir is None
        # untracked files cannot hold an anchored (committed) line, so skip scanning them
        self._status: dict[str, int] = {} if self.bare else access.status()
        self._cache: dict[tuple[str, str | None], list[WorktreeChange]] = {}

    def is_dirty(self, path: str) -> bool:
        """True when the index or the working tree differs from HEAD at ``path``."""
        return path in self._status

    def changes(self, path: str, head_data: bytes | None) -> list[WorktreeChange]:
        """Versions of ``path`` that differ from ``head_data``: index first, then working tree.

        Contents are compared after CRLF -> LF, so that a checkout filter is not a change.
        """
        flags = self._status.get(path)
        if flags is None:
            return []
        key = (path, None if head_data is None else pygit2.hash(head_data).raw.hex())
        if key in self._cache:
            return self._cache[key]
        out: list[WorktreeChange] = []
        if flags & _INDEX_FLAGS:
            staged = self._index_data(path)
            if _norm(staged) != _norm(head_data):
                out.append(WorktreeChange("index (staged)", staged))
        if flags & _WT_FLAGS:
            try:
                disk = self._disk_data(path)
            except OutsideWorkTree as exc:
                # Never read, so nothing about that file (changed or not) can be told.
                out.append(WorktreeChange("working tree", None, refused=exc.message))
                self._cache[key] = out
                return out
            if _norm(disk) != _norm(head_data):
                out.append(WorktreeChange("working tree", disk))
        self._cache[key] = out
        return out

    def _index_data(self, path: str) -> bytes | None:
        blob_id = self._access.index_id(path)
        return None if blob_id is None else self._access.blob(blob_id)

    def _disk_data(self, path: str) -> bytes | None:
        return self._access.worktree_file(path)


def _norm(data: bytes | None) -> bytes | None:
    return None if data is None else data.replace(b"\r\n", b"\n")


@dataclass(frozen=True)
class _Graph:
    """HEAD's history: topological order (parents first), positions, ancestor counts."""

    order: list[str]
    index: dict[str, int]
    count: dict[str, int]


class CodeHistory:
    """Memoised questions about the user's code history, over an open ``pygit2.Repository``.

    SHAs in and out are full hex strings unless a method says "short".
    """

    def __init__(self, repo: pygit2.Repository, access: GitAccess | None = None) -> None:
        self.repo = repo
        self.access = access or GitAccess(repo)
        self._blob_ids: dict[tuple[str, str], str | None] = {}
        self._blobs: dict[str, bytes] = {}
        self._hunks: dict[tuple[str, str], list[Hunk] | None] = {}
        self._renames: dict[tuple[str, str], dict[str, str]] = {}
        self._changed: dict[tuple[str, str], tuple[str, ...]] = {}
        self._files: dict[str, list[tuple[str, str]]] = {}
        self._distances: dict[tuple[str, str], Distance] = {}
        self._between: dict[tuple[str, str], list[str]] = {}
        self._resolved: dict[str, str | None] = {}
        self._graphs: dict[str, _Graph] = {}
        self._walks: dict[str, int] = {}

    # -- commits --------------------------------------------------------------

    def head_sha(self) -> str | None:
        """Full SHA of HEAD (attached or detached), or ``None`` when HEAD is unborn."""
        if self.repo.head_is_unborn:
            return None
        return str(self.repo.head.target)

    def resolve_commit(self, sha_prefix: str) -> str | None:
        """Full SHA of the commit named by a hex SHA or unique prefix, or ``None``.

        ``None`` covers missing objects (shallow clone, history rewritten and
        collected), ambiguous prefixes and objects that are not commits.
        """
        if sha_prefix in self._resolved:
            return self._resolved[sha_prefix]
        try:
            obj = self.repo[sha_prefix]
            found = str(obj.id) if isinstance(obj, pygit2.Commit) else None
        except (KeyError, ValueError, pygit2.GitError):
            found = None
        self._resolved[sha_prefix] = found
        return found

    def short(self, sha: str) -> str:
        """Abbreviated SHA for messages (7 hex digits)."""
        return sha[:SHORT]

    def commit_distance(self, from_sha: str, to_sha: str) -> Distance:
        """Distance from the observed commit ``from_sha`` to ``to_sha`` (HEAD).

        libgit2's ahead/behind walk (``git rev-list --count`` in C, milliseconds) answers
        the first few SHAs; after :data:`_WALKS_BEFORE_GRAPH` of them for one ``to_sha``,
        ancestor counts computed once in one walk of its history (see :meth:`_graph`)
        answer the rest. Both give the same answer. Memoised per pair.
        """
        key = (from_sha, to_sha)
        if key in self._distances:
            return self._distances[key]
        if from_sha == to_sha:  # anchored at HEAD, the usual case after a verify: no walk
            self._distances[key] = Distance(0, 0, False, from_sha)
            return self._distances[key]
        a, b = pygit2.Oid(hex=to_sha), pygit2.Oid(hex=from_sha)
        graph = self._graphs.get(to_sha)
        walks = self._walks.get(to_sha, 0)
        if graph is None and walks >= _WALKS_BEFORE_GRAPH:
            graph = self._graph(to_sha)
        if graph is not None and from_sha in graph.index:
            ahead, behind = graph.count[to_sha] - graph.count[from_sha], 0
        else:
            if graph is None:
                self._walks = {to_sha: walks + 1}  # one HEAD at a time, as the graph
            ahead, behind = self.repo.ahead_behind(a, b)
        if behind == 0:  # HEAD's history holds the observed commit's: an ancestor
            dist = Distance(ahead, 0, False, from_sha)
        else:
            base = self.repo.merge_base(a, b)
            dist = Distance(ahead, behind, True, str(base) if base else None)
        self._distances[key] = dist
        return dist

    def _graph(self, head_sha: str) -> _Graph:
        """Topological order and ancestor counts of ``head_sha``'s history (memoised).

        ``count[c] = |ancestors(c) ∪ {c}|``: one more than the first parent's count,
        plus, for each further parent of a merge, the commits a libgit2 walk finds in
        that parent and not in the earlier ones (usually a short side branch). So
        ``ahead = count[HEAD] − count[X]`` for any ancestor X, exactly, in one walk.
        """
        graph = self._graphs.get(head_sha)
        if graph is not None:
            return graph
        order: list[str] = []
        count: dict[str, int] = {}
        walker = self.repo.walk(pygit2.Oid(hex=head_sha), SortMode.TOPOLOGICAL | SortMode.REVERSE)
        for commit in walker:
            sha = str(commit.id)
            parents = commit.parent_ids
            total = 1
            if parents:
                total += count.get(str(parents[0]), 0)
            for i in range(1, len(parents)):
                side = self.repo.walk(parents[i])
                for earlier in parents[:i]:
                    side.hide(earlier)
                total += sum(1 for _ in side)
            count[sha] = total
            order.append(sha)
        graph = _Graph(order, {sha: i for i, sha in enumerate(order)}, count)
        self._graphs = {head_sha: graph}  # one HEAD at a time is enough
        return graph

    def is_between(self, sha: str, since_sha: str, until_sha: str) -> bool:
        """True when commit ``sha`` (or a prefix) is after ``since_sha`` in ``until_sha``'s history.

        Both must be ancestors of ``until_sha``; "after" is topological order.
        """
        full = self.resolve_commit(sha)
        graph = self._graph(until_sha)
        if full is None or full not in graph.index or since_sha not in graph.index:
            return False
        return graph.index[full] > graph.index[since_sha]

    def commits_between(self, since_sha: str, until_sha: str) -> list[str]:
        """Commits reachable from ``until_sha`` and not from ``since_sha``, parents first.

        When ``since_sha`` is an ancestor this is the tail of ``until_sha``'s topological
        order after it (which may, in a merge-heavy history, omit side-branch commits
        ordered earlier; their effect is then seen at the merge). Otherwise a walk.
        """
        graph = self._graph(until_sha)
        if since_sha in graph.index:
            return graph.order[graph.index[since_sha] + 1 :]
        key = (since_sha, until_sha)
        if key not in self._between:
            walker = self.repo.walk(
                pygit2.Oid(hex=until_sha), SortMode.TOPOLOGICAL | SortMode.REVERSE
            )
            walker.hide(pygit2.Oid(hex=since_sha))
            self._between[key] = [str(c.id) for c in walker]
        return self._between[key]

    # -- trees and blobs ------------------------------------------------------

    def blob_id_at(self, commit_sha: str, path: str) -> str | None:
        """Blob id of ``path`` in ``commit_sha``'s tree, ``None`` if absent or not a file."""
        key = (commit_sha, path)
        if key in self._blob_ids:
            return self._blob_ids[key]
        try:
            entry = self.access.tree_of(commit_sha)[tree_name(path)]
            found = str(entry.id) if entry.type_str == "blob" else None
        except (KeyError, ValueError):
            found = None
        self._blob_ids[key] = found
        return found

    def blob(self, blob_id: str, keep: bool = True) -> bytes:
        """Content of a blob by id; ``keep=False`` reads it without memoising it (a sweep)."""
        data = self._blobs.get(blob_id)
        if data is None:
            data = self.access.blob(blob_id)
            if keep:
                self._blobs[blob_id] = data
        return data

    def files_at(self, commit_sha: str) -> list[tuple[str, str]]:
        """Every regular file of ``commit_sha``'s tree as ``(path, blob id)``, in tree order.

        Symbolic links and submodules are left out. Memoised for one commit at a time
        (HEAD, during a verify).
        """
        found = self._files.get(commit_sha)
        if found is not None:
            return found
        out: list[tuple[str, str]] = []
        stack: list[tuple[str, pygit2.Tree]] = [("", self.access.tree_of(commit_sha))]
        while stack:
            prefix, tree = stack.pop()
            for entry in tree:
                path = prefix + (entry.name or "")
                if isinstance(entry, pygit2.Tree):
                    stack.append((path + "/", entry))
                elif entry.type_str == "blob" and entry.filemode != FileMode.LINK:
                    out.append((path, str(entry.id)))
        self._files = {commit_sha: out}
        return out

    def blob_at(self, commit_sha: str, path: str) -> bytes | None:
        """Content of ``path`` at ``commit_sha``, or ``None`` if absent."""
        blob_id = self.blob_id_at(commit_sha, path)
        return None if blob_id is None else self.blob(blob_id)

    def is_binary(self, data: bytes) -> bool:
        """True when ``data`` looks binary (git's NUL rule)."""
        return is_binary(data)

    def worktree(self) -> WorktreeState:
        """A fresh snapshot of index and working-tree changes (empty for a bare repository)."""
        return WorktreeState(self.access)

    def worktree_file(self, path: str) -> bytes | None:
        """The working-tree file ``path`` as git would store it (through its clean filter, if any).

        ``None`` when the file is absent (or the repository bare).
        """
        return self.access.worktree_file(path)

    # -- diffs ----------------------------------------------------------------

    def hunks(self, old_blob_id: str, new_blob_id: str) -> list[Hunk] | None:
        """Zero-context hunks from one blob to another, ``None`` if either is binary.

        git's own diff (libgit2, Myers), memoised per blob pair.
        """
        key = (old_blob_id, new_blob_id)
        if key not in self._hunks:
            if old_blob_id == new_blob_id:
                self._hunks[key] = []
            else:
                self._hunks[key] = self.hunks_of(self.blob(old_blob_id), self.blob(new_blob_id))
        return self._hunks[key]

    @staticmethod
    def hunks_of(old: bytes, new: bytes) -> list[Hunk] | None:
        """Zero-context hunks between two byte strings, ``None`` if either is binary."""
        if is_binary(old) or is_binary(new):
            return None
        patch = pygit2.Patch.create_from(old, new, context_lines=0)
        return [Hunk(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]

    def renamed_path(self, old_sha: str, new_sha: str, path: str) -> str | None:
        """Where ``path`` of ``old_sha`` went in ``new_sha`` by rename detection, or ``None``.

        Tree diff with git's similarity detection (50 % threshold), memoised per
        commit pair: one diff serves every anchored path of that pair.
        """
        key = (old_sha, new_sha)
        if key not in self._renames:
            self._tree_changes(old_sha, new_sha)
        return self._renames[key].get(path)

    def changed_paths(self, old_sha: str, new_sha: str) -> tuple[str, ...]:
        """Paths of ``new_sha``'s tree whose content is not what it was in ``old_sha``'s, sorted.

        Files added, modified, or renamed or copied there (git's similarity detection), from
        the same memoised tree diff as :meth:`renamed_path`: where code that left a file
        between the two commits can have gone.
        """
        key = (old_sha, new_sha)
        if key not in self._changed:
            self._tree_changes(old_sha, new_sha)
        return self._changed[key]

    def differing_paths(self, old_sha: str, new_sha: str) -> frozenset[str]:
        """Paths whose blob (or its absence) differs between the two commits' trees.

        Added, deleted and modified files, both sides of a rename: a path not in it has the
        same blob in both commits. One tree diff, without similarity detection (no content
        is read): O(the trees that differ).
        """
        old_tree, new_tree = self.access.tree_of(old_sha), self.access.tree_of(new_sha)
        diff = old_tree.diff_to_tree(new_tree, context_lines=0, interhunk_lines=0)
        found: set[str] = set()
        for delta in diff.deltas:
            found.add(delta.old_file.path)
            found.add(delta.new_file.path)
        return frozenset(found)

    def _tree_changes(self, old_sha: str, new_sha: str) -> None:
        # What Repository.diff(tree, tree) runs, called directly (pygit2's stubs do not
        # admit trees to Repository.diff).
        old_tree, new_tree = self.access.tree_of(old_sha), self.access.tree_of(new_sha)
        diff = old_tree.diff_to_tree(new_tree, context_lines=3, interhunk_lines=0)
        # Similarity reads the contents: a partial clone fetches them in one request first.
        self.access.ensure(str(d.new_file.id if d.status == DeltaStatus.ADDED else d.old_file.id)
                           for d in diff.deltas
                           if d.status in (DeltaStatus.ADDED, DeltaStatus.DELETED))
        diff.find_similar(DiffFind.FIND_RENAMES)
        renames: dict[str, str] = {}
        changed: set[str] = set()
        for delta in diff.deltas:
            if delta.status == DeltaStatus.RENAMED:
                renames[delta.old_file.path] = delta.new_file.path
            if delta.status != DeltaStatus.DELETED:
                changed.add(delta.new_file.path)
        self._renames[(old_sha, new_sha)] = renames
        self._changed[(old_sha, new_sha)] = tuple(sorted(changed))

    # -- history of one file --------------------------------------------------

    def _changed_at(
        self, commit: str, paths: tuple[str, ...], old_blob: str, lines: tuple[int, int] | None
    ) -> bool:
        blob_id = None
        for p in paths:
            blob_id = self.blob_id_at(commit, p)
            if blob_id is not None:
                break
        if blob_id is None:
            return True
        if blob_id == old_blob:
            return False
        if lines is None:
            return True
        hunks = self.hunks(old_blob, blob_id)
        return hunks is None or isinstance(map_range(hunks, *lines), LinesChanged)

    def commit_deleting(self, path: str, since_sha: str, until_sha: str) -> str | None:
        """Short SHA of the commit of ``since..until`` that removed ``path``, or ``None``.

        Bisection for the first commit (topological order) without the path; ``None``
        when the path is still there at ``until_sha`` or was never in ``since_sha``.
        """
        commits = self.commits_between(since_sha, until_sha)
        if not commits or self.blob_id_at(since_sha, path) is None:
            return None
        if self.blob_id_at(commits[-1], path) is not None:
            return None
        lo, hi = 0, len(commits) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.blob_id_at(commits[mid], path) is None:
                hi = mid
            else:
                lo = mid + 1
        return self.short(commits[lo])

    def last_commit_touching(
        self,
        path: str,
        since_sha: str,
        until_sha: str,
        lines: tuple[int, int] | None = None,
        new_path: str | None = None,
    ) -> str | None:
        """Short SHA of the commit that changed ``path`` (or its ``lines``) after ``since_sha``.

        Bisects the commits of ``since..until`` (topological order) for the first one
        where the file, or the given old line range, no longer matches ``since_sha``'s
        version; a deletion counts as a change. ``new_path`` is where a rename took the
        file by ``until_sha``. ``O(log n)`` tree lookups and diffs, all memoised.

        Returns:
            The short SHA, or ``None`` when nothing on HEAD's side changed it (e.g. the
            difference comes from the observed side of a diverged history).
        """
        old_blob = self.blob_id_at(since_sha, path)
        commits = self.commits_between(since_sha, until_sha)
        if old_blob is None or not commits:
            return None
        paths = (path,) if new_path is None or new_path == path else (path, new_path)
        if not self._changed_at(commits[-1], paths, old_blob, lines):
            return None
        lo, hi = 0, len(commits) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._changed_at(commits[mid], paths, old_blob, lines):
                hi = mid
            else:
                lo = mid + 1
        return self.short(commits[lo])
