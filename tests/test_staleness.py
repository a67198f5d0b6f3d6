"""Staleness on real repositories: moves, changes, renames, deletes, working tree, history."""

from __future__ import annotations

import marshal
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest

from gitmem.errors import EmptyRepository
from gitmem.record.anchors import anchor_fingerprint, fingerprint, parse_anchor
from gitmem.record.decay import DecayPolicy
from gitmem.record.models import Decay, Memory, Provenance, Refutation, Status
from gitmem.staleness.verdicts import UNSHALLOW_HINT, VerifyCache, apply_verdict, check
from gitmem.store.code import CodeHistory
from tests.conftest import commit_file, git

NOW = datetime(2026, 2, 1, tzinfo=UTC)
OBSERVED = datetime(2026, 1, 5, 10, tzinfo=UTC)
BODY = "".join(f"line {i}\n" for i in range(1, 21))


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def history(path: Path) -> CodeHistory:
    return CodeHistory(pygit2.Repository(str(path)))


def learn(repo: Path, ref: str | None, sha: str | None = None, n: int = 1,
          fp: str | None = "auto", kind: str = "fact") -> Memory:
    """A memory anchored at ``ref`` as observed at ``sha`` (default HEAD), fingerprinted."""
    sha = sha if sha is not None else head(repo)
    if fp == "auto" and ref is not None:
        anchor = parse_anchor(ref)
        data = subprocess.run(["git", "show", f"{sha}:{anchor.path}"], cwd=repo,
                              capture_output=True, check=True).stdout
        fp = anchor_fingerprint(anchor, data)
    return Memory(
        id=f"{kind}-{n:08x}",
        type=kind,
        content=f"memory number {n}",
        confidence=0.9,
        provenance=Provenance(observed_at=OBSERVED, git_sha=sha, context_ref=ref,
                              fingerprint=None if fp == "auto" else fp),
        decay=Decay(half_life_days=14, last_verified_at=OBSERVED),
    )


def verdict(repo: Path, memory: Memory, policy: DecayPolicy | None = None):
    report = check([memory], history(repo), policy)
    assert len(report.verdicts) == 1
    return report.verdicts[0]


def edit(repo: Path, path: str, fn) -> str:
    """Apply ``fn`` to the lines of ``path``, commit, return the new short SHA."""
    lines = (repo / path).read_text().splitlines(keepends=True)
    sha = commit_file(repo, path, "".join(fn(lines)))
    return sha[:7]


# -- line ranges that follow the code ------------------------------------------


def test_unchanged_memory_at_head_is_fresh_and_unchanged(repo):
    v = verdict(repo, learn(repo, "src/app.py#L3-L5"))
    assert (v.status, v.reason, v.changed, v.corroborated) == (Status.FRESH, None, False, True)
    assert v.new_context_ref == "src/app.py#L3-L5"
    assert v.commit_distance == 0 and v.observed_distance == 0


def test_lines_inserted_above_reanchor_the_range_and_stay_fresh(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["new a\n", "new b\n", "new c\n", *ls])
    v = verdict(repo, memory)
    assert v.status is Status.FRESH
    assert v.reason is None
    assert v.new_context_ref == "src/app.py#L6-L8"
    assert v.new_git_sha == head(repo)
    assert v.new_fingerprint == memory.provenance.fingerprint
    assert v.observed_distance == 1 and v.commit_distance == 0
    assert v.changed


def test_lines_removed_above_and_changed_below_reanchor_upwards(repo):
    memory = learn(repo, "src/app.py#L10-L12")
    edit(repo, "src/app.py", lambda ls: ls[4:15] + ["tail changed\n"])  # drop 1-4 and 16-20
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/app.py#L6-L8")


def test_a_changed_line_inside_the_range_is_stale_naming_commit_and_line(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["top\n", *ls])  # only moves it
    culprit = edit(repo, "src/app.py", lambda ls: [*ls[:4], "line 4 rewritten\n", *ls[5:]])
    commit_file(repo, "README", "unrelated\n")
    v = verdict(repo, memory)
    assert v.status is Status.STALE
    assert v.reason == f"line 4 changed in {culprit}"
    assert v.new_context_ref is None and v.new_git_sha is None
    assert v.last_text == "line 3\nline 4\nline 5"
    assert v.commit_distance == 3


def test_several_changed_lines_are_named_as_a_range(repo):
    memory = learn(repo, "src/app.py#L3-L7")
    culprit = edit(repo, "src/app.py", lambda ls: [*ls[:4], "x\n", "y\n", *ls[6:]])
    assert verdict(repo, memory).reason == f"lines 5-6 changed in {culprit}"


