"""Memory weight: time decay by half-life times commit-distance decay (EP-0131, docs/design.md#ep-0131).

Pure functions; the caller supplies "now" and the commit distance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gitmem import defaults
from gitmem.errors import ConfigError
from gitmem.vocabulary import MemoryType, Status

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = [
    "FROM_POLICY",
    "DecayPolicy",
    "half_life_for",
    "microseconds",
    "weight",
    "weight_column",
]


@dataclass(frozen=True)
class DecayPolicy:
    """Decay parameters per memory type (setting ``decay``); defaults from :mod:`gitmem.defaults`.

    Attributes:
        half_life_days: days for the time factor to halve; ``None`` = never decays.
        commit_lambda: per-commit rate λ of the factor ``e^(−λ × commits)`` (1/commits).
        threshold: weights below it drop a memory from wake (unitless, in [0, 1]).
        max_commit_distance: commits after which a memory with no checkable anchor is stale.

    Raises:
        ConfigError: a non-positive half-life, a negative λ, a threshold outside [0, 1]
            or a negative distance limit (the message names the key).
    """

    half_life_days: dict[MemoryType, float | None] = field(default_factory=defaults.half_lives)
    commit_lambda: dict[MemoryType, float] = field(default_factory=defaults.commit_lambdas)
    threshold: float = defaults.DECAY_THRESHOLD
    max_commit_distance: int = defaults.MAX_COMMIT_DISTANCE

    def __post_init__(self) -> None:
        for kind, days in self.half_life_days.items():
            if days is not None and not days > 0:
                raise ConfigError(f"decay.half_life_days.{kind}: must be positive, got {days}")
        for kind, lam in self.commit_lambda.items():
            if not lam >= 0:
                raise ConfigError(f"decay.commit_lambda.{kind}: must be >= 0, got {lam}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"decay.threshold: must be in [0, 1], got {self.threshold}")
        if self.max_commit_distance < 0:
            raise ConfigError(
                f"decay.max_commit_distance: must be >= 0, got {self.max_commit_distance}"
            )

    @classmethod
    def default(cls) -> DecayPolicy:
        """The policy of :mod:`gitmem.defaults` (the same as ``DecayPolicy()``)."""
        return cls()


def half_life_for(kind: MemoryType, policy: DecayPolicy) -> float | None:
    """Half-life in days to store in a new record of type ``kind`` (``None`` = no decay)."""
    return policy.half_life_days.get(kind)


def _effective_half_life(memory: Memory, policy: DecayPolicy) -> float | None:
    if memory.type in policy.half_life_days and policy.half_life_days[memory.type] is None:
        return None  # axiom/core never decay, whatever an old record says
    if memory.decay is not None:
        return memory.decay.half_life_days  # the record's own value wins (None = never)
    if memory.provenance is None:
        return None  # legacy record: infinite half-life (EP-0131)
    return policy.half_life_days.get(memory.type)


def weight(
    memory: Memory, now: datetime, commit_distance: int | None, policy: DecayPolicy
) -> float:
    """Return ``confidence × 2^(−days / half-life) × e^(−λ × commits)``, in [0, 1].

    Days count from ``memory.last_verified_at`` (clamped at 0 for a timestamp in the
    future); commits are ``commit_distance`` (``None`` = unknown, no commit decay).
    A refuted memory weighs 0. Axiom and core (half-life ``None`` in the policy)
    never decay; otherwise the record's ``decay.half_life_days`` wins over the
    policy. Formula: EP-0131 "Epistemic Half-Life Defaults".

    Args:
        memory: the record.
        now: an aware datetime (UTC).
        commit_distance: commits between the anchor's SHA and HEAD, or ``None``.
        policy: the decay parameters.
    """
    if memory.status is Status.REFUTED:
        return 0.0
    value = memory.confidence
    half_life = _effective_half_life(memory, policy)
    verified = memory.last_verified_at
    if half_life is not None and verified is not None:
        days = max(0.0, (now - verified).total_seconds() / 86400.0)
        value *= 2.0 ** (-days / half_life)
    lam = policy.commit_lambda.get(memory.type, 0.0)
    if half_life is not None and commit_distance and lam:
        value *= math.exp(-lam * commit_distance)
    return value


FROM_POLICY = "from-policy"
"""Marks, in :func:`weight_column`, a record without a decay part that is anchored."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def microseconds(moment: datetime) -> int:
    """Microseconds from the Unix epoch to the aware datetime ``moment`` (exact)."""
    return (moment - _EPOCH) // _MICROSECOND


def weight_column(
    types: Sequence[str],
    statuses: Sequence[str],
    confidences: Sequence[float],
    half_lives: Sequence[float | str | None],
    verified: Sequence[int | None],
    distances: Sequence[int | None],
    now: datetime,
    policy: DecayPolicy,
) -> list[float]:
    """:func:`weight` of many records given as columns (row *i* of each is one record).

    Equal, bit for bit, to :func:`weight` of each record: the same formula in the same
    order of operations, with ``days`` taken from whole microseconds exactly as
    ``timedelta.total_seconds()`` does. Costs about a microsecond a row.

    Args:
        types: :class:`MemoryType` values.
        statuses: effective :class:`Status` values.
        confidences: in [0, 1].
        half_lives: the record's own ``decay.half_life_days`` (days, ``None`` = never) when
            it has a decay part; else :data:`FROM_POLICY` when it has provenance; else
            ``None`` (a legacy record never decays).
        verified: ``last_verified_at`` as :func:`microseconds`, or ``None``.
        distances: commit distance of the anchor to HEAD (commits), or ``None``.
        now: an aware datetime (UTC).
        policy: the decay parameters.
    """
    now_us = microseconds(now)
    # Per type, in one lookup: (never decays, the policy's half-life, commit lambda).
    per_type = {kind.value: (days is None, days, policy.commit_lambda.get(kind, 0.0))
                for kind, days in policy.half_life_days.items()}
    for kind, lam in policy.commit_lambda.items():
        per_type.setdefault(kind.value, (False, None, lam))
    unknown = (False, None, 0.0)
    refuted = Status.REFUTED.value
    exp = math.exp
    out: list[float] = []
    append = out.append
    for kind, status, value, own, at, distance in zip(
        types, statuses, confidences, half_lives, verified, distances, strict=True
    ):
        if status == refuted:
            append(0.0)
            continue
        never, by_type, lam = per_type.get(kind, unknown)
        half_life = None if never else by_type if own == FROM_POLICY else own
        if half_life is not None:
            if at is not None:
                days = (now_us - at) / 1_000_000 / 86400.0
                if not days > 0.0:  # max(0.0, days), without the call
                    days = 0.0
                value *= 2.0 ** (-days / half_life)
            if distance and lam:
                value *= exp(-lam * distance)
        append(value)
    return out
