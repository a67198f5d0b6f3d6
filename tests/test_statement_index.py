"""The statement rows give learn's near-duplicate check the notes a full scan gives (GitHub issues 16, 26).

``learn`` compares a new statement with the live memories of the newest tree the cache
knows. It looks them up in the cache database's statement rows (postings by term and size,
anchors by path and first line), which each write changes row by row, instead of analysing
every memory or parsing every anchor: the ids, and their order, must be those
:func:`find_similar` and a comparison of every anchor give over the same memories.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from contextlib import closing

import pytest

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.cache.db import CacheDB
from gitmem.cache.statements import StatementRows
from gitmem.context.similarity import find_similar
from gitmem.record.anchors import InvalidAnchor, parse_anchor
from gitmem.store import Store
from gitmem.vocabulary import Status
from tests.conftest import cache_entry, commit_file

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


def rows_of(tmp_path, pairs, refs=None, tree="tree-0") -> StatementRows:
    """Statement rows in a new cache database, built from ``pairs`` (and their anchors)."""
    rows = StatementRows(CacheDB(tmp_path / "cache"))
    refs = refs or {}
    rows.build(tree, ((i, (t, refs.get(i))) for i, t in pairs))
    return rows


def test_the_rows_find_the_ids_a_full_scan_finds_in_the_same_order(tmp_path):
    pairs = corpus(400, seed=1)
    rows = rows_of(tmp_path, pairs)
    found_any = False
    for query in queries(pairs, seed=2):
        for limit in (1, 3, 50):
            expected = find_similar(query, pairs, limit=limit)
            assert rows.similar(query, limit=limit) == expected, query
            found_any = found_any or bool(expected)
    assert found_any


def test_the_rows_find_short_and_long_statements_sharing_few_common_terms(tmp_path):
    # Statements of every size sharing the common terms "queue" and "retri": the prefix of
    # rare terms must not miss a short one that shares only those.
    rnd = random.Random(20)
    filler = [f"word{k}" for k in range(60)]
    pairs = [(f"fact-{n:08x}", " ".join(["queue", "retry", *rnd.sample(filler, rnd.randint(0, 12))]))
             for n in range(300)]
    rows = rows_of(tmp_path, pairs)
    for query in ("queue retry", "queue retry word1", "queue retry word1 word2 word3 word4 word5",
                  " ".join(["queue", "retry", *filler[:20]])):
        assert rows.similar(query, limit=500) == find_similar(query, pairs, limit=500), query
    assert rows.similar("queue retry", limit=500)


@pytest.mark.parametrize("hits", [1, 2, 3, 5])
def test_asking_candidates_for_more_prefix_terms_finds_the_same_ids(tmp_path, hits):
    # However many of the rarest terms a candidate must hold, one the scan finds holds them.
    pairs = corpus(300, seed=22)
    rows = rows_of(tmp_path, pairs)
    for query in [*queries(pairs, seed=23), "queue retry policy caps retries at 5 attempts"]:
        assert rows.similar(query, limit=50, hits=hits) == find_similar(query, pairs, limit=50), query


def test_the_rows_leave_out_skipped_ids_as_the_scan_leaves_out_their_statements(tmp_path):
    pairs = corpus(200, seed=3)
    rows = rows_of(tmp_path, pairs)
    skip = {i for i, _ in pairs[::3]}
    for query in queries(pairs, seed=4):
        expected = find_similar(query, [(i, t) for i, t in pairs if i not in skip])
        assert rows.similar(query, skip=skip) == expected


def test_rows_changed_by_writes_find_what_rows_built_from_the_changed_statements_find(tmp_path):
    pairs = corpus(300, seed=5)
    rows = rows_of(tmp_path / "a", pairs)
    rnd = random.Random(6)
    current = dict(pairs)
    for step in range(6):
        changes: dict[str, tuple[str, str | None] | None] = {}
        for memory_id in rnd.sample(sorted(current), 10):
            text = f"The queue retry policy {rnd.randint(1, 9)}"
            changes[memory_id] = None if rnd.random() < 0.4 else (text, None)
        changes[f"fact-new{step}"] = (f"API port is now {9100 + step}", None)
        changes["fact-unknown"] = None
        rows.after_write(f"tree-{step}", f"tree-{step + 1}", changes)
        for memory_id, entry in changes.items():
            if entry is None:
                current.pop(memory_id, None)
            else:
                current[memory_id] = entry[0]
    assert rows.tree() == "tree-6"
    built = rows_of(tmp_path / "b", sorted(current.items()))
    assert rows.statements() == built.statements() == current
    for query in queries(pairs, seed=7):
        assert rows.similar(query) == built.similar(query) == find_similar(query, current.items())


def test_a_write_built_on_another_tree_leaves_the_rows_as_they_are(tmp_path):
    pairs = corpus(20, seed=8)
    rows = rows_of(tmp_path, pairs)
    rows.after_write("tree-other", "tree-next", {"fact-new": ("API port is 1", None)})
    assert rows.tree() == "tree-0" and rows.statements() == dict(pairs)


def test_a_statement_with_a_lone_surrogate_is_kept_and_compared_as_written(tmp_path):
    # A record read from an escaped YAML string ("\\ud800") may hold one; SQLite stores UTF-8.
    pairs = [("fact-00000001", "API port is 8090 \ud800"), ("fact-00000002", "API moved to port 9090")]
    rows = rows_of(tmp_path, pairs, {"fact-00000001": "src/\udcff.py#L1-L2"})
    assert rows.statements() == dict(pairs)
    assert rows.similar("API port is 9090") == find_similar("API port is 9090", pairs)
    assert rows.anchored("src/\udcff.py#L2-L5") == ["fact-00000001"]
    assert rows.statements_of("tree-0", ["fact-00000001", "fact-x"]) == (pairs[0][1], None)


def overlapping(ref: str, anchors: dict[str, str]) -> list[str]:
    """Ids whose anchor meets ``ref``'s, by comparing with every anchor (what learn did)."""
    def parsed(text):
        try:
            return parse_anchor(text)
        except InvalidAnchor:
            return None

    mine = parsed(ref)
    out = []
    for memory_id, other_ref in sorted(anchors.items()):
        other = parsed(other_ref)
        if mine is None or other is None or mine.path != other.path:
            continue
        if None in (mine.start, mine.end, other.start, other.end):
            if None in (mine.start, mine.end) and None in (other.start, other.end):
                out.append(memory_id)
        elif mine.start <= other.end and other.start <= mine.end:
            out.append(memory_id)
    return out


