"""Pydantic models of a memory record (EP-0131 schema, docs/storage.md, plus relations and refutation)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from gitmem.vocabulary import ID_PATTERN, MemoryType, RelationType, Scope, Status, utc_now

__all__ = [
    "ID_PATTERN",
    "Decay",
    "Memory",
    "MemoryType",
    "Provenance",
    "Refutation",
    "Relation",
    "RelationType",
    "Scope",
    "Status",
    "utc_now",
]


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
    content: str
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    provenance: Provenance | None = None
    decay: Decay | None = None
    relations: list[Relation] = Field(default_factory=list)
    refutation: Refutation | None = None
    legacy_id: str | list[str] | None = None
    """The id (or ids) the memory had before ``tur import``: every command resolves them."""

    _blob_id: str | None = PrivateAttr(default=None)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not ID_PATTERN.match(value):
            raise ValueError(f"id must look like fact-8f2a1b9c, got {value!r}")
        return value

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

    @model_validator(mode="after")
    def _id_matches_type(self) -> Memory:
        if not self.id.startswith(f"{self.type.value}-"):
            raise ValueError(f"id {self.id!r} does not match type {self.type.value!r}")
        return self

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
        return ref.split("#", 1)[0] if ref else None

    @property
    def last_verified_at(self) -> datetime | None:
        """Last verification time, or the observation time, or ``None`` for legacy records."""
        if self.decay is not None:
            return self.decay.last_verified_at
        return self.provenance.observed_at if self.provenance else None

    def relation_targets(self, kind: RelationType | None = None) -> list[str]:
        """Ids this memory links to, optionally only links of one ``kind``."""
        return [r.target for r in self.relations if kind is None or r.type == kind]