def test_lines_inserted_inside_the_range_make_it_stale(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    culprit = edit(repo, "src/app.py", lambda ls: [*ls[:3], "wedged\n", *ls[3:]])
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"lines 3-4 changed in {culprit}")


def test_a_block_moved_elsewhere_in_the_file_is_found_by_its_fingerprint(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ls[:2] + ls[5:] + ls[2:5])  # 3-5 moved to the end
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/app.py#L18-L20")


def test_stored_fingerprint_that_no_longer_matches_anywhere_loses_the_anchor(repo):
    memory = learn(repo, "src/app.py#L3-L5", fp=fingerprint(["not", "these", "lines"]))
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, "anchor lost")
    assert v.last_text == "line 3\nline 4\nline 5"


def test_whole_file_anchor_is_stale_when_its_blob_changes(repo):
    memory = learn(repo, "src/app.py")
    commit_file(repo, "other.py", "x = 1\n")
    assert verdict(repo, memory).status is Status.FRESH
    culprit = edit(repo, "src/app.py", lambda ls: [*ls, "line 21\n"])
    commit_file(repo, "other.py", "x = 2\n")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"changed in {culprit}")


def test_stale_verdict_keeps_the_reason_stable_on_the_next_run(repo):
    memory = learn(repo, "src/app.py#L1-L2")
    culprit = edit(repo, "src/app.py", lambda ls: ["changed\n", *ls[1:]])
    first = verdict(repo, memory)
    updated = apply_verdict(memory, first, NOW)
    assert updated.decay.reason == f"line 1 changed in {culprit}"
    assert updated.provenance.git_sha == memory.provenance.git_sha
    again = verdict(repo, updated)
    assert (again.status, again.changed) == (Status.STALE, False)


# -- renames and deletes --------------------------------------------------------


