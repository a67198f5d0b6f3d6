"""The facade does what the surfaces used to do each on their own (issue 25, item 5).

Row filtering, learn notes, argument checks, which verify rows to show, one JSON shape of a
memory: each is a facade method or a result method, tested here on real repositories.
"""

from __future__ import annotations

import pytest

from gitmem.api import Gitmem
from gitmem.errors import InvalidInput
from tests.conftest import commit_file


@pytest.fixture
def gm(repo) -> Gitmem:
    """A repository with three memories: two anchored to ``src/app.py``, one refuted."""
    commit_file(repo, "src/other.py", "x = 1\n", "other")
    g = Gitmem.open(repo)
    g.learn("app lines 1-3 set up logging", file=str(repo / "src/app.py#L1-L3"), confidence=0.5)
    g.learn("app is the entry point", type="insight", file=str(repo / "src/app.py"))
    refuted = g.learn("other holds the config", file=str(repo / "src/other.py")).memory.id
    g.refute(refuted, "it holds a constant")
    return g


def test_status_view_without_a_filter_lists_every_memory_by_id(gm):
    ids = [r.memory_id for r in gm.status_view().rows]
    assert len(ids) == 3 and ids == sorted(ids)


def test_status_view_keeps_only_the_type_and_status_asked_for(gm):
    assert [r.memory.type.value for r in gm.status_view(type="insight").rows] == ["insight"]
    assert [r.status.value for r in gm.status_view(status="refuted", full_records=False).rows] == ["refuted"]
    assert gm.status_view(type="insight", status="refuted").rows == []


def test_status_view_of_a_file_lists_its_memories_in_anchored_to_order(gm, repo):
    path = str(repo / "src/app.py")
    rows = gm.status_view(file=path).rows
    assert [r.memory_id for r in rows] == gm.anchored_to(path)
    assert len(rows) == 2


def test_status_view_refuses_an_unknown_type_or_status_and_names_the_choices(gm):
    with pytest.raises(InvalidInput, match="unknown status 'gone'") as caught:
        gm.status_view(status="gone")
    assert "fresh" in str(caught.value)
    with pytest.raises(InvalidInput, match="unknown type 'note'"):
        gm.status_view(type="note")


def test_row_filter_searches_id_anchor_and_content_with_all_words(gm):
    from gitmem.api import RowFilter

    rows = gm.status_view().rows
    assert [r.memory.content for r in RowFilter(text="APP logging").select(rows)] == [
        "app lines 1-3 set up logging"]
    assert len(RowFilter(text="src/app.py").select(rows)) == 2


# -- learn notes --------------------------------------------------------------------------------


def test_learn_notes_say_nothing_for_a_new_memory_with_no_neighbours(repo):
    assert Gitmem.open(repo).learn("the build uses make").notes() == []


def test_learn_notes_of_a_known_memory_say_it_was_reverified_and_the_type_is_kept(repo):
    gm = Gitmem.open(repo)
    mid = gm.learn("the build uses make").memory.id
    again = gm.learn("the build uses make", type="insight")
    assert again.notes("insight") == [
        f"{mid} was already known as a fact; type insight is ignored "
        f"(to change it: forget {mid}, then learn it again)",
        f"{mid} was already known; re-verified it",
    ]


def test_learn_notes_of_a_refuted_memory_say_it_stays_refuted(repo):
    gm = Gitmem.open(repo)
    mid = gm.learn("the cache is never cleared").memory.id
    gm.refute(mid, "it is cleared on deploy")
    assert gm.learn("the cache is never cleared").notes() == [
        f"{mid} was already known and is refuted (it is cleared on deploy); it stays refuted"]


def test_learn_notes_quote_a_similar_memory_and_name_the_action_as_the_surface_does(repo):
    from gitmem.api import LearnActions

    gm = Gitmem.open(repo)
    old = gm.learn("API port is 8090").memory.id
    gm.wake()  # the read cache now holds the table a learn compares with
    result = gm.learn("API moved to port 9090")
    new = result.memory.id
    assert result.notes() == [f'{new} may say the same as {old} ("API port is 8090"); '
                              f"if it replaces it: link {new} to {old} as superseding it"]
    cli = LearnActions(supersede="tur link {id} {other} --type supersedes")
    assert result.notes(actions=cli)[0].endswith(f"tur link {new} {old} --type supersedes")


