"""Remotes for the memory ref: fetch, push and refspec setup through the user's ``git``; graph queries.

Network operations run the user's ``git`` executable (not libgit2) so that
their credential helpers, SSH configuration, ``insteadOf`` URL rewrites and
proxies apply exactly as for ``git fetch``/``git push``. Object-level queries a
sync needs (merge base, ancestry, flat trees, merge commits) use pygit2 and
live here because only ``gitmem.store`` may import it.

Nothing here ever force-pushes: :meth:`Remote.push` uses
``--force-with-lease=refs/tur/memories:<expected>``, a compare-and-swap on the
remote, and refuses to push a commit that does not descend from the expected
remote tip.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime

import pygit2

from gitmem.errors import RemoteError
from gitmem.store.memories import Store
from gitmem.store.names import tree_name
from gitmem.store.refs import MEMORY_REF, commit_info

__all__ = [
    "Graph",
    "PushOutcome",
    "Remote",
    "fetch_refspec",
    "tracking_ref",
]

_ZERO = "0" * 40
# Lines of git's stderr that say nothing about the cause.
_NOISE = (
    "please make sure you have the correct access rights",
    "and the repository exists.",
    "hint:",
)


def tracking_ref(remote: str) -> str:
    """Remote-tracking ref of the memory ref: ``refs/tur/remotes/<remote>/memories``."""
    return f"refs/tur/remotes/{remote}/memories"


def fetch_refspec(remote: str) -> str:
    """Fetch refspec ``+refs/tur/memories:refs/tur/remotes/<remote>/memories``."""
    return f"+{MEMORY_REF}:{tracking_ref(remote)}"


@dataclass(frozen=True)
class PushOutcome:
    """Result of one push attempt.

    ``status`` is ``"ok"`` (the remote ref now points at ``sha``), ``"up-to-date"``
    (it already did) or ``"rejected"`` (the remote moved since it was fetched:
    fetch, merge and try again). ``detail`` is git's reason for a rejection.
    """

    status: str
    sha: str
    detail: str = ""


def _meaningful_line(stderr: str) -> str:
    """The most informative line of git's stderr: the first ``fatal:``/``error:`` line, else the last."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith(_NOISE)]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "git gave no reason"


