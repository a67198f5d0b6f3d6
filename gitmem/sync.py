"""Sharing memories through a git remote: the record-level three-way merge and the sync protocol.

Protocol (:func:`sync`): fetch the remote's ``refs/tur/memories`` into
``refs/tur/remotes/<remote>/memories``; then

* local ref missing → adopt the remote tip;
* local is an ancestor of the remote → fast-forward;
* remote is an ancestor of local (or has no memory ref) → push;
* both moved → merge commit with parents ``(local, remote)``, then push.

The push is a compare-and-swap on the remote (``--force-with-lease`` with the
tip just fetched), and only ever pushes a descendant of that tip: never a force
push. If the remote moved in between, fetch, merge and push again, at most
``attempts`` times. The local ref is always updated with compare-and-swap too.

Merge rules, per tree path, against the merge base (none for unrelated
histories, which merges as if the base were empty):

1. Same on both sides → unchanged.
2. Changed (added, edited or removed) on one side only → that side's version.
3. Removed on one side and edited on the other → the edited record is kept.
4. A record (``memories/**.yaml``) edited on both sides → merged field by field:

   * each top-level field changed on one side only takes that side's value;
   * a field changed on both sides takes the value of the *winning* side: the
     side with the later ``last_verified_at`` (ties: the larger blob id), so
     the fresher observation decides content and anchor (``provenance``,
     ``decay``);
   * ``relations`` are the union (winner's order, then the other side's extras);
   * a refutation on either side survives (a refutation is never silently
     undone); of two different refutations the later ``at`` is kept, and the
     merged record's ``staleness_status`` is ``refuted``.

   The merged record is written with :func:`gitmem.codec.update` onto the
   winner's YAML, so unknown keys and comments survive.
5. A record that cannot be parsed on one side → the other side's valid version;
   on both sides → the blob with the larger id, unchanged. Malformed records are
   reported (status ``invalid``) and never stop the merge; their bytes stay in
   history either way.
6. Other files edited on both sides (``persona.yaml``, ``continuity/*.md``) → the
   version from the side whose newest commit touching the file is later (ties:
   the larger blob id). Continuity notes have unique names, so they union by rule 2.

Every rule is symmetric in the two sides, so whichever clone merges, the
merged tree is the same, and clones converge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gitmem import codec
from gitmem.errors import FormatVersion, MalformedRecord, RemoteError
from gitmem.models import Memory, Status
from gitmem.store import FORMAT_PATH, MEMORY_REF, Mutation, Store
from gitmem.store.remote import Graph, Remote

__all__ = ["MergePlan", "MergeResult", "SyncResult", "merge_plan", "setup_remote", "sync"]

#: Push attempts before giving up when the remote keeps moving.
DEFAULT_ATTEMPTS = 5
_MISSING: Any = object()
_RETRY = "retry"
_RANK = {"up-to-date": 0, "pushed": 1, "adopted": 2, "fast-forward": 3, "merged": 4}


@dataclass(frozen=True)
class MergeResult:
    """What the merge did to one record (or file), for the commit message and ``tur sync`` output.

    ``status`` is ``added`` (new from the remote), ``merged`` (taken from the
    remote, or edited on both sides in different fields), ``conflict-resolved``
    (a field edited on both sides, decided by the rule), ``kept`` (removed on
    one side, edited on the other), ``forgotten`` (removed on the remote) or
    ``invalid`` (a malformed blob; see ``reason``).
    """

    memory_id: str
    status: str
    reason: str


@dataclass
class MergePlan:
    """The merge of a remote tip into a local tip, before it is committed.

    ``changes`` maps tree paths to new bytes (``None``: delete), relative to the
    local tree; ``results`` has one entry per record the merge touched or decided.
    """

    base: str | None
    local: str | None
    remote: str
    changes: dict[str, bytes | None] = field(default_factory=dict)
    results: list[MergeResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        """Number of results with this status."""
        return sum(1 for r in self.results if r.status == status)

    def message(self, remote_name: str) -> str:
        """Merge commit message: a summary line and one line per record."""
        head = (
            f"sync: merge {remote_name} ({self.count('added')} added, {self.count('merged')} merged, "
            f"{self.count('conflict-resolved')} conflicts resolved)"
        )
        lines = [f"{r.status} {r.memory_id}: {r.reason}" for r in self.results]
        return head + ("\n\n" + "\n".join(lines) if lines else "") + "\n"


@dataclass
class SyncResult:
    """Outcome of :func:`sync`.

    ``status`` is the most significant thing done to the local ref:
    ``up-to-date``, ``pushed`` (local was ahead), ``adopted`` (no local ref),
    ``fast-forward`` or ``merged``. With ``dry_run`` nothing was written and the
    fields say what would happen (``pushed`` is then whether a push would be made).
    ``ahead``/``behind`` count commits (local not on remote, remote not on local)
    as fetched, before any change.
    """

    status: str
    remote: str
    local_before: str | None
    local_after: str | None
    remote_before: str | None
    remote_after: str | None
    pushed: bool = False
    dry_run: bool = False
    merged: list[MergeResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ahead: int = 0
    behind: int = 0
    attempts: int = 1

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (every field; merge results as objects)."""
        return {
            "status": self.status,
            "remote": self.remote,
            "dry_run": self.dry_run,
            "pushed": self.pushed,
            "local_before": self.local_before,
            "local_after": self.local_after,
            "remote_before": self.remote_before,
            "remote_after": self.remote_after,
            "ahead": self.ahead,
            "behind": self.behind,
            "attempts": self.attempts,
            "merged": [asdict(r) for r in self.merged],
            "warnings": self.warnings,
        }


