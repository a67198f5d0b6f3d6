"""After every kind of write, what the read cache derives equals a cold read (GitHub issue 16).

A write saves the rows of the records it changed in the cache (one per blob), and the next
reader makes the new tree's table, token counts and recall index from the previous tree's
and those rows. Each test writes on a warm cache, reads wake, recall, status
and the snapshot, then deletes the cache and reads them cold: the two must be equal.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.context.recall import RecallIndex
from gitmem.store import Store
from tests.bm25_oracle import bm25_scores
from tests.conftest import cache_entry, cache_glob, clone, commit_file, git, legacy_records

NOW = datetime(2026, 3, 1, tzinfo=UTC)
QUERIES = ("queue retries backoff", "billing invoices", "migrations tests", "jitter job",
           "retry policy 2047", "zzz unrelated")


def reads(repo: Path) -> dict:
    """Everything a reader derives from the cache, from a new facade (as a new process has)."""
    gm = Gitmem.open(repo)
    wake, _ = gm.wake(now=NOW)
    wake_small, _ = gm.wake(token_budget=120, now=NOW)
    recalls = [gm.recall(q, include_stale=stale, full_records=False, now=NOW)[0]
               for q in QUERIES for stale in (False, True)]
    status = gm.status_view(NOW, full_records=False)
    snap = gm.snapshot()
    return {
        "wake": (wake.text, wake.tokens, wake.assembly, wake_small.text, wake_small.assembly),
        "recall": [(r.query, [(h.memory.id, h.score, h.ranks, h.bm25, h.boost, h.stale)
                              for h in r.hits]) for r in recalls],
        "status": [(r.memory.id, r.status, r.reason, r.weight, r.commit_distance)
                   for r in status.rows],
        "snapshot": (list(snap.blobs.items()),
                     {i: m.model_dump(mode="json") for i, m in snap.records.items()},
                     [(s.memory_id, s.blob_id, s.reason) for s in snap.skipped]),
    }


def cold_reads(repo: Path) -> dict:
    shutil.rmtree(cache_dir(Store.discover(repo)))
    return reads(repo)


def handed_over(repo: Path) -> bool:
    """Whether the last write saved the rows of what it wrote (the cache noted its commit)."""
    store = Store.discover(repo)
    return cache_entry(cache_dir(store), "write", store.tip()).exists()


@pytest.fixture
def warm(repo):
    """Memories of several shapes, and a cache warm from wake, recall and status."""
    gm = Gitmem.open(repo)
    a = gm.learn("The queue retries failed jobs with exponential backoff", file="src/app.py#L2-L4",
                 agent="claude").memory.id
    b = gm.learn("Billing worker batches invoices every night", type="insight").memory.id
    gm.learn("Always run the migrations before the tests", type="axiom")
    d = gm.learn("Queue retries are capped at five attempts", type="core", confidence=0.8).memory.id
    gm.link(d, a, "supersedes")
    gm.learn("Retry jitter is randomised per job", file="src/app.py")
    for i in range(30):
        gm.learn(f"Job {i} of the nightly batch retries {i % 4} times", type="fact")
    gm.refute(b, "billing moved to the payments service")
    reads(repo)
    return repo


def test_learn_then_reads_equal_a_cold_read(warm):
    Gitmem.open(warm).learn("The retry policy gives up after 2047 attempts")
    assert handed_over(warm)  # the write saved its record's row
    assert reads(warm) == cold_reads(warm)


def test_learning_known_content_again_then_reads_equal_a_cold_read(warm):
    Gitmem.open(warm).learn("Always run the migrations before the tests", type="axiom", confidence=0.9)
    assert handed_over(warm)
    assert reads(warm) == cold_reads(warm)


def test_several_writes_in_a_row_then_reads_equal_a_cold_read(warm):
    gm = Gitmem.open(warm)
    ids = [gm.learn(f"Queue worker {i} retries with backoff").memory.id for i in range(3)]
    reads(warm)  # a reader between writes: the next table is made from a made one
    gm.refute(ids[0], "wrong")
    gm.set_confidence(ids[1], 0.3)
    gm.link(ids[2], ids[1], "supports")
    assert reads(warm) == cold_reads(warm)


@pytest.mark.parametrize("op", ["forget", "refute", "confidence", "link"])
def test_a_curation_then_reads_equal_a_cold_read(warm, op):
    gm = Gitmem.open(warm)
    target = next(r.memory.id for r in gm.status_view(NOW).rows if "jitter" in r.memory.content)
    other = next(r.memory.id for r in gm.status_view(NOW).rows if "Job 3 " in r.memory.content)
    if op == "forget":
        gm.forget(target)
    elif op == "refute":
        gm.refute(target, "it is not randomised")
    elif op == "confidence":
        gm.set_confidence(target, 0.2)
    else:
        gm.link(other, target, "refines")
    assert handed_over(warm)
    assert reads(warm) == cold_reads(warm)


def test_verify_then_reads_equal_a_cold_read(warm):
    commit_file(warm, "src/app.py", "".join(f"changed {i}\n" for i in range(1, 40)), "rewrite")
    outcome = Gitmem.open(warm).verify(now=NOW)
    assert outcome.commit is not None and handed_over(warm)
    assert reads(warm) == cold_reads(warm)


def test_verify_of_one_memory_then_reads_equal_a_cold_read(warm):
    gm = Gitmem.open(warm)
    target = next(r.memory.id for r in gm.status_view(NOW).rows if "jitter" in r.memory.content)
    commit_file(warm, "src/other.py", "x = 1\n", "another file")
    assert gm.verify([target], now=NOW).commit is not None
    assert reads(warm) == cold_reads(warm)


def test_import_then_reads_equal_a_cold_read(warm, tmp_path):
    legacy = legacy_records(tmp_path / "legacy", 4)
    assert Gitmem.open(warm).import_legacy([legacy]).commit is not None
    assert handed_over(warm)
    assert reads(warm) == cold_reads(warm)


def test_sync_then_reads_equal_a_cold_read(origin):
    mine, theirs = clone(origin, "mine"), clone(origin, "theirs")
    a, b = Gitmem.open(mine), Gitmem.open(theirs)
    for i in range(5):
        a.learn(f"Mine: the queue retries job {i}")
    a.sync()
    b.sync()
    b.learn("Theirs: the billing worker batches invoices")
    b.sync()
    a.learn("Mine again: retries back off exponentially")
    reads(mine)  # warm, before the merge
    assert a.sync().status == "merged"
    assert reads(mine) == cold_reads(mine)


def test_a_table_copied_under_another_tree_is_never_used(warm):
    """A table names its tree: one copied under another tree's key is not trusted."""
    gm = Gitmem.open(warm)
    base = gm.store.subtree_id(gm.store.tip(), "memories")
    gm.learn("The retry policy gives up after 2047 attempts")
    tree = gm.store.subtree_id(gm.store.tip(), "memories")
    root = cache_dir(gm.store)
    cache_entry(root, "table", base).copy_to(tree)  # claims to be the new tree's
    got = reads(warm)
    want = cold_reads(warm)
    assert {k: v for k, v in got.items() if k != "snapshot"} == \
        {k: v for k, v in want.items() if k != "snapshot"}
    assert got["snapshot"][:2] == want["snapshot"][:2]


