"""Top-k recall (gitmem.context.topk) returns exactly the hits of the exhaustive ordering."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from gitmem.api import Gitmem
from gitmem.context import recall as recall_module
from gitmem.context.recall import RecallIndex, index_columns, rank_memories
from gitmem.context.topk import ByRow, matching
from gitmem.record.models import Memory
from tests.conftest import add_filler_memories, learn

T0 = datetime(2026, 8, 1, tzinfo=UTC)
WORDS = ["queue", "retry", "cache", "redis", "timeout", "worker", "auth", "token", "pdf", "vite",
         "port", "wal", "mode", "jobs", "failed", "backoff"]
AUTHORS = ["Ann <ann@example.com>", "Bob <bob@example.com>", None]


def _store(rng: random.Random, n: int) -> list[Memory]:
    """``n`` memories over a small vocabulary: many equal scores, equal and missing times."""
    memories = []
    for k in range(n):
        # Repeated texts and days give exact ties in score and in recency.
        text = " ".join(rng.choices(WORDS, k=rng.randint(1, 6))) if rng.random() > 0.2 else "queue retry"
        day = rng.choice([0, 1, 1, 2, 5])
        decay = {"last_verified_at": T0 + timedelta(days=day, minutes=rng.choice([0, 0, 7])),
                 "staleness_status": "fresh"} if rng.random() > 0.1 else None
        data = {"id": f"fact-{k:08x}", "type": "fact", "content": text, "confidence": 0.9,
                "provenance": {"observed_at": T0 + timedelta(minutes=rng.choice([k, k, 0]))},
                "decay": decay, "author": rng.choice(AUTHORS)}
        memories.append(Memory(**data))
    return memories


def _shown(hits) -> list[tuple]:
    return [(h.memory.id, h.score, h.ranks, h.bm25, h.boost, h.relevance, h.stale) for h in hits]


def _both(query: str, memories, index, **kwargs) -> tuple[list[tuple], list[tuple]]:
    recall_module.TOPK_SCORING = False
    try:
        exhaustive = _shown(rank_memories(query, memories, index=index, **kwargs))
    finally:
        recall_module.TOPK_SCORING = True
    return exhaustive, _shown(rank_memories(query, memories, index=index, **kwargs))


@pytest.mark.parametrize("seed", range(12))
def test_top_hits_equal_the_exhaustive_order_on_random_stores_with_ties(seed):
    rng = random.Random(seed)
    memories = _store(rng, rng.randint(1, 160))
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    skipped = {m.id for m in rng.sample(memories, len(memories) // 3)}
    for query in ("queue retry", "redis cache timeout", "ann pdf", "failed jobs backoff worker", "nothing"):
        for limit in (1, 2, 3, 5, 10, 400):
            for floor in (0.0, 0.2, 0.6):
                for skip in (None, lambda m: m.id in skipped):
                    exhaustive, top = _both(query, memories, index, limit=limit, skip=skip, floor=floor)
                    assert top == exhaustive, (query, limit, floor, skip)


def _sessions(rng: random.Random, n: int, speakers: int = 2) -> list[Memory]:
    """``n`` chat turns in sessions two hours apart, by ``speakers`` authors: many sittings.

    One speaker: a user's side of chat sessions, whose sittings have openers.
    """
    memories = []
    for k in range(n):
        text = " ".join(rng.choices(WORDS, k=rng.randint(1, 8)))
        at = T0 + timedelta(hours=2 * (k // rng.choice([3, 5, 9])), minutes=k % 40)
        data = {"id": f"fact-{k + 0x10000:08x}", "type": "fact", "content": text, "confidence": 0.9,
                "provenance": {"observed_at": at}, "author": AUTHORS[k % speakers],
                "decay": {"last_verified_at": at, "staleness_status": "fresh"}}
        memories.append(Memory(**data))
    return memories


@pytest.mark.parametrize("speakers", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_top_hits_with_the_sitting_prior_equal_the_exhaustive_order(seed, speakers):
    rng = random.Random(300 + seed)
    memories = _sessions(rng, rng.randint(40, 400), speakers)
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    assert index.sittings().count > 3
    assert index.sittings().openers or speakers > 1  # one speaker: every sitting opens
    for query in ("queue retry", "redis cache timeout wal", "failed jobs backoff worker pdf vite", "ann"):
        for limit in (1, 3, 10):
            for floor in (0.0, 0.2):
                exhaustive, top = _both(query, memories, index, limit=limit, floor=floor)
                assert top == exhaustive, (query, limit, floor)


@pytest.mark.parametrize("seed", range(6))
def test_matching_is_every_memory_with_a_score_neighbours_included(seed):
    rng = random.Random(100 + seed)
    memories = _store(rng, rng.randint(1, 200))
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    assert seed or index._linked  # the stores have turns of a conversation
    order = list(reversed([m.id for m in memories]))
    for bound in (index, RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                                           **index_columns(memories)).bind(order)):
        for query in ("queue retry", "timeout", "bob", "ann wal", "nothing at all", ""):
            bm25, boost, _ = bound.sparse_scores(query)
            assert matching(bound, query) == {p for p, s in {**bm25, **boost}.items() if s > 0}


def test_top_hits_read_recency_by_id_the_same_as_by_record():
    memories = _store(random.Random(99), 120)
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    column = [(n * 7919) % 13 or None for n in range(len(memories))]
    rows = {m.id: n for n, m in enumerate(memories)}
    by_row = ByRow(column, rows.get)
    for limit in (1, 4, 9):
        exhaustive, top = _both("queue retry cache", memories, index, limit=limit, verified=by_row)
        assert top == exhaustive


def test_recall_of_a_real_store_is_the_same_with_and_without_top_k(repo):
    add_filler_memories(repo, 300)
    for text in ("The queue retries failed jobs with backoff", "Redis cache keys expire after a timeout",
                 "The queue retries failed jobs with backoff"):
        learn(repo, text)
    gm = Gitmem.open(repo)
    outputs = []
    for switch in (False, True):
        recall_module.TOPK_SCORING = switch
        try:
            for query in ("queue retry failed jobs", "return f1", "cache timeout", "lib m03"):
                for top_k in (1, 3, 8):
                    result, _ = gm.recall(query, top_k=top_k)
                    outputs.append(json.dumps([(h.memory.id, h.score, h.ranks) for h in result.hits]))
        finally:
            recall_module.TOPK_SCORING = True
    half = len(outputs) // 2
    assert outputs[:half] == outputs[half:]
    assert any(json.loads(o) for o in outputs[:half])


def _linear_fit(notes, held, token_budget, max_chars, counter):
    """fit_tail as it was: drop the last note until the tail fits (the reference)."""
    from gitmem.context.entry import RECALL_HEADER
    from gitmem.context.stale_notes import stale_tail

    def fits(kept):
        text = stale_tail(kept, held, "markdown-prompt", header=RECALL_HEADER)
        if max_chars and len(text) > max_chars // 2:
            return False
        return not token_budget or counter(text) <= token_budget // 2

    while notes and not fits(notes):
        notes = notes[:-1]
    return notes, stale_tail(notes, held, "markdown-prompt")


def test_stale_notes_fit_by_bisection_keep_the_same_longest_prefix():
    from gitmem.api.stale import fit_tail
    from gitmem.context.stale_notes import StaleNote
    from gitmem.context.tokens import TokenCounter

    rng = random.Random(7)
    notes = [StaleNote(f"fact-{k:08x}", "stale", f"lines {k}-{k + 2} changed in abc{k:04d}",
                       f"src/m.py#L{k}-L{k + 3}", " ".join(rng.choices(WORDS, k=rng.randint(2, 30))), "")
             for k in range(40)]
    counter = TokenCounter()
    for count in (0, 1, 2, 7, 40):
        for held in (0, 3):
            for budget, chars in ((None, None), (60, None), (400, None), (None, 900), (3000, 2000), (10, 10)):
                got = fit_tail(notes[:count], held, budget, chars, counter)
                assert got == _linear_fit(notes[:count], held, budget, chars, counter)


@pytest.mark.parametrize("seed", range(4))
def test_maxscore_reads_fewer_postings_and_scores_the_best_exactly(seed):
    from gitmem.context.maxscore import top_scores

    rng = random.Random(200 + seed)
    memories = _store(rng, 500)
    rare = rng.sample(range(len(memories)), 12)
    for k in rare:  # a rare word in a few memories: a high bound, read first
        memories[k] = memories[k].model_copy(update={"content": memories[k].content + " zeppelin"})
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    for query in ("zeppelin queue retry cache", "zeppelin worker", "queue retry"):
        bm25, boost, maximum = index.sparse_scores(query)
        exact = {d: (bm25.get(d, 0.0), boost.get(d, 0.0)) for d in {**bm25, **boost}}
        totals = sorted((b + f for b, f in exact.values()), reverse=True)
        for wanted in (1, 3, 10):
            scored, top_maximum, _ = top_scores(index, query, wanted, 0.0)
            assert top_maximum == maximum
            assert all(exact[d] == v for d, v in scored.items())
            cut = totals[min(wanted, len(totals)) - 1]
            assert {d for d, (b, f) in exact.items() if b + f >= cut} <= scored.keys()
        for floor in (0.2, 0.6):
            scored, _, least = top_scores(index, query, 1, floor)
            assert {d for d, (b, f) in exact.items() if b + f >= least} <= scored.keys()
    scored, _, _ = top_scores(index, "zeppelin queue retry cache", 3, 0.0)
    assert len(scored) < len(exact)  # the common words' postings were not all scored


@pytest.mark.parametrize("seed", range(4))
def test_expanded_lengths_are_each_document_s_own_sum(seed):
    from gitmem.context.postings import NEAR
    from gitmem.context.recall import NEIGHBOUR_WEIGHT, REPLY_WEIGHT

    rng = random.Random(500 + seed)
    memories = _store(rng, rng.randint(20, 200)) + _sessions(rng, 60)
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    lengths, near = index.lengths, index.near
    assert index._linked
    for d in range(len(lengths)):
        slots = near[NEAR * d:NEAR * d + NEAR]
        same = sum(lengths[o] for o in slots[:2] if o >= 0)
        others = sum(lengths[o] for o in slots[2:] if o >= 0)
        assert index._expanded[d] == lengths[d] + NEIGHBOUR_WEIGHT * same + REPLY_WEIGHT * others