# -- remote setup ---------------------------------------------------------------------------------


def setup_remote(store: Store, remote_name: str = "origin") -> bool:
    """Add the fetch refspec ``+refs/tur/memories:refs/tur/remotes/<remote>/memories`` (idempotent).

    Never adds a push refspec, so a plain ``git push`` sends what it sent before.

    Returns:
        True when added, False when it was already configured.

    Raises:
        RemoteError: no such remote, or ``git config`` failed.
    """
    return Remote(store, remote_name).add_fetch_refspec()


# -- merging ----------------------------------------------------------------------------------------


def _record_id(path: str) -> str | None:
    if path.startswith("memories/") and path.endswith(".yaml"):
        return path.rsplit("/", 1)[1][: -len(".yaml")]
    return None


def _label(path: str) -> str:
    return _record_id(path) or path


def _parse(store: Store, path: str, blob: str) -> Memory:
    """Parse a record blob and check its id against the file name.

    Raises:
        MalformedRecord: as :func:`gitmem.codec.load`, or a mismatched id.
    """
    where = f"blob {blob[:12]} ({path})"
    memory = codec.load(store.read_blob(blob), where)
    if memory.id != _record_id(path):
        raise MalformedRecord(where, f"id field {memory.id!r} does not match the file name")
    return memory


