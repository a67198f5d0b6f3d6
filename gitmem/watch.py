"""The background watcher: re-verify memories as soon as their anchored code changes.

:class:`Watcher` follows the working tree and the git state with ``watchfiles``
and yields one :class:`WatchEvent` per verify it ran. It never prints and
never installs git hooks. What triggers what:

- an anchored file is edited, replaced by an atomic rename, or deleted (also as
  part of a deleted or renamed directory) → verify the memories anchored to it;
- HEAD moves (commit, checkout, reset, on any branch) → verify every memory,
  since the anchors are compared with HEAD;
- the index changes with HEAD still (``git add``, ``git restore --staged``) →
  verify every anchored memory (a staged edit makes a memory stale);
- the memory ref moves (another process learned or forgot a memory, or this
  watcher committed) → re-read the anchored paths, nothing is verified.

Everything else — ``.git/`` internals such as objects and caches, files no memory
is anchored to, ignored files — triggers nothing.

What uncommitted changes do is local state (docs/sharing.md): a batch for edited files or the
index only updates this clone's overlay (``<git dir>/tur/worktree.json``) and never writes to
the memory ref. The ref is written only when HEAD moves (and at the start) and a memory's
status or reason changed at the new HEAD: at most one commit per HEAD. Changes are grouped: a batch
closes after ``debounce_ms`` without a change, and is held back while git holds
``index.lock`` (a checkout or commit in progress) so that a half-done checkout
never records a status. Verifies here are not explicit checks
(``verify(ids, explicit=False)``): they do not restart the memories' time decay.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.api import Status, VerifyOutcome, utc_now
from gitmem.errors import GitmemError, InvalidInput

if TYPE_CHECKING:
    from gitmem.api import Gitmem, Memory

__all__ = ["StatusChange", "WatchEvent", "Watcher", "anchored_paths"]

#: Files in a worktree's own git directory whose change means HEAD or the index moved.
_GIT_DIR_FILES = frozenset({"HEAD", "index"})
#: Files in the common git directory whose change means a branch or the memory ref moved.
_COMMON_FILES = frozenset({"packed-refs", "refs/tur/memories"})
_COMMON_PREFIXES = ("refs/heads/",)
#: A lock older than this (seconds) is taken as left behind by a crashed git.
_MAX_HOLD_S = 5.0


def anchored_paths(gm: Gitmem) -> dict[str, tuple[str, ...]]:
    """Map each anchored file (repository-relative POSIX path) to the ids anchored to it.

    See :meth:`gitmem.api.Gitmem.anchored_paths`.
    """
    return gm.anchored_paths()


@dataclass(frozen=True)
class StatusChange:
    """One memory whose status, reason or anchor a watcher verify changed.

    ``old`` is ``None`` when the memory was not known before the verify.
    ``new_ref`` is set when the anchor moved (re-anchored lines or a followed rename).
    ``local`` is set when the change is the working-tree overlay's (docs/sharing.md).
    """

    memory_id: str
    old: Status | None
    new: Status
    reason: str | None
    new_ref: str | None = None
    local: bool = False
    """Only this clone's working tree or index changed it: shown here, never recorded."""


@dataclass(frozen=True)
class WatchEvent:
    """What one batch did.

    Attributes:
        at: when the batch was handled (UTC).
        trigger: ``"start"`` (the first event: the watch is in place and the initial
            verify ran), ``"files"`` (anchored files changed), ``"head"`` (HEAD moved)
            or ``"index"`` (the index changed).
        paths: the changed anchored files (repository-relative), sorted.
        ids: the memories verified (every memory for ``"head"``/``"start"``), sorted.
        outcome: the verify's result (rows, commit); ``None`` if no verify ran.
        changes: memories whose status, reason or anchor changed.
        error: one line when the verify failed (the watcher carries on).
        notices: lines the store noted meanwhile (a stale ref lock it removed).
    """

    at: datetime
    trigger: str
    paths: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    outcome: VerifyOutcome | None = None
    changes: tuple[StatusChange, ...] = ()
    error: str | None = None
    notices: tuple[str, ...] = ()


