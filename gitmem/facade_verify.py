"""The :class:`gitmem.api.Gitmem` methods for staleness and weight: verify, status, and the status view."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gitmem.decay import FROM_POLICY, DecayPolicy, weight, weight_column
from gitmem.errors import EmptyRepository, InvalidInput, MalformedRecord
from gitmem.reader import Skipped, read_record, record_path
from gitmem.store import CommitInfo, Mutation
from gitmem.vocabulary import Status, utc_now

if TYPE_CHECKING:
    from gitmem.models import Memory

    # staleness imports the code history (libgit2): only verify needs it, not wake.
    from gitmem.staleness import Verdict, VerifyCache
    from gitmem.store.worktree_diff import AnchoredDiff

__all__ = ["StatusRow", "StatusView", "VerifyMixin", "VerifyOutcome"]

_ORDER = (Status.FRESH, Status.STALE, Status.UNANCHORED, Status.REFUTED)


@dataclass
class StatusRow:
    """One memory with its status, reason, weight (in [0, 1]) and commit distance (commits)."""

    memory: Memory
    status: Status
    reason: str | None
    weight: float
    commit_distance: int | None = None
    changed: bool = False
    moved: bool = False
    new_ref: str | None = None
    hint: str | None = None

    @property
    def memory_id(self) -> str:
        """The memory's id."""
        return self.memory.id