def test_a_derived_recall_index_scores_as_one_built_at_once_and_as_bm25s():
    texts = [f"The queue {w} retries job {i} with backoff" for i, w in
             enumerate(["worker", "service", "timer", "worker", "billing", "queue"] * 5)]
    ids = [f"fact-{i:08x}" for i in range(len(texts))]
    observed = [f"2026-0{1 + i % 9}-01T00:00:00+00:00" for i in range(len(texts))]
    base = RecallIndex.build(texts, observed, ids=ids)
    extra = {"fact-ffff0001": ("Billing retries invoices nightly", None),
             "fact-00000a00": ("The timer queue backs off", "2026-05-02T00:00:00+00:00")}
    by_id = {ids[k]: (texts[k], observed[k]) for k in range(len(texts)) if k % 7} | extra
    new_ids = sorted(by_id)
    new_texts = [by_id[i][0] for i in new_ids]
    new_observed = [by_id[i][1] for i in new_ids]
    derived = RecallIndex.from_payload(base.derive(new_ids, new_texts, new_observed).to_payload())
    assert len(derived.ids) > len(new_ids)  # documents appended, holes left: not rebuilt
    derived.bind(new_ids)
    built = RecallIndex.build(new_texts, new_observed, ids=new_ids).bind(new_ids)
    alone = RecallIndex.build(new_texts, ids=new_ids)  # no times: no neighbours, plain BM25
    for query in ("queue retries backoff", "billing invoices", "timer", "job 7", "may 2026",
                  "the of and", ""):
        assert derived.scores(query) == built.scores(query), query
        assert alone.bm25_scores(query) == pytest.approx(bm25_scores(query, new_texts), rel=1e-6), query


