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
5. A record that cannot be parsed on one side → the other side's valid version,
   also when only the remote changed it (a teammate's broken overwrite never
   replaces the last valid version); on both sides → the blob with the larger id,
   unchanged. A malformed record new on the remote is kept as it is (it may come
   from a newer gitmem). Malformed records are reported (status ``invalid``) and
   never stop the merge; their bytes stay in history either way.
6. Other files edited on both sides (``persona.yaml``, ``continuity/*.md``) → the
   version from the side whose newest commit touching the file is later (ties:
   the larger blob id). Continuity notes have unique names, so they union by rule 2.
   The verify runs (``runs/verify.yaml``, :mod:`gitmem.record.runs`) edited on both
   sides → the union of both sides' runs, the newest few by ``(at, head, tree)``.
7. An incoming version that no reader would accept, or that looks like it holds a
   credential, is not adopted (status ``refused``): the local version stays (or
   none). That is a record or note larger than its limit (:mod:`gitmem.record.limits`), a
   record not where its id says (``memories/<2 hex>/<id>.yaml``), and any string
   of a record, the persona or a note in which detect-secrets finds a credential
   (unless ``allow_secret``). A fast-forward or adoption with such a version
   becomes a commit on the remote tip that puts the local version back.
8. Two different statements that share an id (added on both sides, no common
   version, different normalised content): the one observed first keeps the id
   (ties: the smaller blob id), the other moves to the longer id of
   :func:`gitmem.record.ids.pick_id` (status ``renamed``). Two memories are never merged
   into one.

Every rule is symmetric in the two sides, so whichever clone merges, the
merged tree is the same, and clones converge.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import asdict, dataclass, field
from typing import Any

from gitmem import codec
from gitmem.errors import FormatVersion, GitmemError, MalformedRecord, RemoteError
from gitmem.record.ids import ID_HEX_LENGTHS, content_digest, normalise_content, pick_id, shard_of
from gitmem.record.limits import MAX_NOTE_BYTES, MAX_PERSONA_BYTES, MAX_RECORD_BYTES
from gitmem.record.models import Memory
from gitmem.record.runs import RUNS_PATH, merge_run_files
from gitmem.sharing import secret_scan
from gitmem.sharing.record_merge import FieldDecision, merge_records
from gitmem.store import FORMAT_PATH, MEMORY_REF, Mutation, Store
from gitmem.store.remote import Graph, Remote
from gitmem.vocabulary import ID_PATTERN, iso_z

__all__ = ["Arrival", "FieldDecision", "MergePlan", "MergeResult", "SyncResult", "merge_plan",
           "merge_records", "recover_lost_tip", "setup_remote", "sync"]

#: Push attempts before giving up when the remote keeps moving.
DEFAULT_ATTEMPTS = 5
_RETRY = "retry"
_RANK = {"up-to-date": 0, "pushed": 1, "adopted": 2, "fast-forward": 3, "merged": 4}


@dataclass(frozen=True)
class MergeResult:
    """What the merge did to one record (or file), for the commit message and ``tur sync`` output.

    ``status`` is ``added`` (new from the remote), ``merged`` (taken from the
    remote, or edited on both sides in different fields), ``conflict-resolved``
    (a field edited on both sides, decided by the rule), ``kept`` (removed on
    one side, edited on the other), ``forgotten`` (removed on the remote),
    ``invalid`` (a malformed blob; see ``reason``), ``refused`` (an incoming
    version not adopted: too large, misplaced, or holding a credential) or
    ``renamed`` (a different statement with the same id, moved to a longer id).
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
    reverts: dict[str, bytes | None] = field(default_factory=dict)
    """Paths whose remote version was not adopted, mapped to the local version (``None``:
    none): what a fast-forward must put back on top of the remote tip."""

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


@dataclass(frozen=True)
class Arrival:
    """A persona version or continuity note a sync brought in, made by someone other than the local identity.

    Attributes:
        kind: ``persona`` or ``note``.
        path: its path on the memory ref.
        blob: its blob id (a deletion: the sha of the commit that deleted it).
        authors: who git says made it (``Name <email>``, newest first).
        deleted: the persona or note was deleted (it was there before the sync, and is not after).
    """

    kind: str
    path: str
    blob: str
    authors: tuple[str, ...]
    deleted: bool = False


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
    new_authors: dict[str, list[str]] = field(default_factory=dict)
    """Authors this clone had not seen before, each with the ids of the memories of theirs
    the sync brought in (docs/sharing.md, Trust)."""
    unpublished: bool = False  # the remote has no memory ref and publish was false: no push
    arrived: list[Arrival] = field(default_factory=list)
    """The persona versions and continuity notes the sync brought in from others, with who
    git says made them (docs/sharing.md, Trust)."""

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
            "new_authors": self.new_authors,
            "unpublished": self.unpublished,
            "arrived": [asdict(a) for a in self.arrived],
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


def _misplaced(path: str) -> str | None:
    """Why a ``memories/`` path is not where a record of its name belongs, or ``None``."""
    memory_id = _record_id(path)
    if memory_id is None or not ID_PATTERN.match(memory_id):
        return "is not a record file (memories/<2 hex>/<type>-<hex>.yaml)"
    if path != f"memories/{shard_of(memory_id)}/{memory_id}.yaml":
        return f"is not where its id says (memories/{shard_of(memory_id)}/{memory_id}.yaml)"
    return None


class _Merger:
    """One merge of ``remote`` into ``local``; see the module docstring for the rules."""

    def __init__(self, store: Store, local: str | None, remote: str, remote_name: str,
                 allow_secret: bool = False) -> None:
        self.store = store
        self.graph = Graph(store)
        self.remote_name = remote_name
        self.allow_secret = allow_secret
        base = self.graph.merge_base(local, remote) if local else None
        self.plan = MergePlan(base=base, local=local, remote=remote)
        self._trees: list[dict[str, str]] = []
        self._loaded: dict[tuple[str, str], tuple[Memory | MalformedRecord, dict | None]] = {}
        self._secrets: dict[str, list[tuple[str, secret_scan.SecretFinding]]] = {}

    def run(self) -> MergePlan:
        self._trees = [self.graph.flat_tree(c) for c in (self.plan.base, self.plan.local, self.plan.remote)]
        paths = sorted(set().union(*self._trees) - {FORMAT_PATH})
        if not self.allow_secret:
            self._scan_incoming(paths)
        for path in paths:
            self._path(path, *(t.get(path) for t in self._trees))
        return self.plan

    def _parse(self, path: str, blob: str) -> Memory:
        """:func:`_parse`, once per (path, blob) in this merge.

        Raises:
            MalformedRecord: as :func:`_parse`.
        """
        got = self._loaded.get((path, blob))
        if got is None:
            where = f"blob {blob[:12]} ({path})"
            try:
                memory, mapping = codec.load_with_mapping(self.store.read_blob(blob), where)
                got = (memory, mapping)
                if memory.id != _record_id(path):
                    got = (MalformedRecord(where, f"id field {memory.id!r} does not match the file name"),
                           mapping)
            except MalformedRecord as exc:
                got = (exc, None)
            self._loaded[(path, blob)] = got
        if isinstance(got[0], MalformedRecord):
            raise got[0]
        return got[0]

    def _scan_incoming(self, paths: list[str]) -> None:
        """Scan every string of every remote version that may be adopted, in one detect-secrets call.

        An incoming version is the remote's blob at a path where it differs from both the
        local one and the merge base's. Findings go to ``_secrets`` by blob id.
        """
        base, ours, theirs = self._trees
        fields: list[tuple[tuple[str, str], str]] = []
        for path in paths:
            blob = theirs.get(path)
            if blob is None or blob in (ours.get(path), base.get(path)) or self._oversized(path, blob):
                continue
            if path.startswith("memories/"):
                if _misplaced(path) is not None:
                    continue
                with suppress(MalformedRecord):
                    self._parse(path, blob)
                mapping = self._loaded[(path, blob)][1]
                fields.extend(((blob, name), text) for name, text in secret_scan.record_fields(mapping or {}))
            elif path == "persona.yaml" or path.startswith("continuity/"):
                fields.append(((blob, path), self.store.read_blob(blob).decode("utf-8", "replace")))
        for key, finding in secret_scan.field_findings((f"{b}\0{n}", t) for (b, n), t in fields):
            blob, name = key.split("\0", 1)
            self._secrets.setdefault(blob, []).append((name, finding))

    def _oversized(self, path: str, blob: str) -> int | None:
        """The limit ``blob`` exceeds at ``path`` (bytes), or ``None``."""
        if path.startswith("memories/"):
            limit = MAX_RECORD_BYTES
        elif path == "persona.yaml":
            limit = MAX_PERSONA_BYTES
        elif path.startswith("continuity/"):
            limit = MAX_NOTE_BYTES
        else:
            return None
        return limit if self.store.blob_size(blob) > limit else None

    def _result(self, path: str, status: str, reason: str) -> None:
        self.plan.results.append(MergeResult(_label(path), status, reason))

    def _invalid(self, path: str, blob: str, exc: MalformedRecord, kept: str) -> None:
        reason = f"malformed blob {blob[:12]} ({exc.reason}); {kept}"
        self._result(path, "invalid", reason)
        self.plan.warnings.append(f"warning: {_label(path)}: {reason}")

    def _refuse(self, path: str, ours: str | None, why: str, hint: str) -> None:
        """Keep the local version of ``path`` (or none) instead of the remote's; report it."""
        self.plan.changes.pop(path, None)
        self.plan.reverts[path] = None if ours is None else self.store.read_blob(ours)
        kept = "kept the local version" if ours is not None else "not adopted"
        reason = f"{self.remote_name}'s version {why}; {kept}"
        self._result(path, "refused", reason)
        self.plan.warnings.append(f"warning: {_label(path)}: {reason} — {hint}")

    def _refusal(self, path: str, theirs: str) -> tuple[str, str] | None:
        """Why the remote blob ``theirs`` at ``path`` must not be adopted (and what to do), or ``None``."""
        if path.startswith("memories/"):
            misplaced = _misplaced(path)
            if misplaced is not None:
                return misplaced, f"ask its author to `tur doctor --fix` on {self.remote_name}"
        limit = self._oversized(path, theirs)
        if limit is not None:
            size = self.store.blob_size(theirs)
            return (f"is {size} bytes, larger than the {limit} byte limit",
                    f"ask its author to shorten it on {self.remote_name}")
        found = self._secrets.get(theirs)
        if found:
            return (f"looks like it holds a credential ({secret_scan.describe(found)})",
                    f"if it is one, rotate the credential (it stays in {self.remote_name}'s history) and "
                    "have its author `tur forget` it; if it is not, `tur sync --allow-secret` adopts it")
        return None

    def _take_remote(self, path: str, base: str | None, ours: str | None, theirs: str | None) -> None:
        """The path changed on the remote only (``ours`` is ``base``): take it, unless rules 5 or 7 say no."""
        if theirs is None:
            self.plan.changes[path] = None
            self._result(path, "forgotten", f"forgotten on {self.remote_name}")
            return
        refusal = self._refusal(path, theirs)
        if refusal is not None:
            self._refuse(path, ours, *refusal)
            return
        if _record_id(path) is not None:
            try:
                self._parse(path, theirs)
            except MalformedRecord as exc:
                if ours is not None and self._valid(path, ours):
                    self._invalid(path, theirs, exc, "kept the last valid version")
                    self.plan.reverts[path] = self.store.read_blob(ours)
                else:
                    self.plan.changes[path] = self.store.read_blob(theirs)
                    self._invalid(path, theirs, exc, f"kept as is from {self.remote_name}")
                return
        self.plan.changes[path] = self.store.read_blob(theirs)
        if base is None:
            self._result(path, "added", f"new on {self.remote_name}")
        else:
            self._result(path, "merged", f"changed on {self.remote_name}")

    def _valid(self, path: str, blob: str) -> bool:
        try:
            self._parse(path, blob)
        except MalformedRecord:
            return False
        return True

    def _path(self, path: str, base: str | None, ours: str | None, theirs: str | None) -> None:
        if ours == theirs or base == theirs:
            return  # same on both sides, or changed here only: the local tree already has it
        if base == ours:
            self._take_remote(path, base, ours, theirs)
        elif ours is None:
            assert theirs is not None  # ours != theirs
            refusal = self._refusal(path, theirs)
            if refusal is not None:
                self._refuse(path, ours, *refusal)
                return
            self.plan.changes[path] = self.store.read_blob(theirs)
            self._result(path, "kept", f"forgotten here, changed on {self.remote_name}: kept")
        elif theirs is None:
            self._result(path, "kept", f"forgotten on {self.remote_name}, changed here: kept")
        elif _record_id(path) is not None:
            self._record(path, base, ours, theirs)
        elif path == RUNS_PATH:  # rule 6: the union of the runs, the newest few
            self.plan.changes[path] = merge_run_files(*map(self.store.read_blob, (ours, theirs)))
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
        refusal = self._refusal(path, theirs)
        if refusal is not None:
            self._refuse(path, ours, *refusal)
            return
        both = self._both_valid(path, ours, theirs)
        if both is None:
            return
        mine, other = both
        old = None
        if base is not None:
            try:
                old = self._parse(path, base)
            except MalformedRecord:
                old = None  # an unreadable base merges as if the record were new on both sides
        if base is None and normalise_content(mine.content) != normalise_content(other.content):
            self._collision(path, mine, other, ours, theirs)
            return
        merged, ours_later, decisions = merge_records(old, mine, other, ours, theirs)
        winner_blob = ours if ours_later else theirs
        data = codec.update(self.store.read_blob(winner_blob), merged, f"blob {winner_blob[:12]} ({path})")
        if len(data) > MAX_RECORD_BYTES:
            self._refuse(path, ours, f"merged with ours would be {len(data)} bytes, larger than the "
                         f"{MAX_RECORD_BYTES} byte limit", "shorten the record on either side")
            return
        if data != self.store.read_blob(ours):
            self.plan.changes[path] = data
        if decisions:
            self._result(path, "conflict-resolved", "both changed " + "; ".join(
                self._decision(d) for d in decisions))
        else:
            self._result(path, "merged", "changed on both sides in different fields")

    def _decision(self, decision: FieldDecision) -> str:
        """``confidence: kept origin's (changed 2026-… by B), here's lost``."""
        kept, lost = ("here", self.remote_name) if decision.kept == "ours" else (self.remote_name, "here")
        by = f" by {decision.by}" if decision.by else ""
        when = iso_z(decision.at)
        return f"{decision.field}: kept {kept} (changed {when}{by}), {lost} lost"

    def _both_valid(self, path: str, ours: str, theirs: str) -> tuple[Memory, Memory] | None:
        """Both versions parsed, or ``None`` after rule 5 decided (a malformed side)."""
        parsed: dict[str, Memory | MalformedRecord] = {}
        for name, blob in (("ours", ours), ("theirs", theirs)):
            try:
                parsed[name] = self._parse(path, blob)
            except MalformedRecord as exc:
                parsed[name] = exc
        bad: list[tuple[str, str, MalformedRecord]] = []
        for name, blob in (("ours", ours), ("theirs", theirs)):
            got = parsed[name]
            if isinstance(got, MalformedRecord):
                bad.append((name, blob, got))
        if not bad:
            mine, other = parsed["ours"], parsed["theirs"]
            assert isinstance(mine, Memory) and isinstance(other, Memory)
            return mine, other
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
        return None

    def _collision(self, path: str, mine: Memory, other: Memory, ours: str, theirs: str) -> None:
        """Two different statements added with one id on both sides: neither replaces the other.

        The one observed first (ties: the smaller blob id) keeps the id; the other moves to
        the first longer id (:data:`gitmem.record.ids.ID_HEX_LENGTHS`) that neither side, nor this
        merge, holds for another statement. Symmetric, so both clones merge alike.
        """
        def first(memory: Memory, blob: str) -> tuple[str, str]:
            when = memory.provenance.observed_at.isoformat() if memory.provenance else ""
            return (when, blob)

        ours_keeps = first(mine, ours) <= first(other, theirs)
        mover, mover_blob = (other, theirs) if ours_keeps else (mine, ours)
        if not ours_keeps:
            self.plan.changes[path] = self.store.read_blob(theirs)
        digest = content_digest(mover.content)
        held: dict[str, str | None] = {}
        for digits in ID_HEX_LENGTHS:
            candidate = f"{mover.type.value}-{digest[:digits]}"
            target = f"memories/{shard_of(candidate)}/{candidate}.yaml"
            blobs = {b for b in (self._trees[1].get(target), self._trees[2].get(target)) if b}
            if target in self.plan.changes or blobs:
                held[candidate] = self._statement(target, blobs)
        new_id, _ = pick_id(mover.type, mover.content, held)
        moved = mover.model_copy(update={"id": new_id})
        self.plan.changes[f"memories/{shard_of(new_id)}/{new_id}.yaml"] = codec.update(
            self.store.read_blob(mover_blob), moved, f"blob {mover_blob[:12]} ({path})")
        side = "here" if mover is mine else f"on {self.remote_name}"
        self._result(path, "renamed", f"a different statement learned {side} had the same id; "
                                      f"it is now {new_id}")

    def _statement(self, path: str, blobs: set[str]) -> str | None:
        """The normalised content at ``path`` in this merge (``None``: unreadable or several)."""
        data = self.plan.changes.get(path)
        texts = set()
        for raw in ([data] if data is not None else []) + [self.store.read_blob(b) for b in blobs]:
            try:
                texts.add(normalise_content(codec.load(raw, path).content))
            except MalformedRecord:
                return None
        return texts.pop() if len(texts) == 1 else None


def recover_lost_tip(store: Store, lost: str, current: str | None) -> str | None:
    """Merge ``lost`` (a tip gitmem wrote that the memory ref no longer contains) back in.

    As :func:`sync` merges a remote tip (the same :func:`merge_plan`, the lost tip as the
    second parent); a deleted ref is restored to ``lost``. Incoming versions are this
    clone's own acknowledged writes, so nothing is refused for a credential.

    Returns:
        One line for stderr saying what happened, or ``None`` when the ref holds ``lost``
        after all (another gitmem process moved it on meanwhile: nothing was lost).

    Raises:
        GitmemError: the merge could not be committed (the ref kept moving, a lock held).
    """
    if current is None:
        if store.update_ref(MEMORY_REF, lost, None, "recover: restore the deleted memory ref"):
            return (f"tur: refs/tur/memories had been deleted outside tur; restored it to {lost[:12]}, "
                    "the last tip tur wrote (nothing lost)")
        current = store.tip()
        if current is None or Graph(store).is_ancestor(lost, current):
            return None
    moved_to = current
    graph = Graph(store)

    def build(tip: str | None) -> Mutation | None:
        if tip is None or graph.is_ancestor(lost, tip):
            return None
        plan = merge_plan(store, tip, lost, "the lost tip", allow_secret=True)
        message = (f"recover: merge back {lost[:12]}, lost when refs/tur/memories was moved to "
                   f"{tip[:12]} outside tur\n\n" + "\n".join(
                       f"{r.status} {r.memory_id}: {r.reason}" for r in plan.results) + "\n")
        return Mutation(plan.changes, message, parents_extra=(lost,), result=plan)

    commit, mutation = store.transact(build)
    if commit is None:
        return None  # another gitmem process had moved the ref on from the lost tip
    assert isinstance(mutation.result, MergePlan)  # type: ignore[union-attr]
    return (f"tur: refs/tur/memories was moved to {moved_to[:12]} outside tur and no longer held "
            f"{lost[:12]}, the last tip tur wrote; merged it back in {commit.sha[:12]} "
            f"({len(mutation.result.results)} records decided, nothing lost)")  # type: ignore[union-attr]


def merge_plan(store: Store, local: str | None, remote: str, remote_name: str = "origin",
               allow_secret: bool = False) -> MergePlan:
    """Compute the merge of ``remote`` into ``local`` without writing anything.

    Args:
        store: the repository's store.
        local: the local tip (``None``: no local ref).
        remote: the fetched remote tip.
        remote_name: names the remote in reasons.
        allow_secret: adopt versions in which the credential scan finds something.

    Returns:
        The :class:`MergePlan`: changes to the local tree and one result per record decided.
    """
    return _Merger(store, local, remote, remote_name, allow_secret).run()


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
    allow_secret: bool = False


def _forward(store: Store, state: _State, local: str | None, dry_run: bool) -> str | None:
    """Adopt or fast-forward to the remote tip; return the local tip after it, or ``_RETRY``.

    Every path the remote changed is checked as a merge would (rules 5 and 7): when some
    remote version is not adopted, the local ref moves to a new commit on the remote tip
    that puts the local versions back, instead of to the remote tip itself.
    """
    res, remote_sha = state.result, state.remote_sha
    assert remote_sha is not None
    plan = merge_plan(store, local, remote_sha, res.remote, state.allow_secret)
    reported = [r for r in plan.results if r.status in ("refused", "invalid")]
    target = remote_sha
    if plan.reverts:
        if dry_run:
            target = local or remote_sha
        else:
            message = (f"sync: take {res.remote}, except {len(plan.reverts)} not adopted\n\n"
                       + "\n".join(f"{r.status} {r.memory_id}: {r.reason}" for r in reported) + "\n")
            target = store.commit_on(remote_sha, plan.reverts, message)
    if not dry_run and not store.update_ref(MEMORY_REF, target, local):
        return _RETRY  # a local write raced us: look again
    _mark(res, "adopted" if local is None else "fast-forward")
    res.merged.extend(reported)
    res.warnings.extend(plan.warnings)
    return target


def _integrate(store: Store, state: _State, dry_run: bool) -> str | None:
    """Bring the remote tip into the local ref; return the local tip after it, or ``_RETRY``."""
    res, remote_sha, graph = state.result, state.remote_sha, Graph(store)
    local = store.tip()
    if remote_sha is None or local == remote_sha:
        _mark(res, "pushed" if local not in (None, remote_sha) else "up-to-date")
        return local
    if local is None or graph.is_ancestor(local, remote_sha):
        return _forward(store, state, local, dry_run)
    if graph.is_ancestor(remote_sha, local):
        _mark(res, "pushed")
        return local
    _mark(res, "merged")
    if dry_run:
        plan = merge_plan(store, local, remote_sha, res.remote, state.allow_secret)
        res.merged.extend(plan.results)
        res.warnings.extend(plan.warnings)
        return local

    def build(tip: str | None) -> Mutation | None:
        plan = merge_plan(store, tip, remote_sha, res.remote, state.allow_secret)
        return Mutation(plan.changes, plan.message(res.remote), parents_extra=(remote_sha,), result=plan)

    commit, mutation = store.transact(build)
    assert mutation is not None and isinstance(mutation.result, MergePlan)  # build always returns one
    plan = mutation.result
    res.merged.extend(plan.results)
    res.warnings.extend(plan.warnings)
    return commit.sha if commit is not None else store.tip()


def _new_authors(store: Store, before: str | None, after: str | None, *,
                 remember: bool, require_signatures: bool = False) -> dict[str, list[str]]:
    """Who git says made the records changed from ``before`` to ``after``, if this clone never saw them.

    Seen: the local identity, and every writer an earlier sync reported (kept in
    ``<common dir>/tur/authors``, which ``remember`` extends). The record's own ``author``
    field is not asked: it is a claim (docs/sharing.md, Trust).
    """
    if after is None or after == before:
        return {}
    graph = Graph(store)
    old, new = graph.flat_tree(before), graph.flat_tree(after)
    changed = {path: memory_id for path, blob in new.items()
               if (memory_id := _record_id(path)) is not None and old.get(path) != blob}
    if not changed:
        return {}
    made = store.attribution(after, set(changed), before, require_signatures=require_signatures)
    known = {store.identity(), *store.known_authors()}
    found: dict[str, list[str]] = {}
    for path in sorted(changed):
        for writer in made.get(path, ()):
            if writer and writer not in known:
                found.setdefault(writer, []).append(changed[path])
    if found and remember:
        store.add_known_authors(sorted(found))
    return found


def _arrivals(store: Store, before: str | None, after: str | None,
              require_signatures: bool = False) -> list[Arrival]:
    """The persona version and continuity notes that ``after`` has and ``before`` lacks, made by others."""
    if after is None or after == before:
        return []
    wanted: dict[str, tuple[str, str]] = {}
    persona = store.blob_id_at(after, "persona.yaml")
    earlier = store.blob_id_at(before, "persona.yaml") if before else None
    if persona is not None and persona != earlier:
        wanted["persona.yaml"] = ("persona", persona)
    deleted = _deleting_commit(store, after) if persona is None and earlier is not None else None
    if deleted is not None:
        wanted["persona.yaml"] = ("persona", deleted)
    old_notes = store.list_dir(before, "continuity") if before else {}
    new_notes = store.list_dir(after, "continuity")
    for name, blob in sorted(new_notes.items()):
        if old_notes.get(name) != blob:
            wanted[f"continuity/{name}"] = ("note", blob)
    gone = {"persona.yaml"} if deleted is not None else set()
    if set(old_notes) - set(new_notes):
        for commit, _, path in _note_deletions(store, after):
            name = path.rpartition("/")[2]
            if name in old_notes and name not in new_notes and path not in wanted:
                wanted[path] = ("note", commit)
                gone.add(path)
    if not wanted:
        return []
    made = store.attribution(after, set(wanted), require_signatures=require_signatures)
    me = store.identity()
    return [Arrival(kind, path, blob, made.get(path, ()), deleted=path in gone)
            for path, (kind, blob) in sorted(wanted.items()) if set(made.get(path, ())) != {me}]


def _note_deletions(store: Store, tip: str) -> list[tuple[str, str, str]]:
    """The recent deletions of continuity notes from ``tip`` (``Store.deletions``), if git can say."""
    try:
        return store.deletions(tip, "continuity")
    except GitmemError:
        return []


def _deleting_commit(store: Store, tip: str) -> str | None:
    """The commit that deleted ``persona.yaml`` (the newest that changed it, from ``tip``), if git can say."""
    try:
        changes = store.path_changes(tip, "persona.yaml")
    except GitmemError:
        return None
    return changes[0] if changes else None


def _mark(res: SyncResult, status: str) -> None:
    if _RANK[status] > _RANK[res.status]:
        res.status = status


def sync(
    store: Store, remote_name: str = "origin", *, dry_run: bool = False, attempts: int = DEFAULT_ATTEMPTS,
    allow_secret: bool = False, publish: bool = True, require_signatures: bool = False,
) -> SyncResult:
    """Fetch, integrate (adopt, fast-forward or merge) and push the memory ref; see the module docstring.

    Args:
        store: the repository's store.
        remote_name: a remote listed by ``git remote``.
        dry_run: fetch (which only moves ``refs/tur/remotes/<remote>/memories``) and
            report what would be merged and pushed, writing nothing else.
        attempts: pushes tried when the remote keeps moving (each after a new fetch and merge).
        allow_secret: adopt incoming versions in which the credential scan finds something.
        publish: push to a remote without a memory ref (else none; ``result.unpublished``).
        require_signatures: ``trust.require_signatures``: the authors named (new authors,
            arrivals) carry ``(unsigned)`` where their commit is unsigned (``Store.attribution``).

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
    state = _State(res, remote_sha, allow_secret)
    pushes = 0
    for _ in range(attempts * 4):
        local = _integrate(store, state, dry_run)
        if local == _RETRY:
            continue
        res.local_after = store.tip() if not dry_run else local_before
        if not res.new_authors:
            res.new_authors = _new_authors(store, local_before, local if dry_run else res.local_after,
                                           remember=not dry_run, require_signatures=require_signatures)
        if not res.arrived:
            res.arrived = _arrivals(store, local_before, local if dry_run else res.local_after,
                                    require_signatures)
        res.unpublished = local is not None and state.remote_sha is None and not publish
        if local is None or local == state.remote_sha or res.unpublished:
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
