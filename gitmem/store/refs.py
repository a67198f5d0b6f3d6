"""The refs gitmem moves: reading tips, compare-and-swap updates, and the lock forensics.

:class:`Refs` is the part of :class:`~gitmem.store.Store` that moves ``refs/tur/memories``
(and the remote-tracking refs a sync writes). A change is one commit whose parent is the
tip it was built on, published with ``git update-ref NEW OLD`` (git's own atomic
compare-and-swap under the ref lock, which libgit2's bindings do not expose). A lock left
by a killed git is told from a live one by the host and pid gitmem records beside it
(``<common dir>/tur/locks/<new sha>``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from gitmem.errors import GitmemError, RefConflict, RefLocked, disk_full
from gitmem.store.locks import alive, can_inspect, git_processes_in, prune_owners
from gitmem.store.repo import HEX, pg
from gitmem.store.tree import StoredBlob

if TYPE_CHECKING:
    import pygit2

    from gitmem.store.history import History
    from gitmem.store.people import People
    from gitmem.store.repo import Repository
    from gitmem.store.tree import Trees

__all__ = ["MEMORY_REF", "STALE_LOCK_SECONDS", "CommitInfo", "Mutation", "Refs", "commit_info"]

MEMORY_REF = "refs/tur/memories"
_ZERO = "0" * 40


@dataclass(frozen=True)
class CommitInfo:
    """One commit on the memory ref, as shown by ``tur show`` and ``tur log``."""

    sha: str
    message: str
    author: str
    time: datetime
    parents: tuple[str, ...] = ()


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



def _reflog_message(message: str) -> str:
    """``tur: <first line of message>`` (``tur`` alone for none), one line."""
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    return f"tur: {first}" if first else "tur"


def commit_info(commit: pygit2.Commit) -> CommitInfo:
    """The :class:`CommitInfo` of a libgit2 commit."""
    return CommitInfo(
        sha=str(commit.id),
        message=commit.message.strip(),
        author=f"{commit.author.name} <{commit.author.email}>",
        time=datetime.fromtimestamp(commit.commit_time, UTC),
        parents=tuple(str(p) for p in commit.parent_ids),
    )


class Refs:
    """Tips, the reflog'd compare-and-swap of a ref, and :meth:`transact` on the memory ref.

    Args:
        repository: where the refs are.
        trees: builds the tree of each change.
        people: the identity each commit is signed with.
        tip: the store's reader of a ref's tip, its guard included (what a change is built on).
    """

    def __init__(self, repository: Repository, trees: Trees, people: People,
                 tip: Callable[[str], str | None]) -> None:
        self._repository = repository
        self._trees = trees
        self._people = people
        self._tip = tip
        self._notices: list[str] = []
        self._history: History | None = None

    @property
    def history(self) -> History:
        """Per-path history through git's walk, and the commit-graph upkeep (:mod:`gitmem.store.history`)."""
        if self._history is None:
            from gitmem.store.history import History

            self._history = History(self._repository, self._trees.blob_id_at)
        return self._history

    def read_tip(self, ref: str) -> str | None:
        """Commit SHA ``ref`` points at (from the ref files where it can), or ``None``."""
        answered, sha = self._repository.file_ref(ref)
        if answered:
            return sha
        try:
            return str(self._repository.repo.references[ref].resolve().target)
        except KeyError:
            return None


    # -- the last tip gitmem wrote -----------------------------------------------------------

    @property
    def last_tip_file(self) -> Path:
        """``<git common dir>/tur/tip``: the memory ref's tip as gitmem last wrote it."""
        return self._repository.common_dir / "tur" / "tip"

    def last_written_tip(self) -> str | None:
        """The tip gitmem last wrote to the memory ref (from :attr:`last_tip_file`), or ``None``."""
        try:
            text = self.last_tip_file.read_text().strip()
        except OSError:
            return None
        return text if HEX.fullmatch(text) else None

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


    def log(self, path: str | None = None, ref: str = MEMORY_REF, limit: int = 200) -> list[CommitInfo]:
        """See :meth:`gitmem.store.Store.log`."""
        tip = self._tip(ref)
        if tip is None:
            return []
        repo = self._repository.repo
        if path is not None:
            shas = self.history.changes(tip, path)[:limit]
            return [commit_info(cast("pygit2.Commit", repo[sha])) for sha in shas]
        out: list[CommitInfo] = []
        order = pg().enums.SortMode.TOPOLOGICAL | pg().enums.SortMode.TIME
        for commit in repo.walk(tip, order):
            out.append(commit_info(commit))
            if len(out) >= limit:
                break
        return out

    # -- writing ---------------------------------------------------------------------------

    def commit_on(self, base: str, changes: Mapping[str, bytes | StoredBlob | None], message: str) -> str:
        """See :meth:`gitmem.store.Store.commit_on`."""
        tree = self._trees.write_tree(base, changes)
        return self._people.write_commit(tree, [base], message)

    def transact(
        self,
        build: Callable[[str | None], Mutation | None],
        *,
        ref: str = MEMORY_REF,
        attempts: int = 40,
        lock_wait_seconds: float = STALE_LOCK_SECONDS + 3.0,
    ) -> tuple[CommitInfo | None, Mutation | None]:
        """See :meth:`gitmem.store.Store.transact`."""
        locked_since: float | None = None
        for attempt in range(attempts):
            tip = self._tip(ref)
            self._trees.check_format(tip)
            mutation = build(tip)
            if mutation is None:
                return None, None
            mutation.written = {}
            try:
                tree = self._trees.write_tree(tip, mutation.changes, mutation.written)
                base_tree = str(self._trees.commit_tree(tip).id) if tip else None
                if tree == base_tree and not mutation.allow_empty and not mutation.parents_extra:
                    return None, mutation
                parents = ([tip] if tip else []) + list(mutation.parents_extra)
                new = self._people.write_commit(tree, parents, mutation.message)
            except (OSError, pg().GitError) as exc:
                raise self._trees.write_error(exc) from None
            outcome = self._update_ref(ref, new, tip, mutation.message)
            if outcome == "ok":
                if tip is not None and not mutation.parents_extra:
                    self._trees.carry_lookups(tip, new, mutation.changes)
                return commit_info(cast("pygit2.Commit", self._repository.repo[new])), mutation
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


    def _update_ref(self, ref: str, new: str, old: str | None, message: str = "") -> str:
        """Run ``git update-ref``; return ``"ok"``, ``"locked"`` or ``"moved"``.

        Every move writes a reflog entry (``--create-reflog``: also where
        ``core.logAllRefUpdates`` is off, as in a bare repository), whose message is
        ``tur: `` and the first line of ``message``. A move of the memory ref is remembered
        in :attr:`last_tip_file`, and libgit2's parsed objects are dropped
        (:meth:`~gitmem.store.repo.Repository.drop_object_cache`).

        While git runs, ``<common dir>/tur/locks/<new>`` records this host and git's pid,
        so that a lock git leaves behind when it is killed can be told from a live one (see
        :meth:`_clear_stale_lock`).

        Raises:
            GitmemError: git failed otherwise, or was killed (then its lock is removed).
        """
        # Imported here: reads never move a ref, and these cost a warm read ~20 ms to import.
        import socket
        import subprocess

        owner = self._repository.common_dir / "tur" / "locks" / new
        proc = subprocess.Popen(
            ["git", "--git-dir", str(self._repository.git_dir), "update-ref", "--create-reflog",
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
                self.history.after_move(new)
            # The old tip's parsed trees are dead weight now: a long-running process kept them all.
            self._repository.drop_object_cache()
            prune_owners(owner.parent)
            return "ok"
        if proc.returncode < 0:
            return self._killed(ref, new, -proc.returncode)
        from gitmem.store.fallback import unsafe_error, write_error

        denied = write_error(RuntimeError(err), self._repository.common_dir)
        if denied is not None:
            raise denied
        if "dubious ownership" in err:
            raise unsafe_error(self._repository.workdir or self._repository.git_dir)
        if ".lock" in err and ("exists" in err or "Unable to create" in err):
            return "moved" if self._clear_stale_lock(ref) else "locked"
        if "but expected" in err or "already exists" in err or "reference already exists" in err:
            return "moved"
        full = disk_full(RuntimeError(err))
        if full is not None:
            raise full
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}, no message"
        raise GitmemError(f"git update-ref {ref} failed: {last}")

    def _killed(self, ref: str, new: str, signum: int) -> str:
        """After ``git update-ref`` died of signal ``signum``: done, or its lock removed and an error."""
        if self.read_tip(ref) == new:
            if ref == MEMORY_REF:
                self.note_tip(new)
            return "ok"  # killed after the rename: the change is in
        lock = self._repository.common_dir / (ref + ".lock")
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
        :meth:`_update_ref`) is no longer running on this host; or the lock is older than
        :data:`STALE_LOCK_SECONDS` (git holds a ref lock for milliseconds) and no live
        process can hold it (:func:`~gitmem.store.locks.git_processes_in`: a
        ``git update-ref --stdin`` between ``prepare`` and ``commit`` holds it for as long as
        its caller wants). Each removal adds one line to :meth:`take_notices`.
        """
        lock = self._repository.common_dir / (ref + ".lock")
        try:
            before = lock.stat()
            content = lock.read_text(errors="replace").strip()
        except OSError:
            return True  # gone already: try again at once
        why = None
        owner = self._repository.common_dir / "tur" / "locks" / content if HEX.fullmatch(content) else None
        try:
            host, pid = owner.read_text().split() if owner is not None else ("", "")
        except (OSError, ValueError):
            host, pid = "", ""
        import socket

        if host == socket.gethostname() and pid.isdigit() and not alive(int(pid)):
            why = f"its git process {pid} is no longer running"
        age = time.time() - before.st_mtime
        if why is None and age > STALE_LOCK_SECONDS and can_inspect() and not self._holders():
            why = f"it is {age:.0f} s old and no git process works in this repository"
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
        prune_owners(self._repository.common_dir / "tur" / "locks")
        self._notices.append(f"tur: removed the stale lock {lock} ({why})")
        return True

    def _holders(self) -> list[str]:
        """The live git processes that could hold this repository's ref locks (:mod:`gitmem.store.locks`)."""
        repository = self._repository
        dirs = [repository.git_dir, repository.common_dir]
        if repository.workdir is not None:
            dirs.append(repository.workdir)
        return git_processes_in(dirs)


    def _locked_error(self, ref: str) -> RefLocked:
        lock = self._repository.common_dir / (ref + ".lock")
        when = ""
        try:
            mtime = datetime.fromtimestamp(lock.stat().st_mtime, UTC)
            when = f" (created {mtime:%Y-%m-%d %H:%M:%S} UTC)"
        except OSError:
            pass
        holders = self._holders() if can_inspect() else []
        if holders:
            return RefLocked(
                f"{lock} exists{when}: {holders[0]} may hold it"
                + (f" (and {len(holders) - 1} more)" if len(holders) > 1 else ""),
                "let it finish, or stop it; tur never removes a lock a live process can hold",
            )
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
        """See :meth:`gitmem.store.Store.update_ref`."""
        outcome = self._update_ref(ref, new, old, message)
        if outcome == "locked":
            raise self._locked_error(ref)
        return outcome == "ok"


