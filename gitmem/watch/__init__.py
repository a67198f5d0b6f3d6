"""The background watcher: re-verify memories as soon as their anchored code changes.

:class:`Watcher` follows the working tree and the git state with ``watchfiles`` and
yields one :class:`WatchEvent` per verify it ran. It never prints and never installs git
hooks. What triggers what:

- an anchored file is edited, replaced by an atomic rename, or deleted (also as
  part of a deleted or renamed directory) → verify the memories anchored to it;
- HEAD moves (commit, checkout, reset, on any branch) → verify every memory,
  since the anchors are compared with HEAD;
- the index changes with HEAD still (``git add``, ``git restore --staged``,
  ``git checkout -- FILE``) → verify the memories on the paths whose index entries
  changed (compared with :meth:`gitmem.api.Gitmem.index_entries`);
- the memory ref moves (another process learned or forgot a memory, or this
  watcher committed) → re-read the anchored paths, nothing is verified.

Only what can mean one of these is watched, each directory without its subdirectories:
the directories holding anchored files and their parents up to the root (so that a
deleted or renamed directory is seen), the git directory (``HEAD``, ``index``), and the
directories of the branch refs and the memory ref. The set is recomputed after every
batch. When the operating system refuses more watches (the inotify limit), the watcher
polls the same directories instead and says so once.

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

Each watcher reports every status change it sees, judged against the statuses it last
saw, not only those it records itself: when two watchers follow one repository, the one
whose write comes second finds the record already changed and still reports the change.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.api import Status, VerifyOutcome, utc_now, worktree_path
from gitmem.errors import GitmemError, InvalidInput, OutsideWorkTree

if TYPE_CHECKING:
    from gitmem.api import Gitmem

__all__ = ["StatusChange", "WatchEvent", "Watcher", "anchored_paths"]

#: Files in a worktree's own git directory whose change means HEAD or the index moved.
_GIT_DIR_FILES = frozenset({"HEAD", "index"})
#: Files in the common git directory whose change means a branch or the memory ref moved
#: (``refs/tur``: the directory of the memory ref appears with the first memory).
_COMMON_FILES = frozenset({"packed-refs", "refs/tur/memories", "refs/tur"})
_COMMON_PREFIXES = ("refs/heads/",)
#: A lock older than this (seconds) is taken as left behind by a crashed git.
_MAX_HOLD_S = 5.0
#: How often a polling watcher looks at the watched directories (milliseconds).
POLL_DELAY_MS = 300
#: errno values of a refused watch: inotify's watch limit, its instance limit.
_LIMIT_ERRNOS = (errno.ENOSPC, errno.EMFILE)
#: A status and its reason, as recorded or as seen.
_Seen = tuple[Status | None, str | None]


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
        polling: poll the watched directories instead of asking the operating system
            (what the watcher falls back to by itself when the OS refuses more watches).
        on_batch: called in the watching thread once a batch of changes taken from the OS
            watch is handled (its verify, if any, yielded first; the watched directories
            updated), with the batch's absolute paths, those that trigger nothing included.
            One OS watch reports changes in order, so a change seen here means that every
            change made before it was handled too (what a test waits for, not for a time).

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
        polling: bool = False,
        on_batch: Callable[[frozenset[str]], None] | None = None,
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
        self.polling = polling
        self.on_batch = on_batch
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
        self._index: dict[str, str] = {}
        # Per memory, as this watcher last saw it: the status, the reason and, when only this
        # clone's uncommitted changes made it so, the recorded status and reason beneath.
        self._known: dict[str, tuple[Status | None, str | None, _Seen | None]] = {}
        # The overlay when the watch started, the baseline for memories not judged yet: its
        # entries lapse when the file changes, which is just when a flip back to fresh must
        # still be reported.
        self._local: dict[str, str] = gm.local_reasons()
        self._notify: Any = None
        self._watched: tuple[str, ...] = ()
        self._notices: list[str] = []
        self._reload(gm)

    # -- what is watched -------------------------------------------------------------------

    @property
    def watching(self) -> tuple[str, ...]:
        """The directories the OS watch is in place on now (sorted; empty before and after)."""
        return self._watched

    def anchored_paths(self) -> dict[str, tuple[str, ...]]:
        """The anchored files and their memory ids, as of the last read of the memory ref."""
        return dict(self._anchors)

    def watch_dirs(self) -> list[Path]:
        """The directories handed to the file watcher, each watched without its subdirectories.

        The working tree's root; every existing directory that holds an anchored file, and
        its parents; the git directory (``HEAD``, ``index``) and the common one
        (``packed-refs``); ``refs``, ``refs/tur`` and ``refs/heads`` with its
        subdirectories (branches named ``team/topic``). Sorted.
        """
        dirs = {self.root, self._git_dir, self._common_dir}
        for rel in self._dirs:
            try:  # a directory reached through a symbolic link out of the work tree is not watched
                full = str(worktree_path(Path(self.root), rel, directory=True)) if rel else self.root
            except OutsideWorkTree:
                continue
            if os.path.isdir(full):
                dirs.add(full)
        refs = os.path.join(self._common_dir, "refs")
        for extra in (refs, os.path.join(refs, "tur")):
            if os.path.isdir(extra):
                dirs.add(extra)
        for top, _subdirs, _files in os.walk(os.path.join(refs, "heads")):
            dirs.add(top)
        return [Path(d) for d in sorted(dirs)]

    def keep(self, change: object, path: str) -> bool:
        """True for a change that can trigger something (see :meth:`_classify`).

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

    # -- the file watch --------------------------------------------------------------------

    def _open(self, dirs: list[str]) -> Any:
        """A ``RustNotify`` watching ``dirs``; polling when asked to or when the OS refuses.

        Raises:
            GitmemError: the operating system refused the watch for another reason.
        """
        from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

        if not self.polling:
            try:
                return RustNotify(dirs, False, False, POLL_DELAY_MS, False, False)
            except (OSError, WatchfilesRustInternalError) as exc:
                if not _is_watch_limit(exc):
                    raise GitmemError(
                        f"cannot watch {self.root}: {exc}",
                        "run `tur watch --poll` to poll the files instead",
                    ) from exc
                self.polling = True
                self._notices.append(
                    f"the operating system's limit on file watches is reached ({exc}); polling "
                    f"{len(dirs)} directories every {POLL_DELAY_MS} ms instead "
                    "(on Linux, raise fs.inotify.max_user_watches to watch natively)")
        try:
            return RustNotify(dirs, False, True, POLL_DELAY_MS, False, True)
        except (OSError, WatchfilesRustInternalError) as exc:
            raise GitmemError(f"cannot poll {self.root}: {exc}") from exc

    def _ensure_watch(self) -> set[tuple[int, str]]:
        """Watch :meth:`watch_dirs` if the set changed; return the changes the old watch still held.

        The new watch is in place before the old one is drained and closed, so no change
        falls between the two.
        """
        dirs = tuple(str(d) for d in self.watch_dirs())
        if dirs == self._watched and self._notify is not None:
            return set()
        new = self._open(list(dirs))
        old, self._notify, self._watched = self._notify, new, dirs
        held: set[tuple[int, str]] = set()
        if old is not None:
            found = old.watch(1, 1, 1, None)
            if isinstance(found, set):
                held = found
            old.close()
        return held

    def _close(self) -> None:
        if self._notify is not None:
            self._notify.close()  # releases the OS watches now, not at garbage collection
            self._notify = None
            self._watched = ()

    # -- the loop --------------------------------------------------------------------------

    def events(self) -> Iterator[WatchEvent]:
        """Watch until :attr:`stop_event` is set (or SIGINT in the main thread); yield per verify.

        The first event has trigger ``"start"``; after it, edits are seen. Verify
        errors are yielded as events with ``error`` set, and watching goes on.

        Raises:
            GitmemError: the operating system refused to watch or poll the directories.
        """
        self._ensure_watch()
        try:
            self.ready.set()
            yield self._start()
            while not self.stop_event.is_set():
                raw = self._notify.watch(max(self.debounce_ms * 10, 1600), self.debounce_ms,
                                         self.tick_ms, self.stop_event)
                if raw in ("stop", "signal"):
                    return
                batch = frozenset(path for _change, path in raw) if isinstance(raw, set) else frozenset()
                for path in batch:
                    self._note(path)
                seen = bool(batch)
                if self._pending and not self._git_busy():
                    seen = True
                    event = self._process()
                    if event is not None:
                        yield event
                if seen:  # a directory comes or goes, an anchor appears, only with a change
                    for _change, path in self._ensure_watch():
                        self._note(path)
                if batch and self.on_batch is not None:
                    self.on_batch(batch)
        finally:
            self._close()

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

    def _take_notices(self, gm: Gitmem) -> tuple[str, ...]:
        taken, self._notices = self._notices, []
        return (*taken, *gm.take_notices())

    def _start(self) -> WatchEvent:
        gm = self._fresh_gitmem()
        self._reload(gm)
        self._head = gm.head()
        self._index_moved()
        self._index = gm.index_entries(self._anchors)
        if not self.initial or self._head is None:
            return WatchEvent(at=utc_now(), trigger="start", notices=self._take_notices(gm))
        return self._verify(gm, "start", (), None)

    def _process(self) -> WatchEvent | None:
        pending, self._pending = self._pending, _Pending()
        gm = self._fresh_gitmem()
        if gm.tip() != self._tip:
            self._reload(gm)
        head = gm.head()
        paths = self._affected(pending.files)
        if head is None:
            self._head = None
            return None
        if head != self._head:
            return self._verify(gm, "head", tuple(sorted(paths)), None)
        trigger = "files"
        if pending.git_state and self._index_moved():
            staged = self._staged_paths(gm)
            if staged:
                trigger = "index"
                paths |= staged
        if not paths:
            return None
        ids = sorted({i for p in paths for i in self._anchors[p]})
        return self._verify(gm, trigger, tuple(sorted(paths)), ids)

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

    def _staged_paths(self, gm: Gitmem) -> set[str]:
        """Anchored paths whose index entries changed since the last look (then the new baseline)."""
        entries = gm.index_entries(self._anchors)
        changed = {p for p in self._anchors if entries.get(p) != self._index.get(p)}
        self._index = entries
        return changed

    def _verify(self, gm: Gitmem, trigger: str, paths: tuple[str, ...], ids: list[str] | None) -> WatchEvent:
        """Verify ``ids`` (every memory when ``None``) as a background check; report what changed."""
        head = gm.head()
        self._index_moved()  # the index as this verify sees it is the baseline for the next
        if ids is None:
            self._index = gm.index_entries(self._anchors)
        try:
            # Only a HEAD move (or the start) may change what follows from commits.
            outcome = gm.verify(ids, explicit=False, write=trigger in ("head", "start"))
        except GitmemError as exc:
            self._tip = None  # re-read the anchors next time: an id may have gone
            return WatchEvent(at=utc_now(), trigger=trigger, paths=paths,
                              ids=tuple(ids or ()), error=str(exc), notices=self._take_notices(gm))
        self._head = head
        if outcome.commit is not None:
            self._reload(gm)
        verified = tuple(r.memory_id for r in outcome.rows)
        return WatchEvent(at=utc_now(), trigger=trigger, paths=paths, ids=verified,
                          outcome=outcome, changes=self._changes(outcome),
                          notices=self._take_notices(gm))

    def _changes(self, outcome: VerifyOutcome) -> tuple[StatusChange, ...]:
        """Rows whose status or reason differ from what this watcher last saw, or whose lines moved.

        What the watcher last saw is its own earlier verdict or, for a memory it has not
        judged yet, the stored status (or the overlay's, when this clone's uncommitted
        changes made it stale): a change another process recorded first still counts. A
        change is ``local`` when this clone's working tree or index caused it, or undid what
        they had caused (back to the recorded status they hid, which nobody changed meanwhile).
        """
        out = []
        for row in outcome.rows:
            recorded: _Seen = (row.old_status, row.old_reason)
            known = self._known.get(row.memory_id)
            if known is None:
                was_local = self._local.get(row.memory_id)
                refuted = row.old_status is Status.REFUTED
                known = ((Status.STALE, was_local, recorded) if was_local and not refuted
                         else (*recorded, None))
            old_status, old_reason, beneath = known
            self._known[row.memory_id] = (row.status, row.reason, recorded if row.local else None)
            # An unanchored memory's reason says why it has no anchor (a legacy record has no
            # provenance): no edit changes it, so only a new status is worth a line.
            reason_changed = row.status is Status.STALE and row.reason != old_reason
            if old_status is row.status and not reason_changed and not row.moved:
                continue  # at most corroborated at the new HEAD: not worth a line
            local = row.local is not None or (beneath is not None and (row.status, row.reason) == beneath)
            out.append(StatusChange(row.memory_id, old_status, row.status, row.reason,
                                    row.new_ref if row.moved else None, local=local))
        return tuple(out)


def _is_watch_limit(exc: BaseException) -> bool:
    """True when ``exc`` is the OS refusing another watch (inotify's watch or instance limit)."""
    if isinstance(exc, OSError) and exc.errno in _LIMIT_ERRNOS:
        return True
    text = str(exc).lower()
    return any(words in text for words in ("watch limit", "too many open files", "no space left"))


def _real(path: os.PathLike[str] | str) -> str:
    return os.path.realpath(path).rstrip(os.sep) or os.sep


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + os.sep)


def _rel(path: str, directory: str) -> str:
    return os.path.relpath(path, directory).replace(os.sep, "/")
