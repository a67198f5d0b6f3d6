"""A forgotten memory stays forgotten: ``tur doctor --fix`` never moves a stray copy into its place.

The doctor learns that an id was forgotten from the memory ref's history (the newest commit
that changed the record's own path is a forget that removed it), so a same-id record in
another shard (planted with git's plumbing, as a hostile or broken writer would) is removed,
and the forget is never undone by a repair.
"""

from __future__ import annotations

import json

import pytest

from gitmem.cache.reader import record_path
from tests.conftest import git, memory_ref, tur
from tests.test_integrity import blob, plant, tree_paths


@pytest.mark.parametrize("copy", ["hostile text", "identical copy"])
def test_doctor_fix_after_forget_removes_the_stray_and_never_resurrects(repo, copy):
    mid = tur(repo, "learn", "Workers ack a job only after its commit").out.strip()
    real = blob(repo, record_path(mid))
    stray = real if copy == "identical copy" else real.replace(b"only after its commit", b"before it runs")
    planted = f"memories/zz/{mid}.yaml"
    plant(repo, ("100644", planted, stray))
    assert tur(repo, "forget", mid).code == 0
    forget_commit = memory_ref(repo)

    listed = tur(repo, "doctor")
    assert listed.code == 1 and f"remove {planted} ({mid} was forgotten in {forget_commit[:12]}" in listed.err
    assert f"would: move {planted}" not in listed.err

    fixed = tur(repo, "doctor", "--fix")
    assert fixed.code == 0 and f"fixed: remove {planted}" in fixed.out
    assert tree_paths(repo) == {".gitmem"}
    assert json.loads(tur(repo, "list", "--format", "json").out) == []
    woke = tur(repo, "wake")
    assert "before it runs" not in woke.out and "only after its commit" not in woke.out
    one_err = tur(repo, "show", mid)
    assert one_err.code != 0 and f"no memory with id {mid!r}" in one_err.err
    # Nothing is lost: the forgotten record and the stray both stay in the ref's history.
    assert git(repo, "cat-file", "-t", f"{forget_commit}~1:{record_path(mid)}").strip() == "blob"


def test_forget_by_path_counts_as_forgotten_too(repo):
    mid = tur(repo, "learn", "The scheduler runs every minute").out.strip()
    data = blob(repo, record_path(mid))
    planted = f"memories/00/{mid}.yaml"
    plant(repo, ("100644", planted, data))
    assert tur(repo, "forget", "--path", record_path(mid)).code == 0
    fixed = tur(repo, "doctor", "--fix")
    assert fixed.code == 0 and f"{mid} was forgotten in" in fixed.out
    assert record_path(mid) not in tree_paths(repo) and planted not in tree_paths(repo)


def test_a_record_moved_by_plumbing_is_still_moved_back(repo):
    """Only a forget blocks the move: a record git's plumbing put in the wrong shard comes back."""
    mid = tur(repo, "learn", "The queue keeps a write-ahead log").out.strip()
    data = blob(repo, record_path(mid))
    wrong = f"memories/00/{mid}.yaml"
    plant(repo, ("100644", record_path(mid), None), ("100644", wrong, data), message="reshuffle")
    fixed = tur(repo, "doctor", "--fix")
    assert fixed.code == 0 and f"fixed: move {wrong} to {record_path(mid)}" in fixed.out
    assert "write-ahead log" in tur(repo, "show", mid).out


def test_a_memory_learned_again_after_forget_is_not_touched_by_doctor(repo):
    mid = tur(repo, "learn", "Releases are cut on Tuesdays").out.strip()
    assert tur(repo, "forget", mid).code == 0
    assert tur(repo, "learn", "Releases are cut on Tuesdays").out.strip() == mid
    assert tur(repo, "doctor").code == 0
    assert "Tuesdays" in tur(repo, "show", mid).out