class Remote:
    """One configured remote of the repository, as seen by the memory ref.

    Args:
        store: the repository's store.
        name: the remote's name (``origin``), as listed by ``git remote``.

    Raises:
        RemoteError: no remote of that name is configured.
    """

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        if not name or name.startswith("-") or name not in self.names(store):
            known = ", ".join(self.names(store)) or "none configured"
            raise RemoteError(
                f"no remote named {name!r} (remotes: {known})",
                "pass a remote listed by `git remote`, or add one with `git remote add NAME URL`",
            )

    # -- running git -------------------------------------------------------------------------

    @staticmethod
    def _git(store: Store, *args: str) -> subprocess.CompletedProcess[str]:
        # stdin from /dev/null: a credential prompt must not wait for input that never comes.
        return subprocess.run(
            ["git", "--git-dir", str(store.git_dir), *args],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    @classmethod
    def names(cls, store: Store) -> list[str]:
        """Names of the configured remotes (``git remote``), in git's order."""
        proc = cls._git(store, "remote")
        return proc.stdout.split() if proc.returncode == 0 else []

    @property
    def tracking_ref(self) -> str:
        """``refs/tur/remotes/<name>/memories``."""
        return tracking_ref(self.name)

    def url(self) -> str:
        """The remote's fetch URL after rewrites (``git remote get-url``), or ``"?"``."""
        proc = self._git(self.store, "remote", "get-url", self.name)
        return proc.stdout.strip() or "?"

    # -- configuration -----------------------------------------------------------------------

    def fetch_refspecs(self) -> list[str]:
        """The ``remote.<name>.fetch`` refspecs, in order."""
        proc = self._git(self.store, "config", "--get-all", f"remote.{self.name}.fetch")
        return proc.stdout.split()

    def add_fetch_refspec(self) -> bool:
        """Add ``+refs/tur/memories:refs/tur/remotes/<name>/memories`` to the remote's fetch refspecs.

        Idempotent; never adds a push refspec (that would change what a plain
        ``git push`` sends).

        Returns:
            True when the refspec was added, False when it was already there.

        Raises:
            RemoteError: ``git config`` failed.
        """
        spec = fetch_refspec(self.name)
        if spec in self.fetch_refspecs():
            return False
        proc = self._git(self.store, "config", "--add", f"remote.{self.name}.fetch", spec)
        if proc.returncode != 0:
            raise RemoteError(
                f"cannot add a fetch refspec to remote {self.name!r}: {_meaningful_line(proc.stderr)}",
                "check that .git/config is writable",
            )
        return True

    # -- network -----------------------------------------------------------------------------

    def fetch(self) -> str | None:
        """Fetch the remote's memory ref into ``refs/tur/remotes/<name>/memories``.

        Only that ref is fetched and only the tracking ref is written (no tags, no branches,
        no configured refspec), with a reflog entry. When the remote has no memory ref, a
        stale tracking ref is deleted.

        Returns:
            The remote's commit SHA, or ``None`` when the remote has no memory ref.

        Raises:
            RemoteError: the remote is unreachable or refused the fetch; the
                message quotes git's reason. No local ref has changed.
        """
        proc = self._git(
            self.store, "-c", "core.logAllRefUpdates=always",
            # --refmap= : only the refspec given here, never the configured ones, which git
            # otherwise also applies ("+refs/tur/*:refs/tur/*" would overwrite the local ref).
            "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=",
            self.name, fetch_refspec(self.name),
        )
        if proc.returncode != 0:
            if "couldn't find remote ref" in proc.stderr:
                self._git(self.store, "update-ref", "-d", self.tracking_ref)
                return None
            # A store with no working tree (the personal one) is not the repository the user is in.
            where = "" if self.store.workdir is not None else f"--git-dir {self.store.git_dir} "
            raise RemoteError(
                f"cannot fetch {MEMORY_REF} from {self.name} ({self.url()}): "
                f"{_meaningful_line(proc.stderr)}",
                f"check the remote's URL and your access (`git {where}fetch {self.name}` shows the "
                "same error); nothing local was changed",
            )
        return self.store.tip(self.tracking_ref)

    def push(self, sha: str, expected: str | None) -> PushOutcome:
        """Push ``sha`` to the remote's memory ref if the remote still points at ``expected``.

        A compare-and-swap on the remote (``--force-with-lease``): if another
        clone pushed since ``expected`` was fetched, git rejects this push and
        nothing is overwritten. On success the tracking ref is set to ``sha``.

        Args:
            sha: a commit that descends from ``expected``.
            expected: the remote tip last fetched, ``None`` when it had no memory ref.

        Returns:
            :class:`PushOutcome` ``ok``, ``up-to-date`` or ``rejected``.

        Raises:
            RemoteError: ``sha`` does not descend from ``expected`` (this would be
                a force push), or the push failed for another reason (unreachable,
                permission denied, hook refused).
        """
        if expected is not None and sha != expected and not self.store.repo.descendant_of(sha, expected):
            raise RemoteError(
                f"refusing to push {sha[:12]}: it does not contain the remote's {expected[:12]}",
                "run `tur sync` to merge first",
            )
        lease = f"--force-with-lease={MEMORY_REF}:{expected or ''}"
        proc = self._git(
            self.store, "push", "--porcelain", lease, self.name, f"{sha}:{MEMORY_REF}"
        )
        flag, detail = _porcelain_status(proc.stdout, MEMORY_REF)
        if flag == "!" and _is_race(detail, proc.stderr):
            return PushOutcome("rejected", sha, detail)
        if proc.returncode != 0 or flag not in (" ", "+", "*", "="):
            reason = detail if flag == "!" else _meaningful_line(proc.stderr)
            raise RemoteError(
                f"cannot push {MEMORY_REF} to {self.name} ({self.url()}): {reason}",
                "check your access to the remote; the local memory ref is unchanged",
            )
        self._git(self.store, "update-ref", "--create-reflog", "-m", "tur: sync push",
                  self.tracking_ref, sha)
        return PushOutcome("up-to-date" if flag == "=" else "ok", sha)


def _porcelain_status(stdout: str, dst: str) -> tuple[str | None, str]:
    """Flag and summary of ``dst`` in ``git push --porcelain`` output (tab-separated flag, refs, summary)."""
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].endswith(":" + dst):
            return (parts[0][:1] or " "), parts[2].strip()
    return None, ""