class _Merger:
    """One merge of ``remote`` into ``local``; see the module docstring for the rules."""

    def __init__(self, store: Store, local: str | None, remote: str, remote_name: str) -> None:
        self.store = store
        self.graph = Graph(store)
        self.remote_name = remote_name
        base = self.graph.merge_base(local, remote) if local else None
        self.plan = MergePlan(base=base, local=local, remote=remote)

    def run(self) -> MergePlan:
        trees = [self.graph.flat_tree(c) for c in (self.plan.base, self.plan.local, self.plan.remote)]
        paths = sorted(set().union(*trees) - {FORMAT_PATH})
        for path in paths:
            self._path(path, *(t.get(path) for t in trees))
        return self.plan

    def _result(self, path: str, status: str, reason: str) -> None:
        self.plan.results.append(MergeResult(_label(path), status, reason))

    def _invalid(self, path: str, blob: str, exc: MalformedRecord, kept: str) -> None:
        reason = f"malformed blob {blob[:12]} ({exc.reason}); {kept}"
        self._result(path, "invalid", reason)
        self.plan.warnings.append(f"warning: {_label(path)}: {reason}")

    def _take_remote(self, path: str, base: str | None, theirs: str | None) -> None:
        self.plan.changes[path] = None if theirs is None else self.store.read_blob(theirs)
        if theirs is None:
            self._result(path, "forgotten", f"forgotten on {self.remote_name}")
            return
        if _record_id(path) is not None:
            try:
                _parse(self.store, path, theirs)
            except MalformedRecord as exc:
                self._invalid(path, theirs, exc, f"kept as is from {self.remote_name}")
                return
        if base is None:
            self._result(path, "added", f"new on {self.remote_name}")
        else:
            self._result(path, "merged", f"changed on {self.remote_name}")

    def _path(self, path: str, base: str | None, ours: str | None, theirs: str | None) -> None:
        if ours == theirs or base == theirs:
            return  # same on both sides, or changed here only: the local tree already has it
        if base == ours:
            self._take_remote(path, base, theirs)
        elif ours is None:
            assert theirs is not None  # ours != theirs
            self.plan.changes[path] = self.store.read_blob(theirs)
            self._result(path, "kept", f"forgotten here, changed on {self.remote_name}: kept")
        elif theirs is None:
            self._result(path, "kept", f"forgotten on {self.remote_name}, changed here: kept")
        elif _record_id(path) is not None:
            self._record(path, base, ours, theirs)
        else:
            self._file(path, ours, theirs)

    def _file(self, path: str, ours: str, theirs: str) -> None:
        assert self.plan.local is not None
        when_ours = self.graph.last_change(self.plan.local, path, self.plan.base)
        when_theirs = self.graph.last_change(self.plan.remote, path, self.plan.base)
        if (when_theirs, theirs) > (when_ours, ours):
            self.plan.changes[path] = self.store.read_blob(theirs)
            side = self.remote_name
        else:
            side = "here"
        self._result(path, "conflict-resolved", f"changed on both sides; the later version ({side}) kept")

    def _record(self, path: str, base: str | None, ours: str, theirs: str) -> None:
        parsed: dict[str, Memory | MalformedRecord] = {}
        for name, blob in (("ours", ours), ("theirs", theirs)):
            try:
                parsed[name] = _parse(self.store, path, blob)
            except MalformedRecord as exc:
                parsed[name] = exc
        bad: list[tuple[str, str, MalformedRecord]] = []
        for name, blob in (("ours", ours), ("theirs", theirs)):
            got = parsed[name]
            if isinstance(got, MalformedRecord):
                bad.append((name, blob, got))
        if bad:
            if len(bad) == 2:
                keep = max(ours, theirs)
                kept = "kept the larger blob as is (both sides malformed)"
            else:
                keep = theirs if bad[0][0] == "ours" else ours
                kept = "kept the other side's valid version"
            for _, blob, error in bad:
                self._invalid(path, blob, error, kept)
            if keep != ours:
                self.plan.changes[path] = self.store.read_blob(keep)
            return
        old = None
        if base is not None:
            try:
                old = _parse(self.store, path, base)
            except MalformedRecord:
                old = None  # an unreadable base merges as if the record were new on both sides
        mine, other = parsed["ours"], parsed["theirs"]
        assert isinstance(mine, Memory) and isinstance(other, Memory)
        merged, winner_is_ours, conflicts = merge_records(old, mine, other, ours, theirs)
        winner_blob = ours if winner_is_ours else theirs
        data = codec.update(self.store.read_blob(winner_blob), merged, f"blob {winner_blob[:12]} ({path})")
        if data != self.store.read_blob(ours):
            self.plan.changes[path] = data
        if conflicts:
            side = "here" if winner_is_ours else self.remote_name
            when = merged.last_verified_at.isoformat() if merged.last_verified_at else "none"
            self._result(
                path, "conflict-resolved",
                f"both changed {', '.join(conflicts)}; took {side} (later last_verified_at {when})",
            )
        else:
            self._result(path, "merged", "changed on both sides in different fields")


