"""Staleness for the facade: ``verify``, ``status_view`` and ``anchor_trail``.

``verify`` checks and records, ``status_view`` shows the stored statuses, ``anchor_trail``
says how an anchor travelled.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from gitmem.api.runs import AsOf
from gitmem.api.status_results import AnchorStep, RowFilter, StatusRow, StatusView, VerifyOutcome
from gitmem.cache.reader import read_record, record_path
from gitmem.errors import EmptyRepository, InvalidInput, MalformedRecord, MissingObject
from gitmem.record.anchors import split_ref
from gitmem.record.decay import microseconds, weight
from gitmem.record.runs import RUNS_PATH, VerifyRun, merge_runs, render_runs
from gitmem.store import CommitInfo, Mutation, StoredBlob
from gitmem.vocabulary import Status, utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.api.runs import Effective
    from gitmem.api.weights import Weights
    from gitmem.cache import RecordCache, RecordTable
    from gitmem.cache.views import MemoryView
    from gitmem.context.stale_notes import StaleNote
    from gitmem.record.models import Memory
    from gitmem.staleness.overlay import LocalEntry

    # staleness imports the code history (libgit2): only verify needs it, not wake.
    from gitmem.staleness.verdicts import StalenessReport, Verdict
    from gitmem.store import Store

__all__ = ["Verifier"]


def _status_changed(memory: Memory, verdict: Verdict) -> bool:
    """Whether a verdict changes the memory's recorded status or reason (not only its anchor)."""
    decay = memory.decay
    if decay is None:
        return verdict.status is not memory.status
    return decay.staleness_status is not verdict.status or decay.reason != verdict.reason

#: One memory's line in a verify commit message: ``ID: STATUS[ (REASON)][ -> ANCHOR]``.
_VERDICT_LINE = re.compile(r"^(?P<status>\w+)(?: \((?P<reason>.*)\))?(?: -> (?P<ref>\S+))?$")

#: The reason of a memory stale by commit distance (``gitmem.staleness.verdicts``).
_BY_DISTANCE = re.compile(r"^\d+ commits since observed (?P<rest>\S+ \(limit \d+\).*)$")


def _count_only(memory: Memory, verdict: Verdict) -> bool:
    """Whether the verdict differs from the stored one only in the commit count of a distance reason.

    Such a memory stays stale by commit distance: rewriting it for every new commit would
    make verify cost O(those memories) on each commit, so the record keeps the reason it
    went stale with (``21 commits since observed 3f2a1b9 (limit 20)``); the rows of ``tur
    verify`` and ``tur status`` give the count now.
    """
    decay = memory.decay
    if decay is None or decay.staleness_status is not Status.STALE or verdict.status is not Status.STALE:
        return False
    old, new = _BY_DISTANCE.match(decay.reason or ""), _BY_DISTANCE.match(verdict.reason or "")
    return old is not None and new is not None and old["rest"] == new["rest"]


#: Abbreviated code SHAs in a reason (``... in 3f2a1b9``).
_CODE_SHA = re.compile(r"\bin ([0-9a-f]{7,40})\b")

#: Words of a verify reason -> how the anchor travelled.
_TRAVELS = (("renamed from", "renamed"), ("moved to", "moved"), ("reformatted", "reformatted"))


def _itself(memory: Any) -> Memory:
    return cast("Memory", memory)


def _full_of(cache: RecordCache, table: RecordTable) -> Callable[[Any], Memory]:
    """A function: a view of ``table`` -> its full record, not kept in the table unless it was."""
    def full(view: Any) -> Memory:
        if view.row in table.parsed:
            return cache.memory(table, view.row)
        memory = cache.memory(table, view.row)
        # Not kept in the table: a bulk verify that changes most records would
        # otherwise hold each old record next to its new one (twice the memory).
        table.parsed.pop(view.row, None)
        return memory

    return full


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _as_of(memory: Any, point: tuple[str | None, int | None] | None) -> Any:
    """``memory`` at its effective verification point (``point``: SHA, microseconds), or itself."""
    if point is None or point[1] is None:
        return memory
    return AsOf(memory, point[0], _EPOCH + timedelta(microseconds=point[1]))


def _materialize(record: Memory, subject: Any) -> Memory:
    """``record`` with the effective point ``subject`` holds (an :class:`AsOf`), as a rewrite stores it."""
    if not isinstance(subject, AsOf) or record.provenance is None or record.decay is None:
        return record
    out = record.model_copy(deep=True)
    assert out.provenance is not None and out.decay is not None
    out.provenance.git_sha = subject.git_sha
    out.decay.last_verified_at = subject.last_verified_at
    return out


