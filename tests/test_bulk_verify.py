"""A verify that rewrites hundreds of records: one commit of what the record writer gives, on real git.

Such a verify writes each new record as a blob as soon as its verdict is applied and keeps
only its row (``gitmem.api.verify._Rewrites``); the new tree's table is built from the
parent's rows and those rows. These tests compare what it commits with what the writer
makes of each record on its own, race it with another writer, and read after it.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

import gitmem.cache.records
from gitmem import codec
from gitmem.api import Gitmem
from gitmem.api.status_results import StatusRow
from gitmem.cache import MemoryView, cache_dir
from gitmem.cache.reader import record_path
from gitmem.cache.records import HANDED_ROWS
from gitmem.errors import RefConflict
from gitmem.record.limits import MAX_RECORD_BYTES
from gitmem.store import Mutation, Store
from tests.conftest import add_filler_memories, cache_entry, commit_file, git
from tests.test_incremental import cold_reads, reads

NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def bulk(repo) -> Path:
    """600 memories anchored to 20 files, 15 of which were rewritten since; a few left alone.

    A verify rewrites every filler record (stale, or fresh and moved to HEAD) and leaves
    the refuted one and those learned at HEAD as they are.
    """
    add_filler_memories(repo, 600, files=20)
    gm = Gitmem.open(repo)
    refuted = sorted(gm.records.table(gm.store.tip())[0].ids)[0]
    gm.refute(refuted, "no longer true")
    for n in range(15):
        commit_file(repo, f"lib/m{n:02d}.py", "".join(f"def g{i}(): return {i}\n" for i in range(30)),
                    f"rewrite m{n}")
    for n in range(3):
        gm.learn(f"Module {n} was rewritten to plain functions", file=f"lib/m{n:02d}.py")
    return repo


def _verdicts(repo: Path) -> dict[str, StatusRow]:
    """Each memory's row of a check that writes nothing; ``memory``: the record as verify would write it."""
    return {r.memory_id: r for r in Gitmem.open(repo).verify(write=False, now=NOW).rows}


def _as_written(expected, written):
    """``expected`` with the change stamps of ``written``: they hold the wall-clock time of the write."""
    return expected.model_copy(update={"updated_at": written.updated_at, "changed_at": written.changed_at})


def test_a_verify_that_rewrites_many_records_makes_one_commit_of_what_the_record_writer_gives(bulk):
    store = Store.discover(bulk)
    before_tip = store.tip()
    before = store.entries(before_tip)
    expected = _verdicts(bulk)
    changed = {i for i, r in expected.items() if r.changed}
    assert len(changed) > HANDED_ROWS and len(changed) < len(expected)

    outcome = Gitmem.open(bulk).verify(now=NOW, full_records=False)

    after_tip = store.tip()
    assert outcome.commit is not None and outcome.commit.sha == after_tip
    assert git(bulk, "rev-list", f"{before_tip}..{after_tip}").split() == [after_tip]
    assert outcome.commit.parents == (before_tip,)
    after = store.entries(after_tip)
    assert {i for i in after if after[i] != before.get(i)} == changed and after.keys() == before.keys()
    for memory_id in changed:
        data = store.read_blob(after[memory_id])
        written = codec.load(data, memory_id)
        # The bytes the round-trip writer makes of the stored record and the new verdict, alone.
        want = _as_written(expected[memory_id].memory, written)
        assert data == codec.update(store.read_blob(before[memory_id]), want), memory_id
    assert [(r.memory_id, r.status, r.reason, r.changed, r.weight, r.new_ref, r.moved, r.old_status)
            for r in outcome.rows] == \
        [(r.memory_id, r.status, r.reason, r.changed, r.weight, r.new_ref, r.moved, r.old_status)
         for r in expected.values()]
    # A rewritten row shows the record as written, read-only.
    for row in outcome.rows:
        if row.changed:
            assert isinstance(row.memory, MemoryView) and row.memory.blob_id == after[row.memory_id]
            written = codec.load(store.read_blob(after[row.memory_id]), row.memory_id)
            assert (row.memory.status, row.memory.decay.reason, row.memory.provenance.git_sha,
                    row.memory.provenance.context_ref, row.memory.last_verified_at) == \
                (written.status, written.decay.reason, written.provenance.git_sha,
                 written.provenance.context_ref, written.last_verified_at)
    message = git(bulk, "log", "-1", "--format=%B", after_tip)
    # The counts are those `tur verify` prints (every memory checked); then what was rewritten.
    printed = ", ".join(f"{n} {s}" for s, n in outcome.counts().items())
    assert message.startswith(f"verify: {printed}\n\n{len(changed)} records rewritten")
    assert len([line for line in message.splitlines() if line.split(":")[0] in changed]) == len(changed)