def _winner_key(memory: Memory, blob: str) -> tuple[str, str]:
    # ISO text of aware UTC datetimes sorts as time does, and has no naive/aware pitfalls.
    when = memory.last_verified_at
    return (when.isoformat() if when is not None else "", blob)


def _union_relations(first: list[dict], second: list[dict]) -> list[dict]:
    seen = {(r.get("type"), r.get("target")) for r in first}
    extra = [r for r in second if (r.get("type"), r.get("target")) not in seen]
    return [*first, *extra]


def _refutation(a: dict | None, b: dict | None) -> dict | None:
    if a is None or b is None or a == b:
        return a if b is None else b
    key = lambda r: (str(r.get("at", "")), str(r.get("reason", "")), str(r.get("by") or ""))  # noqa: E731
    return max(a, b, key=key)


def merge_records(
    base: Memory | None, ours: Memory, theirs: Memory, ours_blob: str, theirs_blob: str
) -> tuple[Memory, bool, list[str]]:
    """Merge two versions of one record edited on both sides (rule 4 of the module docstring).

    Args:
        base: the version at the merge base, ``None`` when added on both sides.
        ours: the local version.
        theirs: the remote version.
        ours_blob: blob id of ``ours`` (the tie-break when ``last_verified_at`` is equal).
        theirs_blob: blob id of ``theirs``.

    Returns:
        ``(merged, winner_is_ours, conflicting field names)``; symmetric: swapping
        the sides gives the same record.
    """
    winner_is_ours = _winner_key(ours, ours_blob) >= _winner_key(theirs, theirs_blob)
    b = base.model_dump(mode="json") if base is not None else {}
    o, t = ours.model_dump(mode="json"), theirs.model_dump(mode="json")
    win, lose = (o, t) if winner_is_ours else (t, o)
    merged: dict[str, Any] = {}
    conflicts: list[str] = []
    value: Any
    for key in [*win, *(k for k in lose if k not in win)]:
        bv, ov, tv = b.get(key, _MISSING), o.get(key, _MISSING), t.get(key, _MISSING)
        if key == "relations":
            value = _union_relations(win.get(key) or [], lose.get(key) or [])
        elif key == "refutation":
            value = _refutation(ov if ov is not _MISSING else None, tv if tv is not _MISSING else None)
        elif ov in (tv, bv):
            value = tv
        elif tv == bv:
            value = ov
        else:
            conflicts.append(key)
            value = win.get(key, _MISSING)
        if key in ("relations", "refutation") and ov != tv and ov != bv and tv != bv:
            conflicts.append(key)
        if value is not _MISSING:
            merged[key] = value
    if merged.get("refutation") and merged.get("decay"):
        merged["decay"] = {**merged["decay"], "staleness_status": Status.REFUTED.value}
    try:
        return Memory.model_validate(merged), winner_is_ours, conflicts
    except ValueError:
        # Fields from two versions that do not validate together: the winner whole, relations unioned.
        fallback = win | {"relations": merged.get("relations", []), "refutation": merged.get("refutation")}
        return Memory.model_validate(fallback), winner_is_ours, sorted(set(conflicts) | {"record"})


def merge_plan(store: Store, local: str | None, remote: str, remote_name: str = "origin") -> MergePlan:
    """Compute the merge of ``remote`` into ``local`` without writing anything.

    Returns:
        The :class:`MergePlan`: changes to the local tree and one result per record decided.
    """
    return _Merger(store, local, remote, remote_name).run()


# -- the protocol -----------------------------------------------------------------------------------


def _check_remote(store: Store, remote_name: str, sha: str | None) -> None:
    try:
        store.check_format(sha)
    except FormatVersion as exc:
        raise FormatVersion(
            f"refusing {MEMORY_REF} from {remote_name}: {exc.message}",
            f"{exc.hint or 'check what was pushed to that ref'}; nothing was merged or pushed",
        ) from None


@dataclass
class _State:
    result: SyncResult
    remote_sha: str | None


