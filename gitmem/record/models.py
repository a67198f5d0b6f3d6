"""Pydantic models of a memory record (EP-0131 schema, docs/storage.md, plus relations and refutation)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from gitmem.vocabulary import ID_PATTERN, MemoryType, RelationType, Scope, Status, precise_now, utc_now

#: Fields whose changes are stamped in ``changed_at`` and merged one by one (docs/sharing.md).
STAMPED_FIELDS = ("type", "scope", "content", "confidence", "provenance", "decay", "relations",
                  "refutation", "author", "visibility")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


#: A stored reason that names an uncommitted change (see ``Memory._working_tree_reason``).
_WORKTREE_REASON = re.compile(r"(modified|deleted) in (working tree|index \(staged\))$")
_TYPE_VALUES = frozenset(t.value for t in MemoryType)

__all__ = [
    "ID_PATTERN",
    "STAMPED_FIELDS",
    "Decay",
    "Memory",
    "MemoryType",
    "Provenance",
    "Refutation",
    "Relation",
    "RelationType",
    "Scope",
    "Status",
    "precise_now",
    "utc_now",
]


def _no_relations() -> list[Relation]:
    # A Python function, not ``list``: pydantic reads the factory's signature when it builds
    # the model, and a builtin's is parsed from its text by ``tokenize``, whose regular
    # expressions cost a write ~4 ms to compile (a learn compiles them for nothing else).
    return []


def _no_names() -> list[str]:
    return []  # a Python function, as _no_relations


def _as_utc(value: datetime) -> datetime:
    # Naive timestamps in hand-written records are taken as UTC, never local time,
    # so that the same record means the same instant on every machine.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class _Part(BaseModel):
    # Unknown keys are allowed so that a record written by a newer gitmem still
    # loads; the codec keeps them in the YAML on a read-modify-write.
    model_config = ConfigDict(extra="allow", validate_assignment=True, defer_build=True)


class Provenance(_Part):
    """Where and when a memory was observed."""

    observed_at: datetime = Field(default_factory=utc_now)
    """First observation time (UTC). Corroboration never changes it."""
    git_sha: str | None = None
    """Commit the anchor refers to (full hex SHA); moves to HEAD when verify corroborates."""
    source_agent: str | None = None
    """Name of the agent that learned the memory."""
    source_harness: str | None = None
    """Harness the agent ran in (e.g. ``claude-code``)."""
    context_ref: str | None = None
    """Anchor: ``path`` or ``path#Lstart-Lend`` (1-based, inclusive), relative to the repo root."""
    fingerprint: str | None = None
    """``sha256:<hex>`` of the anchored lines' normalised text (or of the whole file)."""

    @field_validator("observed_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _as_utc(value)

    @field_validator("git_sha")
    @classmethod
    def _check_sha(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{4,64}", value):
            raise ValueError(f"git_sha must be a hex commit id, got {value!r}")
        return value


class Decay(_Part):
    """Decay parameters and the last verification result."""

    half_life_days: float | None = None
    """Half-life in days of the time decay; ``None`` means the memory never decays."""
    last_verified_at: datetime = Field(default_factory=utc_now)
    """When the memory was learned or last corroborated (UTC)."""
    staleness_status: Status = Status.FRESH
    """Result of the last verification, or ``refuted``."""
    reason: str | None = None
    """Why the status is what it is (e.g. ``lines 12-14 changed in 3f2a1b9``)."""

    @field_validator("last_verified_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _as_utc(value)

    @field_validator("half_life_days")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("half_life_days must be positive (or null for no decay)")
        return value


class Relation(_Part):
    """A typed link to another memory id."""

    type: RelationType
    target: str


class Refutation(_Part):
    """Who refuted a memory, when, and why."""

    reason: str
    by: str | None = None
    at: datetime = Field(default_factory=utc_now)
    status_before: Status | None = None
    """The staleness status the memory had when it was refuted (what ``refute --undo`` restores)."""

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _as_utc(value)


class Memory(_Part):
    """One memory record, stored as one YAML blob at ``memories/<2 hex>/<id>.yaml``.

    Legacy records without ``provenance`` load with confidence 1.0, status
    ``unanchored`` and no decay (see :attr:`status` and :attr:`half_life_days`).

    Runtime-only values (the blob id it was read from) are private attributes and
    never written to YAML.

    Raises:
        pydantic.ValidationError: on a bad field; the error names the field.
    """

    id: str
    type: MemoryType
    scope: Scope = Scope.UNIVERSAL
    visibility: list[str] = Field(default_factory=_no_names)
    """The agents or harnesses the memory is for (:mod:`gitmem.record.visibility`); empty, the
    default, means everyone. Written only when not empty, so older records read unchanged."""
    content: str
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    provenance: Provenance | None = None
    decay: Decay | None = None
    relations: list[Relation] = Field(default_factory=_no_relations)
    refutation: Refutation | None = None
    legacy_id: str | list[str] | None = None
    """The id (or ids) the memory had before ``tur import``: every command resolves them."""
    author: str | None = None
    """``Name <email>`` of who stated it: set by learn, ``tur edit`` and ``verify --confirm``
    (docs/sharing.md, Trust). ``None`` in records written before gitmem recorded it."""
    updated_at: datetime | None = None
    """When the record last changed (UTC, microseconds): any change stamps it. The merge
    decides a field changed on both sides by it (docs/sharing.md, Merge)."""
    updated_by: str | None = None
    """``Name <email>`` of the git identity that made the last change (the commit's author)."""
    changed_at: dict[str, datetime] | None = None
    """When each field last changed (UTC, microseconds), for the fields changed since the
    record was learned: what the merge compares for a field changed on both sides."""

    _blob_id: str | None = PrivateAttr(default=None)
    _local: str | None = PrivateAttr(default=None)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(f"id must look like fact-8f2a1b9c, got {value!r}")
        return value

    @field_validator("visibility", mode="before")
    @classmethod
    def _check_visibility(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError("visibility must be a list of agent names")
        from gitmem.record.visibility import parse_names

        if any(not isinstance(name, str) or "," in name for name in value):
            raise ValueError("visibility must be a list of agent names")
        return list(parse_names(value))

    @field_validator("content")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be empty")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # e.g. undecodable bytes on a command line, carried as lone surrogates
            raise ValueError("content is not valid UTF-8 text") from None
        return value

    @field_validator("legacy_id")
    @classmethod
    def _check_legacy_id(cls, value: str | list[str] | None) -> str | list[str] | None:
        names = [value] if isinstance(value, str) else value or []
        if any(not name.strip() or name != name.strip() for name in names):
            raise ValueError("legacy_id must be a non-empty id without surrounding white space")
        return value

    @property
    def legacy_ids(self) -> list[str]:
        """The old ids of an imported memory (``legacy_id`` as a list; empty when none)."""
        value = self.legacy_id
        return [value] if isinstance(value, str) else list(value or [])

    @model_validator(mode="before")
    @classmethod
    def _legacy_defaults(cls, data: Any) -> Any:
        # EP-0131 backwards compatibility: a record with no provenance was never
        # anchored, so it is trusted fully but cannot be checked.
        if isinstance(data, dict) and data.get("provenance") is None:
            data = dict(data)
            data.setdefault("confidence", 1.0)
        return data

    @field_validator("updated_at")
    @classmethod
    def _utc_updated(cls, value: datetime | None) -> datetime | None:
        return None if value is None else _as_utc(value)

    @field_validator("changed_at")
    @classmethod
    def _utc_changed(cls, value: dict[str, datetime] | None) -> dict[str, datetime] | None:
        return None if value is None else {k: _as_utc(v) for k, v in value.items()}

    @model_validator(mode="after")
    def _id_matches_type(self) -> Memory:
        # ``tur edit --type`` keeps the id, so the id's type part names the type the memory
        # was learned as; it must still be a type.
        if self.id.split("-", 1)[0] not in _TYPE_VALUES:
            raise ValueError(f"id {self.id!r} does not start with a memory type")
        return self

    @model_validator(mode="after")
    def _working_tree_reason(self) -> Memory:
        # Upgrade rule (docs/sharing.md): before 0.x a verify recorded a stale status whose
        # reason was an uncommitted change ("line 80 modified in working tree"). That was
        # never a fact about commits: the committed lines were unchanged when it was
        # recorded, so such a record reads as fresh; the working-tree part is local state.
        decay = self.decay
        if (decay is not None and decay.staleness_status is Status.STALE and decay.reason
                and _WORKTREE_REASON.search(decay.reason)):
            decay.staleness_status = Status.FRESH
            decay.reason = None
        return self

    def stamp(self, before: Memory | None, who: str, at: datetime | None = None) -> Memory:
        """Record a change made by ``who`` at ``at`` (default: now, with microseconds); return self.

        Sets ``updated_at`` and ``updated_by``, and ``changed_at[field]`` for every field of
        :data:`STAMPED_FIELDS` whose value differs from ``before`` (``None``: a new record,
        whose fields count as changed when it was learned, so none is listed).
        """
        at = at or precise_now()
        if before is not None:
            changed = [name for name in STAMPED_FIELDS if getattr(before, name) != getattr(self, name)]
            if changed:
                self.changed_at = {**(self.changed_at or {}), **dict.fromkeys(changed, at)}
        self.updated_at = at
        self.updated_by = who
        return self

    def same_as(self, other: Memory) -> bool:
        """Whether every stored field (unknown keys too) equals ``other``'s; runtime values aside."""
        return (all(getattr(self, name) == getattr(other, name) for name in type(self).model_fields)
                and self.model_extra == other.model_extra)

    def field_time(self, name: str) -> datetime:
        """When ``name`` last changed on this version (the merge's clock; docs/sharing.md).

        ``changed_at[name]``; else, for a field unchanged since it was learned or a record
        written before gitmem stamped fields, ``last_verified_at`` (else ``observed_at``,
        else the start of time).
        """
        found = (self.changed_at or {}).get(name)
        if found is not None:
            return found
        return self.last_verified_at or _EPOCH

    @property
    def writer(self) -> str | None:
        """Who stated it: ``author``, else who changed it last (``updated_by``), else ``None``."""
        return self.author or self.updated_by

    @property
    def local_reason(self) -> str | None:
        """Why this clone's working tree or index makes the memory stale, or ``None``.

        Local state only (``<git dir>/tur/worktree.json``), set by the read path on copies
        it shows; never written to a record.
        """
        return self._local

    def with_local(self, reason: str | None) -> Memory:
        """The record itself, or a copy marked stale by the local overlay when ``reason`` is given."""
        if reason is None or self.refutation is not None:
            return self
        copy = self.model_copy(deep=True)
        copy._local = reason
        return copy

    @property
    def blob_id(self) -> str | None:
        """Hex id of the blob this record was read from, or ``None`` if not stored yet."""
        return self._blob_id

    def bind_blob(self, blob_id: str) -> None:
        """Note that this record is stored as the blob ``blob_id`` (read from it, or just written).

        Sets :attr:`blob_id` in place (a runtime-only value, never written to YAML); the only
        way code outside this module attaches one.

        Args:
            blob_id: hex object id of the blob whose parse equals this record.
        """
        self._blob_id = blob_id

    @property
    def status(self) -> Status:
        """Effective status: ``refuted`` wins; no provenance means ``unanchored``."""
        if self.refutation is not None:
            return Status.REFUTED
        if self._local is not None:
            return Status.STALE
        if self.decay is not None:
            return self.decay.staleness_status
        return Status.UNANCHORED

    @property
    def half_life_days(self) -> float | None:
        """Half-life in days, or ``None`` when the memory never decays (legacy, axiom, core)."""
        return self.decay.half_life_days if self.decay is not None else None

    @property
    def anchor_path(self) -> str | None:
        """Anchored file path (without the line range), or ``None``."""
        ref = self.provenance.context_ref if self.provenance else None
        from gitmem.record.anchors import split_ref

        return split_ref(ref)[0] if ref else None

    @property
    def last_verified_at(self) -> datetime | None:
        """Last verification time, or the observation time, or ``None`` for legacy records."""
        if self.decay is not None:
            return self.decay.last_verified_at
        return self.provenance.observed_at if self.provenance else None

    def relation_targets(self, kind: RelationType | None = None) -> list[str]:
        """Ids this memory links to, optionally only links of one ``kind``."""
        return [r.target for r in self.relations if kind is None or r.type == kind]
