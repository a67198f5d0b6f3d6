"""The read-only shape of a memory record: what every reader of a record may use.

:class:`~gitmem.record.models.Memory` (a validated record) and :class:`gitmem.cache.MemoryView`
(one row of the read cache) both satisfy :class:`MemoryLike`; the algorithms and renderers
that accept either are typed with it. This module depends on nothing but the vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from gitmem.vocabulary import MemoryType, RelationType, Status

__all__ = ["DecayLike", "MemoryLike", "ProvenanceLike", "RefutationLike", "RelationLike"]


class ProvenanceLike(Protocol):
    """The provenance fields a :class:`MemoryLike` offers."""

    @property
    def observed_at(self) -> datetime:
        """First observation time (UTC)."""

    @property
    def git_sha(self) -> str | None:
        """Commit the anchor refers to (full hex SHA), or ``None``."""

    @property
    def context_ref(self) -> str | None:
        """Anchor ``path`` or ``path#Lstart-Lend``, or ``None``."""

    @property
    def source_agent(self) -> str | None:
        """Name of the agent that learned the memory, or ``None``."""


class DecayLike(Protocol):
    """The decay fields a :class:`MemoryLike` offers."""

    @property
    def half_life_days(self) -> float | None:
        """Half-life in days; ``None``: never decays."""

    @property
    def last_verified_at(self) -> datetime | None:
        """When learned or last corroborated (UTC); never ``None`` on a decay part."""

    @property
    def staleness_status(self) -> Status:
        """Result of the last verification."""

    @property
    def reason(self) -> str | None:
        """Why the status is what it is, or ``None``."""


class RelationLike(Protocol):
    """One typed link, as a :class:`MemoryLike` lists it."""

    @property
    def type(self) -> RelationType:
        """The kind of link."""

    @property
    def target(self) -> str:
        """The linked memory id."""


class RefutationLike(Protocol):
    """The refutation field a :class:`MemoryLike` offers."""

    @property
    def reason(self) -> str:
        """Why the memory was refuted."""


@runtime_checkable
class MemoryLike(Protocol):
    """The read-only record surface that :class:`~gitmem.record.models.Memory` and :class:`MemoryView` share.

    Both give the same values: this is all that wake, recall, render, status and the TUI
    may read of a record they did not ask to be full.
    """

    @property
    def id(self) -> str:
        """``<type>-<8 hex>``."""

    @property
    def type(self) -> MemoryType:
        """The memory type."""

    @property
    def content(self) -> str:
        """The text, exactly as stored."""

    @property
    def confidence(self) -> float:
        """In [0, 1]."""

    @property
    def status(self) -> Status:
        """Effective status (``refuted`` wins; no provenance: ``unanchored``)."""

    @property
    def blob_id(self) -> str | None:
        """Hex id of the blob the record was read from, or ``None``."""

    @property
    def provenance(self) -> ProvenanceLike | None:
        """Where and when it was observed, or ``None`` (legacy)."""

    @property
    def decay(self) -> DecayLike | None:
        """Decay parameters and last verification, or ``None``."""

    @property
    def refutation(self) -> RefutationLike | None:
        """The refutation, or ``None``."""

    @property
    def relations(self) -> Sequence[RelationLike]:
        """Typed links to other memories."""

    @property
    def half_life_days(self) -> float | None:
        """Half-life in days, or ``None`` when the memory never decays."""

    @property
    def last_verified_at(self) -> datetime | None:
        """Last verification, else observation time, else ``None``."""

    @property
    def anchor_path(self) -> str | None:
        """Anchored file path without the line range, or ``None``."""

    @property
    def writer(self) -> str | None:
        """Who stated it (``Name <email>``): ``author``, else ``updated_by``, else ``None``."""

    @property
    def local_reason(self) -> str | None:
        """Why this clone's uncommitted changes make it stale (the local overlay), or ``None``."""

    def relation_targets(self, kind: RelationType | None = None) -> list[str]:
        """Ids this memory links to, optionally only links of one ``kind``."""