class Verifier:
    """Checks memories against HEAD and the working tree (EP-0131), and reports stored statuses.

    Args:
        ws: the shared workspace.
        weights: distances and weights, shared with wake.
    """

    def __init__(self, ws: Workspace, weights: Weights) -> None:
        self.ws = ws
        self.weights = weights
        self._distances: dict[str | None, int | None] = {}
        """Commit distances to this verify's HEAD of the carried stale rows, by observed SHA."""

    def status_view(self, now: datetime | None = None, *, full_records: bool = True,
                    only: RowFilter | None = None, order: Sequence[str] | None = None) -> StatusView:
        """See :meth:`gitmem.api.Gitmem.status_view` (``only`` and ``order`` as its filter gives them)."""
        now = now or utc_now()
        records = self.ws.records
        tip = records.tip()
        table, skipped = records.table(tip)
        weights, distances = self.weights.table_weights(table, now)
        memories: list
        if full_records:
            snap = records.snapshot(tip)
            memories = [snap.records[memory_id].with_local(table.local.get(row))
                        for row, memory_id in enumerate(table.ids)]
            skipped = [*skipped, *(s for s in snap.skipped if s not in skipped)]
        else:
            memories = table.views()
        rows = [
            StatusRow(
                memory=m,
                status=m.status,
                reason=m.refutation.reason if m.refutation else m.local_reason or (
                    m.decay.reason if m.decay else "no provenance (legacy record)"),
                weight=w,
                commit_distance=d,
                local=m.local_reason,
            )
            for m, w, d in zip(memories, weights, distances, strict=True)
        ]
        if only is not None or order is not None:
            rows = (only or RowFilter()).select(rows, order)
        records.flush()
        return StatusView(rows=rows, skipped=[*records.notices(), *skipped],
                          head=self.ws.store.head_sha())

    def verification_point(self, memory_id: str) -> tuple[str | None, datetime | None]:
        """See :meth:`gitmem.api.Gitmem.verification_point`."""
        records = self.ws.records
        memory_id = records.resolve(memory_id)
        tip = records.tip()
        table, _ = records.table(tip)
        row = table.row(memory_id)
        if row is None:
            memory = records.get(memory_id)  # not readable from the table: its own point
            return (memory.provenance.git_sha if memory.provenance else None), memory.last_verified_at
        effective = self.weights.runs.effective(table, tip)
        at = effective.verified[row]
        return effective.shas[row], None if at is None else _EPOCH + timedelta(microseconds=at)

    def anchor_trail(self, memory_id: str, history: list[CommitInfo] | None = None) -> list[AnchorStep]:
        """See :meth:`gitmem.api.Gitmem.anchor_trail`."""
        memory_id = self.ws.records.resolve(memory_id)
        commits = self.ws.records.history(memory_id) if history is None else history
        path = record_path(memory_id)
        steps: list[AnchorStep] = []
        previous: str | None = None
        previous_line: bytes | None = None
        for commit in reversed(commits):
            blob = self.ws.store.blob_id_at(commit.sha, path)
            if blob is None:
                continue  # forgotten here; a later learn starts from the last anchor
            reason = _verdict_reason(commit.message, memory_id)
            # A version whose anchor line is the last step's, byte for byte, adds no step
            # whether it parses or not: most versions of a long-lived record (a verify's
            # new date) are passed without parsing their YAML.
            line = _anchor_line(self.ws.store.read_blob(blob))
            if steps and line is not None and line == previous_line and not _travels(reason):
                continue
            try:
                record = read_record(self.ws.store, memory_id, blob)
            except MalformedRecord:
                continue
            ref = record.provenance.context_ref if record.provenance else None
            # a whole file, or lines that kept their numbers, reformatted: the same anchor
            if steps and ref == previous and not _travels(reason):
                continue
            previous_line = line
            how = ("learned",) if not steps else _how(reason, previous, ref, commit.message)
            steps.append(AnchorStep(
                commit=commit.sha, time=commit.time, how=how,
                from_ref=previous if steps else None, to_ref=ref, reason=reason,
                code_commits=tuple(_CODE_SHA.findall(reason or "")),
            ))
            previous = ref
        return steps

    def verify(
        self,
        ids: list[str] | None = None,
        *,
        write: bool = True,
        confirm: bool = False,
        now: datetime | None = None,
        explicit: bool = True,
        progress: Callable[[int, int], None] | None = None,
        full_records: bool = True,
    ) -> VerifyOutcome:
        """See :meth:`gitmem.api.Gitmem.verify`."""
        if confirm and not ids:
            raise InvalidInput("--confirm needs the ids of the memories you vouch for")
        now = now or utc_now()
        store, records = self.ws.store, self.ws.records
        full: Callable[[Any], Memory]
        subjects: list[Any]  # records, or the cache's rows standing in for them
        table: RecordTable | None = None
        tip = records.tip()
        if ids:
            subjects, skipped, judged = records.read_ids(ids)
            full = _itself
            points = self._points_of(subjects, tip)
        else:
            # The table's rows are judged (a row reads as its record does, for every field
            # the check reads); a full record is built only for a verdict that changes it.
            table, skipped = records.table(tip)
            subjects, judged = table.committed_views(), {}
            full = _full_of(records.cache, table)
            effective = self.weights.runs.effective(table, tip)
            points = {r: (effective.shas[r], effective.verified[r]) for r, k in enumerate(effective.by_run)
                      if k >= 0}
        if store.head_sha() is None:
            unborn = store.unborn_head()
            raise EmptyRepository(f"{unborn.message}: nothing to verify memories against", unborn.hint)
        # A whole explicit run corroborates what it finds unchanged, in a run record: then the
        # memories the last run found fresh whose files did not change are not judged again.
        whole = not ids and explicit and table is not None
        carried = self._carried(table, effective) if whole and table is not None else set()
        judged_subjects = [_as_of(m, points.get(i)) for i, m in enumerate(subjects) if i not in carried]
        report = self._check(judged_subjects, progress)
        self._distances = {}
        from gitmem.staleness.overlay import save

        # A bulk write: each new record is written as a blob as soon as its verdict is applied,
        # and only its row is kept (see _Rewrites). Named ids: the few records themselves.
        rewrites = _Rewrites(store, records.cache, table) if write and table is not None else None
        try:
            rows, updated, local, news = self._apply(
                subjects, carried, points, report, full, rewrites, ids=ids, explicit=explicit,
                confirm=confirm, now=now, full_records=full_records)
            save(store.git_dir, store.workdir, report.head_sha, (m.id for m in subjects), local)
            # e.g. a damaged verify.bin, found after the records were read
            outcome = VerifyOutcome(rows=rows, skipped=[*records.notices(), *skipped],
                                    head=report.head_sha)
            if rewrites is not None and (rewrites.planned or (whole and news)):
                assert table is not None
                run = (table.tree, report.head_sha, now, set(updated)) if whole and news else None
                del subjects, full, judged_subjects  # what the rows do not show can go before the commit
                outcome.commit = self._record_rewrites(rewrites, rows, outcome.counts(), run)
            elif write and updated and rewrites is None:
                outcome.commit = self._record_verdicts(judged, updated, rows, outcome.counts())
        finally:
            if rewrites is not None:
                rewrites.close()
        return outcome

    def check_now(self, subjects: list[Any]) -> list[Verdict]:
        """One verdict at HEAD per record or cache view of ``subjects``, in order; nothing is written.

        The staleness check itself (:func:`gitmem.staleness.check`, with the outcomes of earlier
        runs from the read cache): where the lines of a stale memory are now is its
        :attr:`~gitmem.staleness.verdicts.Verdict.maps_to`.

        Raises:
            EmptyRepository: HEAD is unborn.
        """
        return self._check(subjects, None).verdicts

    def stale_note(self, memory_id: str) -> StaleNote | None:
        """See :meth:`gitmem.api.Gitmem.stale_note`."""
        from gitmem.api.stale import note_of

        return note_of(self.ws, memory_id)

    def where_now(self, memory_id: str) -> str:
        """See :meth:`gitmem.api.Gitmem.reanchor`: the anchor at HEAD the memory's lines map to."""
        memory = self.ws.records.get(memory_id)
        ref = memory.provenance.context_ref if memory.provenance else None
        if not ref:
            raise InvalidInput(f"{memory.id} has no anchor to follow",
                               f"anchor it: `tur edit {memory.id} --file path#Lx-Ly`")
        verdict = self.check_now([memory])[0]
        if verdict.status is Status.FRESH and verdict.new_context_ref:
            return verdict.new_context_ref
        if verdict.status is Status.STALE and verdict.maps_to:
            return verdict.maps_to
        raise _unmappable(memory.id, ref, verdict.reason, "re-anchored")

    def _points_of(self, memories: list[Any], tip: str | None) -> dict[int, tuple[str | None, int | None]]:
        """Effective verification points of named records that a run gave one, by position."""
        runs = self.weights.runs
        found = ((i, runs.point_of(memory, tip)) for i, memory in enumerate(memories))
        return {i: point for i, point in found if point is not None}

    def _carried(self, table: RecordTable, effective: Effective) -> set[int]:
        """Rows the newest run found fresh whose anchored files are as they were: not judged again.

        A row is carried when it is ``fresh``, anchored, has a decay part, and its effective
        point is at the newest run's HEAD, set by a run there (it corroborated the record, or
        rewrote it), and its anchored
        path has the same blob at HEAD as at that run's HEAD (one tree diff of the two
        commits: renames and deletions differ on both paths) and no uncommitted change.
        Such a memory gets the verdict a check would give: fresh, its anchor where it is.
        When HEAD's tree is the last run's (no path differs), a stale anchored memory that
        run judged and no write changed since is carried too: its verdict is the same.
        """
        if not effective.runs:
            return set()
        last = effective.runs[0]
        head = self.ws.store.head_sha()
        history = self.ws.store.code()
        if head is None or history.resolve_commit(last.head) != last.head:
            return set()
        differing = history.differing_paths(last.head, head) if last.head != head else frozenset()
        worktree = history.worktree()
        # A record rewritten by a run at that HEAD holds that run's time.
        rewritten_at = {microseconds(r.at) for r in effective.runs if r.head == last.head}
        c = table.columns
        provs, decays, statuses, refuted = c["prov"], c["decay"], c["status"], c["refuted"]
        own = c["verified"]
        by_run = effective.by_run
        out: set[int] = set()
        if not differing:
            # HEAD's tree is the last run's: a stale anchored memory it judged, unchanged since,
            # gets the same verdict (its reason names commits of the history it had then).
            try:
                since = self.ws.store.changed_records(last.tree, table.tree)
            except MissingObject:
                since = None
            if since is not None:
                skip = since.keys() | set(last.excluded)
                ids = table.ids
                rows = enumerate(zip(statuses, provs, decays, strict=True))
                out.update(row for row, (status, prov, decay) in rows
                           if status == "stale" and prov is not None and prov[2] and decay is not None
                           and ids[row] not in skip and not worktree.is_dirty(split_ref(prov[2])[0]))
        for row, sha in enumerate(effective.shas):
            prov = provs[row]
            if (sha != last.head or statuses[row] != "fresh" or prov is None
                    or not prov[2] or decays[row] is None or refuted[row] is not None
                    or (by_run[row] < 0 and own[row] not in rewritten_at)):
                continue
            path = split_ref(prov[2])[0]
            if path in differing or worktree.is_dirty(path):
                continue
            out.add(row)
        return out

    def _check(self, subjects: list[Any], progress: Callable[[int, int], None] | None) -> StalenessReport:
        """Verdicts on ``subjects``: :func:`gitmem.api.stale.judge` (with the outcomes of earlier runs)."""
        from gitmem.api.stale import judge

        return judge(self.ws, subjects, progress)

    def _apply(
        self, subjects: list[Any], carried: set[int], points: dict[int, tuple[str | None, int | None]],
        report: StalenessReport, full: Callable[[Any], Memory], rewrites: _Rewrites | None, *,
        ids: list[str] | None,
        explicit: bool, confirm: bool, now: datetime, full_records: bool,
    ) -> tuple[list[StatusRow], dict[str, Memory], dict[str, LocalEntry], int]:
        """Apply each verdict: the rows, the changed records, the overlay, the corroborations.

        ``points`` are the effective verification points of the subjects a run corroborated
        (by position), which they are judged and written at. ``report`` has a verdict for
        each subject not in ``carried`` (positions): a carried
        subject is fresh and corroborated at HEAD, its record as it is. The changed records
        are id -> new record; with ``rewrites``, each is handed to it instead (and the dict
        holds only the ones it could not write, too large), and the row carries its view
        unless ``full_records``. A bulk check rewrites a record only when its status, reason,
        anchor or fingerprint changes: a corroboration alone is the run's (see
        :mod:`gitmem.api.runs`); the count returned is of those, memories whose point moves
        to HEAD without a rewrite (what makes a run worth recording).
        """
        from gitmem.staleness.overlay import LocalEntry
        from gitmem.staleness.verdicts import apply_verdict

        store, policy = self.ws.store, self.ws.settings.decay
        updated: dict[str, Memory] = {}
        changed: set[str] = set()
        local: dict[str, LocalEntry] = {}
        rows = []
        # Each verdict is let go once applied (a bulk verify holds 100,000 of them): the
        # report is this verify's own.
        pending = report.verdicts
        pending.reverse()
        head = report.head_sha
        news = 0
        for position, stored in enumerate(subjects):
            if position in carried:
                rows.append(self._carried_row(stored, full, head, now, full_records))
                news += (stored.status is Status.FRESH
                         and _as_of(stored, points.get(position)).provenance.git_sha != head)
                continue
            subject = _as_of(stored, points.get(position))
            memory: Memory = cast("Memory", subject)
            verdict = self._settled(memory, pending.pop(), head, ids=ids, explicit=explicit, confirm=confirm)
            if verdict.changed or full_records:
                memory = _materialize(full(stored), subject)
            new = apply_verdict(memory, verdict, now, policy) if verdict.changed else memory
            vouched = confirm and ids and memory.refutation is None
            if vouched:
                new = new.model_copy(update={"author": store.identity()})
            shown: Memory | MemoryView = new
            # A confirmation is always written: trust comes from who git says last changed the
            # record, so the one who vouches must make the commit (docs/sharing.md, Trust).
            if new is not memory and (vouched or not new.same_as(memory)):
                new.stamp(memory, store.identity())
                changed.add(memory.id)
                written = rewrites.add(new, stored.row) if rewrites is not None else None
                if written is None:
                    updated[memory.id] = new
                elif not full_records:
                    shown = written
            # Corroborated without a rewrite, at a new HEAD: the run restarts its decay.
            moves = (verdict.corroborated and new is memory and memory.provenance is not None
                     and memory.provenance.git_sha != head)
            news += moves
            wt = verdict.worktree if memory.refutation is None else None
            if wt is not None:
                ref = verdict.new_context_ref or (memory.provenance.context_ref if memory.provenance else "")
                local[memory.id] = LocalEntry(wt, split_ref(ref or "")[0])
            rows.append(_row(memory, shown, verdict, wt, changed=memory.id in changed,
                             weighed=weight(cast("Memory", AsOf(new, head, now)) if moves else new,
                                            now, verdict.commit_distance, policy)))
        return rows, updated, local, news

    def _settled(self, memory: Memory, verdict: Verdict, head: str, *, ids: list[str] | None,
                 explicit: bool, confirm: bool) -> Verdict:
        """``verdict`` as this verify records it: which changes are worth a rewrite.

        A whole explicit verify leaves to its run record a corroboration that would only move
        the anchored SHA; a memory still stale by commit distance keeps the reason it went
        stale with; ``tur verify ID`` (or ``--confirm``) re-anchors to HEAD; a background check
        (the watcher) does not commit a mere re-anchor.
        """
        if (not ids and explicit and verdict.corroborated and verdict.changed and memory.decay is not None
                and not _status_changed(memory, verdict)
                and memory.provenance is not None
                and verdict.new_context_ref == memory.provenance.context_ref
                and verdict.new_fingerprint == memory.provenance.fingerprint):
            return replace(verdict, changed=False)
        if verdict.changed and _count_only(memory, verdict):
            verdict = replace(verdict, changed=False)
        if (ids and (explicit or confirm) and memory.refutation is None
                and (confirm or verdict.status is Status.FRESH)):
            verdict = self._explicit(memory, verdict, head, confirm)
        if (not explicit and not confirm and verdict.changed and memory.refutation is None
                and not _status_changed(memory, verdict)):
            verdict = replace(verdict, changed=False, corroborated=False)
        return verdict

    def _carried_row(self, stored: Any, full: Callable[[Any], Memory], head: str, now: datetime,
                     full_records: bool) -> StatusRow:
        """The row of a memory the last run judged whose anchored code cannot have changed.

        What a check would give: fresh, corroborated at ``head`` (commit distance 0, its time
        decay restarted at ``now``), its anchor where it is; or, for a stale one, its stale
        verdict as recorded. Its record is not rewritten.
        """
        memory = full(stored) if full_records else stored
        reason = memory.decay.reason if memory.decay else None
        if memory.status is Status.STALE:
            sha = memory.provenance.git_sha if memory.provenance else None
            if sha not in self._distances:  # one per observed commit, not per memory
                self._distances[sha] = self.weights.distance_column([sha], head)[0]
            distance = self._distances[sha]
            return StatusRow(
                memory=memory.with_local(None), status=Status.STALE, reason=reason,
                weight=weight(memory, now, distance, self.ws.settings.decay),
                commit_distance=distance, changed=False, moved=False, new_ref=None, hint=None,
                local=None, old_status=memory.status, old_reason=reason,
            )
        ref = memory.provenance.context_ref if memory.provenance else None
        return StatusRow(
            memory=memory.with_local(None), status=Status.FRESH, reason=None,
            weight=weight(cast("Memory", AsOf(memory, head, now)), now, 0, self.ws.settings.decay),
            commit_distance=0, changed=False, moved=False, new_ref=ref, hint=None, local=None,
            old_status=memory.status, old_reason=reason,
        )

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
            # Vouching re-anchors to where the diff maps the lines at HEAD (moved and edited:
            # where they went); the same lines at HEAD would hold other code. Without an
            # observed commit there is no history to map through: the same lines, as the
            # unshallow hint says.
            mapped = verdict.maps_to if verdict.status is Status.STALE else prov.context_ref
            ref, fp = self._anchor_at_head(mapped, head) if mapped else (None, None)
            if ref is None:
                raise _unmappable(memory.id, prov.context_ref, verdict.reason, "confirmed")
        # A fresh memory carries no reason; who confirmed it is in the commit's author.
        return replace(
            verdict, status=Status.FRESH, reason=None, new_git_sha=head, new_context_ref=ref,
            new_fingerprint=fp, commit_distance=0, corroborated=True, changed=True,
        )

    def _anchor_at_head(self, context_ref: str, head: str) -> tuple[str | None, str | None]:
        """The same path and lines at HEAD (clamped to the file), with their fingerprint."""
        from gitmem.record.anchors import Anchor, InvalidAnchor, fingerprint, parse_anchor, split_lines

        try:
            anchor = parse_anchor(context_ref)
        except InvalidAnchor:
            return None, None
        data = self.ws.store.code().blob_at(head, anchor.path)
        if data is None:
            return None, None
        lines = split_lines(data)
        if anchor.start is None or anchor.end is None or anchor.start > len(lines):
            return Anchor(anchor.path, None, None).ref(), fingerprint(lines)
        end = min(anchor.end, len(lines))
        return Anchor(anchor.path, anchor.start, end).ref(), fingerprint(lines[anchor.start - 1 : end])

    def _record_verdicts(
        self, judged_blobs: dict[str, str], updated: dict[str, Memory], rows: list[StatusRow],
        counts: dict[str, int],
    ) -> CommitInfo | None:
        """Commit the named records ``updated`` (as in a verify of ids); hand them to the cache."""
        message = _message(rows, counts)
        from gitmem import codec
        from gitmem.record.limits import MAX_RECORD_BYTES

        def build(tip: str | None) -> Mutation | None:
            # A few records: look each one up (O(1) trees); many: one walk of the tree.
            blob_of: Callable[[str], str | None]
            if len(updated) > 64:
                blob_of = self.ws.store.entries(tip).get
            else:
                def blob_of(memory_id: str) -> str | None:
                    return self.ws.store.blob_id_at(tip, record_path(memory_id))
            changes: dict[str, bytes | None] = {}
            for memory_id, memory in updated.items():
                # Only records still as we judged them: a concurrent edit wins.
                blob = blob_of(memory_id)
                if blob is None or blob != judged_blobs.get(memory_id):
                    continue
                data = codec.update(self.ws.store.read_blob(blob), memory)
                if len(data) > MAX_RECORD_BYTES:
                    continue  # a verdict that would make the record unreadable is not written
                changes[record_path(memory_id)] = data
            return Mutation(changes, message) if changes else None

        commit, mutation = self.ws.store.transact(build)
        if commit is None or mutation is None:
            return commit
        # Only what this commit wrote: a record a concurrent edit won keeps that edit's blob,
        # not our content. Their rows are saved (nothing is read).
        written = {i: m for i, m in updated.items() if record_path(i) in mutation.changes}
        self.ws.records.after_commit(commit, written, mutation)
        return commit

    def _record_rewrites(self, rewrites: _Rewrites, rows: list[StatusRow], counts: dict[str, int],
                         run: tuple[str | None, str, datetime, set[str]] | None) -> CommitInfo | None:
        """Commit the blobs a bulk verify wrote (:class:`_Rewrites`) in one commit; hand them to the cache.

        On a retry (the ref moved) the tree is built again from the same blobs: a record a
        concurrent writer changed since it was judged keeps that writer's blob. With ``run``
        (the tree judged, HEAD, the time, the ids whose verdicts were not written) a whole
        run also records itself in ``runs/verify.yaml`` (:mod:`gitmem.record.runs`), the
        records a concurrent writer changed named as its exceptions.
        """
        message = _message(rows, counts)
        planned = rewrites.planned
        store = self.ws.store

        def build(tip: str | None) -> Mutation | None:
            at_tip = store.entries(tip)
            changes: dict[str, StoredBlob | bytes | None] = {}
            for memory_id, (judged, blob) in planned.items():
                if at_tip.get(memory_id) == judged:  # else a concurrent edit wins
                    changes[record_path(memory_id)] = blob
            if run is not None:
                judged_tree, head, at, unwritten = run
                tip_tree = store.subtree_id(tip, "memories")
                others = store.changed_records(judged_tree, tip_tree) if judged_tree != tip_tree else {}
                tree = store.id_in_tree(store.write_tree(tip, changes), "memories")
                if tree is not None:
                    new = VerifyRun(at, head, tree, tuple(sorted(unwritten | others.keys())))
                    kept = self.weights.runs.read(self.weights.runs.blob(tip))
                    changes[RUNS_PATH] = render_runs(merge_runs([new], kept))
            return Mutation(changes, message) if changes else None

        commit, mutation = self.ws.store.transact(build)
        if commit is None or mutation is None:
            return commit
        few = rewrites.few
        if few is not None:
            # A few: their rows, from the records themselves (nothing is read).
            written = {i: m for i, m in few.items() if record_path(i) in mutation.changes}
            self.ws.records.after_commit(commit, written, mutation)
            return commit
        # Rows that show full records (``full_records``) show them as stored, as a few do.
        from gitmem.record import models

        for row in rows:
            if row.changed and row.local is None and isinstance(row.memory, models.Memory):
                blob = mutation.written.get(record_path(row.memory.id))
                if blob is not None:
                    row.memory.bind_blob(blob)
        # Many: the new tree's table, from the parent's rows and the staged ones. What the
        # commit needed goes first: the table is built and saved with the least held.
        del mutation, build
        rewrites.committed()
        self.ws.records.cache.after_bulk_write(commit.sha, rewrites.staged)
        return commit


