"""A recall index saved by term rows: a query reads its own terms' rows, and recalls as a cold build."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from gitmem.api import Gitmem
from gitmem.cache import CacheNotice, cache_dir
from gitmem.cache.db import DB_NAME
from gitmem.cache.recall_index import RecallIndexes, rows_statement
from tests.conftest import add_filler_memories, learn, tur, tur_ok


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


@pytest.mark.parametrize("damage", [
    "numbers = substr(numbers, 1, length(numbers) - 1)",  # not a whole number of integers
    "counts = x''",  # fewer counts than documents
    "numbers = x'ffffff7f' || substr(numbers, 5)",  # a document the index does not have
    "counts = zeroblob(length(counts))",  # counts of 0
    "numbers = numbers || numbers",  # not ascending, more numbers than counts
    "numbers = 'text'",  # not postings at all
])
def test_a_damaged_term_row_is_a_miss_rebuilt_and_reported(repo, damage):
    add_filler_memories(repo, 60)
    learn(repo, "The queue retries failed jobs with backoff")
    want = _hits(repo, "queue retries failed")
    cache = cache_dir(Gitmem.open(repo).store) / DB_NAME
    with closing(sqlite3.connect(cache)) as db, db:
        assert db.execute(f"UPDATE recall_term SET {damage} WHERE field = 0").rowcount > 4
    result = tur(repo, "recall", "queue retries failed")
    assert result.code == 0 and "Traceback" not in result.err, result.err
    assert "is damaged" in result.err and "rebuilding it" in result.err
    assert "backoff" in result.out
    gm = Gitmem.open(repo)
    got, notices = gm.recall("queue retries failed", top_k=5)
    assert [(h.memory.id, h.score, h.ranks) for h in got.hits] == want
    assert not [n for n in notices if isinstance(n, CacheNotice)]  # saved again, whole


def test_a_query_s_rows_are_searched_by_the_primary_key_not_scanned(repo):
    add_filler_memories(repo, 30)
    _hits(repo, "queue retries")
    with closing(sqlite3.connect(cache_dir(Gitmem.open(repo).store) / DB_NAME)) as db:
        (name,) = {row[0] for row in db.execute("SELECT idx FROM recall_term")}
        plan = db.execute("EXPLAIN QUERY PLAN " + rows_statement(3),
                          (name, 0, "queue", "retri", "x")).fetchall()
    searched = "SEARCH recall_term USING PRIMARY KEY (idx=? AND field=? AND term=?)"
    assert [step[3] for step in plan] == [searched]


def _saved_indexes(repo) -> dict[str, list[str]]:
    from gitmem.cache.db import CacheDB

    db = CacheDB(cache_dir(Gitmem.open(repo).store))
    loaded = {name: RecallIndexes(db)._load(name, None) for name in db.keys("recall")}
    # A derived index (not in the candidates' order) is saved with its positions.
    for index in loaded.values():
        assert (index.saved_positions is None) == (index.ids == sorted(index.ids))
    return {name: index.ids for name, index in loaded.items()}


def test_after_a_write_each_index_is_derived_from_the_one_of_its_own_candidates(repo):
    add_filler_memories(repo, 300)
    old = learn(repo, "The queue retries failed jobs with backoff")
    new = learn(repo, "Queue retries are capped at five attempts")
    tur_ok(repo, "link", new, old, "--type", "supersedes")  # the old one is held back
    for _ in range(2):  # asked twice: saved, even when derived
        _hits(repo, "queue retries")
    assert sorted(map(len, _saved_indexes(repo).values())) == [1, 301]  # held back, ranked
    written = learn(repo, "The exporter flushes metrics every ten seconds")
    after = [_hits(repo, "queue retries") for _ in range(2)]
    # Derived from the ranked list's index, the new memory is its last document; built (from
    # the held-back one's, which differs in most documents), the documents are in id order.
    (ids,) = [ids for ids in _saved_indexes(repo).values() if written in ids]
    assert ids[-1] == written and ids != sorted(ids)
    assert _hits(repo, "queue retries") == after[0]  # read back bound by its saved positions
    tur_ok(repo, "cache", "clear")
    assert [_hits(repo, "queue retries")] * 2 == after