def test_renamed_file_moves_the_anchor_to_the_new_path(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    git(repo, "mv", "src/app.py", "src/main.py")
    git(repo, "commit", "-q", "-m", "rename")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/main.py#L3-L5")


def test_renamed_and_edited_file_maps_lines_through_the_rename(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    (repo / "lib").mkdir()
    git(repo, "mv", "src/app.py", "lib/core.py")
    (repo / "lib/core.py").write_text("header\n" + BODY)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rename and add header")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "lib/core.py#L4-L6")
    culprit = edit(repo, "lib/core.py", lambda ls: [*ls[:4], "gone\n", *ls[5:]])
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"line 4 changed in {culprit}")


def test_deleted_file_is_stale_naming_the_deleting_commit(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    commit_file(repo, "keep.txt", "k\n")
    edit(repo, "src/app.py", lambda ls: ["edited first\n", *ls])
    git(repo, "rm", "-q", "src/app.py")
    git(repo, "commit", "-q", "-m", "delete app")
    deleter = head(repo)[:7]
    commit_file(repo, "later.txt", "l\n")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"deleted in {deleter}")
    assert v.last_text == "line 3\nline 4\nline 5"


# -- working tree and index ------------------------------------------------------


def test_uncommitted_edit_of_anchored_lines_is_stale_until_reverted(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    path = repo / "src/app.py"
    path.write_text(BODY.replace("line 4\n", "line four\n"))
    v = verdict(repo, memory)
    # The committed verdict (what is recorded) is fresh; the uncommitted edit is local state.
    assert (v.status, v.reason, v.worktree) == (Status.FRESH, None, "working tree: line 4 modified")
    assert apply_verdict(memory, v, NOW).decay.staleness_status is Status.FRESH
    path.write_text(BODY)
    back = verdict(repo, memory)
    assert (back.status, back.reason, back.worktree) == (Status.FRESH, None, None)


def test_staged_edit_counts_even_when_the_working_tree_is_reverted(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    (repo / "src/app.py").write_text(BODY.replace("line 5\n", "line five\n"))
    git(repo, "add", "src/app.py")
    (repo / "src/app.py").write_text(BODY)
    v = verdict(repo, memory)
    assert (v.status, v.worktree) == (Status.FRESH, "index (staged): line 5 modified")


def test_uncommitted_edit_elsewhere_keeps_the_memory_fresh_at_head_lines(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["a\n", *ls])
    (repo / "src/app.py").write_text("b\nc\n" + (repo / "src/app.py").read_text())
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/app.py#L4-L6")


def test_working_tree_reason_uses_the_stored_line_numbers(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["a\n", "b\n", *ls])  # HEAD range is 5-7
    text = (repo / "src/app.py").read_text().replace("line 5\n", "LINE 5\n")
    (repo / "src/app.py").write_text(text)
    assert verdict(repo, memory).worktree == "working tree: line 5 modified"


def test_file_deleted_in_working_tree_and_whole_file_edit(repo):
    whole = learn(repo, "src/app.py", n=1)
    ranged = learn(repo, "src/app.py#L1-L1", n=2)
    (repo / "src/app.py").write_text(BODY + "more\n")
    report = check([whole, ranged], history(repo))
    assert [(v.status, v.worktree) for v in report.verdicts] == [
        (Status.FRESH, "working tree: modified"),
        (Status.FRESH, None),
    ]
    (repo / "src/app.py").unlink()
    assert verdict(repo, ranged).worktree == "working tree: deleted"


def test_crlf_in_the_working_tree_is_not_a_change(repo):
    git(repo, "config", "core.autocrlf", "false")
    memory = learn(repo, "src/app.py#L3-L5")
    (repo / "src/app.py").write_bytes(BODY.replace("\n", "\r\n").encode())
    assert verdict(repo, memory).status is Status.FRESH


# -- refutation, corroboration, distance ---------------------------------------


def test_refuted_memory_is_left_alone(repo):
    memory = learn(repo, "src/app.py#L3-L5").model_copy(
        update={"refutation": Refutation(reason="wrong all along", by="ada")}
    )
    edit(repo, "src/app.py", lambda ls: ["x\n", *ls[1:]])
    v = verdict(repo, memory)
    assert (v.status, v.reason, v.changed) == (Status.REFUTED, "wrong all along", False)
    assert apply_verdict(memory, v, NOW) is memory


def test_corroboration_moves_anchor_to_head_and_keeps_observed_at(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    for i in range(3):
        commit_file(repo, f"f{i}.txt", "x\n")
    v = verdict(repo, memory)
    assert (v.observed_distance, v.commit_distance) == (3, 0)
    updated = apply_verdict(memory, v, NOW)
    assert updated.provenance.git_sha == head(repo)
    assert updated.provenance.observed_at == OBSERVED
    assert updated.decay.last_verified_at == NOW
    assert memory.provenance.git_sha != head(repo)  # input untouched
    again = verdict(repo, updated)
    assert (again.status, again.changed, again.observed_distance) == (Status.FRESH, False, 0)


def test_anchored_memory_is_not_stale_by_distance_alone(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    for i in range(25):
        commit_file(repo, "churn.txt", f"{i}\n")
    v = verdict(repo, memory)
    assert (v.status, v.observed_distance) == (Status.FRESH, 25)


def test_distance_limit_applies_to_memories_without_an_anchor(repo):
    observed = head(repo)
    memory = learn(repo, None, sha=observed)
    for i in range(20):
        commit_file(repo, "churn.txt", f"{i}\n")
    v = verdict(repo, memory)
    assert (v.status, v.commit_distance, v.corroborated) == (Status.FRESH, 20, False)
    commit_file(repo, "churn.txt", "last\n")
    v = verdict(repo, memory)
    assert v.status is Status.STALE
    assert v.reason == f"21 commits since observed {observed[:7]} (limit 20)"
    assert verdict(repo, memory, DecayPolicy(max_commit_distance=30)).status is Status.FRESH


def test_diverged_head_measures_from_the_merge_base(repo):
    base = head(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    commit_file(repo, "feat.txt", "1\n")
    feature_tip = commit_file(repo, "feat.txt", "2\n")
    git(repo, "checkout", "-q", "main")
    for i in range(3):
        commit_file(repo, "main.txt", f"{i}\n")
    memory = learn(repo, None, sha=feature_tip)
    v = verdict(repo, memory, DecayPolicy(max_commit_distance=2))
    assert (v.diverged, v.commit_distance, v.merge_base) == (True, 3, base)
    assert v.reason == (
        f"3 commits since observed {feature_tip[:7]} (limit 2); "
        f"diverged, measured from merge base {base[:7]}"
    )


def test_head_behind_the_observed_commit_is_never_distance_zero(repo):
    old = head(repo)
    commit_file(repo, "a.txt", "1\n")
    newer = commit_file(repo, "a.txt", "2\n")
    git(repo, "checkout", "-q", old)  # detached HEAD, behind the observation
    v = verdict(repo, learn(repo, None, sha=newer))
    assert (v.status, v.commit_distance, v.diverged) == (Status.FRESH, 2, True)


def test_diverged_anchored_memory_compares_content_and_corroborates(repo):
    memory_base = head(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    commit_file(repo, "feat.txt", "1\n")
    memory = learn(repo, "src/app.py#L3-L5")
    git(repo, "checkout", "-q", "main")
    edit(repo, "src/app.py", lambda ls: ["top\n", *ls])
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref, v.diverged, v.merge_base) == (
        Status.FRESH, "src/app.py#L4-L6", True, memory_base
    )


# -- observed commit missing ------------------------------------------------------


def test_missing_observed_commit_without_fingerprint_is_unanchored_with_hint(repo):
    memory = learn(repo, "src/app.py#L3-L5", sha="deadbeef" * 5, fp=None)
    v = verdict(repo, memory)
    assert v.status is Status.UNANCHORED
    assert v.reason == "observed commit deadbee is not in the object database"
    assert v.hint == UNSHALLOW_HINT and "git fetch --unshallow" in v.hint


def test_missing_observed_commit_falls_back_to_the_fingerprint(repo):
    good = learn(repo, "src/app.py#L3-L5")
    memory = learn(repo, "src/app.py#L3-L5", sha="deadbeef" * 5,
                   fp=good.provenance.fingerprint)
    edit(repo, "src/app.py", lambda ls: ["top\n", *ls])
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref, v.new_git_sha) == (
        Status.FRESH, "src/app.py#L4-L6", head(repo)
    )
    edit(repo, "src/app.py", lambda ls: [*ls[:3], "changed\n", *ls[4:]])
    v = verdict(repo, memory)
    assert v.status is Status.UNANCHORED
    assert v.reason == (
        "observed commit deadbee is not in the object database; "
        "the anchored lines of src/app.py#L3-L5 are not at HEAD"
    )


def test_amended_and_collected_observed_commit_is_not_stale_when_lines_remain(repo):
    commit_file(repo, "notes.txt", "draft\n")
    memory = learn(repo, "src/app.py#L3-L5")
    gone = memory.provenance.git_sha
    git(repo, "commit", "-q", "--amend", "-m", "reworded", date="2026-01-06T10:00:00+00:00")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert history(repo).resolve_commit(gone) is None  # not in the object database
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref, v.new_git_sha) == (
        Status.FRESH, "src/app.py#L3-L5", head(repo)
    )


def test_shallow_clone_reports_unanchored_with_unshallow_hint(repo, tmp_path):
    observed = head(repo)
    for i in range(3):
        commit_file(repo, "churn.txt", f"{i}\n")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    memory = learn(repo, None, sha=observed)
    v = verdict(clone, memory)
    assert (v.status, v.hint) == (Status.UNANCHORED, UNSHALLOW_HINT)
    assert v.reason == f"observed commit {observed[:7]} is not in the object database"


# -- weird stored anchors never crash --------------------------------------------


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("src/app.py#L9-L3",
         "invalid anchor: anchor 'src/app.py#L9-L3': range ends (L3) before it starts (L9)"),
        ("src/app.py#Lx", "invalid anchor: anchor 'src/app.py#Lx': malformed line range 'Lx'"),
        ("../etc/passwd", "invalid anchor: anchor '../etc/passwd': path leaves the repository"),
        ("src/app.py#L18-L30", "range L18-L30 is past the end of src/app.py at {sha} (20 lines)"),
        ("src/nowhere.py#L1-L2", "src/nowhere.py is not in observed commit {sha}"),
    ],
)
def test_weird_stored_anchor_is_unanchored_with_a_reason(repo, ref, reason):
    memory = learn(repo, ref, fp=None)
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.UNANCHORED, reason.format(sha=head(repo)[:7]))


def test_legacy_record_without_provenance_is_unanchored_and_unchanged(repo):
    legacy = Memory(id="fact-0000beef", type="fact", content="old")
    v = verdict(repo, legacy)
    assert (v.status, v.reason, v.changed) == (
        Status.UNANCHORED, "no provenance (legacy record)", False
    )
    assert apply_verdict(legacy, v, NOW) is legacy


def test_binary_whole_file_anchor(repo):
    (repo / "logo.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "add", "logo.bin")
    git(repo, "commit", "-q", "-m", "logo")
    memory = learn(repo, "logo.bin")
    assert verdict(repo, memory).status is Status.FRESH
    (repo / "logo.bin").write_bytes(b"\x00\x01\x03")
    git(repo, "commit", "-q", "-am", "new logo")
    assert verdict(repo, memory).reason == f"changed in {head(repo)[:7]}"


# -- repository shapes -----------------------------------------------------------


def test_unborn_head_raises_a_clear_error(empty_repo):
    with pytest.raises(EmptyRepository, match="HEAD is unborn"):
        check([], history(empty_repo))


def test_bare_repository_compares_with_heads_tree(repo, tmp_path):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["top\n", *ls])
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    report = check([memory], history(bare))
    assert report.bare
    assert report.verdicts[0].new_context_ref == "src/app.py#L4-L6"


def test_linked_worktree_uses_its_own_head_and_files(repo, tmp_path):
    memory = learn(repo, "src/app.py#L3-L5")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "src/app.py").write_text(BODY.replace("line 3\n", "LINE 3\n"))
    assert verdict(wt, memory).worktree == "working tree: line 3 modified"
    assert verdict(repo, memory).worktree is None


