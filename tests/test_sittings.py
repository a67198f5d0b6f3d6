"""The sitting prior (gitmem.context.sittings): a turn of the session about the question ranks first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gitmem.api import Gitmem
from gitmem.context.recall import RecallIndex, index_columns
from gitmem.context.sittings import Sittings
from tests.conftest import git

DAY1 = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)
DAY30 = datetime(2023, 6, 5, 9, 0, tzinfo=UTC)
QUERY = "How often do I practice the piano every morning?"


def _learn(gm: Gitmem, texts: list[str], start: datetime) -> list[str]:
    return [gm.learn(text, now=start + timedelta(seconds=n)).memory.id for n, text in enumerate(texts)]


def test_a_turn_in_a_sitting_that_matches_the_query_outranks_an_equal_turn_elsewhere(repo):
    gm = Gitmem.open(repo)
    piano = _learn(gm, ["I signed up for piano lessons downtown",
                        "I practice every morning before work"], DAY1)
    shoes = _learn(gm, ["I bought new running shoes", "I practice every morning after lunch"], DAY30)
    for _ in range(2):  # cold (records parsed), then warm (cache views)
        hits = Gitmem.open(repo).recall(QUERY)[0].hits
        order = [h.memory.id for h in hits]
        assert order.index(piano[1]) < order.index(shoes[1])


def test_without_the_sitting_the_equal_turns_tie_and_the_newer_ranks_first(repo):
    gm = Gitmem.open(repo)
    _learn(gm, ["I signed up for piano lessons downtown"], DAY1)
    before = _learn(gm, ["I practice every morning before work"], DAY1 + timedelta(hours=3))
    after = _learn(gm, ["I practice every morning after lunch"], DAY30)
    hits = Gitmem.open(repo).recall(QUERY)[0].hits
    order = [h.memory.id for h in hits]
    assert order.index(after[0]) < order.index(before[0])
    assert hits[0].bm25 == hits[1].bm25


def test_a_store_without_sittings_has_none(repo):
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "lexer.py").write_text("def split(text):\n    return text.split()\n")
    git(repo, "add", "src/lexer.py")
    git(repo, "commit", "-qm", "lexer")
    gm = Gitmem.open(repo)
    apart = [gm.learn(f"fact number {n} about the parser", now=DAY1 + timedelta(days=n)).memory
             for n in range(3)]
    at_once = [gm.learn(f"imported fact {n} about the lexer", now=DAY30).memory for n in range(3)]
    anchored = [gm.learn(f"the tokenizer splits words {n}", now=DAY30 + timedelta(seconds=n + 1),
                         file="src/lexer.py").memory for n in range(2)]
    memories = [*apart, *at_once, *anchored]
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    sittings = Sittings.found(index.ids, index.authors, index.refs, index.times, index.lengths)
    assert sittings.count == 0
    assert sittings.scores([], {0: 1.0}) == {}


def test_the_first_turn_of_a_one_speaker_sitting_outranks_an_equal_later_turn(repo):
    gm = Gitmem.open(repo)
    opened = _learn(gm, ["I practice the piano every morning at home", "I bought new running shoes"], DAY1)
    later = _learn(gm, ["I bought a new lunch box", "I practice the piano every morning at work"], DAY30)
    for _ in range(2):  # cold (records parsed), then warm (cache views)
        hits = Gitmem.open(repo).recall(QUERY)[0].hits
        order = [h.memory.id for h in hits]
        # Equal turns in equal sittings: the newer would rank first, but the older opened its sitting.
        assert order.index(opened[0]) < order.index(later[1])
        assert hits[0].bm25 > hits[1].bm25


def test_only_a_sitting_of_one_speaker_has_an_opener():
    texts = ["Hey Mel, how was the piano recital?", "It went well, I practice every morning",
             "That is great to hear", "Thanks, see you soon",
             "I practice the piano every morning", "I bought new running shoes"]
    authors = ["Caroline <c@example.org>", "Melanie <m@example.org>"] * 2 + ["Caroline <c@example.org>"] * 2
    observed = ([DAY1 + timedelta(seconds=n) for n in range(4)]
                + [DAY30 + timedelta(seconds=n) for n in range(2)])
    index = RecallIndex.build(texts, observed, authors=authors)
    index.sparse_scores(QUERY)
    sittings = index._sittings
    assert sittings is not None
    # Caroline's and Melanie's turns of the conversation are sittings with replies: no opener.
    assert sittings.count == 3
    assert sittings.openers == {4}
