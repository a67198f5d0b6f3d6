"""Verify writes only what changed: run records, effective verification points, on real git.

A whole verify corroborates the memories whose anchored code it finds unchanged in
``runs/verify.yaml`` instead of rewriting them (docs/staleness.md, Runs). These tests run one
scenario of code commits and verifies, then compare every weight, commit distance, wake and
recall with the same store in which each corroborated record was rewritten as verify used to
(its ``git_sha`` moved to the run's HEAD, its ``last_verified_at`` to the run's time), and
count the objects a verify adds.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem import codec
from gitmem.api import Gitmem
from gitmem.cache.reader import record_path
from gitmem.record.decay import weight
from gitmem.record.runs import RUNS_PATH, parse_runs
from gitmem.store import Mutation, Store
from tests.conftest import clone, commit_file, git

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LATER = T0 + timedelta(days=40)
APP = "".join(f"line {i}\n" for i in range(1, 21))


def _objects(repo: Path, old: str, new: str) -> list[str]:
    """Objects reachable from ``new`` on the memory ref and not from ``old`` (what a write added)."""
    return git(repo, "rev-list", "--objects", new, f"^{old}").split("\n")[:-1]


def _points(gm: Gitmem) -> dict[str, tuple[str | None, datetime | None]]:
    return {row.memory_id: gm.verification_point(row.memory_id) for row in gm.status_view().rows}


class Reference:
    """Effective points as verify used to store them: every fresh anchored memory moved to each new HEAD."""

    def __init__(self, gm: Gitmem) -> None:
        self.points: dict[str, tuple[str | None, datetime | None]] = {}
        for row in gm.status_view().rows:
            m = row.memory
            self.points[m.id] = (m.provenance.git_sha if m.provenance else None, m.last_verified_at)

    def after(self, outcome, now: datetime) -> None:
        for row in outcome.rows:
            m = row.memory  # one learned since: its own point
            self.points.setdefault(m.id, (m.provenance.git_sha if m.provenance else None, m.last_verified_at))
            anchored = row.memory.provenance is not None and row.memory.provenance.context_ref
            if row.status.value == "fresh" and anchored and self.points[row.memory_id][0] != outcome.head:
                self.points[row.memory_id] = (outcome.head, now)


def _rewritten_copy(repo: Path, tmp: Path, points: dict[str, tuple[str | None, datetime | None]]) -> Path:
    """A copy of ``repo`` whose records hold ``points`` themselves, with no run record."""
    copy = tmp / "rewritten"
    shutil.copytree(repo, copy)
    shutil.rmtree(copy / ".git" / "tur", ignore_errors=True)
    store = Store.discover(copy)
    tip = store.tip()
    changes: dict[str, bytes | None] = {RUNS_PATH: None}
    for memory_id, blob in store.entries(tip).items():
        data = store.read_blob(blob)
        memory = codec.load(data, memory_id)
        sha, at = points[memory_id]
        if memory.provenance is not None and memory.decay is not None:
            memory = memory.model_copy(deep=True)
            memory.provenance.git_sha = sha
            memory.decay.last_verified_at = at
            changes[record_path(memory_id)] = codec.update(data, memory)
    store.transact(lambda _tip: Mutation(changes, "rewrite as verify used to"))
    return copy


@pytest.fixture
def scenario(repo, tmp_path):
    """Four anchored memories (one learned late) and one unanchored; code commits and verifies."""
    commit_file(repo, "lib/b.py", "def b():\n    return 1\n", "add b")
    gm = Gitmem.open(repo)
    ids = {
        "top": gm.learn("The first lines of app.py count up", file="src/app.py#L1-L3", now=T0).memory.id,
        "mid": gm.learn("Lines ten to twelve are the middle", type="insight", file="src/app.py#L10-L12",
                        now=T0).memory.id,
        "b": gm.learn("b returns one", file="lib/b.py", now=T0).memory.id,
        "pref": gm.learn("Prefer small functions", type="preference", now=T0).memory.id,
    }
    reference = Reference(Gitmem.open(repo))
    steps = []

    def verify(day: int) -> None:
        now = T0 + timedelta(days=day)
        g = Gitmem.open(repo)
        before = g.store.tip()
        outcome = g.verify(now=now, full_records=False)
        reference.after(outcome, now)
        steps.append((before, g.store.tip(), outcome))

    commit_file(repo, "README.md", "hello\n", "docs only")
    verify(1)  # 0: nothing anchored changed
    commit_file(repo, "src/app.py", "new 1\nnew 2\n" + APP, "insert two lines on top")
    verify(2)  # 1: both ranges shift: re-anchored
    commit_file(repo, "lib/b.py", "def b():\n    return 2\n", "b returns two")
    verify(3)  # 2: b is stale
    ids["end"] = Gitmem.open(repo).learn("The last lines of app.py end at twenty", file="src/app.py#L21-L22",
                                         now=T0 + timedelta(days=4)).memory.id
    commit_file(repo, "README.md", "hello again\n", "docs again")
    verify(5)  # 3: nothing anchored changed
    verify(6)  # 4: the same HEAD again
    return repo, ids, reference, steps, _rewritten_copy(repo, tmp_path, reference.points)


def test_a_verify_after_a_commit_touching_no_anchored_file_writes_only_the_run_record(scenario):
    repo, _, _, steps, _ = scenario
    before, after, outcome = steps[0]
    assert outcome.commit is not None and not any(r.changed for r in outcome.rows)
    added = _objects(repo, before, after)
    # the commit, its root tree, the runs directory and the run record: the memories tree is the same
    assert len(added) == 4
    assert git(repo, "diff", "--name-only", before, after).split() == [RUNS_PATH]
    runs = parse_runs(Store.discover(repo).read_path(after, RUNS_PATH) or b"")
    assert runs[0].head == outcome.head and runs[0].at == T0 + timedelta(days=1)
    assert runs[0].tree == git(repo, "rev-parse", f"{after}:memories").strip()


def test_a_verify_after_a_commit_touching_one_anchored_file_rewrites_only_its_memory(scenario):
    repo, ids, _, steps, _ = scenario
    before, after, outcome = steps[2]
    changed = git(repo, "diff", "--name-only", before, after).split()
    assert changed == sorted([record_path(ids["b"]), RUNS_PATH])
    assert [r.memory_id for r in outcome.rows if r.changed] == [ids["b"]]
    assert len(_objects(repo, before, after)) <= 7  # commit, root, memories, shard, record, runs, run


def test_the_message_of_a_verify_commit_counts_what_verify_prints(scenario):
    repo, _, _, steps, _ = scenario
    for before, after, outcome in steps:
        if after == before:
            continue
        printed = ", ".join(f"{n} {s}" for s, n in outcome.counts().items())
        assert git(repo, "log", "-1", "--format=%s", after).strip() == f"verify: {printed}"


def test_a_second_verify_at_the_same_head_writes_nothing(scenario):
    _, _, _, steps, _ = scenario
    before, after, outcome = steps[4]
    assert outcome.commit is None and before == after


def test_a_verify_after_an_unrelated_commit_judges_only_what_could_have_changed(scenario):
    repo, ids, _, _, _ = scenario
    commit_file(repo, "README.md", "third\n", "docs, third")
    gm = Gitmem.open(repo)
    checked: list[int] = []
    outcome = gm.verify(now=T0 + timedelta(days=7), progress=lambda done, total: checked.append(total))
    # top, mid and end are carried from the last run; b (stale) and pref (unanchored) are judged
    assert checked[-1] == 2
    assert {r.memory_id: r.status.value for r in outcome.rows} == {
        ids["top"]: "fresh", ids["mid"]: "fresh", ids["end"]: "fresh", ids["b"]: "stale",
        ids["pref"]: "fresh"}


def test_effective_points_are_those_verify_used_to_store(scenario):
    repo, ids, reference, steps, _ = scenario
    gm = Gitmem.open(repo)
    assert _points(gm) == reference.points
    # top was re-anchored (rewritten) at step 1, then corroborated by the run of step 3 only
    stored = gm.get(ids["top"])
    assert stored.provenance.git_sha == steps[1][2].head != steps[3][2].head
    assert reference.points[ids["top"]] == (steps[3][2].head, T0 + timedelta(days=5))
    # b went stale at step 2: its point is where the run of step 1 left it, not moved since
    assert reference.points[ids["b"]] == (steps[1][2].head, T0 + timedelta(days=2))


def test_status_weights_and_distances_equal_those_of_rewritten_records(scenario):
    repo, _, reference, _, copy = scenario
    ours = {r.memory_id: (r.status, r.weight, r.commit_distance)
            for r in Gitmem.open(repo).status_view(now=LATER).rows}
    theirs = {r.memory_id: (r.status, r.weight, r.commit_distance)
              for r in Gitmem.open(copy).status_view(now=LATER).rows}
    assert ours == theirs
    # and each weight is the formula's at the reference point
    gm = Gitmem.open(repo)
    for row in gm.status_view(now=LATER).rows:
        sha, at = reference.points[row.memory_id]
        memory = row.memory.model_copy(deep=True)
        if memory.decay is not None and memory.provenance is not None:
            memory.provenance.git_sha, memory.decay.last_verified_at = sha, at
        distance = int(git(repo, "rev-list", "--count", f"{sha}..HEAD")) if sha else None
        assert row.commit_distance == distance
        assert row.weight == weight(memory, LATER, distance, gm.settings.decay)


def test_wake_and_recall_equal_those_of_rewritten_records(scenario):
    repo, _, _, _, copy = scenario
    # at 25 days top shows only at the point the last run gave it (not at its record's)
    for now in (T0 + timedelta(days=25), LATER, LATER + timedelta(days=200)):
        ours, _ = Gitmem.open(repo).wake(now=now)
        theirs, _ = Gitmem.open(copy).wake(now=now)
        assert ours.text == theirs.text and "Prefer small functions" in ours.text
        # again from the saved plan
        assert Gitmem.open(repo).wake(now=now)[0].text == theirs.text
    def hits(where: Path, query: str) -> list:
        return [(h.memory.id, h.score, h.ranks) for h in Gitmem.open(where).recall(query, now=LATER)[0].hits]

    # three memories say "lines" (a fourth may come as their neighbour); recency orders equal
    # scores: end's point is a run's
    assert len(hits(repo, "lines")) >= 3
    for query in ("lines", "b returns", "the first lines", "small functions"):
        assert hits(repo, query) == hits(copy, query)


def test_an_edit_after_a_run_keeps_the_point_the_run_gave(scenario):
    repo, ids, reference, _, _ = scenario
    gm = Gitmem.open(repo)
    gm.edit(ids["top"], content="The first lines of app.py count up from one")
    assert Gitmem.open(repo).verification_point(ids["top"]) == reference.points[ids["top"]]


def test_two_clones_verify_runs_merge_the_same_way_on_sync(origin, tmp_path):
    alice, bob = clone(origin, "alice", "Alice"), clone(origin, "bob", "Bob")
    a = Gitmem.open(alice)
    a.learn("app.py counts lines", file="src/app.py#L1-L2", now=T0)
    a.sync()
    Gitmem.open(bob).sync()
    commit_file(alice, "README.md", "a\n", "alice docs")
    commit_file(bob, "NOTES.md", "b\n", "bob notes")
    Gitmem.open(alice).verify(now=T0 + timedelta(days=1))
    Gitmem.open(bob).verify(now=T0 + timedelta(days=2))
    Gitmem.open(alice).sync()
    Gitmem.open(bob).sync()
    Gitmem.open(alice).sync()
    sa, sb = Store.discover(alice), Store.discover(bob)
    assert sa.tip() == sb.tip()
    runs = parse_runs(sa.read_path(sa.tip(), RUNS_PATH) or b"")
    assert [r.at for r in runs] == [T0 + timedelta(days=2), T0 + timedelta(days=1)]
    heads = [git(clone_dir, "rev-parse", "HEAD").strip() for clone_dir in (bob, alice)]
    assert [r.head for r in runs] == heads
    memory_id = Gitmem.open(alice).status_view().rows[0].memory_id
    # each clone sees the run at its own HEAD... and the newest run's point, as the rewrite would give
    assert Gitmem.open(alice).verification_point(memory_id) == Gitmem.open(bob).verification_point(memory_id)


def test_after_an_empty_commit_a_stale_memory_is_carried_with_its_verdict(scenario):
    repo, ids, _, _, _ = scenario
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    checked: list[int] = []
    outcome = Gitmem.open(repo).verify(now=T0 + timedelta(days=8),
                                       progress=lambda done, total: checked.append(total))
    assert checked[-1] == 1  # only the unanchored one: HEAD's tree is the last run's
    row = next(r for r in outcome.rows if r.memory_id == ids["b"])
    assert (row.status.value, row.changed) == ("stale", False)
    assert row.reason == Gitmem.open(repo).get(ids["b"]).decay.reason
    observed = row.memory.provenance.git_sha
    assert row.commit_distance == int(git(repo, "rev-list", "--count", f"{observed}..HEAD"))


def test_a_memory_stale_by_commit_distance_is_not_rewritten_for_the_count_alone(repo):
    gm = Gitmem.open(repo)
    memory_id = gm.learn("The team ships on Fridays", now=T0).memory.id
    for n in range(21):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"empty {n}")
    first = Gitmem.open(repo).verify(now=T0)
    assert [r.reason for r in first.rows if r.memory_id == memory_id][0].startswith("21 commits since")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one more")
    tip = Store.discover(repo).tip()
    again = Gitmem.open(repo).verify(now=T0)
    row = next(r for r in again.rows if r.memory_id == memory_id)
    assert row.status.value == "stale" and row.reason.startswith("22 commits since") and not row.changed
    assert Store.discover(repo).tip() == tip  # nothing to record
    assert Gitmem.open(repo).get(memory_id).decay.reason.startswith("21 commits since")