def test_detached_head_is_supported(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    edit(repo, "src/app.py", lambda ls: ["top\n", *ls])
    git(repo, "checkout", "-q", "--detach", "HEAD")
    assert verdict(repo, memory).new_context_ref == "src/app.py#L4-L6"


# -- grouping -----------------------------------------------------------------------


def test_many_memories_on_one_file_share_one_diff(repo):
    memories = [learn(repo, f"src/app.py#L{i}-L{i}", n=i) for i in range(1, 21)]
    culprit = edit(repo, "src/app.py", lambda ls: ["top\n", *ls[:9], "ten\n", *ls[10:]])
    hist = history(repo)
    report = check(memories, hist)
    assert len(hist._hunks) == 1  # one blob pair diffed for twenty memories
    assert report.counts() == {Status.FRESH: 19, Status.STALE: 1}
    by_id = {v.memory_id: v for v in report.verdicts}
    assert by_id["fact-0000000a"].reason == f"line 10 changed in {culprit}"
    assert by_id["fact-00000014"].new_context_ref == "src/app.py#L21-L21"


# -- commit distance on merge-heavy history, cache ---------------------------------


def build_merges(repo: Path) -> list[str]:
    """main with two merged feature branches and a criss-cross; returns every commit."""
    commit_file(repo, "m.txt", "1\n")
    git(repo, "checkout", "-q", "-b", "f1")
    commit_file(repo, "f1.txt", "a\n")
    commit_file(repo, "f1.txt", "b\n")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "m.txt", "2\n")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge f1", "f1")
    git(repo, "checkout", "-q", "-b", "f2", "HEAD~1")
    commit_file(repo, "f2.txt", "x\n")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge f1 into f2", "f1")
    git(repo, "checkout", "-q", "main")
    commit_file(repo, "m.txt", "3\n")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge f2", "f2")
    return git(repo, "rev-list", "--all").split()