@dataclass
class StatusView:
    """Every readable memory with its stored status and current weight; skipped blobs."""

    rows: list[StatusRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    head: str | None = None


@dataclass
class VerifyOutcome(StatusView):
    """Result of ``verify`` / ``status``: one row per memory checked, and the commit (if any)."""

    commit: CommitInfo | None = None

    def counts(self) -> dict[str, int]:
        """Memories per status, in the order fresh, stale, unanchored, refuted (zeros left out)."""
        counts = Counter(r.status for r in self.rows)
        return {s.value: counts[s] for s in _ORDER if counts[s]}

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary: counts, the commit, and one entry per memory."""
        return {
            "head": self.head,
            "counts": self.counts(),
            "commit": self.commit.sha if self.commit else None,
            "memories": [
                {
                    "id": r.memory_id,
                    "status": r.status.value,
                    "reason": r.reason,
                    "hint": r.hint,
                    "weight": round(r.weight, 6),
                    "commit_distance": r.commit_distance,
                    "changed": r.changed,
                    "context_ref": r.new_ref or (r.memory.provenance.context_ref
                                                 if r.memory.provenance else None),
                }
                for r in self.rows
            ],
        }


class VerifyMixin:
    """Staleness (EP-0131) for ``Gitmem``: verify, status, weights."""

    @property
    def policy(self) -> DecayPolicy:
        """The decay policy from the configuration."""
        return self.settings.decay

    def identity(self) -> str:
        """``Name <email>`` of the repository's git identity (or the fallback)."""
        sig = self.store.signature()
        return f"{sig.name} <{sig.email}>"

    def record_text(self, memory_id: str) -> str:
        """The record exactly as stored on the ref (YAML text).

        Raises:
            UnknownMemory: no such id.
        """
        from gitmem.ids import resolve_id

        blobs = self._id_entries(memory_id, self.store.tip())  # one shard, not every record
        return self.store.read_blob(blobs[resolve_id(memory_id, blobs)]).decode("utf-8", "replace")

    def anchored_diff(self, memory: Memory, max_lines: int = 400) -> AnchoredDiff:
        """The anchored file's diff from the observed commit to the working tree (read-only).

        Args:
            memory: the record; its ``provenance.git_sha`` and anchored path are used.
            max_lines: lines of diff kept (a huge rewrite is cut, and the note says so).

        Returns:
            The :class:`~gitmem.store.worktree_diff.AnchoredDiff`; without an anchor, or when
            git fails, an empty one whose ``note`` says why (never raises for git trouble).
        """
        from gitmem.store.worktree_diff import AnchoredDiff, diff_since

        prov = memory.provenance
        path = memory.anchor_path
        if prov is None or not prov.git_sha or not path:
            return AnchoredDiff("", "no anchored file")
        return diff_since(prov.git_sha, path, self.cwd, max_lines)

    def _distances(self, memories: list[Memory], head: str | None) -> dict[str, int | None]:
        """Commit distance (commits) of each memory's anchor SHA to HEAD, by id."""
        shas = [m.provenance.git_sha if m.provenance else None for m in memories]
        return dict(zip((m.id for m in memories), self._distance_column(shas, head), strict=True))

    def _distance_column(self, shas: list[str | None], head: str | None) -> list[int | None]:
        """Commit distance (commits) of each SHA to HEAD (``None``: no SHA, or unknown).

        One history walk per distinct SHA; with the read cache, distances of full SHAs are
        remembered per HEAD, so a warm wake walks no history.
        """
        if head is None:
            return [None] * len(shas)
        cache = self._record_cache()
        known: dict[str, int] = cache.distances(head) if cache is not None else {}
        per_sha: dict[str | None, int | None] = {None: None, **known}
        history = None
        for sha in sorted(set(shas) - per_sha.keys()):  # type: ignore[operator]
            history = history or self.store.code()
            full = history.resolve_commit(sha)
            per_sha[sha] = history.commit_distance(full, head).commits if full else None
            if cache is not None and full == sha and per_sha[sha] is not None:
                known[sha] = per_sha[sha]  # type: ignore[assignment]
                cache.mark_distances()
        return [per_sha[sha] for sha in shas]

    def _weights(self, memories: list[Memory], now: datetime) -> dict[str, float]:
        """Decay weight of each memory at ``now`` (see :func:`gitmem.decay.weight`), by id."""
        distances = self._distances(memories, self.store.head_sha())
        policy = self.policy
        return {m.id: weight(m, now, distances[m.id], policy) for m in memories}

    def _table_weights(self, table: Any, now: datetime) -> tuple[list[float], list[int | None]]:
        """Weights and commit distances of every row of a cache :class:`~gitmem.cache.RecordTable`.

        The columns go through :func:`gitmem.decay.weight_column` (equal to :func:`weight`
        of each record) without an object per memory.
        """
        c = table.columns
        provs, decays = c["prov"], c["decay"]
        distances = self._distance_column([p[1] if p is not None else None for p in provs],
                                          self.store.head_sha())
        half_lives = [d[0] if d is not None else FROM_POLICY if p is not None else None
                      for d, p in zip(decays, provs, strict=True)]
        weights = weight_column(c["type"], c["status"], c["conf"], half_lives, c["verified"],
                                distances, now, self.policy)
        return weights, distances

    def status_view(self, now: datetime | None = None, *, full_records: bool = True) -> StatusView:
        """Stored statuses with current weights (no staleness check, nothing written).

        With ``full_records=False`` rows may carry read-only
        :class:`gitmem.cache.MemoryView` stand-ins instead of full records (what a
        caller that only shows ids, statuses, weights, anchors and content wants):
        100,000 of them cost a fraction of a second instead of seconds.
        """
        now = now or utc_now()
        head = self.store.head_sha()
        cache = self._record_cache()
        if cache is not None and not full_records:
            table = cache.table(self.store.tip())
            skipped = [*cache.take_notices(), *table.bad]
            memories = table.views()
            weights, distances = self._table_weights(table, now)
        else:
            memories, skipped = self.memories()
            distances = self._distance_column(
                [m.provenance.git_sha if m.provenance else None for m in memories], head)
            policy = self.policy
            weights = [weight(m, now, d, policy) for m, d in zip(memories, distances, strict=True)]
        rows = [
            StatusRow(
                memory=m,
                status=m.status,
                reason=m.refutation.reason if m.refutation else (m.decay.reason if m.decay else
                                                                 "no provenance (legacy record)"),
                weight=w,
                commit_distance=d,
            )
            for m, w, d in zip(memories, weights, distances, strict=True)
        ]
        if cache is not None:
            cache.flush()
            skipped = [*cache.take_notices(), *skipped]
        return StatusView(rows=rows, skipped=skipped, head=head)

    def verify(
        self,
        ids: list[str] | None = None,
        *,
        write: bool = True,
        confirm: bool = False,
        now: datetime | None = None,
        explicit: bool = True,
    ) -> VerifyOutcome:
        """Check memories against HEAD and the working tree; with ``write``, record changes.

        Every memory (or those in ``ids``) gets a verdict (see :mod:`gitmem.staleness`).
        With ``write``, every changed record (status, reason, moved or corroborated
        anchor) is rewritten in one commit ``verify: …``; a memory another process
        changed meanwhile is left to that process's write.

        Naming ``ids`` is an explicit check: a memory found fresh also gets
        ``last_verified_at = now``, restarting its time decay. With ``confirm`` a
        person vouches for the named memories: each is set ``fresh`` and re-anchored
        to HEAD (same path, lines clamped to the file); one whose anchored file is gone
        at HEAD is left as it is, with a hint. Refuted memories are never changed by verify.

        With ``explicit=False`` the ``ids`` only narrow the check, as a background
        re-check does (``tur watch``): each named memory is judged exactly as the bulk
        path (no ``ids``) would judge it, and its time decay is not restarted.
        ``confirm`` is always explicit.

        Raises:
            EmptyRepository: HEAD is unborn.
            InvalidInput: ``confirm`` without ``ids``.
            UnknownMemory, AmbiguousId: a bad id in ``ids``.
        """
        if confirm and not ids:
            raise InvalidInput("--confirm needs the ids of the memories you vouch for")
        from gitmem.staleness import apply_verdict, check

        now = now or utc_now()
        if ids:
            memories, skipped, judged = self._read_ids(ids)
        else:
            snap = self.snapshot()
            memories = [snap.records[k] for k in sorted(snap.records)]
            skipped, judged = snap.skipped, snap.blobs
        if self.store.head_sha() is None:
            raise EmptyRepository(
                "the repository has no commits yet: nothing to verify memories against",
                "commit something first",
            )
        policy = self.policy
        verify_cache = self._load_verify_cache()
        report = check(memories, self.store.code(), policy, cache=verify_cache)
        self._save_verify_cache(verify_cache, report.head_sha)
        updated: dict[str, Memory] = {}
        rows = []
        for memory, verdict in zip(memories, report.verdicts, strict=True):
            if (ids and (explicit or confirm) and memory.refutation is None
                    and (confirm or verdict.status is Status.FRESH)):
                verdict = self._explicit(memory, verdict, report.head_sha, confirm)
            new = apply_verdict(memory, verdict, now, policy) if verdict.changed else memory
            if verdict.changed:
                updated[memory.id] = new
            rows.append(StatusRow(
                memory=new, status=verdict.status, reason=verdict.reason,
                weight=weight(new, now, verdict.commit_distance, policy),
                commit_distance=verdict.commit_distance, changed=verdict.changed,
                moved=bool(verdict.new_context_ref and memory.provenance
                           and verdict.new_context_ref != memory.provenance.context_ref),
                new_ref=verdict.new_context_ref, hint=verdict.hint,
            ))
        cache = self._record_cache()
        if cache is not None:  # e.g. a damaged verify.bin, found after the records were read
            skipped = [*cache.take_notices(), *skipped]
        outcome = VerifyOutcome(rows=rows, skipped=skipped, head=report.head_sha)
        if write and updated:
            outcome.commit = self._record_verdicts(judged, updated, rows, bulk=not ids)
        return outcome

    def _load_verify_cache(self) -> VerifyCache:
        """Outcomes of earlier runs (keys are immutable SHAs, so they never go stale)."""
        from gitmem.staleness import VerifyCache

        cache = self._record_cache()
        plain = cache.read_payload("verify.bin", "verify") if cache is not None else None
        return VerifyCache.from_plain(plain) if plain is not None else VerifyCache()

    def _save_verify_cache(self, verify_cache: VerifyCache, head: str) -> None:
        # Only this HEAD's entries: the next run compares with this HEAD or a newer one.
        cache = self._record_cache()
        if cache is not None:
            cache.write_payload("verify.bin", "verify", verify_cache.to_plain(head))

    def _explicit(self, memory: Memory, verdict: Verdict, head: str, confirm: bool) -> Verdict:
        """Turn a verdict on a named memory into a corroboration at HEAD (see :meth:`verify`)."""
        if verdict.status is Status.FRESH and verdict.corroborated:
            return replace(verdict, changed=True)
        ref, fp = None, None
        prov = memory.provenance
        if verdict.status is Status.FRESH and prov is not None:
            # Fresh but not re-anchored (no anchor, or unanchored by design): move the SHA only.
            ref, fp = prov.context_ref, prov.fingerprint
        elif confirm and prov is not None and prov.context_ref:
            ref, fp = self._anchor_at_head(prov.context_ref, head)
            if ref is None:
                # Vouching cannot make an anchor to a missing file true: keep the verdict.
                return replace(verdict, hint=f"{prov.context_ref} is not at HEAD: `tur forget` it, "
                               "or learn it again with a new --file")
        # A fresh memory carries no reason; who confirmed it is in the commit's author.
        return replace(
            verdict, status=Status.FRESH, reason=None, new_git_sha=head, new_context_ref=ref,
            new_fingerprint=fp, commit_distance=0, corroborated=True, changed=True,
        )

    def _anchor_at_head(self, context_ref: str, head: str) -> tuple[str | None, str | None]:
        """The same path and lines at HEAD (clamped to the file), with their fingerprint."""
        from gitmem.anchors import Anchor, InvalidAnchor, fingerprint, parse_anchor, split_lines

        try:
            anchor = parse_anchor(context_ref)
        except InvalidAnchor:
            return None, None
        data = self.store.code().blob_at(head, anchor.path)
        if data is None:
            return None, None
        lines = split_lines(data)
        if anchor.start is None or anchor.end is None or anchor.start > len(lines):
            return Anchor(anchor.path, None, None).ref(), fingerprint(lines)
        end = min(anchor.end, len(lines))
        return Anchor(anchor.path, anchor.start, end).ref(), fingerprint(lines[anchor.start - 1 : end])

    def _read_ids(self, ids: list[str]) -> tuple[list[Memory], list[Skipped], dict[str, str]]:
        """The records named by ``ids`` (sorted by id), those that are malformed, their blobs.

        Reads only the shard trees the ids live in, so ``verify ID`` does not grow with the
        number of memories.

        Raises:
            UnknownMemory, AmbiguousId: a bad id.
        """
        from gitmem.ids import resolve_id

        tip = self.store.tip()
        blobs: dict[str, str] = {}
        for token in ids:
            entries = self._id_entries(token, tip)
            found = resolve_id(token, entries)
            blobs[found] = entries[found]
        memories, skipped = [], []
        for memory_id in sorted(blobs):
            try:
                memories.append(read_record(self.store, memory_id, blobs[memory_id]))
            except MalformedRecord as exc:
                skipped.append(Skipped(memory_id, blobs[memory_id], exc.reason))
        return memories, skipped, blobs

    def _record_verdicts(
        self, judged_blobs: dict[str, str], updated: dict[str, Memory], rows: list[StatusRow],
        bulk: bool = False,
    ) -> CommitInfo | None:
        counts = Counter(r.status.value for r in rows if r.changed)
        moved = sum(1 for r in rows if r.moved)
        parts = [f"{n} {s}" for s, n in sorted(counts.items())]
        if moved:
            parts.append(f"{moved} re-anchored")
        message = "verify: " + ", ".join(parts) + "\n\n" + "\n".join(
            f"{r.memory_id}: {r.status.value}" + (f" ({r.reason})" if r.reason else "")
            + (f" -> {r.new_ref}" if r.moved else "")
            for r in rows if r.changed
        )

        from gitmem import codec

        def build(tip: str | None) -> Mutation | None:
            # A few records: look each one up (O(1) trees); many: one walk of the tree.
            if len(updated) > 64:
                blob_of = self.store.entries(tip).get
            else:
                def blob_of(memory_id: str) -> str | None:
                    return self.store.blob_id_at(tip, record_path(memory_id))
            changes: dict[str, bytes | None] = {}
            for memory_id, memory in updated.items():
                # Only records still as we judged them: a concurrent edit wins.
                blob = blob_of(memory_id)
                if blob is None or blob != judged_blobs.get(memory_id):
                    continue
                original = self.store.read_blob(blob)
                changes[record_path(memory_id)] = codec.update(original, memory)
            return Mutation(changes, message) if changes else None

        commit, mutation = self.store.transact(build)
        cache = self._record_cache()
        # Worth it after a bulk verify only, which has read every record already: after
        # `verify ID` the next reader parses the few changed blobs itself, while building
        # the table here would read every record.
        if commit is not None and cache is not None and bulk:
            # Hand the written records to the read cache, so the next reader of this tip
            # (the next `tur verify`, wake, recall) parses none of them. Not one a concurrent
            # edit won: its blob at the tip is not ours.
            written = mutation.changes if mutation is not None else {}
            cache.after_commit(commit.sha, {i: m for i, m in updated.items() if record_path(i) in written})
        return commit