def random_anchors(rnd: random.Random, ids: list[str]) -> dict[str, str]:
    anchors = {}
    for memory_id in ids:
        path = rnd.choice(["src/a.py", "src/b.py", "docs/c.md"])
        roll = rnd.random()
        if roll < 0.15:
            anchors[memory_id] = path
        elif roll < 0.2:
            anchors[memory_id] = f"{path}#L9-L3"  # does not parse: meets nothing
        else:
            start = rnd.randint(1, 200)
            anchors[memory_id] = f"{path}#L{start}-L{start + rnd.choice([0, 1, 5, 30, 120])}"
    return anchors


def test_the_anchors_that_meet_a_new_one_are_those_a_comparison_with_every_anchor_finds(tmp_path):
    rnd = random.Random(9)
    pairs = corpus(500, seed=9)
    anchors = random_anchors(rnd, [i for i, _ in pairs if rnd.random() < 0.8])
    rows = rows_of(tmp_path, pairs, anchors)
    probes = ["src/a.py", "src/b.py#L5-L5", "docs/c.md#L150-L400", "src/z.py#L1-L9", "src/a.py#L9-L3",
              *(f"{rnd.choice(['src/a.py', 'src/b.py'])}#L{s}-L{s + rnd.randint(0, 40)}"
                for s in rnd.sample(range(1, 250), 30))]
    found_any = False
    for ref in probes:
        expected = overlapping(ref, anchors)
        assert rows.anchored(ref) == expected, ref
        found_any = found_any or bool(expected)
    assert found_any
    # after writes that move, add and drop anchors (a longer one than any before among them)
    current = dict(anchors)
    changes: dict[str, tuple[str, str | None] | None] = {}
    for memory_id in rnd.sample(sorted(anchors), 40):
        changes[memory_id] = None if rnd.random() < 0.3 else ("moved", f"src/a.py#L{rnd.randint(1, 50)}-L400")
    rows.after_write("tree-0", "tree-1", changes)
    for memory_id, entry in changes.items():
        current.pop(memory_id, None)
        if entry is not None:
            current[memory_id] = entry[1]
    skip = set(rnd.sample(sorted(current), 20))
    for ref in probes:
        assert rows.anchored(ref, skip) == [i for i in overlapping(ref, current) if i not in skip], ref