@dataclass
class _Pending:
    """Changes seen and not yet handled."""

    files: set[str] = field(default_factory=set)
    git_state: bool = False
    since: float | None = None

    def __bool__(self) -> bool:
        return bool(self.files) or self.git_state


class Watcher:
    """Follow one repository's working tree and git state; yield a :class:`WatchEvent` per verify.

    Args:
        gm: the :class:`gitmem.api.Gitmem` to watch (a non-bare repository).
        debounce_ms: a batch closes after this many milliseconds without a change
            (and after at most ten times as long while changes keep coming).
        stop_event: set it (from a signal handler or another thread) to end
            :meth:`events` after the batch in progress; a new one if ``None``.
        tick_ms: how often, with nothing happening, held-back work is retried.
        initial: run a verify of every memory when the watch starts.

    Raises:
        InvalidInput: the repository is bare (no working tree to watch).
    """

    def __init__(
        self,
        gm: Gitmem,
        *,
        debounce_ms: int = 200,
        stop_event: threading.Event | None = None,
        tick_ms: int = 500,
        initial: bool = True,
    ) -> None:
        paths = gm.paths
        if paths.workdir is None:
            raise InvalidInput(
                "a bare repository has no working tree to watch",
                "run `tur watch` in a clone with a working tree",
            )
        if debounce_ms < 1:
            raise InvalidInput(f"debounce must be at least 1 ms, got {debounce_ms}")
        self.gm = gm
        self.debounce_ms = debounce_ms
        self.tick_ms = tick_ms
        self.initial = initial
        self.stop_event = stop_event or threading.Event()
        self.ready = threading.Event()
        """Set when the file watch is in place (just before the ``"start"`` event)."""
        self.root = _real(paths.workdir)
        self._git_dir = _real(paths.git_dir)
        self._common_dir = _real(paths.common_dir)
        self._pending = _Pending()
        self._tip: str | None = None
        self._head = gm.head()
        self._anchors: dict[str, tuple[str, ...]] = {}
        self._dirs: dict[str, set[str]] = {}
        self._index_stamp: tuple[int, int, int] | None = None
        # The overlay as this watcher last saw it: the file's entries lapse when the file
        # changes, which is just when a flip back to fresh must still be reported.
        self._local: dict[str, str] = gm.local_reasons()
        self._reload(gm)

    # -- what is watched -------------------------------------------------------------------

    def anchored_paths(self) -> dict[str, tuple[str, ...]]:
        """The anchored files and their memory ids, as of the last read of the memory ref."""
        return dict(self._anchors)

    def watch_roots(self) -> list[Path]:
        """Directories handed to the file watcher.

        The working tree, and the git directories that live outside it (linked
        worktrees, submodules).
        """
        roots = [self.root]
        for extra in (self._common_dir, self._git_dir):
            if not any(_under(extra, r) for r in roots):
                roots.append(extra)
        return [Path(r) for r in roots]

    def keep(self, change: object, path: str) -> bool:
        """The ``watchfiles`` filter: keep working-tree files and the git files that mean state.

        Args:
            change: the ``watchfiles.Change`` (unused: adds, edits and deletes all count).
            path: absolute path of the changed entry.
        """
        return self._classify(path) is not None

    def _classify(self, path: str) -> str | None:
        """``"git"`` for a git-state file, ``"file"`` for a working-tree path, else ``None``."""
        for git_dir, names, prefixes in (
            (self._git_dir, _GIT_DIR_FILES, ()),
            (self._common_dir, _COMMON_FILES, _COMMON_PREFIXES),
        ):
            if _under(path, git_dir):
                rel = _rel(path, git_dir)
                if rel in names or (rel.startswith(prefixes) and not rel.endswith(".lock")):
                    return "git"
        if _under(path, self._git_dir) or _under(path, self._common_dir):
            return None
        if not _under(path, self.root):
            return None
        rel = _rel(path, self.root)
        # Other .git directories (nested repositories, submodules) are not ours.
        if rel in ("", ".") or ".git" in rel.split("/"):
            return None
        return "file"

    def _reload(self, gm: Gitmem) -> None:
        """Re-read the anchored paths from the memory ref's current tip."""
        self._tip = gm.tip()
        self._anchors = anchored_paths(gm)
        dirs: dict[str, set[str]] = {}
        for path in self._anchors:
            parts = path.split("/")
            for i in range(1, len(parts)):
                dirs.setdefault("/".join(parts[:i]), set()).add(path)
        self._dirs = dirs

    def _affected(self, rels: set[str]) -> set[str]:
        """Anchored files among ``rels``, or under one of them (a deleted or renamed directory)."""
        hit: set[str] = set()
        for rel in rels:
            if rel in self._anchors:
                hit.add(rel)
            hit.update(self._dirs.get(rel, ()))
        return hit

    # -- the loop --------------------------------------------------------------------------

    def events(self) -> Iterator[WatchEvent]:
        """Watch until :attr:`stop_event` is set (or SIGINT in the main thread); yield per verify.

        The first event has trigger ``"start"``; after it, edits are seen. Verify
        errors are yielded as events with ``error`` set, and watching goes on.
        """
        import watchfiles

        changes_iter = watchfiles.watch(
            *self.watch_roots(),
            watch_filter=self.keep,
            debounce=max(self.debounce_ms * 10, 1600),
            step=self.debounce_ms,
            stop_event=self.stop_event,
            rust_timeout=self.tick_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        started = False
        try:
            while True:
                raw = _next_changes(changes_iter, self.root)
                if raw is None:
                    return
                if not started:
                    started = True
                    self.ready.set()
                    yield self._start()
                for _change, path in raw:
                    self._note(path)
                if self._pending and not self._git_busy():
                    event = self._process()
                    if event is not None:
                        yield event
                if self.stop_event.is_set():
                    return
        finally:
            changes_iter.close()  # releases the OS watches now, not at garbage collection

    def _note(self, path: str) -> None:
        kind = self._classify(path)
        if kind == "git":
            self._pending.git_state = True
        elif kind == "file":
            self._pending.files.add(_rel(path, self.root))
        if kind and self._pending.since is None:
            self._pending.since = time.monotonic()

    def _git_busy(self) -> bool:
        """True while git holds the index lock (checkout, commit, merge under way), for a while."""
        if not os.path.exists(os.path.join(self._git_dir, "index.lock")):
            return False
        since = self._pending.since or time.monotonic()
        return time.monotonic() - since < _MAX_HOLD_S

    def _fresh_gitmem(self) -> Gitmem:
        # A new handle per batch: nothing cached from an older HEAD or index survives.
        return self.gm.reopen()

    def _start(self) -> WatchEvent:
        gm = self._fresh_gitmem()
        self._reload(gm)
        self._head = gm.head()
        self._index_moved()
        if not self.initial or self._head is None:
            return WatchEvent(at=utc_now(), trigger="start")
        return self._verify(gm, "start", (), None)

    def _process(self) -> WatchEvent | None:
        pending, self._pending = self._pending, _Pending()
        gm = self._fresh_gitmem()
        if gm.tip() != self._tip:
            self._reload(gm)
        head = gm.head()
        paths = tuple(sorted(self._affected(pending.files)))
        if head is None:
            self._head = None
            return None
        if head != self._head:
            return self._verify(gm, "head", paths, None)
        if pending.git_state and self._index_moved():
            ids = sorted({i for ids in self._anchors.values() for i in ids})
            return self._verify(gm, "index", paths, ids) if ids else None
        if not paths:
            return None
        ids = sorted({i for p in paths for i in self._anchors[p]})
        return self._verify(gm, "files", paths, ids)

    def _index_moved(self) -> bool:
        """True when the index file changed since the last look (mtime, size, inode)."""
        try:
            st = os.stat(os.path.join(self._git_dir, "index"))
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        moved = stamp != self._index_stamp
        self._index_stamp = stamp
        return moved

    def _verify(self, gm: Gitmem, trigger: str, paths: tuple[str, ...], ids: list[str] | None) -> WatchEvent:
        """Verify ``ids`` (every memory when ``None``) as a background check; report what changed."""
        head = gm.head()
        self._index_moved()  # the index as this verify sees it is the baseline for the next
        before = _records(gm, ids)
        before_local = dict(self._local)
        try:
            # Only a HEAD move (or the start) may change what follows from commits.
            outcome = gm.verify(ids, explicit=False, write=trigger in ("head", "start"))
        except GitmemError as exc:
            self._tip = None  # re-read the anchors next time: an id may have gone
            return WatchEvent(at=utc_now(), trigger=trigger, paths=paths,
                              ids=tuple(ids or ()), error=str(exc), notices=tuple(gm.take_notices()))
        self._head = head
        for row in outcome.rows:
            if row.local is None:
                self._local.pop(row.memory_id, None)
            else:
                self._local[row.memory_id] = row.local
        if outcome.commit is not None:
            self._reload(gm)
        verified = tuple(r.memory_id for r in outcome.rows)
        return WatchEvent(at=utc_now(), trigger=trigger, paths=paths, ids=verified,
                          outcome=outcome, changes=_changes(before, outcome, before_local),
                          notices=tuple(gm.take_notices()))


def _next_changes(changes_iter: Iterator[set], root: str) -> set | None:
    """The next batch from ``watchfiles`` (``None`` when it stopped).

    Raises:
        GitmemError: the operating system refused the watch (e.g. the inotify limit).
    """
    from watchfiles._rust_notify import WatchfilesRustInternalError

    try:
        return next(changes_iter)
    except StopIteration:
        return None
    except (OSError, WatchfilesRustInternalError) as exc:
        raise GitmemError(
            f"cannot watch {root}: {exc}",
            "on Linux, raise fs.inotify.max_user_watches, or set WATCHFILES_FORCE_POLLING=1",
        ) from exc


def _records(gm: Gitmem, ids: list[str] | None) -> dict[str, Memory]:
    """The records a verify of ``ids`` judges, before it runs (every record when ``None``).

    A batch names the few memories anchored to the changed files: each is read from its
    own shard instead of reading all of them.
    """
    if ids is None:
        return {m.id: m for m in gm.memories()[0]}
    found = {}
    for memory_id in ids:
        try:
            found[memory_id] = gm.get(memory_id)
        except GitmemError:
            continue  # gone or unreadable: verify reports it
    return found


def _changes(before: dict[str, Memory], outcome: VerifyOutcome,
             before_local: dict[str, str]) -> tuple[StatusChange, ...]:
    out = []
    for row in outcome.rows:
        was_local = before_local.get(row.memory_id)
        if not row.changed and row.local == was_local:
            continue
        old = before.get(row.memory_id)
        old_status = (Status.STALE if was_local and old and old.refutation is None
                      else old.status if old else None)
        old_reason = was_local or (old.decay.reason if old and old.decay else None)
        reason_changed = row.status is not Status.FRESH and row.reason != old_reason
        if old_status is row.status and not reason_changed and not row.moved:
            continue  # only corroborated at the new HEAD: not worth a line
        out.append(StatusChange(row.memory_id, old_status, row.status, row.reason,
                                row.new_ref if row.moved else None, local=not row.changed))
    return tuple(out)


def _real(path: os.PathLike[str] | str) -> str:
    return os.path.realpath(path).rstrip(os.sep) or os.sep


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + os.sep)


def _rel(path: str, directory: str) -> str:
    return os.path.relpath(path, directory).replace(os.sep, "/")