def test_commit_distance_matches_git_rev_list_on_merges(repo):
    commits = build_merges(repo)
    hist = history(repo)
    top = head(repo)
    for sha in commits:
        expected = int(git(repo, "rev-list", "--count", f"{sha}..{top}").strip())
        dist = hist.commit_distance(sha, top)
        assert (dist.ahead, dist.diverged) == (expected, False), sha
    side = git(repo, "rev-parse", "f2").strip()
    git(repo, "checkout", "-q", "f1")
    dist = history(repo).commit_distance(side, head(repo))
    assert (dist.ahead, dist.behind, dist.diverged) == (0, 3, True)
    assert dist.commits == 3


def test_verify_cache_reuses_outcomes_and_survives_serialisation(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    culprit = edit(repo, "src/app.py", lambda ls: [*ls[:3], "changed\n", *ls[4:]])
    cache = VerifyCache()
    first = check([memory], history(repo), cache=cache).verdicts[0]
    assert len(cache) == 1
    loaded = VerifyCache.from_plain(marshal.loads(marshal.dumps(cache.to_plain(head(repo)))))
    hist = history(repo)
    again = check([memory], hist, cache=loaded).verdicts[0]
    assert again == first
    assert again.reason == f"line 4 changed in {culprit}"
    assert hist._hunks == {}  # answered from the cache, no diff computed
    assert len(VerifyCache.from_plain(cache.to_plain("0" * 40))) == 0
    assert len(VerifyCache.from_plain({"version": 1, "entries": [["short"]]})) == 0
    assert len(VerifyCache.from_plain("not a cache")) == 0


def test_cached_outcome_still_sees_the_working_tree(repo):
    memory = learn(repo, "src/app.py#L3-L5")
    cache = VerifyCache()
    assert check([memory], history(repo), cache=cache).verdicts[0].status is Status.FRESH
    (repo / "src/app.py").write_text(BODY.replace("line 3\n", "line three\n"))
    v = check([memory], history(repo), cache=cache).verdicts[0]
    assert (v.status, v.worktree) == (Status.FRESH, "working tree: line 3 modified")
