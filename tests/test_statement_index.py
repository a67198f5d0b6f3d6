"""The statement index gives learn's near-duplicate check the notes a full scan gives (GitHub issue 16).

``learn`` compares a new statement with the live memories of the latest cached tree. It
counts the terms it shares with each through a :class:`StatementIndex` (saved per tree, and
derived by each write from its parent's) instead of analysing every memory: the ids, and
their order, must be those :func:`find_similar` finds over the same statements.
"""

from __future__ import annotations

import random
import shutil

import pytest

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.context.similarity import StatementIndex, find_similar
from gitmem.store import Store
from gitmem.vocabulary import Status
from tests.conftest import cache_entry, cache_glob

STATEMENTS = [
    "API port is 8090", "API moved to port 9090", "The API does not listen on port 9090",
    "Every query is logged", "Queries are logged to the audit table", "Skies are grey; the sky is blue",
    "The dying worker restarts", "Workers die and restart", "O'Reilly wrote the parser",
    "parseHeaderLine splits the header", "The header line parser splits on colons",
    "Billing batches invoices every night", "Invoices are batched by billing at night",
    "Queue retries failed jobs with exponential backoff", "The queue retry policy caps retries at 5",
    "Retry policy for the queue: 5 attempts", "Never run migrations in tests",
    "Run the migrations before the tests", "x", "", "retry retry retry",
]