# -- argument checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda g: g.recall("x", top_k=0), "top-k must be at least 1, got 0 — ask for 1 or more hits"),
    (lambda g: g.recall("x", token_budget=-1),
     "token budget must be 0 or more, got -1 — 0 means no token cap"),
    (lambda g: g.wake(token_budget=-2), "token budget must be 0 or more, got -2"),
    (lambda g: g.wake(max_chars=-1), "max chars must be 0 or more, got -1 — 0 means no character cap"),
    (lambda g: g.hooks.pre_turn("{}", top_k=0), "top-k must be at least 1, got 0"),
    (lambda g: g.hooks.pre_tool("{}", max_chars=-3), "max chars must be 0 or more, got -3"),
    (lambda g: g.hooks.session_start("", token_budget=-1), "token budget must be 0 or more, got -1"),
])
def test_wake_recall_and_hooks_refuse_counts_out_of_range_with_one_wording(repo, call, message):
    with pytest.raises(InvalidInput) as caught:
        call(Gitmem.open(repo))
    assert str(caught.value).startswith(message)


def test_zero_budget_and_zero_character_cap_mean_no_cap(repo):
    gm = Gitmem.open(repo)
    gm.learn("the build uses make")
    assert "the build uses make" in gm.wake(token_budget=0, max_chars=0)[0].text


# -- which verify rows to show ------------------------------------------------------------------


def test_verify_shows_only_the_memories_whose_status_changed_and_says_why(repo):
    gm = Gitmem.open(repo)
    moved = gm.learn("lines 1-3 set up logging", file=str(repo / "src/app.py#L1-L3")).memory.id
    gm.learn("the build uses make")
    commit_file(repo, "src/app.py", "changed\n" + "".join(f"line {i}\n" for i in range(2, 21)))
    outcome = gm.verify(None, write=True)
    (line,) = outcome.shown(written=True)
    assert (line.memory_id, line.was, line.status) == (moved, "fresh", "stale")
    assert line.text() == f"{moved}  fresh -> stale  w=0.95  {line.reason}"
    assert "line 1 changed" in line.reason
    assert outcome.recorded().startswith("recorded in ")
    assert len(outcome.shown(written=True, verbose=True)) == 2


def test_status_shows_every_memory_that_is_not_fresh_and_a_clean_store_nothing(repo):
    gm = Gitmem.open(repo)
    gm.learn("lines 1-3 set up logging", file=str(repo / "src/app.py#L1-L3"))
    assert gm.verify(None, write=False).shown(written=False) == []
    commit_file(repo, "src/app.py", "changed\n" + "".join(f"line {i}\n" for i in range(2, 21)))
    gm.verify(None, write=True)
    again = gm.verify(None, write=False)
    assert [line.status for line in again.shown(written=False)] == ["stale"]
    assert again.shown(written=True) == []  # recorded already: no news for verify
    assert gm.verify(None, write=True).recorded() == "nothing changed"


# -- one JSON shape of a memory -----------------------------------------------------------------


def test_a_memory_has_one_json_shape_from_a_record_a_stand_in_and_a_recall_hit(repo):
    import json

    from gitmem.api import memory_to_json
    from gitmem.context.render import render_recall

    gm = Gitmem.open(repo)
    mid = gm.learn("app lines 1-3 set up logging", file=str(repo / "src/app.py#L1-L3"),
                   agent="claude", harness="claude-code").memory.id
    whole = memory_to_json(gm.get(mid))
    assert whole["observed_at"].endswith("Z") and whole["anchor"] == "src/app.py#L1-L3"
    assert (whole["source_agent"], whole["source_harness"]) == ("claude", "claude-code")
    (view,) = [r.memory for r in gm.status_view(full_records=False).rows]
    # A stand-in gives the same document, less what it does not carry.
    assert memory_to_json(view) == whole | {"source_harness": None}
    result, _ = gm.recall("logging")
    (hit,) = json.loads(render_recall(result, "json"))["hits"]
    assert {k: hit[k] for k in whole} == whole


def test_tur_list_json_is_the_memory_shape_with_weight_and_local(repo):
    import json

    from gitmem.api import memory_to_json
    from tests.test_cli import tur

    tur(repo, "learn", "the build uses make")
    (listed,) = json.loads(tur(repo, "list", "--format", "json").out)
    gm = Gitmem.open(repo)
    assert listed == {**memory_to_json(gm.get(listed["id"])), "weight": listed["weight"], "local": None}
