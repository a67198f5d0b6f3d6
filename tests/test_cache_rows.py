"""One cache row per record blob: a write saves the rows it made, a reader parses only blobs without one.

Counted through :attr:`gitmem.cache.RecordCache.parses` (the blobs a process parsed) and the
database's ``record`` table, never by timing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.store import Store
from tests.conftest import cache_rows, clone, commit_file, legacy_records
from tests.test_incremental import reads


def snapshot_of(repo: Path) -> dict:
    snap = Gitmem.open(repo).snapshot()
    return {i: (m.model_dump(mode="json"), m.blob_id) for i, m in snap.records.items()}


def cold_snapshot_of(repo: Path, where: Path) -> dict:
    """The snapshot a cold cache gives, read from a copy of ``repo`` (``repo``'s cache is kept)."""
    shutil.copytree(repo, where)
    shutil.rmtree(cache_dir(Store.discover(where)), ignore_errors=True)
    return snapshot_of(where)


def test_a_learn_saves_exactly_its_blobs_row_and_the_next_reader_parses_no_yaml(repo, tmp_path):
    gm = Gitmem.open(repo)
    for i in range(5):
        gm.learn(f"The ingest worker {i} retries uploads")
    Gitmem.open(repo).wake()  # the tip's table is saved
    root = cache_dir(gm.store)
    before = cache_rows(root)
    learned = Gitmem.open(repo).learn("The exporter flushes metrics every ten seconds").memory
    store = Store.discover(repo)
    blob = store.entries(store.tip())[learned.id]
    assert {b: i for b, i in cache_rows(root).items() if b not in before} == {blob: learned.id}
    reader = Gitmem.open(repo)
    reader.wake()
    reader.recall("exporter metrics")
    snap = reader.snapshot()
    assert reader.records.cache.parses == 0  # no YAML read: every row was saved by a write
    assert "fact" in learned.id and snap.records[learned.id].content.startswith("The exporter")
    assert {i: (m.model_dump(mode="json"), m.blob_id) for i, m in snap.records.items()} \
        == cold_snapshot_of(repo, tmp_path / "cold")


def test_a_tree_fetched_from_another_clone_is_read_by_parsing_only_the_new_blobs(origin, tmp_path):
    mine, theirs = clone(origin, "mine"), clone(origin, "theirs")
    a = Gitmem.open(mine)
    for i in range(6):
        a.learn(f"Mine: the queue retries job {i}")
    a.sync()
    Gitmem.open(theirs).sync()
    Gitmem.open(theirs).wake()  # their cache holds the table of the tree they fetched
    a = Gitmem.open(mine)
    a.learn("Mine: the exporter flushes metrics")
    a.learn("Mine: the importer retries uploads")
    a.sync()
    b = Gitmem.open(theirs)
    b.sync()  # a fast-forward to a tree made elsewhere: no row of its two new blobs here
    assert b.store.tip() == Gitmem.open(mine).store.tip()
    reader = Gitmem.open(theirs)
    reader.wake()
    assert reader.records.cache.parses == 2  # the two new blobs, not the whole tree
    # A table's parse saves no full record (the table holds the hot fields): the first full
    # read of every record reads them from git and saves them; the next one parses none.
    assert sum("Mine:" in m.content for m in Gitmem.open(theirs).snapshot().records.values()) == 8
    again = Gitmem.open(theirs)
    snap = again.snapshot()
    assert again.records.cache.parses == 0
    assert sum("Mine:" in m.content for m in snap.records.values()) == 8
    assert snapshot_of(theirs) == cold_snapshot_of(theirs, tmp_path / "cold")


def test_warm_reads_equal_cold_reads_through_learn_forget_verify_and_import(repo, tmp_path):
    gm = Gitmem.open(repo)
    ids = [gm.learn(f"The billing worker {i} batches invoices", file="src/app.py#L1-L2").memory.id
           for i in range(4)]
    reads(repo)  # warm

    def learn() -> None:
        Gitmem.open(repo).learn("The retry policy gives up after 2047 attempts")

    def forget() -> None:
        Gitmem.open(repo).forget(ids[0])

    def verify() -> None:
        commit_file(repo, "src/app.py", "".join(f"changed {i}\n" for i in range(1, 30)), "rewrite")
        assert Gitmem.open(repo).verify().commit is not None

    def import_() -> None:
        assert Gitmem.open(repo).import_legacy([legacy_records(tmp_path / "legacy", 3)]).commit is not None

    for n, step in enumerate((learn, forget, verify, import_, learn)):
        step()
        warm = reads(repo)  # the cache of every step before it kept
        cold = tmp_path / f"cold-{n}"
        shutil.copytree(repo, cold)
        shutil.rmtree(cache_dir(Store.discover(cold)), ignore_errors=True)
        assert warm == reads(cold), step.__name__


def test_a_table_derived_after_a_learn_is_saved_when_its_tree_is_read_again_or_warmed(repo):
    from tests.conftest import cache_entry

    gm = Gitmem.open(repo)
    gm.learn("The queue retries failed jobs with exponential backoff")
    gm.snapshot()  # the first tree: built from the blobs, saved at once
    root = cache_dir(Store.discover(repo))

    def table_saved() -> bool:
        store = Store.discover(repo)
        return cache_entry(root, "table", store.subtree_id(store.tip(), "memories")).exists()

    assert table_saved()
    Gitmem.open(repo).learn("Billing worker batches invoices every night")
    Gitmem.open(repo).snapshot()
    assert not table_saved()  # derived from the saved one by one record: not worth a save yet
    assert Gitmem.open(repo).snapshot().records == Gitmem.open(repo).snapshot().records
    assert table_saved()  # asked again: saved
    Gitmem.open(repo).learn("Always run the migrations before the tests")
    Gitmem.open(repo).warm()
    assert table_saved()  # a warm-up saves what it builds at once