def test_a_verify_that_rewrites_many_records_reports_progress_gives_stored_records_and_leaves_nothing(bulk):
    seen: list[tuple[int, int]] = []
    gm = Gitmem.open(bulk)
    outcome = gm.verify(now=NOW, progress=lambda done, total: seen.append((done, total)))
    assert outcome.commit is not None
    # Full records (the default) of the records rewritten, bound to the blobs they are stored as.
    after = Store.discover(bulk).entries(outcome.commit.sha)
    assert all(r.memory.blob_id == after[r.memory_id] for r in outcome.rows if r.changed)
    assert seen and seen[-1] == (len(outcome.rows), len(outcome.rows))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    again = Gitmem.open(bulk).verify(now=NOW)
    assert again.commit is None and not any(r.changed for r in again.rows)


def test_reads_after_a_verify_that_rewrites_many_records_equal_a_cold_read(bulk):
    Gitmem.open(bulk).verify(now=NOW)
    tree = Store.discover(bulk).subtree_id(Store.discover(bulk).tip(), "memories")
    assert cache_entry(cache_dir(Store.discover(bulk)), "table", tree).exists()
    assert reads(bulk) == cold_reads(bulk)


def test_a_verify_on_a_warm_cache_parses_no_record_to_cache_the_tree_it_wrote(bulk, monkeypatch):
    reads(bulk)  # the table of the tree verify judges is cached

    def no_parse(store, memory_id, blob_id):
        raise AssertionError(f"{memory_id} was parsed")

    monkeypatch.setattr(gitmem.cache.records, "parse_record", no_parse)
    assert Gitmem.open(bulk).verify(now=NOW).commit is not None
    store = Store.discover(bulk)
    tree = store.subtree_id(store.tip(), "memories")
    assert cache_entry(cache_dir(store), "table", tree).exists()
    monkeypatch.undo()
    assert reads(bulk) == cold_reads(bulk)


def _racing(repo: Path, gm: Gitmem, race, attempts: int = 40) -> list[str | None]:
    """Make ``gm``'s next write race ``race()``: run after each build, before the ref is swapped.

    Returns the tips the builds saw, filled in as they run.
    """
    transact = gm.store.transact
    tips: list[str | None] = []

    def racing_transact(build, **kwargs):
        def build_then_race(tip):
            mutation = build(tip)
            tips.append(tip)
            race(len(tips))
            return mutation

        return transact(build_then_race, **{**kwargs, "attempts": attempts})

    gm.store.transact = racing_transact
    return tips


def test_a_verify_that_rewrites_many_records_racing_another_writer_loses_nothing(bulk):
    store = Store.discover(bulk)
    expected = _verdicts(bulk)
    changed = sorted(i for i, r in expected.items() if r.changed)
    refuted, forgotten = changed[10], changed[20]
    learned: list[str] = []

    def race(attempt: int) -> None:
        if attempt == 1:  # another process writes between the build and the swap
            other = Gitmem.open(bulk)
            other.refute(refuted, "refuted by another process meanwhile")
            other.forget(forgotten)
            learned.append(other.learn("Learned by another process meanwhile").memory.id)

    gm = Gitmem.open(bulk)
    tips = _racing(bulk, gm, race)
    judged = store.tip()
    outcome = gm.verify(now=NOW, full_records=False)

    assert len(tips) == 2 and tips[0] == judged and tips[1] != judged  # built again on the new tip
    final = store.tip()
    assert outcome.commit is not None and outcome.commit.sha == final
    assert outcome.commit.parents == (tips[1],)
    raced, after = store.entries(tips[1]), store.entries(final)
    assert after[refuted] == raced[refuted]  # the concurrent edit wins
    assert forgotten not in after and learned[0] in after
    assert {i for i in after if after[i] != raced.get(i)} == set(changed) - {refuted, forgotten}
    for memory_id in set(changed) - {refuted, forgotten}:
        written = codec.load(store.read_blob(after[memory_id]), memory_id)
        want = _as_written(expected[memory_id].memory, written)
        assert store.read_blob(after[memory_id]) == codec.update(store.read_blob(raced[memory_id]), want)
    assert reads(bulk) == cold_reads(bulk)