def _is_race(detail: str, stderr: str) -> bool:
    # "stale info": the lease failed at the advertisement; "fetch first"/"non-fast-forward": a
    # plain race; "failed to update ref" with "but expected": the remote moved after the
    # advertisement and its receive-pack refused the compare-and-swap.
    if any(word in detail for word in ("stale info", "fetch first", "non-fast-forward")):
        return True
    return "failed to update ref" in detail and "but expected" in stderr


# -- object graph helpers for sync (pygit2) ----------------------------------------------------


@dataclass(frozen=True)
class Graph:
    """Read-only queries on the memory history a sync needs, over a :class:`Store`."""

    store: Store

    def merge_base(self, a: str, b: str) -> str | None:
        """Best common ancestor of two commits, or ``None`` for unrelated histories."""
        base = self.store.repo.merge_base(a, b)
        return str(base) if base is not None else None

    def is_ancestor(self, ancestor: str, of: str) -> bool:
        """True when ``ancestor`` is ``of`` or one of its ancestors."""
        return ancestor == of or bool(self.store.repo.descendant_of(of, ancestor))

    def ahead_behind(self, local: str | None, upstream: str | None) -> tuple[int, int]:
        """Commits on ``local`` not on ``upstream``, and the reverse (a missing side counts 0 commits)."""
        if local is None and upstream is None:
            return 0, 0
        if local is None or upstream is None:
            tip = local or upstream
            count = sum(1 for _ in self.store.repo.walk(tip))
            return (count, 0) if local else (0, count)
        ahead, behind = self.store.repo.ahead_behind(local, upstream)
        return int(ahead), int(behind)

    def flat_tree(self, commit: str | None) -> dict[str, str]:
        """Every blob of the commit's tree as ``{path: blob id}`` (``memories/ab/fact-ab12cd34.yaml``)."""
        if commit is None:
            return {}
        out: dict[str, str] = {}
        stack: list[tuple[str, pygit2.Tree]] = [("", self.store.access.tree_of(commit))]
        while stack:
            prefix, tree = stack.pop()
            for entry in tree:
                if entry.name is None:  # objects read from a tree always have a name
                    continue
                path = prefix + entry.name
                if isinstance(entry, pygit2.Tree):
                    stack.append((path + "/", entry))
                elif isinstance(entry, pygit2.Blob):
                    out[path] = str(entry.id)
        return out

    def commit_time(self, commit: str) -> datetime:
        """Committer time of a commit (UTC)."""
        return commit_info(self._commit(commit)).time

    def last_change(self, tip: str, path: str, stop: str | None) -> datetime:
        """Committer time of the newest commit reachable from ``tip`` (not from ``stop``) that set ``path``.

        Falls back to the tip's own time when no such commit is found (e.g. the
        path changed only in a merge).
        """
        repo = self.store.repo
        walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
        if stop is not None:
            walker.hide(stop)
        tree_of = self.store.access.tree_of
        for commit in walker:
            here = _blob(tree_of(commit), path)
            if all(_blob(tree_of(p), path) != here for p in commit.parents):
                return datetime.fromtimestamp(commit.commit_time, UTC)
        return self.commit_time(tip)

    def _commit(self, sha: str) -> pygit2.Commit:
        """The commit ``sha`` (a memory-ref tip or one of its ancestors)."""
        obj = self.store.repo[sha]
        if not isinstance(obj, pygit2.Commit):
            raise TypeError(f"object {sha} is a {obj.type_str}, not a commit")
        return obj


def _blob(tree: pygit2.Tree, path: str) -> str | None:
    try:
        return str(tree[tree_name(path)].id)
    except KeyError:
        return None