def _integrate(store: Store, state: _State, dry_run: bool) -> str | None:
    """Bring the remote tip into the local ref; return the local tip after it, or ``_RETRY``."""
    res, remote_sha, graph = state.result, state.remote_sha, Graph(store)
    local = store.tip()
    if remote_sha is None or local == remote_sha:
        _mark(res, "pushed" if local not in (None, remote_sha) else "up-to-date")
        return local
    if local is None or graph.is_ancestor(local, remote_sha):
        _mark(res, "adopted" if local is None else "fast-forward")
        if not dry_run and not store.update_ref(MEMORY_REF, remote_sha, local):
            return _RETRY  # a local write raced us: look again
        return remote_sha
    if graph.is_ancestor(remote_sha, local):
        _mark(res, "pushed")
        return local
    _mark(res, "merged")
    if dry_run:
        plan = merge_plan(store, local, remote_sha, res.remote)
        res.merged.extend(plan.results)
        res.warnings.extend(plan.warnings)
        return local

    def build(tip: str | None) -> Mutation | None:
        plan = merge_plan(store, tip, remote_sha, res.remote)
        return Mutation(plan.changes, plan.message(res.remote), parents_extra=(remote_sha,), result=plan)

    commit, mutation = store.transact(build)
    assert mutation is not None and isinstance(mutation.result, MergePlan)  # build always returns one
    plan = mutation.result
    res.merged.extend(plan.results)
    res.warnings.extend(plan.warnings)
    return commit.sha if commit is not None else store.tip()


def _mark(res: SyncResult, status: str) -> None:
    if _RANK[status] > _RANK[res.status]:
        res.status = status


def sync(
    store: Store, remote_name: str = "origin", *, dry_run: bool = False, attempts: int = DEFAULT_ATTEMPTS
) -> SyncResult:
    """Fetch, integrate (adopt, fast-forward or merge) and push the memory ref; see the module docstring.

    Args:
        store: the repository's store.
        remote_name: a remote listed by ``git remote``.
        dry_run: fetch (which only moves ``refs/tur/remotes/<remote>/memories``) and
            report what would be merged and pushed, writing nothing else.
        attempts: pushes tried when the remote keeps moving (each after a new fetch and merge).

    Returns:
        The :class:`SyncResult`.

    Raises:
        RemoteError: unknown remote, unreachable remote, a refused push, or the remote
            moved on every attempt. The local ref is unchanged unless a merge or
            fast-forward already happened (it then holds the merge, ready for the next sync).
        FormatVersion: the remote's ref is not a gitmem memory history, or from a newer gitmem.
    """
    remote = Remote(store, remote_name)
    local_before = store.tip()
    remote_sha = remote.fetch()
    _check_remote(store, remote_name, remote_sha)
    ahead, behind = Graph(store).ahead_behind(local_before, remote_sha)
    res = SyncResult(
        status="up-to-date", remote=remote_name, local_before=local_before, local_after=local_before,
        remote_before=remote_sha, remote_after=remote_sha, dry_run=dry_run, ahead=ahead, behind=behind,
    )
    state = _State(res, remote_sha)
    pushes = 0
    for _ in range(attempts * 4):
        local = _integrate(store, state, dry_run)
        if local == _RETRY:
            continue
        res.local_after = store.tip() if not dry_run else local_before
        if local is None or local == state.remote_sha:
            return res
        if dry_run:
            res.pushed = True
            return res
        outcome = remote.push(local, state.remote_sha)
        pushes += 1
        res.attempts = pushes
        if outcome.status != "rejected":
            res.pushed, res.remote_after = True, local
            return res
        if pushes >= attempts:
            break
        state.remote_sha = remote.fetch()
        _check_remote(store, remote_name, state.remote_sha)
        res.remote_after = state.remote_sha
    raise RemoteError(
        f"{MEMORY_REF} on {remote_name} kept moving: {pushes} pushes were rejected; nothing was overwritten",
        "run `tur sync` again",
    )