@pytest.mark.parametrize("op", ["edit content", "edit anchor", "unrefute"])
def test_an_edit_or_a_withdrawn_refutation_then_reads_equal_a_cold_read(warm, op):
    gm = Gitmem.open(warm)
    rows = gm.status_view(NOW).rows
    jitter = next(r.memory.id for r in rows if "jitter" in r.memory.content)
    billing = next(r.memory.id for r in rows if "Billing" in r.memory.content)
    if op == "edit content":
        gm.edit(jitter, content="Retry jitter is drawn once per queue")
    elif op == "edit anchor":
        gm.edit(jitter, file="src/app.py#L1-L2")
    else:
        gm.unrefute(billing)
    assert handed_over(warm)
    assert reads(warm) == cold_reads(warm)


def test_import_keeping_comments_and_relations_then_reads_equal_a_cold_read(warm, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "a.yaml").write_text(
        '# kept as written\nid: "concept-a"\ntype: preference\n'
        "content: Prefer queues that retry with jitter  # inline note\n")
    (legacy / "b.yaml").write_text(
        'id: "concept-b"\ntype: fact\ncontent: The retry queue is drained hourly\n'
        "relations:\n  - type: supports\n    target: concept-a\n")
    result = Gitmem.open(warm).import_legacy([legacy])
    assert result.commit is not None and len(result.imported) == 2
    assert reads(warm) == cold_reads(warm)
    gm = Gitmem.open(warm)  # old ids resolve from the derived table
    assert {gm.records.get("concept-a").id, gm.records.get("concept-b").id} == set(result.imported)


def test_verify_with_an_uncommitted_change_then_reads_equal_a_cold_read(warm):
    (warm / "src" / "app.py").write_text("".join(f"edited {i}\n" for i in range(1, 40)))
    outcome = Gitmem.open(warm).verify(now=NOW)
    assert any(row.local for row in outcome.rows)
    assert reads(warm) == cold_reads(warm)
    assert any(r.local for r in Gitmem.open(warm).status_view(NOW, full_records=False).rows)


def _writers(repo: Path) -> tuple[list, bool]:
    """Who git says wrote each row (newest author), and whether the read walked only new commits."""
    gm = Gitmem.open(repo)
    table, _ = gm.records.table(gm.store.tip())
    before = gm.records.cache.read_payload("", "attribution2")
    carried = isinstance(before, dict) and before.get("tree") != table.tree \
        and gm.store.is_ancestor(before.get("tip"), gm.store.tip())
    return [who[0] if who else None for who in gm.records.writers(table)], carried


