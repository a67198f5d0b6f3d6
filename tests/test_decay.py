"""Decay: weight formula, per-type defaults, policy validation."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.context.wake import compile_wake
from gitmem.errors import ConfigError
from gitmem.record.decay import (
    FROM_POLICY,
    DecayPolicy,
    half_life_for,
    microseconds,
    weight,
    weight_column,
)
from gitmem.record.models import Decay, Memory, MemoryType, Provenance, Refutation, Status

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = DecayPolicy.default()


def make(kind: str, confidence: float = 1.0, days: float = 0.0, half_life="policy") -> Memory:
    verified = NOW - timedelta(days=days)
    hl = half_life_for(MemoryType(kind), POLICY) if half_life == "policy" else half_life
    return Memory(
        id=f"{kind}-0000abcd",
        type=kind,
        content="something true",
        confidence=confidence,
        provenance=Provenance(observed_at=verified - timedelta(days=3), git_sha="abcd1234"),
        decay=Decay(half_life_days=hl, last_verified_at=verified),
    )


def test_default_policy_values():
    assert POLICY.half_life_days == {
        MemoryType.FACT: 14.0,
        MemoryType.INSIGHT: 90.0,
        MemoryType.PREFERENCE: 180.0,
        MemoryType.AXIOM: None,
        MemoryType.CORE: None,
    }
    assert POLICY.commit_lambda[MemoryType.FACT] == 0.05
    assert POLICY.commit_lambda[MemoryType.AXIOM] == 0.0
    assert POLICY.commit_lambda[MemoryType.CORE] == 0.0
    assert POLICY.commit_lambda[MemoryType.INSIGHT] == pytest.approx(0.05 * 14 / 90, abs=1e-6)
    assert POLICY.threshold == 0.3
    assert POLICY.max_commit_distance == 20


def test_fact_halves_after_one_half_life():
    assert weight(make("fact", 0.8, days=14), NOW, 0, POLICY) == pytest.approx(0.4)


def test_time_and_commit_decay_multiply():
    expected = 0.9 * 2 ** (-7 / 14) * math.exp(-0.05 * 10)
    assert weight(make("fact", 0.9, days=7), NOW, 10, POLICY) == pytest.approx(expected)


def test_unknown_commit_distance_applies_no_commit_decay():
    assert weight(make("fact", 1.0, days=0), NOW, None, POLICY) == 1.0


def test_insight_and_preference_use_their_half_lives():
    assert weight(make("insight", days=90), NOW, 0, POLICY) == pytest.approx(0.5)
    assert weight(make("preference", days=360), NOW, 0, POLICY) == pytest.approx(0.25)


@pytest.mark.parametrize("kind", ["axiom", "core"])
def test_axiom_and_core_never_decay_even_with_an_old_half_life_in_the_record(kind):
    memory = make(kind, 0.7, days=1000, half_life=14.0)
    assert weight(memory, NOW, 500, POLICY) == 0.7


def test_record_half_life_wins_over_policy():
    assert weight(make("fact", days=30, half_life=30.0), NOW, 0, POLICY) == pytest.approx(0.5)
    assert weight(make("fact", 0.6, days=300, half_life=None), NOW, 99, POLICY) == 0.6


def test_refuted_memory_weighs_zero():
    memory = make("fact").model_copy(update={"refutation": Refutation(reason="wrong")})
    assert weight(memory, NOW, 0, POLICY) == 0.0


def test_legacy_record_without_provenance_keeps_its_confidence():
    legacy = Memory(id="fact-0000beef", type="fact", content="old note")
    assert weight(legacy, NOW, 50, POLICY) == 1.0


def test_verification_in_the_future_does_not_raise_weight_above_confidence():
    assert weight(make("fact", 0.5, days=-3), NOW, 0, POLICY) == 0.5


def test_threshold_decides_activity():
    def in_wake(memory_weight: float) -> bool:
        memory = make("fact")
        result = compile_wake([memory], weights={memory.id: memory_weight}, budget=None,
                              threshold=POLICY.threshold, counter=len)
        return result.assembly[0].included

    assert in_wake(0.3)
    assert not in_wake(0.2999)
    # a fact at confidence 1 drops below 0.3 after log2(1/0.3)*14 = 24.3 days
    assert in_wake(weight(make("fact", days=24), NOW, 0, POLICY))
    assert not in_wake(weight(make("fact", days=25), NOW, 0, POLICY))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 1.5}, "decay.threshold: must be in [0, 1], got 1.5"),
        ({"max_commit_distance": -1}, "decay.max_commit_distance: must be >= 0, got -1"),
        ({"half_life_days": {MemoryType.FACT: 0}}, "decay.half_life_days.fact: must be positive"),
        ({"commit_lambda": {MemoryType.FACT: -0.1}}, "decay.commit_lambda.fact: must be >= 0"),
    ],
)
def test_policy_rejects_bad_values_naming_the_key(kwargs, message):
    with pytest.raises(ConfigError) as err:
        DecayPolicy(**kwargs)
    assert err.value.message.startswith(message)


# -- the column form ---------------------------------------------------------------------------

_MOMENTS = st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC))


@st.composite
def records(draw) -> Memory:
    kind = draw(st.sampled_from(list(MemoryType)))
    provenance = draw(st.none() | st.builds(Provenance, observed_at=_MOMENTS,
                                            git_sha=st.just("ab" * 20)))
    decay = draw(st.none() | st.builds(
        Decay, half_life_days=st.none() | st.floats(0.01, 1000), last_verified_at=_MOMENTS,
        staleness_status=st.sampled_from(list(Status))))
    refutation = draw(st.none() | st.just(Refutation(reason="wrong")))
    return Memory(id=f"{kind.value}-0000000{draw(st.integers(0, 9))}", type=kind, content="x",
                  confidence=draw(st.floats(0, 1)), provenance=provenance, decay=decay,
                  refutation=refutation)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    memories=st.lists(records(), max_size=8),
    distances=st.lists(st.none() | st.integers(0, 500), min_size=8, max_size=8),
    now=_MOMENTS,
    fact_days=st.floats(0.5, 100),
    insight_days=st.none() | st.floats(0.5, 100),
    lam=st.floats(0, 1),
)
def test_the_column_form_equals_weight_bit_for_bit(memories, distances, now, fact_days,
                                                   insight_days, lam):
    policy = DecayPolicy(
        half_life_days={**DecayPolicy().half_life_days, MemoryType.FACT: fact_days,
                        MemoryType.INSIGHT: insight_days},
        commit_lambda={**DecayPolicy().commit_lambda, MemoryType.FACT: lam},
    )
    distances = distances[: len(memories)]
    column = weight_column(
        [m.type.value for m in memories],
        [m.status.value for m in memories],
        [m.confidence for m in memories],
        [m.decay.half_life_days if m.decay else FROM_POLICY if m.provenance else None
         for m in memories],
        [microseconds(m.last_verified_at) if m.last_verified_at else None for m in memories],
        distances,
        now,
        policy,
    )
    assert column == [weight(m, now, d, policy) for m, d in zip(memories, distances, strict=True)]
