"""Statements that may say the same or the opposite: learn warns, --supersedes links, recall marks."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from gitmem.api import Gitmem
from gitmem.context.similarity import Statement, find_similar, may_contradict, near_duplicate
from gitmem.record.ids import content_key
from tests.conftest import git
from tests.test_cli import tur

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


# -- the rule ---------------------------------------------------------------------------------


def test_near_duplicates_share_most_of_the_shorter_statements_terms():
    assert near_duplicate(Statement.of("API port is 8090"), Statement.of("API moved to port 9090"))
    assert not near_duplicate(Statement.of("The queue retries failed jobs with backoff"),
                              Statement.of("Billing batches invoices every night"))
    # One shared term is never enough, however short the statements.
    assert not near_duplicate(Statement.of("queue mode"), Statement.of("queue size"))


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("API port is 8090", "API moved to port 9090", True),  # another number
    ("Migrations run before the tests", "Migrations do not run before the tests", True),  # negation
    ("Migrations run before the tests", "Migrations always run before the tests", False),  # agree
    ("API port is 8090", "Billing port is 9090 for invoices and refunds", False),  # other subject
])
def test_near_duplicates_that_differ_in_a_number_or_a_negation_may_contradict(a, b, expected):
    assert may_contradict(Statement.of(a), Statement.of(b)) is expected


def test_find_similar_ranks_by_overlap_and_ignores_unrelated_text():
    found = find_similar("API moved to port 9090", [
        ("fact-1", "API port is 8090"),
        ("fact-2", "The queue uses WAL journaling"),
        ("fact-3", "Queries are cached per API key and region and tenant"),
    ])
    assert found == ["fact-1"]


def test_find_similar_finds_words_whose_stem_changes_their_ending():
    # Snowball turns a final y into i (query -> queri): the prefilter must still match.
    assert find_similar("Every query is logged", [("fact-1", "Queries are logged")]) == ["fact-1"]


# -- learn ------------------------------------------------------------------------------------


def test_learn_warns_about_a_similar_memory_and_names_the_link_to_make(repo):
    first = tur(repo, "learn", "API port is 8090")
    old = first.out.strip()
    tur(repo, "wake")  # a session starts: the read cache now holds every memory
    second = tur(repo, "learn", "API moved to port 9090")
    new = second.out.strip()
    assert second.code == 0 and new != old
    warning = [line for line in second.err.splitlines() if old in line]
    assert warning == [f'{new} may say the same as {old} ("API port is 8090"); '
                       f"if it replaces it: tur link {new} {old} --type supersedes"]
    unrelated = tur(repo, "learn", "Billing batches invoices every night")
    assert unrelated.err == ""


def test_learn_compares_only_with_what_the_read_cache_holds_and_reads_no_record(repo):
    # Nothing has been read yet: no table, no comparison (a write stays O(1) in the store).
    tur(repo, "learn", "API port is 8090")
    assert tur(repo, "learn", "API moved to port 9090").err == ""
    # A forgotten memory is never named, even while the cached table still holds it.
    gm = Gitmem.open(repo)
    gm.recall("API port")
    old = gm.resolve("fact-" + content_key("API port is 8090"))
    gm.forget(old)
    assert old not in tur(repo, "learn", "The API now listens on port 9191").err


def test_learn_json_lists_similar_memories(repo):
    old = tur(repo, "learn", "API port is 8090").out.strip()
    tur(repo, "list")
    out = json.loads(tur(repo, "learn", "API moved to port 9090", "--format", "json").out)
    assert out["similar"] == [old]


def test_learn_warns_about_a_memory_on_overlapping_lines_of_the_same_file(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("Lines 2 to 6 parse the header", file="src/app.py#L2-L6").memory.id
    gm.learn("Something about lines 15-16", file="src/app.py#L15-L16")
    gm.status_view()
    result = gm.learn("The footer is written last", file="src/app.py#L5-L9")
    assert result.similar == (old,)


def test_refuted_and_superseded_memories_are_not_reported_as_similar(repo):
    gm = Gitmem.open(repo)
    refuted = gm.learn("API port is 8080").memory.id
    gm.refute(refuted, "never was")
    old = gm.learn("API port is 8090").memory.id
    gm.wake()
    result = gm.learn("API moved to port 9090", supersedes=old)
    assert result.similar == ()


def test_learn_supersedes_links_in_the_same_commit(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090").memory.id
    commits_before = git(repo, "rev-list", "--count", "refs/tur/memories").strip()
    new = tur(repo, "learn", "API moved to port 9090", "--supersedes", old[:9])
    assert new.code == 0
    new_id = new.out.strip()
    assert int(git(repo, "rev-list", "--count", "refs/tur/memories")) == int(commits_before) + 1
    assert Gitmem.open(repo).get(new_id).relation_targets() == [old]
    # The old one is now superseded: recall shows it only with --include-stale, marked so.
    assert old not in tur(repo, "recall", "API port").out
    assert f"superseded by {new_id}" in tur(repo, "recall", "API port", "--include-stale").out


def test_learn_supersedes_refuses_itself_a_cycle_and_an_unknown_id(repo):
    gm = Gitmem.open(repo)
    a = gm.learn("API port is 8090").memory.id
    b = gm.learn("API moved to port 9090", supersedes=a).memory.id
    tip = git(repo, "rev-parse", "refs/tur/memories").strip()
    for args, needle in [
        (["learn", "API port is 8090", "--supersedes", a], "cannot supersede itself"),
        (["learn", "API port is 8090", "--supersedes", b], "cycle"),
        (["learn", "Something new", "--supersedes", "fact-ffffffff"], "no memory with id"),
    ]:
        result = tur(repo, *args)
        assert result.code != 0 and result.out == ""
        assert len(result.err.strip().splitlines()) == 1 and needle in result.err
    assert git(repo, "rev-parse", "refs/tur/memories").strip() == tip  # nothing stored


# -- recall -----------------------------------------------------------------------------------


def test_recall_lists_the_newer_of_two_disagreeing_statements_first_and_marks_both(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090", now=T0).memory.id
    new = gm.learn("API moved to port 9090", now=T0 + timedelta(days=30)).memory.id
    gm.learn("Billing batches invoices every night", now=T0)
    result, _ = gm.recall("API port")
    assert [h.memory.id for h in result.hits] == [new, old]
    assert [h.may_contradict for h in result.hits] == [(old,), (new,)]
    text = tur(repo, "recall", "API port").out
    assert f"(may contradict {old})" in text and f"(may contradict {new})" in text
    hits = json.loads(tur(repo, "recall", "API port", "--format", "json").out)["hits"]
    assert [h["may_contradict"] for h in hits] == [[old], [new]]


def test_statements_that_agree_keep_their_rank_and_are_not_marked(repo):
    gm = Gitmem.open(repo)
    gm.learn("Run the migrations before the tests", now=T0)
    gm.learn("Always run the migrations before the tests start", now=T0 + timedelta(days=3))
    result, _ = gm.recall("migrations before tests")
    assert len(result.hits) == 2 and all(h.may_contradict == () for h in result.hits)


def test_a_superseded_pair_is_settled_and_not_marked(repo):
    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090", now=T0).memory.id
    gm.learn("API moved to port 9090", now=T0 + timedelta(days=1), supersedes=old)
    result, _ = gm.recall("API port", include_stale=True)
    assert len(result.hits) == 2 and all(h.may_contradict == () for h in result.hits)


def test_a_whole_file_anchor_is_not_similar_to_every_range_in_that_file(repo):
    gm = Gitmem.open(repo)
    gm.learn("Lines 2 to 6 parse the header", file="src/app.py#L2-L6")
    whole = gm.learn("The app module is small", file="src/app.py").memory.id
    gm.status_view()
    assert gm.learn("The app module prints lines", file="src/app.py").similar == (whole,)
