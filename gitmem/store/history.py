"""The history of one path on the memory ref, and the commit-graph that keeps it cheap.

A record's history (``tur show``, the TUI's history pane, the anchor trail) is the list of
commits whose version of the record differs from every parent's. On a memory ref of a
team's year (20,000 commits) a walk that reads two trees per commit costs seconds; git's
own path-limited walk (``git log -- PATH``) reads the commit-graph
(``objects/info/commit-graph``, or the chain in ``objects/info/commit-graphs/``) and its
changed-path Bloom filters, and passes every commit whose filter says the path did not
change without reading a tree (Derrick Stolee, "Supercharging the Git Commit Graph IV:
Bloom Filters", 2020; ``git help commit-graph``).

So :class:`History` asks git for the walk, and keeps a commit-graph for the memory ref's
commits current the way git's own upkeep does: after gitmem moves ``refs/tur/memories``,
when at least ``maintenance.commit-graph.auto`` (git's key; default 100) of its commits
have come since the last write, one ``git commit-graph write --stdin-commits --changed-paths
--split`` adds them as a new layer (git merges small layers as ``git maintenance`` does).
Only commits reachable from the memory ref are named; the graph goes where git writes it,
the repository's own ``objects/info``; no hook is installed. ``core.commitGraph=false`` or
``gc.writeCommitGraph=false`` (the user turned graphs off), a shallow clone or grafts, and
``maintenance.commit-graph.auto=0`` mean no write.

A graph is an index, never the truth: a walk that fails with one is run again without it,
and so is one whose changes do not chain (each listed change must produce the version the
next newer one started from, the newest the tip's), which a damaged Bloom filter that
hides a commit would break. A missing or stale graph only makes the walk slower.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError
from gitmem.store.repo import HEX, pg

if TYPE_CHECKING:
    from pathlib import Path

    from gitmem.store.gitcli import PathChange
    from gitmem.store.repo import Repository

__all__ = ["GRAPH_AUTO", "History"]

GRAPH_AUTO = 100
"""New memory-ref commits that make a commit-graph write due (git's ``maintenance.commit-graph.auto``
default, which this reads)."""

_UNKNOWN = "?"  # the version before a merge: one per parent


class History:
    """Per-path history of a ref through git's walk, and the commit-graph upkeep after gitmem's writes.

    Args:
        repository: the repository.
        blob_id_at: the store's (memoised) ``(commit, path) -> blob id or None``.
    """

    def __init__(self, repository: Repository, blob_id_at: Callable[[str, str], str | None]) -> None:
        self._repository = repository
        self._blob_id_at = blob_id_at

    # -- reading -----------------------------------------------------------------------------

    def deletions(self, tip: str, directory: str, limit: int) -> list[tuple[str, str, str]]:
        """``(commit, its parent, path)`` of files under ``directory`` that recent commits deleted.

        Commits reachable from ``tip`` with one parent, newest first (``git log --diff-filter=D``
        limited to the directory, in git's default history simplification: a merge that
        kept a file does not let a side's deletion count). Reads the commit-graph's Bloom
        filters like :meth:`changes`.

        Raises:
            GitmemError: git cannot walk the history.
        """
        from gitmem.store.gitcli import Git

        # git alone, not libgit2: a wake after a learn loads no libgit2.
        git = Git(self._repository.git_dir, None)
        proc = git.run("--no-replace-objects", "--literal-pathspecs", "-c", "log.follow=false",
                       "-c", "log.showSignature=false", "-c", "color.ui=false", "-c", "core.quotePath=false",
                       "log", "--no-renames", "--diff-filter=D", "--name-only", "--no-merges",
                       "--format=%x01%H %P", f"-n{limit}", tip, "--", f"{directory}/")
        if proc.returncode != 0:
            raise GitmemError(f"git log failed: {proc.stderr.decode('utf-8', 'replace').strip()[:200]}")
        found: list[tuple[str, str, str]] = []
        ids: list[str] = []
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("\x01"):
                ids = line[1:].split()
            elif line and len(ids) == 2 and all(HEX.fullmatch(i) for i in ids):
                found.append((ids[0], ids[1], line))
        return found


    def changes(self, tip: str, path: str) -> list[str]:
        """Commits reachable from ``tip`` whose blob at ``path`` differs from every parent's, newest first.

        A root commit counts when it has the path. Order: git's ``--date-order`` (no commit
        before all of its children; otherwise newest commit time first).

        Raises:
            GitmemError: git cannot walk the history, with or without a commit-graph.
        """
        git = self._repository.access.git
        graph = self.graph_present()
        try:
            kept = self._narrow(git.path_log(tip, path), path)
        except GitmemError:
            if not graph:
                raise
            graph, kept = False, None
        if kept is None or (graph and not self._chained(tip, path, kept)):
            kept = self._narrow(git.path_log(tip, path, commit_graph=False), path)
        return [sha for sha, _, _ in kept]

    def _narrow(self, found: list[PathChange], path: str) -> list[tuple[str, str | None, str | None]]:
        """``(sha, new blob, old blob)`` of the commits of ``found`` that changed ``path`` from every parent.

        git lists a merge only when it differs from every parent, without blob ids: they
        are read here (for :meth:`_chained`), and the rule checked again (a sync merge that
        carries one side's version changed nothing).
        """
        kept: list[tuple[str, str | None, str | None]] = []
        for change in found:
            if change.listed:
                kept.append((change.sha, change.new, change.old))
                continue
            here = self._blob_id_at(change.sha, path)
            before = [self._blob_id_at(p, path) for p in change.parents] or [None]
            if all(here != b for b in before):
                kept.append((change.sha, here, before[0] if len(before) == 1 else _UNKNOWN))
        return kept

    def _chained(self, tip: str, path: str, kept: list[tuple[str, str | None, str | None]]) -> bool:
        """Whether each change produced the version the next newer one started from (the newest: the tip's).

        Across a merge the version before is one per parent, so the next change is not
        checked; a change on each side of a merge to one record can fail the check, which
        only costs a walk without the graph.
        """
        expected: str | None = self._blob_id_at(tip, path)
        for _, new, old in kept:
            if expected != _UNKNOWN and new != expected:
                return False
            expected = old
        return expected in (None, _UNKNOWN)

    # -- the commit-graph --------------------------------------------------------------------

    @property
    def objects_info(self) -> Path:
        """``<git common dir>/objects/info``: where git reads and writes the commit-graph."""
        return self._repository.common_dir / "objects" / "info"

    @property
    def state_file(self) -> Path:
        """``<git common dir>/tur/commit-graph``: the memory-ref tip of the last write (or attempt)."""
        return self._repository.common_dir / "tur" / "commit-graph"

    def graph_present(self) -> bool:
        """Whether git may read a commit-graph here (its own, or an alternate object store's)."""
        info = self.objects_info
        return any(p.exists() for p in (info / "commit-graph", info / "commit-graphs" / "commit-graph-chain",
                                         info / "alternates"))

    def last_written(self) -> str | None:
        """The memory-ref tip of the last commit-graph write gitmem made or tried, or ``None``."""
        try:
            text = self.state_file.read_text().strip()
        except OSError:
            return None
        return text if HEX.fullmatch(text) else None

    def after_move(self, tip: str) -> bool:
        """After gitmem moved the memory ref to ``tip``: write the commit-graph if it is due.

        Due when the graph is wanted (see the module docstring) and at least
        ``maintenance.commit-graph.auto`` commits reachable from ``tip`` came after the
        last write's tip (a negative value: every time). Counting stops there, so the check
        reads at most that many commits. A write that fails (a lock held by a concurrent
        git, a directory that cannot be written) is not retried before as many new
        commits again; nothing here raises.

        Returns:
            Whether a write ran and succeeded.
        """
        try:
            auto = self._auto()
            if auto == 0 or not self._wanted():
                return False
            if auto > 0 and self._unwritten(tip, self.last_written(), auto) < auto:
                return False
            failed = self._repository.access.git.write_commit_graph([tip])
        except (GitmemError, OSError, ValueError, pg().GitError):
            return False
        self._note(tip)
        return failed is None

    def _auto(self) -> int:
        value = self._config("maintenance.commit-graph.auto")
        try:
            return int(value) if value is not None else GRAPH_AUTO
        except ValueError:
            return GRAPH_AUTO

    def _wanted(self) -> bool:
        """Not turned off by the user's configuration, and a repository git keeps graphs for."""
        for key in ("core.commitGraph", "gc.writeCommitGraph"):
            value = self._config(key)
            if value is not None and value.strip().lower() in ("false", "no", "off", "0"):
                return False
        common = self._repository.common_dir
        return not ((common / "shallow").exists() or (common / "info" / "grafts").exists())

    def _config(self, key: str) -> str | None:
        config = self._repository.repo.config
        try:
            return str(config[key]) if key in config else None
        except (KeyError, ValueError, pg().GitError):
            return None

    def _unwritten(self, tip: str, since: str | None, cap: int) -> int:
        """Commits reachable from ``tip`` and not from ``since`` (all, without it), counted up to ``cap``."""
        walker = self._repository.repo.walk(tip)
        if since is not None:
            with suppress(KeyError, ValueError, pg().GitError):
                walker.hide(since)  # gone (a rewritten ref, pruned): count from scratch
        count = 0
        for _ in walker:
            count += 1
            if count >= cap:
                break
        return count

    def _note(self, tip: str) -> None:
        path = self.state_file
        with suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"commit-graph.{os.getpid()}.tmp")
            tmp.write_text(tip + "\n")
            os.replace(tmp, path)
