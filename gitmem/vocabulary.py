"""The record vocabulary: memory types, statuses, scopes, relation types, the id pattern.

Plain enums with no pydantic, so that the read path (``wake``, ``recall`` from the cache)
can name them without building the record models; :mod:`gitmem.record.models` re-exports them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

__all__ = [
    "ID_PATTERN",
    "RECALL_FORMATS",
    "SIGNATURE_MARKS",
    "SIGNATURE_NOT_VERIFIED",
    "UNSIGNED",
    "WAKE_FORMATS",
    "MemoryType",
    "RelationType",
    "Scope",
    "Status",
    "iso_z",
    "precise_now",
    "unmarked",
    "utc_now",
]

WAKE_FORMATS = ("markdown", "json")
"""The formats ``tur wake`` renders: ``markdown`` (the default) and ``json``."""

RECALL_FORMATS = ("markdown-prompt", "json", "plain")
"""The formats of recalled hits: ``markdown-prompt`` (the default), ``json`` and ``plain``."""

SIGNATURE_NOT_VERIFIED = " (signature not verified)"
"""Appended to a git author (``Name <email>``) whose commit carries a signature git does not
verify (``git log --format=%G?`` other than ``G`` or ``N``: bad, unknown validity, expired,
revoked, or not checkable): never trusted as the named author (docs/sharing.md, Signatures)."""

UNSIGNED = " (unsigned)"
"""Appended to the author of an unsigned commit where ``trust.require_signatures`` is set."""

SIGNATURE_MARKS = (SIGNATURE_NOT_VERIFIED, UNSIGNED)
"""The marks an author string from git's attribution may end with; a marked author is untrusted."""



def unmarked(author: str) -> str:
    """``author`` without a trailing signature mark (:data:`SIGNATURE_MARKS`): the identity git names."""
    for mark in SIGNATURE_MARKS:
        if author.endswith(mark):
            return author[: -len(mark)]
    return author


#: Ids are ``<type>-<8 hex>``; the hex part is the start of the SHA-256 of the normalised
#: content. A memory whose 8 hex digits are taken by a different statement gets 16 (and,
#: should those be taken too, all 64): see :data:`gitmem.record.ids.ID_HEX_LENGTHS`.
ID_PATTERN = re.compile(r"^(axiom|core|fact|insight|preference)-(?:[0-9a-f]{8}|[0-9a-f]{16}|[0-9a-f]{64})$")


def precise_now() -> datetime:
    """The current time as an aware UTC datetime with microseconds (what a change is stamped with)."""
    return datetime.now(UTC)


def iso_z(moment: datetime) -> str:
    """``moment`` in ISO 8601 with a ``Z`` for UTC (``2026-08-27T15:04:00Z``), as gitmem writes times."""
    return moment.isoformat().replace("+00:00", "Z")


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime, truncated to whole seconds."""
    return datetime.now(UTC).replace(microsecond=0)


class MemoryType(StrEnum):
    """Epistemic kind of a memory; decides its default half-life and its wake tier."""

    AXIOM = "axiom"
    CORE = "core"
    FACT = "fact"
    INSIGHT = "insight"
    PREFERENCE = "preference"


class Scope(StrEnum):
    """Whether a memory holds for every agent (``universal``) or one incarnation."""

    UNIVERSAL = "universal"
    INCARNATION = "incarnation"


class Status(StrEnum):
    """Staleness status of a memory (EP-0131)."""

    FRESH = "fresh"
    STALE = "stale"
    UNANCHORED = "unanchored"
    REFUTED = "refuted"


class RelationType(StrEnum):
    """Typed link from one memory to another."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    REFINES = "refines"
    SUPERSEDES = "supersedes"
