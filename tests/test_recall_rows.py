"""A recall index saved by term rows: a query reads its own terms' rows, and recalls as a cold build."""

from __future__ import annotations

from gitmem.api import Gitmem
from gitmem.cache.recall_index import RecallIndexes
from tests.conftest import add_filler_memories, learn, tur_ok


def _hits(repo, query):
    result, _ = Gitmem.open(repo).recall(query, top_k=5)
    return [(h.memory.id, h.score, h.ranks) for h in result.hits]


def test_a_query_reads_only_its_terms_rows(repo):
    add_filler_memories(repo, 60)
    learn(repo, "The queue retries failed jobs with backoff")
    gm = Gitmem.open(repo)
    gm.recall("queue retries")
    db = gm.cache.files if hasattr(gm, "cache") else None
    if db is None:
        from gitmem.cache import cache_dir
        from gitmem.cache.db import CacheDB

        db = CacheDB(cache_dir(gm.store))
    (name,) = [k for k in db.keys("recall")]
    index = RecallIndexes(db)._load(name, None)
    assert not index.terms  # nothing read before a query
    index.sparse_scores("queue retries")
    saved = db.run("SELECT count(*) FROM recall_term WHERE idx = ?", (name,))[0][0]
    assert 0 < len(index.terms) + len(index.fields) <= 4 < saved


def test_recall_after_learn_and_forget_equals_a_cold_rebuild(repo):
    add_filler_memories(repo, 80)
    first = learn(repo, "Redis cache keys expire after a timeout")
    for query in ("cache timeout", "lib m03"):
        _hits(repo, query)
    learn(repo, "The cache timeout is thirty seconds")
    tur_ok(repo, "forget", first) if first else None
    for query in ("cache timeout", "lib m03", "queue retry"):
        warm = [_hits(repo, query), _hits(repo, query)]  # derived, then saved derived
        tur_ok(repo, "cache", "clear")
        assert warm == [_hits(repo, query)] * 2