class _Rewrites:
    """The records a bulk verify rewrites, each written as a blob as soon as its verdict is applied.

    What is kept of a record is its id, the blob it was judged as, the blob written, and
    its row in the cache's :class:`~gitmem.cache.staged.StagedRows` (the hot fields, and
    its mapping saved in the cache): memory does not grow with full records or their bytes.
    The records themselves are kept only while there are at most
    :data:`~gitmem.cache.records.HANDED_ROWS` (the cache then takes them as models).

    Args:
        store: the repository's store.
        cache: the read cache (:meth:`~gitmem.cache.RecordCache.staged_rows`).
        table: the table whose rows were judged.
    """

    def __init__(self, store: Store, cache: RecordCache, table: RecordTable) -> None:
        from gitmem.cache.records import HANDED_ROWS

        self.store = store
        self.table: RecordTable | None = table
        self.staged = cache.staged_rows()
        self.planned: dict[str, tuple[str, StoredBlob]] = {}
        """id -> (the blob judged, the blob written)."""
        self.few: dict[str, Memory] | None = {}
        """The records written, while there are at most ``HANDED_ROWS``; then ``None``."""
        self._few_max = HANDED_ROWS

    def add(self, memory: Memory, row: int) -> MemoryView | None:
        """Write ``memory`` over the record of ``row`` of the table; return a view of it as written.

        ``None`` when it is not written: the new bytes would pass the record size limit
        (a verdict that would make the record unreadable is not recorded).

        Raises:
            MalformedRecord: the record's YAML cannot be edited (as ``codec.update``).
            ReadOnlyRepository: the object database cannot be written.
        """
        from gitmem import codec
        from gitmem.record.limits import MAX_RECORD_BYTES

        table = cast("RecordTable", self.table)
        judged = table.blobs[row]
        data = codec.update(self.store.read_blob(judged), memory)
        if len(data) > MAX_RECORD_BYTES:
            return None
        blob = self.store.write_blob(data)
        self.planned[memory.id] = (judged, blob)
        if self.few is not None:
            self.few[memory.id] = memory
            if len(self.few) > self._few_max:
                self.few = None
        return self.staged.add(memory, blob.oid, like=table.values(row))

    def committed(self) -> None:
        """Let go of what only the commit needed (the blobs planned, the judged table)."""
        self.planned = {}
        self.table = None

    def close(self) -> None:
        """Save the staged rows still pending and forget them."""
        self.staged.close()


