"""Light stand-ins for records, and the surface they share with :class:`gitmem.record.models.Memory`.

:class:`MemoryView` is one row of a :class:`gitmem.cache.table.RecordTable` as a read-only
record, about thirty times cheaper to build than a validated model. :class:`MemoryLike` names
what both offer: all that code reading either kind of record may use.
"""

from __future__ import annotations

import copy
from datetime import datetime

from gitmem.record.shapes import DecayLike, MemoryLike, ProvenanceLike, RefutationLike, RelationLike
from gitmem.vocabulary import MemoryType, RelationType, Status

__all__ = ["DecayLike", "MemoryLike", "MemoryView", "ProvenanceLike", "RefutationLike", "RelationLike"]

TYPES = {t.value: t for t in MemoryType}
"""Each :class:`MemoryType` by its stored value."""
STATUSES = {s.value: s for s in Status}
"""Each :class:`Status` by its stored value."""
RELATIONS = {r.value: r for r in RelationType}
"""Each :class:`RelationType` by its stored value."""
_fromiso = datetime.fromisoformat


# -- record stand-ins -----------------------------------------------------------------------------


class _RelationView:
    __slots__ = ("target", "type")

    def __init__(self, kind: RelationType, target: str):
        self.type = kind
        self.target = target


class _RefutationView:
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class MemoryView:
    """A read-only stand-in for :class:`~gitmem.record.models.Memory`: a :class:`MemoryLike`.

    Same values as the record: every field of :class:`MemoryLike`, plus ``verified_us``
    (``last_verified_at`` in microseconds) and ``row`` (its row in the table). To build one
    object per record, ``provenance`` and ``decay`` are the view itself (their fields are
    its attributes, and where names meet, e.g. ``last_verified_at``, the record's value is
    the part's value whenever the part exists), and timestamps become datetimes on first
    use. A view costs about a microsecond against about 30 for a validated model;
    :meth:`gitmem.cache.table.RecordTable.memory` gives the full record.
    """

    __slots__ = ("_decay", "_observed", "_prov", "_refuted", "_relations", "_verified",
                 "blob_id", "confidence", "content", "id", "local_reason", "row", "status", "type",
                 "verified_us", "visibility", "writer")

    def __init__(self, row: int, memory_id: str, blob_id: str, kind: MemoryType, content: str,
                 confidence: float, status: Status, prov: tuple | None, decay: tuple | None,
                 relations: tuple, refuted: str | None, verified_us: int | None = None,
                 writer: str | None = None, local_reason: str | None = None,
                 visibility: tuple[str, ...] = ()):
        self.row = row
        self.visibility = visibility
        self.writer = writer
        # The working-tree overlay: stale here while the uncommitted change lasts.
        self.local_reason = local_reason if refuted is None else None
        if self.local_reason is not None:
            status = Status.STALE
        self.verified_us = verified_us
        self.id = memory_id
        self.blob_id = blob_id
        self.type = kind
        self.content = content
        self.confidence = confidence
        self.status = status
        self._prov = prov
        self._decay = decay
        self._relations = relations
        self._refuted = refuted
        self._observed: datetime | None = None
        self._verified: datetime | None = None

    @property
    def provenance(self) -> MemoryView | None:
        """The provenance part (this view) or ``None``."""
        return self if self._prov is not None else None

    @property
    def decay(self) -> MemoryView | None:
        """The decay part (this view) or ``None``."""
        return self if self._decay is not None else None

    @property
    def refutation(self) -> _RefutationView | None:
        """The refutation (with ``reason``) or ``None``."""
        return _RefutationView(self._refuted) if self._refuted is not None else None

    @property
    def last_verified_at(self) -> datetime | None:
        """As :attr:`Memory.last_verified_at` (and ``decay.last_verified_at``)."""
        if self._decay is not None:
            if self._verified is None:
                self._verified = _fromiso(self._decay[1])
            return self._verified
        return self.observed_at if self._prov is not None else None

    @property
    def half_life_days(self) -> float | None:
        """As :attr:`Memory.half_life_days` (and ``decay.half_life_days``)."""
        return self._decay[0] if self._decay is not None else None

    @property
    def anchor_path(self) -> str | None:
        """As :attr:`Memory.anchor_path`."""
        ref = self._prov[2] if self._prov is not None else None
        return ref.split("#", 1)[0] if ref else None

    @property
    def relations(self) -> list[_RelationView]:
        """Relations, each with ``type`` and ``target``."""
        return [_RelationView(RELATIONS[k], t) for k, t in self._relations]

    def relation_targets(self, kind: RelationType | None = None) -> list[str]:
        """Ids this memory links to, optionally only links of one ``kind``."""
        return [t for k, t in self._relations if kind is None or k == kind]

    @property
    def observed_at(self) -> datetime:
        """``provenance.observed_at``."""
        if self._observed is None:
            self._observed = _fromiso(self._prov[0])  # type: ignore[index]
        return self._observed

    @property
    def git_sha(self) -> str | None:
        """``provenance.git_sha``."""
        return self._prov[1]  # type: ignore[index]

    @property
    def context_ref(self) -> str | None:
        """``provenance.context_ref``."""
        return self._prov[2]  # type: ignore[index]

    @property
    def source_agent(self) -> str | None:
        """``provenance.source_agent``."""
        return self._prov[3]  # type: ignore[index]

    @property
    def fingerprint(self) -> str | None:
        """``provenance.fingerprint``."""
        return self._prov[4]  # type: ignore[index]

    @property
    def staleness_status(self) -> Status:
        """``decay.staleness_status``."""
        return STATUSES[self._decay[2]]  # type: ignore[index]

    @property
    def reason(self) -> str | None:
        """``decay.reason``."""
        return self._decay[3]  # type: ignore[index]

    def with_local(self, reason: str | None) -> MemoryView:
        """As :meth:`Memory.with_local`: this view, or a copy marked stale by the local overlay."""
        if reason is None or self._refuted is not None:
            return self
        out = copy.copy(self)
        out.local_reason = reason
        out.status = Status.STALE
        return out

    def __repr__(self) -> str:
        return f"MemoryView({self.id!r})"