def corpus(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` statements: the hand-written ones and random mixes of their words."""
    rnd = random.Random(seed)
    words = " ".join(STATEMENTS).split()
    texts = [*STATEMENTS, *(" ".join(rnd.sample(words, rnd.randint(1, 10))) for _ in range(n))]
    return [(f"fact-{i:08x}", t) for i, t in enumerate(texts)]


def queries(pairs: list[tuple[str, str]], seed: int) -> list[str]:
    rnd = random.Random(seed)
    words = " ".join(t for _, t in pairs).split()
    return [*STATEMENTS, *(t for _, t in rnd.sample(pairs, 40)),
            *(" ".join(rnd.sample(words, rnd.randint(2, 8))) for _ in range(80))]


def test_the_index_finds_the_ids_a_full_scan_finds_in_the_same_order():
    pairs = corpus(400, seed=1)
    index = StatementIndex.build(pairs)
    found_any = False
    for query in queries(pairs, seed=2):
        for limit in (1, 3, 50):
            expected = find_similar(query, pairs, limit=limit)
            assert index.similar(query, limit=limit) == expected, query
            found_any = found_any or bool(expected)
    assert found_any


def test_the_index_leaves_out_skipped_ids_as_the_scan_leaves_out_their_statements():
    pairs = corpus(200, seed=3)
    index = StatementIndex.build(pairs)
    skip = {i for i, _ in pairs[::3]}
    for query in queries(pairs, seed=4):
        expected = find_similar(query, [(i, t) for i, t in pairs if i not in skip])
        assert index.similar(query, skip=skip) == expected


def test_a_derived_index_finds_what_one_built_from_the_changed_statements_finds():
    pairs = corpus(300, seed=5)
    base = StatementIndex.build(pairs)
    rnd = random.Random(6)
    changed = dict(pairs)
    changes: dict[str, str | None] = {}
    for memory_id, _ in rnd.sample(pairs, 60):
        changes[memory_id] = None if rnd.random() < 0.4 else f"The queue retry policy {rnd.randint(1, 9)}"
    changes["fact-new1"], changes["fact-new2"] = "API port is now 9191", "A brand new statement"
    changes["fact-unknown"] = None
    for memory_id, text in changes.items():
        if text is None:
            changed.pop(memory_id, None)
        else:
            changed[memory_id] = text
    derived = base.derive(changes)
    built = StatementIndex.build(sorted(changed.items()))
    assert derived.statements() == built.statements() == changed
    assert len(derived) == len(changed)
    for query in queries(pairs, seed=7):
        assert derived.similar(query) == built.similar(query) == find_similar(query, changed.items())
    # the base is unchanged: it still answers for the statements it was built from
    assert base.statements() == dict(pairs)


class Parts:
    """Saved parts held in memory, counting the bytes read (what a file of them would read)."""

    def __init__(self, parts: dict[str, bytes]) -> None:
        self.parts = parts
        self.read_bytes = 0

    def size(self, name: str) -> int:
        return len(self.parts[name])

    def read(self, name: str, start: int = 0, stop: int | None = None) -> bytes:
        data = self.parts[name][start:stop]
        self.read_bytes += len(data)
        return data


def stored(index: StatementIndex) -> StatementIndex:
    """``index`` saved as its parts and read back as it is used."""
    rows, parts = index.to_parts()
    return StatementIndex.stored(rows, Parts(dict(parts)))


def test_an_index_read_back_from_its_parts_answers_the_same():
    pairs = corpus(150, seed=8)
    index = StatementIndex.build(pairs).derive({pairs[0][0]: None, "fact-x": "API port is 1"})
    again = stored(index)
    for query in queries(pairs, seed=9):
        assert again.similar(query) == index.similar(query)
    assert again.statement("fact-x") == "API port is 1" and again.statement(pairs[0][0]) is None
    assert again.statement(pairs[1][0]) == pairs[1][1]
    assert again.changes({"fact-x": "API port is 1", pairs[1][0]: None}) == {pairs[1][0]: None}
    assert again.statements() == index.statements() and len(again) == len(index)
    rows, parts = index.to_parts()
    with pytest.raises(ValueError, match="lengths"):
        StatementIndex.stored(rows + 1, Parts(parts))
    with pytest.raises(ValueError, match="lengths"):
        StatementIndex.stored(rows, Parts({**parts, "flat": parts["flat"] + b"12"}))


def test_a_lookup_in_a_stored_index_reads_a_small_part_of_it():
    pairs = corpus(3000, seed=13)
    rows, saved = StatementIndex.build(pairs).to_parts()
    parts = Parts(saved)
    index = StatementIndex.stored(rows, parts)
    assert index.similar("The queue retry policy caps retries at 5") == \
        find_similar("The queue retry policy caps retries at 5", pairs)
    index.statement("fact-00000003")
    # the terms, sizes, dead marks and ids; of the texts and postings only what was looked at
    assert parts.read_bytes < sum(map(len, saved.values())) / 2


# -- through the read cache ---------------------------------------------------------------------

def live_statements(repo) -> dict[str, str]:
    """Id -> content of every memory not refuted, read from git (a new facade, a cold read)."""
    snap = Gitmem.open(repo).snapshot()
    return {i: m.content for i, m in snap.records.items() if m.status != Status.REFUTED}


def test_each_write_saves_the_index_of_its_tree_derived_from_its_parents(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090").memory.id
    retry = gm.learn("The queue retry policy caps retries at 5").memory.id
    gm.wake()  # a table is cached: learn now compares with it
    first = gm.learn("API moved to port 9090")
    assert first.similar == (old,)
    files = cache_dir(Store.discover(repo))
    # writes by other processes derive each tree's index from their parent's
    for step in (lambda g: g.learn("Queue retries: 5 attempts at most"),
                 lambda g: g.refute(retry, "now 7"),
                 lambda g: g.forget(old),
                 lambda g: g.learn("The queue retry policy caps retries at 7")):
        g = Gitmem.open(repo)
        step(g)
        tree = Store.discover(repo).subtree_id(g.store.tip(), "memories")
        assert cache_entry(files, "statements", tree).exists()  # saved by the write
        index = Gitmem.open(repo).records.latest_statements()[1]
        assert index.statements() == live_statements(repo)
    expected = find_similar("Queue retry policy: 7 attempts", sorted(live_statements(repo).items()))
    third = Gitmem.open(repo).learn("Queue retry policy: 7 attempts")
    assert third.similar == tuple(expected)
    assert third.similar


def test_without_a_saved_index_one_is_built_from_the_latest_table_or_derived_from_an_older_one(repo):
    gm = Gitmem.open(repo)
    for i in range(12):
        gm.learn(f"Job {i} of the nightly batch retries {i % 4} times")
    gm.wake()
    files = cache_dir(Store.discover(repo))
    index = Gitmem.open(repo).records.latest_statements()[1]
    assert index.statements() == live_statements(repo)
    # an index copied from another tree is refused, and the right one built
    Gitmem.open(repo).learn("A statement about nothing in particular")
    Gitmem.open(repo).wake()
    Gitmem.open(repo).snapshot()  # a table derived cheaply is saved when its tree is asked again
    newest, *others = cache_glob(files, "statements")
    assert others
    newest.write_bytes(others[0].read_bytes())  # another tree's index, under the newest key
    fresh = Gitmem.open(repo)
    assert fresh.records.latest_statements()[1].statements() == live_statements(repo)
    # a tree with no index of its own: derived from the older one by the statements that differ
    newest.unlink()
    assert Gitmem.open(repo).records.latest_statements()[1].statements() == live_statements(repo)


def test_postings_kept_apart_by_derive_are_flattened_without_changing_an_answer(monkeypatch):
    import gitmem.context.similarity as similarity

    monkeypatch.setattr(similarity, "_FLATTEN_AT", 8)
    pairs = corpus(120, seed=10)
    index, current = StatementIndex.build(pairs), dict(pairs)
    rnd = random.Random(11)
    for step in range(12):
        changes: dict[str, str | None] = {f"fact-step{step}": f"API port is {step} and the queue retries"}
        victim = rnd.choice(sorted(current))
        changes[victim] = None if step % 2 else "Queue retry policy caps retries"
        index = stored(index.derive(changes))
        for memory_id, text in changes.items():
            if text is None:
                current.pop(memory_id, None)
            else:
                current[memory_id] = text
        assert index.statements() == current
        for query in ("API port is 3", "queue retry policy", "Queue retries capped"):
            assert index.similar(query, limit=5) == find_similar(query, current.items(), limit=5)


def test_deriving_by_statements_that_did_not_change_keeps_their_rows():
    pairs = corpus(50, seed=12)
    index = StatementIndex.build(pairs)
    same = index.derive(dict(pairs[:30]))
    assert same.ids == index.ids and same.dead == index.dead
    assert same.similar(pairs[3][1]) == index.similar(pairs[3][1])


# -- saved whole per tree; damaged and foreign indexes -----------------------------------------

def learned_repo(repo, statements=STATEMENTS) -> Gitmem:
    gm = Gitmem.open(repo)
    for text in statements:
        if text.strip() and len(text) > 1:
            gm.learn(text)
    gm.wake()  # a table is cached: learn now compares with it
    return gm


def test_a_learn_after_indexes_derived_by_writes_names_what_a_cold_cache_names(repo, tmp_path):
    learned_repo(repo)
    for text in ("Queue retries: 5 attempts at most", "The API listens on port 9090 now"):
        Gitmem.open(repo).learn(text)  # each write saves its tree's index, derived from its parent's
    found_any = False
    for text in ("Queue retry policy: 7 attempts", "API port is 9191", "Run the migrations before tests",
                 "Workers die and restart at night"):
        cold = tmp_path / f"cold-{len(text)}"
        shutil.copytree(repo, cold)
        Gitmem.open(cold).cache_clear()
        Gitmem.open(cold).wake()
        warm, fresh = Gitmem.open(repo).learn(text), Gitmem.open(cold).learn(text)
        assert warm.similar == fresh.similar
        assert warm.similar_statements == tuple(Gitmem.open(repo).get(i).content for i in warm.similar)
        found_any = found_any or bool(warm.similar)
    assert found_any


def test_a_damaged_index_is_refused_reported_and_made_again(repo):
    learned_repo(repo)
    Gitmem.open(repo).learn("Queue retries: 5 attempts at most")
    files = cache_dir(Store.discover(repo))
    newest = cache_glob(files, "statements")[0]
    newest.write_bytes(newest.read_bytes()[:-3])
    gm = Gitmem.open(repo)
    result = gm.learn("Queue retry policy: 7 attempts")  # compared with the newest index trusted
    assert result.similar and set(result.similar) <= set(live_statements(repo))
    notices = [n.reason for n in gm.records.cache.take_notices()]
    assert any(newest.key[:40] in n and "damaged" in n for n in notices)
    Gitmem.open(repo).wake()  # a reader makes the tip's table; its index is made from it
    assert Gitmem.open(repo).records.latest_statements()[1].statements() == live_statements(repo)
    text = "Queue retries are capped at 7 attempts"
    expected = find_similar(text, sorted(live_statements(repo).items()))
    assert Gitmem.open(repo).learn(text).similar == tuple(expected)


def test_an_index_of_another_version_is_rebuilt_as_one_of_an_older_gitmem(repo):
    learned_repo(repo)
    Gitmem.open(repo).learn("Queue retries: 5 attempts at most")
    files = cache_dir(Store.discover(repo))
    newest = cache_glob(files, "statements")[0]
    newest.write_payload({**newest.read_payload(), "version": "2"})
    gm = Gitmem.open(repo)
    gm.wake()  # the tip's table; its index is made from it
    assert gm.records.latest_statements()[1].statements() == live_statements(repo)
    notices = [n.reason for n in gm.records.cache.take_notices()]
    assert any(newest.key[:40] in n and "another version" in n for n in notices)


def test_each_write_of_a_kind_keeps_only_its_newest_memos(tmp_path):
    from gitmem.cache.db import KEEP, CacheDB

    db = CacheDB(tmp_path / "cache")
    for kind in ("table", "statements", "recall", "write"):
        for n in range(KEEP[kind] + 3):  # written in this order: the last is the newest
            db.put(kind, f"{kind}-{n}", b"x")
    db.put("persona", "", b"x")
    for kind in ("table", "statements", "recall", "write"):
        assert db.keys(kind) == [f"{kind}-{n}" for n in reversed(range(3, KEEP[kind] + 3))]
    assert db.get("persona", "") == b"x"
