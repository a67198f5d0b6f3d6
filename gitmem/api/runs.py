"""Effective verification points: a memory's own, or the newest verify run that corroborated it.

A whole ``tur verify`` corroborates the memories whose anchored code it found unchanged
without rewriting them; it records itself in ``runs/verify.yaml`` (:mod:`gitmem.record.runs`).
:meth:`Runs.effective` is the one place that turns a table's stored
``(git_sha, last_verified_at)`` into the point every weight, commit distance and decay uses:
wake, recall, status, list, the TUI and MCP read it through :class:`gitmem.api.weights.Weights`.

A run ``R`` corroborated a row when the row is ``fresh``, has a decay part and an anchor, is not
one of ``R``'s exceptions, and its record in ``R``'s tree had the same status, anchored SHA,
anchor, fingerprint and ``last_verified_at`` (a record whose blob is the same there trivially
does; only the records a tree diff finds changed since ``R`` are read). The runs are applied
oldest first, as their rewrites would have been: ``R`` moves the row's point to
``(R.head, R.at)`` when it corroborated the row, ``R.at`` is not older than the point, and the
point is at another commit than ``R.head`` (a verify at the HEAD a memory is already verified
at rewrites nothing today, so its time stays). That is the point a rewrite of the record by
each run would have stored, so weights come out as when every corroborated record was
rewritten. (Of several runs at one HEAD only the newest :data:`~gitmem.record.runs.KEEP_RUNS`
are kept: a point set by a dropped one moves to the oldest kept one at that HEAD.)
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gitmem.errors import MissingObject
from gitmem.record.decay import microseconds
from gitmem.record.runs import RUNS_PATH, VerifyRun, parse_runs

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.cache import RecordTable

__all__ = ["AsOf", "Effective", "Runs"]

#: The read cache memo (key, kind) of the last overlay computed: one, for a table tree and runs file.
_PAYLOAD = ("", "runs")
_FRESH = "fresh"


@dataclass(frozen=True)
class Effective:
    """Effective verification points of a table's rows, in row order.

    Attributes:
        shas: the commit each row's commit distance counts from (``None``: no provenance).
        verified: ``last_verified_at`` in microseconds (:func:`~gitmem.record.decay.microseconds`).
        by_run: per row, the index in ``runs`` of the run whose point it has (``-1``: its own).
        runs: the runs read from the memory ref's tip, newest first.
    """

    shas: list[str | None]
    verified: list[int | None]
    by_run: array
    runs: list[VerifyRun]


class AsOf:
    """A record (or a cache view) seen at another verification point: ``git_sha`` and ``last_verified_at``.

    Every other attribute is the record's. ``provenance`` is this object too (as a
    :class:`gitmem.cache.MemoryView` does), so that code reading ``memory.provenance.git_sha``
    sees the effective SHA; the record's own provenance fields show through.
    """

    __slots__ = ("_memory", "_sha", "_verified")

    def __init__(self, memory: Any, sha: str | None, verified: datetime) -> None:
        self._memory = memory
        self._sha = sha
        self._verified = verified

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._memory, name)
        except AttributeError:
            # a provenance field of a full record (a view has them itself)
            return getattr(self._memory.provenance, name)

    @property
    def memory(self) -> Any:
        """The record (or view) as stored."""
        return self._memory

    @property
    def provenance(self) -> Any:
        """Itself when the record has provenance, else ``None``."""
        return self if self._memory.provenance is not None else None

    @property
    def git_sha(self) -> str | None:
        """The effective anchored SHA."""
        return self._sha

    @property
    def last_verified_at(self) -> datetime:
        """The effective verification time."""
        return self._verified

    @property
    def context_ref(self) -> str | None:
        """``provenance.context_ref`` as stored."""
        return self._memory.provenance.context_ref

    @property
    def fingerprint(self) -> str | None:
        """``provenance.fingerprint`` as stored."""
        return self._memory.provenance.fingerprint

    @property
    def observed_at(self) -> datetime:
        """``provenance.observed_at`` as stored."""
        return self._memory.provenance.observed_at


class Runs:
    """The verify runs on the memory ref, and the effective points they give (see the module).

    Args:
        ws: the shared workspace.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._last: tuple[RecordTable, str | None, Effective] | None = None

    def blob(self, tip: str | None) -> str | None:
        """Blob id of ``runs/verify.yaml`` at ``tip`` (``None``: no run recorded there)."""
        return self.ws.store.blob_id_at(tip, RUNS_PATH) if tip is not None else None

    def read(self, blob: str | None) -> list[VerifyRun]:
        """The runs of the blob ``blob`` of ``runs/verify.yaml``, newest first (``[]``: none, or unreadable).

        An unreadable file corroborates nothing: every memory keeps its own point.
        """
        if blob is None:
            return []
        try:
            return parse_runs(self.ws.store.read_blob(blob))
        except KeyError:
            return []

    def effective(self, table: RecordTable, tip: str | None = None) -> Effective:
        """Effective ``(git_sha, last_verified_at)`` of every row of ``table`` (see the module).

        ``tip`` is the memory ref's commit whose runs apply (default: the current tip).
        Remembered in the read cache per (table tree, runs file): a warm read is one file.
        Cost otherwise: one tree diff per run (O(shards + records changed since it)), a parse
        of each changed record, and a pass over the rows.
        """
        blob = self.blob(self.ws.records.tip() if tip is None else tip)
        last = self._last
        # One recall asks for the same table's points several times: its columns never change.
        if last is not None and last[0] is table and last[1] == blob:
            return last[2]
        found = self._effective(table, blob)
        self._last = (table, blob, found)
        return found

    def _effective(self, table: RecordTable, blob: str | None) -> Effective:
        c = table.columns
        provs, verified = c["prov"], c["verified"]
        runs = self.read(blob)
        shas = [p[1] if p is not None else None for p in provs]
        if not runs or table.tree is None:
            return Effective(shas, verified, array("b", [-1]) * len(shas), runs)
        by_run = self._by_run(table, blob, runs)
        if not any(k >= 0 for k in by_run):
            return Effective(shas, verified, by_run, runs)
        heads = [r.head for r in runs]
        times = [microseconds(r.at) for r in runs]
        out_verified = list(verified)
        for row, k in enumerate(by_run):
            if k >= 0:
                shas[row] = heads[k]
                out_verified[row] = times[k]
        return Effective(shas, out_verified, by_run, runs)

    def _by_run(self, table: RecordTable, blob: str | None, runs: list[VerifyRun]) -> array:
        cache = self.ws.records.cache
        key = [table.tree, blob]
        payload = cache.read_payload(*_PAYLOAD)
        if isinstance(payload, dict) and payload.get("key") == key and isinstance(payload.get("rows"), bytes):
            found = array("b")
            found.frombytes(payload["rows"])
            if len(found) == len(table.ids):
                return found
        by_run = self._compute(table, runs)
        cache.write_payload(*_PAYLOAD, {"key": key, "rows": by_run.tobytes()})
        return by_run

    def point_of(self, memory: Any, tip: str | None = None) -> tuple[str | None, int | None] | None:
        """The effective point of one record (``memory``, bound to its blob) when a run gave it one.

        ``(sha, microseconds)``, or ``None`` when the record's own point holds. The same as
        :meth:`effective` for its row, at O(runs) tree lookups in the record's shard (what
        ``tur verify ID`` needs, without the table).
        """
        runs = self.read(self.blob(self.ws.records.tip() if tip is None else tip))
        prov, decay = memory.provenance, memory.decay
        if (not runs or memory.status.value != _FRESH or prov is None or not prov.context_ref
                or decay is None or memory.refutation is not None):
            return None
        from gitmem.record.ids import shard_of

        stored = (prov.git_sha, prov.context_ref, prov.fingerprint)
        own = microseconds(decay.last_verified_at)
        sha, point, found = prov.git_sha, own, False
        name = f"{shard_of(memory.id)}/{memory.id}.yaml"
        for run in reversed(runs):
            at = microseconds(run.at)
            if sha == run.head or point > at or memory.id in run.excluded:
                continue
            try:
                then = self.ws.store.id_in_tree(run.tree, name)
            except (KeyError, MissingObject):
                continue  # its tree is not here (a shallow fetch): it corroborates nothing
            if then is None:
                continue
            if then != memory.blob_id and not self._same_point(memory.id, then, stored, own):
                continue
            sha, point, found = run.head, at, True
        return (sha, point) if found else None

    def _same_point(self, memory_id: str, old_blob: str, stored: tuple, own: int | None) -> bool:
        """Whether the record ``old_blob`` (in a run's tree) was fresh at the point a record now holds.

        ``stored``: the record's ``(git_sha, context_ref, fingerprint)`` now; ``own``: its
        ``last_verified_at`` (microseconds).
        """
        from gitmem.cache.reader import read_record
        from gitmem.errors import MalformedRecord

        try:
            old = read_record(self.ws.store, memory_id, old_blob)
        except MalformedRecord:
            return False
        prov, decay = old.provenance, old.decay
        return (old.status.value == _FRESH and prov is not None and decay is not None
                and (prov.git_sha, prov.context_ref, prov.fingerprint) == stored
                and microseconds(decay.last_verified_at) == own)

    def _compute(self, table: RecordTable, runs: list[VerifyRun]) -> array:
        """Per row, the run whose point it has (else -1), applying the runs oldest first.

        A run moves a row's point as its rewrite of the record would have: when it
        corroborated the row, is not older than the row's point, and the point is at
        another commit than the run's HEAD (a second run at the same HEAD leaves a point
        alone, as a second verify leaves a record alone).
        """
        store = self.ws.store
        c = table.columns
        ids, provs, decays, statuses, refuted = table.ids, c["prov"], c["decay"], c["status"], c["refuted"]
        verified = c["verified"]
        eligible = [r for r, (s, p, d, x) in enumerate(zip(statuses, provs, decays, refuted, strict=True))
                    if s == _FRESH and p is not None and p[2] and d is not None and x is None]
        by_run = array("b", [-1]) * len(ids)
        if not eligible:
            return by_run
        shas = {r: provs[r][1] for r in eligible}
        points = {r: verified[r] for r in eligible}
        for k in reversed(range(len(runs))):
            run = runs[k]
            at = microseconds(run.at)
            try:
                changed = store.changed_records(run.tree, table.tree)
            except (KeyError, MissingObject):
                continue  # its tree is not here (a shallow fetch): it corroborates nothing
            excluded = set(run.excluded)
            for row in eligible:
                own = points[row]
                if shas[row] == run.head or (own is not None and own > at):
                    continue
                memory_id = ids[row]
                if memory_id in excluded:
                    continue
                if memory_id in changed:
                    old_blob = changed[memory_id][0]
                    p = provs[row]
                    if old_blob is None or not self._same_point(memory_id, old_blob, (p[1], p[2], p[4]),
                                                                verified[row]):
                        continue  # not in the run's tree, or its point changed since: its own holds
                shas[row], points[row], by_run[row] = run.head, at, k
        return by_run