def _row(memory: Memory, shown: Any, verdict: Verdict, wt: str | None, *,
         changed: bool, weighed: float) -> StatusRow:
    """The status row of one judged memory.

    ``memory`` as it was, ``shown`` what the row shows of it as recorded, ``wt`` its
    working-tree overlay reason, ``weighed`` its weight now.
    """
    return StatusRow(
        memory=shown.with_local(wt), status=Status.STALE if wt else verdict.status,
        reason=wt or verdict.reason, weight=weighed,
        commit_distance=verdict.commit_distance, changed=changed,
        moved=bool(verdict.new_context_ref and memory.provenance
                   and verdict.new_context_ref != memory.provenance.context_ref),
        new_ref=verdict.new_context_ref, hint=verdict.hint, local=wt,
        old_status=memory.status, old_reason=memory.decay.reason if memory.decay else None,
        maps_to=verdict.maps_to,
    )


def _unmappable(memory_id: str, ref: str, reason: str | None, verb: str) -> InvalidInput:
    """The one-line refusal of a confirm or re-anchor whose lines git's diff cannot map to HEAD."""
    return InvalidInput(
        f"{memory_id}: the lines of {ref} cannot be mapped to HEAD"
        f"{f' ({reason})' if reason else ''}; nothing {verb}",
        f"anchor it where it holds: `tur edit {memory_id} --file path#Lx-Ly`")


