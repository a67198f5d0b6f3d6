"""Recall: ranking, neighbours, field boosts, the relevance floor, status filtering, budget, hooks."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.api import Gitmem
from gitmem.cache import RecordCache
from gitmem.context.entry import format_hits
from gitmem.context.recall import (
    RELEVANCE_FLOOR,
    RecallIndex,
    index_columns,
    query_from_payload,
    rank_memories,
    recall,
    tokenize,
)
from gitmem.context.tokens import TokenCounter
from gitmem.record.ids import memory_id
from gitmem.record.models import Memory
from tests.test_cli import tur

COUNT = TokenCounter()
T0 = datetime(2026, 8, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parent.parent


def mem(n: int, content: str, *, days: int = 0, status: str = "fresh", refuted: bool = False,
        reason: str | None = None) -> Memory:
    data = {
        "id": f"fact-{n:08x}", "type": "fact", "content": content, "confidence": 0.95,
        "provenance": {"observed_at": T0 + timedelta(days=days)},
        "decay": {"last_verified_at": T0 + timedelta(days=days), "staleness_status": status,
                  "reason": reason},
    }
    if refuted:
        data["refutation"] = {"reason": "wrong"}
    return Memory(**data)


STORE = [
    mem(1, "SQLite signal queue uses WAL mode and busy_timeout=5000ms.", days=1),
    mem(2, "Auth service issues JWT tokens configured in src/auth.py.", days=30),
    mem(3, "The frontend is built with Vite and proxies /api to port 8000.", days=20),
    mem(4, "Invoice PDFs are rendered by WeasyPrint in the worker.", days=10),
]


def ids(result) -> list[str]:
    return [h.memory.id for h in result.hits]


def test_tokenizer_splits_lowercases_stems_and_drops_stop_words():
    # Snowball English stems (gitmem.context.analysis), no longer the hand-written suffix rule.
    assert tokenize("The Caching of cachedQueries, busy_timeout=5000ms") == [
        "cach", "cach", "queri", "busi", "timeout", "5000", "ms"]


def test_recall_finds_the_memory_by_words_and_by_word_forms():
    result = recall(STORE, "is the queue in write-ahead WAL mode?")
    assert ids(result)[0] == "fact-00000001"
    hit = result.hits[0]
    assert hit.ranks["bm25"] == 1 and hit.bm25 > 0 and hit.stale is False
    # "rendering" and "rendered" meet through the stemmer.
    assert ids(recall(STORE, "who is rendering pdfs"))[0] == "fact-00000004"


def test_recency_alone_never_recalls():
    # The newest memory shares nothing with the query; nothing may come back.
    assert recall(STORE, "kubernetes helm chart values") .hits == ()
    assert recall(STORE, "").hits == () and recall(STORE, "the of and").hits == ()


def test_recency_breaks_ties_between_equal_matches():
    older = mem(1, "redis cache keys are prefixed", days=1)
    newer = mem(2, "redis cache keys are prefixed", days=9)
    hits = recall([older, newer], "redis cache").hits
    assert [h.memory.id for h in hits] == ["fact-00000002", "fact-00000001"]
    assert [h.ranks["recency"] for h in hits] == [1, 2]


def test_refuted_never_appear_and_stale_only_when_asked():
    store = [mem(1, "queue uses WAL mode", refuted=True),
             mem(2, "queue uses WAL journal", days=2, status="stale", reason="lines 3-4 changed"),
             mem(3, "queue uses rollback journal", days=3)]
    assert ids(recall(store, "queue WAL journal")) == ["fact-00000003"]
    with_stale = recall(store, "queue WAL journal", include_stale=True)
    assert ids(with_stale) == ["fact-00000002", "fact-00000003"]
    assert [h.stale for h in with_stale.hits] == [True, False]
    assert format_hits(with_stale.hits, "plain") == (
        "- [fact-00000002] queue uses WAL journal (Observed 2026-08-03 00:00 UTC, Conf: 0.95)"
        " (STALE: lines 3-4 changed)\n"
        "- [fact-00000003] queue uses rollback journal (Observed 2026-08-04 00:00 UTC, Conf: 0.95)\n"
    )


def test_top_k_caps_the_number_of_hits():
    store = [mem(i, f"deploy step {i} runs the migration job") for i in range(1, 9)]
    assert len(recall(store, "migration job", top_k=3).hits) == 3


def test_token_budget_caps_the_rendered_output_exactly():
    store = [mem(i, f"deploy step {i} runs the database migration job " * 3) for i in
             range(1, 9)]
    full = recall(store, "migration job", top_k=8)
    capped = recall(store, "migration job", top_k=8, token_budget=120, counter=COUNT)
    text = format_hits(capped.hits, "markdown-prompt", capped.query)
    assert COUNT(text) <= 120
    assert 0 < len(capped.hits) < 8 and capped.omitted == 8 - len(capped.hits)
    assert ids(capped) == ids(full)[: len(capped.hits)]  # equal-size entries: a prefix


def learn_store(repo) -> Gitmem:
    """``STORE`` learned into ``repo``, observed and verified at the same times."""
    gm = Gitmem.open(repo)
    for memory in STORE:
        gm.learn(memory.content, confidence=memory.confidence, now=memory.provenance.observed_at)
    return gm


def test_the_pre_turn_hook_reads_a_claude_code_payload(repo):
    gm = learn_store(repo)
    payload = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                          "prompt": "refactor the signal queue SQLite backend"})
    block = gm.hooks.pre_turn(payload.encode(), top_k=1).text
    first = memory_id("fact", STORE[0].content)
    assert block == (
        "> [!NOTE] Working Hypotheses (Memory Recall)\n"
        f"> - [{first}] SQLite signal queue uses WAL mode and busy_timeout=5000ms. "
        "(Observed 2026-08-02 00:00 UTC, Conf: 0.95)\n"
    )
    # Another session (this one was sent the memory already).
    again = payload.replace('"s1"', '"s2"')
    assert tur(repo, "hook", "pre-turn", "--top-k", "1", stdin=again).out == block


@pytest.mark.parametrize(
    ("payload", "query"),
    [
        ('{"prompt": "a"}', "a"),
        ('{"user_prompt": " b "}', "b"),
        ('{"messages": [{"role": "user", "content": "old"}, {"role": "assistant", '
         '"content": "x"}, {"role": "user", "content": [{"type": "text", "text": "new"}]}]}',
         "new"),
        ('"just a string"', "just a string"),
        ("not json at all", "not json at all"),
        (b"\xff\xfe{\x00garbage", "\ufffd\ufffd{\x00garbage"),
        ("[1, 2, 3]", ""),
        ('{"prompt": 42}', ""),
        ("null", ""),
        ("", ""),
    ],
)
def test_query_is_taken_from_any_payload_shape(payload, query):
    assert query_from_payload(payload) == query


def test_the_pre_turn_hook_never_fails_the_turn(repo, monkeypatch):
    learn_store(repo)

    def hook(*args: str, stdin: str) -> str:
        result = tur(repo, "hook", "pre-turn", *args, stdin=stdin)
        assert result.code == 0 and "Traceback" not in result.err
        return result.out

    def broken_counter(text: str) -> int:
        raise RuntimeError("tokenizer exploded")

    assert hook(stdin="\x00\xff") == ""
    assert hook(stdin='{"prompt": "unrelated kubernetes"}') == ""
    assert hook("--token-budget", "1000", stdin='{"prompt": "WAL queue"}') != ""
    monkeypatch.setattr(RecordCache, "counter", lambda self, encoding: broken_counter)
    # 50 tokens: the block is longer in bytes, so the (broken) tokenizer must count it.
    assert hook("--token-budget", "50", stdin='{"prompt": "WAL queue"}') == ""
    assert hook("--top-k", "-3", stdin='{"prompt": "WAL queue"}') == ""
    assert hook(stdin="") == ""


@settings(max_examples=100, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    contents=st.lists(st.text(min_size=1, max_size=50).filter(str.strip), min_size=1,
                      max_size=10),
    query=st.text(max_size=10),
    borrowed=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 30), st.integers(3, 20)),
                      max_size=3),
    refuted=st.sets(st.integers(0, 9)),
)
def test_recall_never_returns_a_memory_without_affinity(contents, query, borrowed, refuted):
    # Pieces of the stored texts in the query, so that most examples do recall something.
    query = " ".join([query, *(contents[i % len(contents)][at:at + n] for i, at, n in borrowed)])
    store = [mem(i, c, days=i, refuted=i in refuted) for i, c in enumerate(contents)]
    result = recall(store, query, top_k=10)
    for hit in result.hits:
        assert hit.bm25 > 0 or hit.boost > 0
        assert hit.memory.refutation is None
    candidates = [m for m in store if m.refutation is None]  # what recall ranks
    full = rank_memories(query, candidates)
    assert {h.memory.id for h in result.hits} <= {h.memory.id for h in full}
    for limit in (1, 3):
        assert rank_memories(query, candidates, limit=limit) == full[:limit]


def test_the_ranker_beats_plain_bm25_on_the_labelled_set():
    spec = importlib.util.spec_from_file_location("bench_recall",
                                                  ROOT / "bench" / "bench_recall.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.fixture_figures()
    assert figures["gitmem"][0] > figures["plain BM25"][0]
    assert figures["gitmem"][1] > figures["plain BM25"][1]


def conversation(*turns: tuple[str, str]) -> list[Memory]:
    """Turns of a conversation, a second apart, each stated by its speaker."""
    return [Memory(id=f"fact-{n:08x}", type="fact", content=text,
                   author=f"{who} <{who.lower()}@example.org>",
                   provenance={"observed_at": T0 + timedelta(seconds=n)})
            for n, (who, text) in enumerate(turns)]


def test_a_short_reply_is_found_by_the_words_of_the_turn_it_answers():
    turns = conversation(("Ana", "Did you finish the marathon in Berlin?"),
                         ("Ben", "Yes, in four hours!"),
                         ("Ana", "I baked bread today."),
                         ("Ben", "Nice, sourdough?"))
    ranked = [h.memory.id for h in rank_memories("Berlin marathon result", turns)]
    # The question itself first, then the answer that never names Berlin.
    assert ranked[:2] == ["fact-00000000", "fact-00000001"]
    assert "fact-00000003" not in ranked


def test_one_authors_memories_learned_in_one_sitting_lend_each_other_no_terms():
    # An agent's two facts a minute apart, no reply between them: separate statements.
    facts = [Memory(id=f"fact-{n:08x}", type="fact", content=text, author="Ana <ana@example.org>",
                    provenance={"observed_at": T0 + timedelta(minutes=n)})
             for n, text in enumerate(["SQLite signal queue uses WAL mode",
                                       "The frontend is written in Svelte"])]
    assert [h.memory.id for h in rank_memories("sqlite queue journal mode", facts)] == ["fact-00000000"]


def test_a_memory_anchored_to_a_file_is_no_reply_and_borrows_no_terms():
    def notes(ref: str | None) -> list[Memory]:
        return [Memory(id=f"fact-{n:08x}", type="fact", content=text, author=f"{who} <{who}@example.org>",
                       provenance={"observed_at": T0 + timedelta(seconds=n), "context_ref": anchor})
                for n, (who, text, anchor) in enumerate([("ana", "Retries use exponential backoff", None),
                                                         ("ben", "Parses the config file", ref)])]

    assert [h.memory.id for h in rank_memories("exponential backoff", notes("src/config.py#L3-L9"))] \
        == ["fact-00000000"]
    # Unanchored, the same two are a turn and its reply: the reply is found by the question's words.
    assert [h.memory.id for h in rank_memories("exponential backoff", notes(None))] \
        == ["fact-00000000", "fact-00000001"]


def test_a_query_naming_the_author_ranks_their_memories_first():
    turns = conversation(("Ana", "The garden needs water."), ("Ben", "The garden needs sun."),
                         ("Carl", "Lunch at noon."), ("Dora", "Tea at five."))
    hits = rank_memories("What does Ben say the garden needs?", turns)
    assert hits[0].memory.author.startswith("Ben") and hits[0].boost > 0
    assert hits[1].boost == 0


def test_a_query_naming_an_identifier_ranks_the_memory_about_it_first():
    memories = [mem(1, "click.core.Option: An option with a name and a help text."),
                mem(2, "click.core.Argument: Arguments are positional parameters, like an option."),
                mem(3, "click.types.Path: A path type, checked for an option or an argument.")]
    hits = rank_memories("Option help text is shown twice", memories)
    assert hits[0].memory.id == "fact-00000001" and hits[0].boost > hits[1].boost


def test_an_index_derived_after_neighbours_changed_scores_as_one_built_at_once():
    turns = conversation(("Ana", "The deploy runs at night."), ("Ben", "Which night?"),
                         ("Ana", "Every Friday, after the backup."), ("Ben", "Good, the backup first."))
    columns = index_columns(turns)
    base = RecallIndex.build([m.content for m in turns], ids=[m.id for m in turns], **columns)
    # The second turn goes, a new one comes between: every neighbour of the third changes.
    kept = [turns[0], turns[2], turns[3]]
    late = Memory(id="fact-000000ff", type="fact", content="Friday night, yes.",
                  author="Ben <ben@example.org>",
                  provenance={"observed_at": T0 + timedelta(seconds=1, milliseconds=500)})
    now = [*kept, late]
    derived = base.derive([m.id for m in now], [m.content for m in now], **index_columns(now)).bind(
        [m.id for m in now])
    built = RecallIndex.build([m.content for m in now], ids=[m.id for m in now], **index_columns(now))
    for query in ("deploy night", "friday backup", "which", "nothing here"):
        assert derived.scores(query) == built.scores(query), query


def test_the_relevance_floor_returns_nothing_for_a_query_about_something_else():
    store = [mem(1, "The billing service retries failed invoices every night."),
             mem(2, "Invoices are stored as PDF files in the archive bucket."),
             mem(3, "The archive bucket keeps files for seven years.")]
    on_topic = recall(store, "why are invoices retried at night", floor=RELEVANCE_FLOOR)
    assert ids(on_topic)[0] == "fact-00000001"
    off_topic = "add a dark theme toggle to the settings page of the mobile app, files stay"
    assert recall(store, off_topic).hits  # a common word matches: plain ranking returns it
    assert recall(store, off_topic, floor=RELEVANCE_FLOOR).hits == ()
    assert all(h.relevance >= RELEVANCE_FLOOR / 2 for h in on_topic.hits)


def test_recall_by_file_ranks_all_of_the_files_memories_by_the_query():
    # More memories on the file than top_k: the query decides which of them come back,
    # not their confidence.
    anchored = [Memory(id=f"fact-{n:08x}", type="fact", content=text, confidence=conf,
                       provenance={"observed_at": T0, "context_ref": "src/app.py#L1-L9"})
                for n, (text, conf) in enumerate(
                    [(f"app.py helper number {n} formats dates", 1.0) for n in range(12)]
                    + [("app.py retries the upload three times", 0.5)])]
    other = [mem(100, "the upload endpoint is rate limited")]
    hits = recall([*anchored, *other], "why does the upload retry", top_k=3, first=anchored).hits
    assert hits[0].memory.id == "fact-0000000c"  # the least confident, but the one asked about
    assert [h.memory.id for h in hits[1:]] == ["fact-00000000", "fact-00000001"]  # then the file's


def test_recall_by_file_gives_the_files_unmatched_memories_widest_anchor_first():
    # An edit falls in a long unit more often than in a short one; a whole-file anchor widest.
    spans = ["src/app.py#L1-L2", "src/app.py#L10-L60", "src/app.py", "src/app.py#L5-L9"]
    anchored = [Memory(id=f"fact-{n:08x}", type="fact", content=f"unit {n} of the app",
                       confidence=1.0 - n / 10, provenance={"observed_at": T0, "context_ref": ref})
                for n, ref in enumerate(spans)]
    hits = recall(anchored, "dark theme toggle", top_k=4, first=anchored).hits
    assert [h.memory.id for h in hits] == ["fact-00000002", "fact-00000001", "fact-00000003",
                                           "fact-00000000"]


def test_superseded_memories_are_treated_as_stale():
    new = Memory(id="fact-00000009", type="fact", content="api listens on port 9090",
                 relations=[{"type": "supersedes", "target": "fact-00000008"}])
    old = mem(8, "api listens on port 9000")
    assert ids(recall([new, old], "api port")) == ["fact-00000009"]
    hits = recall([new, old], "api port", include_stale=True).hits
    assert sorted((h.memory.id, h.stale, h.stale_reason) for h in hits) == [
        ("fact-00000008", True, "superseded by fact-00000009"), ("fact-00000009", False, None)]