# -- through the read cache ---------------------------------------------------------------------

def live_statements(repo) -> dict[str, str]:
    """Id -> content of every memory not refuted, read from git (a new facade, a cold read)."""
    snap = Gitmem.open(repo).snapshot()
    return {i: m.content for i, m in snap.records.items() if m.status != Status.REFUTED}


def statement_rows(repo) -> dict[int, str]:
    """Row number -> memory id of every statement row, read from the database file."""
    with closing(sqlite3.connect(cache_dir(Store.discover(repo)) / "cache.sqlite")) as conn:
        return dict(conn.execute("SELECT row, id FROM statement").fetchall())


def test_each_write_moves_the_rows_to_its_tree_changing_only_the_rows_of_its_records(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090").memory.id
    retry = gm.learn("The queue retry policy caps retries at 5").memory.id
    gm.wake()  # a table is cached: learn now compares with it
    first = gm.learn("API moved to port 9090")
    assert first.similar == (old,)
    # writes by other processes move the rows by the records they change
    for step in (lambda g: g.learn("Queue retries: 5 attempts at most"),
                 lambda g: g.refute(retry, "now 7"),
                 lambda g: g.forget(old),
                 lambda g: g.learn("The queue retry policy caps retries at 7")):
        before = statement_rows(repo)
        g = Gitmem.open(repo)
        step(g)
        after = statement_rows(repo)
        # the rows of the other records are those of before, with their numbers
        assert len(set(before.items()) ^ set(after.items())) == 1
        tree = Store.discover(repo).subtree_id(g.store.tip(), "memories")
        assert Gitmem.open(repo).records.latest_statements() == (tree, live_statements(repo))
    expected = find_similar("Queue retry policy: 7 attempts", sorted(live_statements(repo).items()))
    third = Gitmem.open(repo).learn("Queue retry policy: 7 attempts")
    assert third.similar == tuple(expected)
    assert third.similar


def test_without_rows_they_are_built_from_the_latest_table_and_moved_to_a_newer_one(repo, tmp_path):
    gm = Gitmem.open(repo)
    for i in range(12):
        gm.learn(f"Job {i} of the nightly batch retries {i % 4} times")
    assert gm.records.latest_statements() is None  # no table cached: nothing to compare with
    gm.wake()
    assert Gitmem.open(repo).records.latest_statements()[1] == live_statements(repo)
    # records that reach the ref without a learn (an import): the rows follow the table a
    # reader saves of the new tree, by the records that differ
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for n in range(5):
        (legacy / f"m{n}.yaml").write_text(
            f'id: "concept-{n}"\ntype: fact\ncontent: "Imported job {n} retries"\n')
    Gitmem.open(repo).import_legacy([legacy])
    before = statement_rows(repo)
    Gitmem.open(repo).wake()
    Gitmem.open(repo).wake()  # a table derived cheaply is saved when its tree is asked again
    tree, statements = Gitmem.open(repo).records.latest_statements()
    assert tree == Store.discover(repo).subtree_id(Store.discover(repo).tip(), "memories")
    assert statements == live_statements(repo)
    assert set(before.items()) <= set(statement_rows(repo).items())  # moved, not built again


def test_a_learn_compares_through_the_rows_alone_reading_no_table(repo):
    learned_repo(repo)
    live = live_statements(repo)  # (a cold read: it saves a table, deleted below)
    added = Gitmem.open(repo).learn("Queue retries: 5 attempts at most").memory  # the rows move
    live[added.id] = added.content
    with closing(sqlite3.connect(cache_dir(Store.discover(repo)) / "cache.sqlite")) as conn:
        conn.execute("DELETE FROM memo WHERE kind = 'table'")  # no table to read, to build from
        conn.commit()
    text = "Queue retry policy: 7 attempts"
    expected = find_similar(text, sorted(live.items()))
    assert Gitmem.open(repo).learn(text).similar == tuple(expected)
    assert added.id in expected


def learned_repo(repo, statements=STATEMENTS) -> Gitmem:
    gm = Gitmem.open(repo)
    for text in statements:
        if text.strip() and len(text) > 1:
            gm.learn(text)
    gm.wake()  # a table is cached: learn now compares with it
    return gm


def test_a_learn_after_rows_moved_by_writes_names_what_a_cold_cache_names(repo, tmp_path):
    learned_repo(repo)
    for text in ("Queue retries: 5 attempts at most", "The API listens on port 9090 now"):
        Gitmem.open(repo).learn(text)  # each write moves the rows to its tree
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


def test_learn_names_what_comparing_with_every_anchor_and_statement_names(repo):
    lines = "".join(f"line {i}\n" for i in range(1, 121))
    commit_file(repo, "src/long.py", lines, "a longer file")
    rnd = random.Random(21)
    gm = Gitmem.open(repo)
    for n in range(40):
        start = rnd.randint(1, 110)
        spec = rnd.choice(["src/long.py", f"src/long.py#L{start}-L{start + rnd.randint(0, 10)}",
                           f"src/app.py#L{rnd.randint(1, 20)}"])
        gm.learn(f"Note {n} on the parser: {rnd.choice(STATEMENTS[:18])}", file=spec)
    gm.wake()
    for n, spec in enumerate(["src/long.py#L40-L60", "src/long.py", "src/app.py#L3-L9", "src/long.py#L1-L2"]):
        text = f"Note {100 + n} on the parser: the queue retry policy caps retries"
        snap = Gitmem.open(repo).snapshot()
        live = {i: m for i, m in snap.records.items() if m.status != Status.REFUTED}
        anchors = {i: m.provenance.context_ref for i, m in live.items()
                   if m.provenance and m.provenance.context_ref}
        on_lines = overlapping(spec, anchors)
        others = sorted((i, m.content) for i, m in live.items() if i not in on_lines)
        near = find_similar(text, others, limit=3)
        result = Gitmem.open(repo).learn(text, file=spec)
        assert result.similar == tuple([*on_lines, *near][:3]), spec
        assert result.similar_statements == tuple(live[i].content for i in result.similar)
        assert result.similar


def test_a_damaged_state_is_refused_reported_and_the_rows_built_again(repo):
    learned_repo(repo)
    Gitmem.open(repo).learn("Queue retries: 5 attempts at most")
    state = cache_entry(cache_dir(Store.discover(repo)), "statements", "")
    state.write_bytes(state.read_bytes()[:-3])
    gm = Gitmem.open(repo)
    text = "Queue retry policy: 7 attempts"
    result = gm.learn(text)  # compared with rows built again from the latest table
    notices = [n.reason for n in gm.records.cache.take_notices()]
    assert any("statements" in n and "damaged" in n for n in notices), notices
    assert result.similar and set(result.similar) <= set(live_statements(repo))
    Gitmem.open(repo).wake()
    Gitmem.open(repo).wake()  # the tip's table is saved; the rows move to it
    assert Gitmem.open(repo).records.latest_statements()[1] == live_statements(repo)
    text = "Queue retries are capped at 7 attempts"
    expected = find_similar(text, sorted(live_statements(repo).items()))
    assert Gitmem.open(repo).learn(text).similar == tuple(expected)


def test_rows_of_another_version_are_built_again_as_those_of_an_older_gitmem(repo):
    learned_repo(repo)
    Gitmem.open(repo).learn("Queue retries: 5 attempts at most")
    state = cache_entry(cache_dir(Store.discover(repo)), "statements", "")
    state.write_payload({**state.read_payload(), "version": "rows0"})
    gm = Gitmem.open(repo)
    gm.wake()
    assert gm.records.latest_statements()[1] == live_statements(repo)
    notices = [n.reason for n in gm.records.cache.take_notices()]
    assert any("statements" in n and "another version" in n for n in notices), notices


def test_each_write_of_a_kind_keeps_only_its_newest_memos(tmp_path):
    from gitmem.cache.db import KEEP

    db = CacheDB(tmp_path / "cache")
    for kind in ("table", "recall", "write"):
        for n in range(KEEP[kind] + 3):  # written in this order: the last is the newest
            db.put(kind, f"{kind}-{n}", b"x")
    db.put("persona", "", b"x")
    for kind in ("table", "recall", "write"):
        assert db.keys(kind) == [f"{kind}-{n}" for n in reversed(range(3, KEEP[kind] + 3))]
    assert db.get("persona", "") == b"x"