def test_writers_come_from_git_and_after_writes_only_the_new_commits_are_walked(repo):
    from gitmem.cache.reader import record_path
    from gitmem.store import Mutation

    gm = Gitmem.open(repo)
    old = [gm.learn(f"Old note {i} about the queue").memory.id for i in range(3)]
    git(repo, "config", "user.name", "Old Writer")
    gm = Gitmem.open(repo)
    for memory_id in old:  # the last commit that changed each is Old Writer's, whatever the record says
        path = record_path(memory_id)
        data = gm.store.read_path(gm.store.tip(), path).decode()
        stripped = "".join(x for x in data.splitlines(keepends=True)
                           if not x.startswith(("updated_at:", "updated_by:")))
        gm.store.transact(lambda tip, p=path, d=stripped: Mutation({p: d.encode()}, "old gitmem"))
    git(repo, "config", "user.name", "Test User")
    before, _ = _writers(repo)  # one git log, kept for this tree
    assert before.count("Old Writer <test@example.com>") == 3
    gm = Gitmem.open(repo)
    gm.learn("A new note about the queue")
    gm.refute(old[0], "no longer true")  # now changed last by this identity
    after, carried = _writers(repo)
    assert carried  # git log OLD..NEW: the two new commits only
    payload = gm.records.cache.read_payload("", "attribution2")
    assert payload["tip"] == gm.store.tip()
    shutil.rmtree(cache_dir(Store.discover(repo)))
    assert after == _writers(repo)[0]
    assert after.count("Old Writer <test@example.com>") == 2
    gm = Gitmem.open(repo)
    gm.learn("A third note about the queue")
    _writers(repo)  # a reader between the writes: the next walks from this tip
    gm.refute(old[1], "no longer true either")
    gm.learn("A fourth note about the queue")
    again, carried = _writers(repo)
    assert carried  # two writes since the reader's tip
    shutil.rmtree(cache_dir(Store.discover(repo)))
    assert again == _writers(repo)[0] and again.count("Old Writer <test@example.com>") == 1
    # A reader of the same tree takes the rows as saved: the same writers, no git log.
    payload = gm.records.cache.read_payload("", "attribution2")
    assert [who[0] for who in payload["rows"]] == again and _writers(repo)[0] == again


def _distances(repo: Path) -> dict:
    gm = Gitmem.open(repo)
    return {r.memory.id: r.commit_distance for r in gm.status_view(NOW, full_records=False).rows}


def test_a_new_code_commit_then_reads_equal_a_cold_read_with_distances_carried_from_its_parent(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("Observed at the first commit", file="src/app.py").memory.id
    x1 = commit_file(repo, "src/other.py", "a = 1\n", "x1")
    at_x1 = Gitmem.open(repo).learn("Observed at x1").memory.id
    commit_file(repo, "src/other.py", "a = 2\n", "x2")
    ahead = Gitmem.open(repo).learn("Observed at x2, ahead of the checkout").memory.id
    git(repo, "checkout", "-q", x1)  # HEAD behind a memory's commit
    before = reads(repo)  # warm, with the distances to x1 saved
    assert _distances(repo)[ahead] == 1 and _distances(repo)[old] == 1
    cache = cache_dir(Store.discover(repo))
    y = commit_file(repo, "src/third.py", "b = 1\n", "y")  # a new commit on x1
    carried = reads(repo)
    assert carried == cold_reads(repo) and carried != before
    assert _distances(repo) == {old: 2, at_x1: 1, ahead: 1}
    git(repo, "merge", "-q", "--no-edit", "-m", "merge", git(repo, "rev-parse", "HEAD@{2}").strip())
    assert Store.discover(repo).head_sha() != y  # a merge: its parents are not one
    assert reads(repo) == cold_reads(repo)
    assert cache.exists()


def _recall_indexes(repo: Path) -> dict[str, dict]:
    root = cache_dir(Store.discover(repo))
    return {p.key: p.read_payload() for p in cache_glob(root, "recall")}


def test_a_recall_index_derived_after_a_write_is_saved_whole_when_asked_again_and_read_back_equal(warm):
    saved = _recall_indexes(warm)
    gm = Gitmem.open(warm)
    gm.learn("The exporter flushes metrics every ten seconds")
    tree = gm.store.subtree_id(gm.store.tip(), "memories")
    derived = reads(warm)  # derived from the saved indexes; a tree read once saves no index
    assert set(_recall_indexes(warm)) <= set(saved)
    assert reads(warm) == derived  # asked again: derived again, and saved whole
    new = {k: p for k, p in _recall_indexes(warm).items() if k not in saved}
    assert new and all(k.startswith(f"{tree}:") and "index" in p for k, p in new.items())
    assert reads(warm) == derived == cold_reads(warm)  # a new process reads them as saved
