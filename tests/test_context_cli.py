"""Persona, continuity notes, relations and the assembly record through the CLI, on real repositories."""

from __future__ import annotations

import json

from tests.test_cli import assert_one_line_error, tur


def test_persona_is_tier_zero_and_shown_as_stored(repo, tmp_path):
    persona = tmp_path / "persona.yaml"
    persona.write_text("name: Kura\ninvariants:\n  - Never push to main.\n")
    assert tur(repo, "persona", "set", str(persona)).out.strip() == "persona stored"
    assert tur(repo, "persona", "show").out == persona.read_text()
    tur(repo, "learn", "Always write type hints", "--type", "axiom")
    wake = tur(repo, "wake").out
    assert wake.index("Never push to main.") < wake.index("Always write type hints")
    doc = json.loads(tur(repo, "wake", "--format", "json").out)
    assert doc["assembly"][0]["id"] == "persona" and doc["assembly"][0]["tier"] == 0


def test_a_persona_that_is_not_a_mapping_is_refused(repo, tmp_path):
    bad = tmp_path / "persona.yaml"
    bad.write_text("- just\n- a list\n")
    assert_one_line_error(tur(repo, "persona", "set", str(bad)), "persona.yaml")
    assert tur(repo, "persona", "show").code == 1


def test_the_latest_spark_note_opens_tier_one(repo):
    tur(repo, "spark", "first note")
    tur(repo, "spark", "second note: benchmark recall next")
    wake = tur(repo, "wake").out
    assert "second note: benchmark recall next" in wake
    assert "first note" not in wake


def test_a_superseded_memory_leaves_wake_with_its_reason(repo):
    old = tur(repo, "learn", "The API listens on port 8080").out.strip()
    new = tur(repo, "learn", "The API listens on port 9090").out.strip()
    assert tur(repo, "link", new, old, "--type", "supersedes").code == 0
    doc = json.loads(tur(repo, "wake", "--format", "json").out)
    reasons = {e["id"]: e["reason"] for e in doc["assembly"]}
    assert reasons[old] == "superseded" and reasons[new] is None
    assert "port 8080" not in doc["text"] and "port 9090" in doc["text"]
    shown = json.loads(tur(repo, "show", new, "--format", "json").out)
    assert shown["relations"] == [{"type": "supersedes", "target": old}]


def test_linking_a_memory_to_itself_or_an_unknown_id_is_refused(repo):
    mid = tur(repo, "learn", "a fact").out.strip()
    assert_one_line_error(tur(repo, "link", mid, mid, "--type", "supports"), "itself")
    assert_one_line_error(tur(repo, "link", mid, "fact-00000000", "--type", "supports"), "fact-00000000")


def test_explain_lists_every_memory_with_a_reason(repo):
    kept = tur(repo, "learn", "kept memory about the parser").out.strip()
    refuted = tur(repo, "learn", "wrong memory about the lexer").out.strip()
    tur(repo, "refute", refuted, "--reason", "the lexer was rewritten")
    out = tur(repo, "wake", "--explain").out
    assert f"{kept}" in out and "included" in out
    assert any(refuted in line and "excluded: refuted" in line for line in out.splitlines())


def test_recall_budget_caps_output_and_stale_needs_include_stale(repo):
    from tests.conftest import commit_file

    mid = tur(repo, "learn", "parser lines five to seven handle quoting",
              "--file", "src/app.py#L5-L7").out.strip()
    commit_file(repo, "src/app.py", "".join(f"changed {i}\n" for i in range(20)), "rewrite")
    tur(repo, "verify")
    held = tur(repo, "recall", "--query", "parser quoting").out
    assert mid not in held and held.splitlines()[-1].startswith("> 1 stale match held back")
    stale = tur(repo, "recall", "--query", "parser quoting", "--include-stale").out
    assert mid in stale and "STALE" in stale
    # Named, not numbered: notes that differ only in a number would be marked as possibly
    # contradicting each other (tests/test_contradictions.py), which is not this test's subject.
    for name in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
                 "juliet"):
        tur(repo, "learn", f"parser note {name}: quoting rules for case {name} are subtle and documented")
    # 100: one hit's line (with its observation time, ~61 tokens) and the line saying the stale
    # match was held back (~20) fit, not all of them.
    run = tur(repo, "recall", "--query", "parser quoting", "--token-budget", "100", "--format", "json")
    capped = json.loads(run.out)
    full = json.loads(tur(repo, "recall", "--query", "parser quoting", "--format", "json").out)
    assert 0 < len(capped["hits"]) < len(full["hits"])
    left_out = len(full["hits"]) - len(capped["hits"])
    assert run.err.strip() == f"{left_out} hits left out to fit --token-budget 100"


def test_wake_refuses_a_budget_together_with_unbounded(repo):
    refused = tur(repo, "wake", "--token-budget", "10", "--unbounded")
    assert refused.code == 2
    assert "not allowed with argument --token-budget" in refused.err
    assert tur(repo, "wake", "--unbounded").code == 0
