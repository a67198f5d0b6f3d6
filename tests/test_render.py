"""Rendering of entries, wake and recall results; golden files under tests/golden/.

Refresh the golden files after an intended change with
``GITMEM_UPDATE_GOLDEN=1 python -m pytest tests/test_render.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem.context.entry import format_confidence, format_entry, format_hits
from gitmem.context.recall import recall
from gitmem.context.render import render_explain, render_recall, render_wake
from gitmem.context.tokens import TokenCounter
from gitmem.context.wake import compile_wake
from gitmem.record.models import Memory

GOLDEN = Path(__file__).parent / "golden"
COUNT = TokenCounter()
T0 = datetime(2026, 8, 27, 15, 0, tzinfo=UTC)


def record(memory_id: str, content: str, *, confidence=0.95, days=0, status="fresh",
           reason=None, relations=(), refuted=False, anchored=True) -> Memory:
    data = {"id": memory_id, "type": memory_id.split("-")[0], "content": content,
            "confidence": confidence,
            "relations": [{"type": t, "target": x} for t, x in relations]}
    if anchored:
        when = T0 - timedelta(days=days)
        data["provenance"] = {"observed_at": when, "git_sha": "9f83ab2c104e",
                              "context_ref": "src/tur/signals.py#L45-L60"}
        data["decay"] = {"half_life_days": 14, "last_verified_at": when,
                         "staleness_status": status, "reason": reason}
    if refuted:
        data["refutation"] = {"reason": "replaced by OAuth2", "by": "ada", "at": T0}
    return Memory(**data)


STORE = [
    record("axiom-0a1b2c3d", "Always write type hints.", confidence=1.0, anchored=False),
    record("core-11223344", "Memories are hypotheses;\nverify them against the code.",
           confidence=1.0, anchored=False),
    record("fact-8f2a1b9c", "SQLite signal queue uses WAL mode and busy_timeout=5000ms.",
           relations=[("supports", "insight-248c0d1e")]),
    record("insight-248c0d1e", "Domain modules are isolated under src/tur/.", confidence=1.0,
           days=3),
    record("fact-00c0ffee", "Active port is 8080.", status="stale",
           reason="lines 45-60 changed in 3f2a1b9", days=9),
    record("fact-deadbeef", "Auth service uses JWT tokens configured in src/auth.py.",
           refuted=True),
    record("fact-12345678", "The API listens on port 9090.",
           relations=[("supersedes", "fact-87654321")], days=1),
    record("fact-87654321", "The API listens on port 9000.", days=20),
    record("preference-0badf00d", "Prefer `pytest -q`; never *mock* git.", confidence=0.6,
           days=40),
    record("fact-f00dcafe", "Cache TTL is 300 s and keys look like <env>:cache:<id>.",
           confidence=0.5, days=30),
] + [record(f"fact-a000000{i}", f"Worker {i} consumes the pdf queue with concurrency {i}.",
            confidence=0.8, days=5 + i) for i in range(6)]

WEIGHTS = {m.id: round(m.confidence * 0.5 ** ((T0 - m.last_verified_at).days / 14), 4)
           for m in STORE if m.last_verified_at is not None}
PERSONA = {"name": "Kura", "role": "coding agent for the tur repository",
           "invariants": ["Never push to main.", "Ask before deleting files."]}
CONTINUITY = "Last session: moved the queue to WAL.\nNext: benchmark recall."


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("GITMEM_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.skip(f"golden file {name} rewritten; review the diff and rerun without the variable")
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def wake():
    return compile_wake(STORE, weights=WEIGHTS, persona=PERSONA, continuity=CONTINUITY,
                        budget=260, counter=COUNT)


def test_wake_markdown_golden(wake):
    check_golden("wake.md", render_wake(wake, "markdown"))
    assert wake.tokens == COUNT(wake.text) <= 260


def test_wake_json_golden(wake):
    text = render_wake(wake, "json")
    check_golden("wake.json", text)
    payload = json.loads(text)
    assert payload["text"] == wake.text and payload["omitted"] == wake.omitted
    assert len(payload["assembly"]) == len(STORE) + 2


def test_wake_explain_golden(wake):
    check_golden("wake_explain.txt", render_explain(wake))


@pytest.mark.parametrize(("fmt", "name"), [("markdown-prompt", "recall.md"),
                                           ("json", "recall.json"), ("plain", "recall.txt")])
def test_recall_golden(fmt, name):
    result = recall(STORE, "which port does the API listen on, and the queue mode?", top_k=4,
                    include_stale=True)
    check_golden(name, render_recall(result, fmt))


def test_entry_format_of_anchored_legacy_and_multiline_memories():
    anchor = "Anchor: src/tur/signals.py#L45-L60"
    assert format_entry(STORE[2]) == (
        "- [fact-8f2a1b9c] SQLite signal queue uses WAL mode and busy_timeout=5000ms. "
        f"(Observed 2026-08-27, Conf: 0.95, {anchor})\n")
    # A legacy record (no provenance) is unanchored, and says so.
    assert format_entry(STORE[0]) == (
        "- [axiom-0a1b2c3d] Always write type hints. (Conf: 1.0) (UNANCHORED)\n")
    assert format_entry(STORE[1]) == (
        "- [core-11223344] Memories are hypotheses;\n  verify them against the code. "
        "(Conf: 1.0) (UNANCHORED)\n")
    assert format_entry(STORE[4], stale_reason="lines 45-60 changed in 3f2a1b9").endswith(
        f"(Observed 2026-08-18, Conf: 0.95, {anchor}) (STALE: lines 45-60 changed in 3f2a1b9)\n")
    # Without stale_reason a status that is not fresh is named with its reason.
    assert format_entry(STORE[4]).endswith(f"{anchor}) (STALE: lines 45-60 changed in 3f2a1b9)\n")


def test_a_compressed_entry_is_a_preview_with_its_citation_and_how_to_read_the_rest():
    long = record("fact-0000beef", "The retry policy " + "waits and retries " * 40 + "forever.")
    entry = format_entry(long, compress=60)
    assert entry.startswith("- [fact-0000beef] The retry policy waits and retries")
    assert "…" in entry and "forever." not in entry
    assert entry.endswith("Anchor: src/tur/signals.py#L45-L60) "
                          f"[compressed from {len(long.content):,} characters: `tur show fact-0000beef`]\n")
    assert len(entry) < 250


def test_memory_text_reaches_output_as_stored_but_never_as_structure():
    raw = "Use **bold** <b>tags</b> & `code`; a very long line " + "x" * 300 + " stays whole."
    entry = format_entry(record("fact-0000abcd", raw + "\n\n"))
    # Inline text is kept; only a closing tag is made inert (docs/sharing.md, Trust).
    inert = raw.replace("</b>", "<\\/b>")
    assert entry.startswith(f"- [fact-0000abcd] {inert} (Observed")
    hits = recall([record("fact-0000abcd", "two\nlines of queue text")], "queue").hits
    assert format_hits(hits, "markdown-prompt") == (
        "> [!NOTE] Working Hypotheses (Memory Recall)\n"
        "> - [fact-0000abcd] two\n"
        ">   lines of queue text (Observed 2026-08-27 15:00 UTC, Conf: 0.95, "
        "Anchor: src/tur/signals.py#L45-L60)\n")


@pytest.mark.parametrize(("value", "text"), [(0.95, "0.95"), (1.0, "1.0"), (0.9, "0.9"),
                                             (0.0, "0.0"), (0.333, "0.33")])
def test_confidence_is_printed_with_at_most_two_decimals(value, text):
    assert format_confidence(value) == text


def test_empty_recall_renders_nothing_to_inject():
    assert format_hits([], "markdown-prompt") == ""
    assert format_hits([], "plain") == ""
    assert json.loads(format_hits([], "json", "q")) == {"query": "q", "hits": []}


def test_unknown_formats_are_refused(wake):
    with pytest.raises(ValueError, match="unknown wake format 'yaml'"):
        render_wake(wake, "yaml")
    with pytest.raises(ValueError, match="unknown recall format 'html'"):
        format_hits([], "html")