def test_a_verify_that_rewrites_many_records_and_cannot_commit_changes_nothing(bulk):
    store = Store.discover(bulk)
    gm = Gitmem.open(bulk)
    reads(bulk)
    tips = _racing(bulk, gm, lambda attempt: Gitmem.open(bulk).learn(f"Another process, write {attempt}"),
                   attempts=3)
    with pytest.raises(RefConflict):
        gm.verify(now=NOW)
    assert len(tips) == 3
    # The ref holds the other writer's commits and no verify; no file is left in the cache.
    log = git(bulk, "log", "--format=%s", "refs/tur/memories").splitlines()
    assert log[0].endswith("Another process, write 3") and not any(s.startswith("verify") for s in log)
    assert not [p.name for p in cache_dir(store).iterdir() if p.name.startswith(".")]
    assert reads(bulk) == cold_reads(bulk)
    # Nothing is half-recorded: the next verify records every verdict, then none is left.
    expected = _verdicts(bulk)
    outcome = Gitmem.open(bulk).verify(now=NOW)
    assert outcome.commit is not None
    assert {r.memory_id for r in outcome.rows if r.changed} == {i for i, r in expected.items() if r.changed}
    assert reads(bulk) == cold_reads(bulk)
    assert Gitmem.open(bulk).verify(now=NOW).commit is None


def test_a_verify_of_records_too_large_to_rewrite_leaves_them_and_writes_the_others(bulk):
    store = Store.discover(bulk)
    big = sorted(i for i, r in _verdicts(bulk).items() if r.changed)[5]
    # A record at the size limit: the verdict would make it larger, so it is not written.
    data = store.read_blob(store.entries(store.tip())[big])
    grown = data + b"extra_notes: " + b"x" * (MAX_RECORD_BYTES - len(data) - 20) + b"\n"
    assert MAX_RECORD_BYTES - 10 < len(grown) <= MAX_RECORD_BYTES
    store.transact(lambda tip: Mutation({record_path(big): grown}, "a large record"))
    before = store.entries(store.tip())
    outcome = Gitmem.open(bulk).verify(now=NOW)
    after = store.entries(store.tip())
    assert outcome.commit is not None and after[big] == before[big]
    assert next(r for r in outcome.rows if r.memory_id == big).changed
    assert sum(1 for i in after if after[i] != before[i]) > HANDED_ROWS
    assert reads(bulk) == cold_reads(bulk)


def test_a_verify_that_rewrites_many_records_where_the_cache_cannot_be_written_commits_the_same(bulk):
    store = Store.discover(bulk)
    expected = _verdicts(bulk)
    before = store.entries(store.tip())
    root = cache_dir(store)
    shutil.rmtree(root)
    root.write_text("not a directory\n")  # nothing can be written there, not even a spool file
    outcome = Gitmem.open(bulk).verify(now=NOW, full_records=False)
    assert outcome.commit is not None
    after = store.entries(outcome.commit.sha)
    changed = {i for i, r in expected.items() if r.changed}
    assert {i for i in after if after[i] != before[i]} == changed
    for memory_id in changed:
        data = store.read_blob(after[memory_id])
        want = _as_written(expected[memory_id].memory, codec.load(data, memory_id))
        assert data == codec.update(store.read_blob(before[memory_id]), want)
    assert any("cannot write the gitmem cache" in str(s) for s in outcome.skipped)
    root.unlink()
    assert reads(bulk) == cold_reads(bulk)