def _message(rows: list[StatusRow], counts: dict[str, int]) -> str:
    """The message of a verify commit: the counts ``tur verify`` prints, then one line per changed memory.

    ``counts`` is :meth:`VerifyOutcome.counts` of the run (every memory checked, as stdout
    says); the second paragraph says what was rewritten (``2 re-anchored, 1 newly stale``).
    """
    changed = [r for r in rows if r.changed]
    moved = sum(1 for r in changed if r.moved)
    news = Counter(r.status.value for r in changed if r.old_status is not r.status)
    parts = [f"{n} re-anchored" for n in (moved,) if n]
    parts += [f"{n} newly {s}" for s, n in sorted(news.items())]
    head = "verify: " + (", ".join(f"{n} {s}" for s, n in counts.items()) or "no memories")
    summary = f"{len(changed)} record{'' if len(changed) == 1 else 's'} rewritten"
    if parts:
        summary += f" ({', '.join(parts)})"
    return head + "\n\n" + summary + "\n" + "\n".join(
        f"{r.memory_id}: {r.status.value}" + (f" ({r.reason})" if r.reason else "")
        + (f" -> {r.new_ref}" if r.moved else "")
        for r in changed
    )


def _verdict_reason(message: str, memory_id: str) -> str | None:
    """The reason a verify commit message gives for ``memory_id``, or ``None``."""
    prefix = f"{memory_id}: "
    for line in message.splitlines():
        if line.startswith(prefix):
            match = _VERDICT_LINE.match(line[len(prefix) :])
            return match["reason"] if match else None
    return None


def _anchor_line(data: bytes) -> bytes | None:
    """The record's ``  context_ref:`` line and the line after it (as the codec writes them), or ``None``.

    ``None`` when there is no such line or more than one: the record is then parsed. The
    next line is kept so that a value continued on it is compared whole.
    """
    key = b"\n  context_ref: "
    start = data.find(key)
    if start < 0 or data.find(key, start + 1) >= 0:
        return None
    end = data.find(b"\n", data.find(b"\n", start + 1) + 1)
    return data[start : end if end >= 0 else len(data)]


def _travels(reason: str | None) -> tuple[str, ...]:
    """The kinds of travel a verify reason names (``renamed``, ``moved``, ``reformatted``)."""
    return tuple(kind for words, kind in _TRAVELS if reason and words in reason)


def _how(reason: str | None, before: str | None, after: str | None, message: str) -> tuple[str, ...]:
    """What moved an anchor from ``before`` to ``after``, from the commit that recorded it."""
    found = _travels(reason)
    if found:
        return found
    if message.startswith(("learn ", "reverify ")):
        return ("re-learned",)
    same_file = split_ref(before or "")[0] == split_ref(after or "")[0]
    return ("shifted",) if same_file else ("re-anchored",)
