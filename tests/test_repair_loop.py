"""The repair loop on real repositories: stale at the point of use, confirm that follows the code,
re-anchor, forget and restore, unlink (issue 27, items 1-3)."""

from __future__ import annotations

import json

from tests.conftest import commit_file, learn, memory_ref, tur, tur_ok

#: A module whose function ``area`` sits at L21-L22.
BEFORE = "".join(f"x{i} = {i}\n" for i in range(1, 21)) + "def area(w, h):\n    return w * h\n" + \
    "".join(f"y{i} = {i}\n" for i in range(1, 6))

#: The same module five lines shorter above ``area``, with a comment added inside it: the
#: function is now at L16-L18 and L21-L22 hold ``y3 = 3`` ... .
AFTER = "".join(f"x{i} = {i}\n" for i in range(1, 16)) + \
    "def area(w, h):\n    # width times height\n    return w * h\n" + \
    "".join(f"y{i} = {i}\n" for i in range(1, 6))


def _moved_and_edited(repo) -> str:
    commit_file(repo, "a.py", BEFORE, "area")
    mid = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    return mid


def _shown(repo, mid: str) -> dict:
    return json.loads(tur_ok(repo, "show", mid, "--format", "json"))


def test_confirm_re_anchors_a_moved_and_edited_function_where_the_diff_maps_it(repo):
    mid = _moved_and_edited(repo)
    assert "stale" in tur_ok(repo, "status", mid)
    out = tur_ok(repo, "verify", mid, "--confirm")
    assert "confirmed" in out
    record = _shown(repo, mid)
    assert record["provenance"]["context_ref"] == "a.py#L16-L18"
    assert record["decay"]["staleness_status"] == "fresh"
    # The new anchor holds the function: a later change of `y3` leaves it unchanged.
    commit_file(repo, "a.py", AFTER.replace("y3 = 3", "y3 = 33"), "y3")
    assert tur_ok(repo, "status").splitlines()[0] == "1 fresh"
    tur_ok(repo, "verify")
    assert _shown(repo, mid)["provenance"]["context_ref"] == "a.py#L16-L18"


def test_confirm_refuses_lines_that_cannot_be_mapped_and_names_the_file_form(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    mid = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    commit_file(repo, "a.py", BEFORE.replace("def area(w, h):\n    return w * h\n", ""), "drop area")
    before = memory_ref(repo)
    r = tur(repo, "verify", mid, "--confirm")
    assert r.code == 2 and r.out == ""
    assert len(r.err.strip().splitlines()) == 1
    assert f"tur edit {mid} --file path#Lx-Ly" in r.err
    assert memory_ref(repo) == before
    assert _shown(repo, mid)["provenance"]["context_ref"] == "a.py#L21-L22"


# -- 1. stale at the point of use ----------------------------------------------------------------

def _edit(path, session: str = "s-1") -> str:
    return json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Edit",
                       "tool_input": {"file_path": str(path)}, "cwd": "/"})


def _context(out: str) -> str:
    return json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", "")


def test_pre_tool_gives_after_the_fresh_memories_one_line_per_stale_one_with_where_its_lines_are(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    fresh = learn(repo, "x1 is the first constant", "--file", "a.py#L1-L1")
    stale = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    sha = commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    tur_ok(repo, "verify")
    text = _context(tur_ok(repo, "hook", "pre-tool", stdin=_edit(repo / "a.py")))
    lines = text.splitlines()
    at_fresh = next(i for i, line in enumerate(lines) if fresh in line)
    at_stale = next(i for i, line in enumerate(lines) if stale in line)
    assert at_fresh < at_stale
    note = lines[at_stale]
    assert f"stale: lines 21-22 changed in {sha[:7]}" in note
    assert "its lines are now at a.py#L16-L18" in note
    assert f"`tur verify {stale} --confirm`" in note and f"tur refute {stale}" in note
    # Sent once per session, like the memories themselves.
    assert tur_ok(repo, "hook", "pre-tool", stdin=_edit(repo / "a.py")) == "{}\n"


def test_pre_tool_says_when_the_lines_of_a_stale_memory_are_gone_and_keeps_its_cap(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    stale = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    for n in range(12):
        learn(repo, f"constant x{n + 1} is {n + 1}, a fact worth a long sentence to fill the cap",
              "--file", f"a.py#L{n + 1}-L{n + 1}")
    commit_file(repo, "a.py", BEFORE.replace("def area(w, h):\n    return w * h\n", ""), "drop area")
    tur_ok(repo, "verify")
    out = tur_ok(repo, "hook", "pre-tool", "--format", "text", "--max-chars", "1200",
                 stdin=_edit(repo / "a.py"))
    assert len(out) <= 1200
    note = next(line for line in out.splitlines() if stale in line)
    assert "its lines are gone" in note and f"`tur edit {stale} --file path#Lx-Ly`" in note


def test_recall_ends_with_how_many_matches_it_held_back_as_stale(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    learn(repo, "the width of a box is its first side")
    commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    tur_ok(repo, "verify")
    out = tur_ok(repo, "recall", "width")
    assert out.splitlines()[-1] == "> 1 stale match held back (`tur recall --include-stale` shows them)."
    assert "held back" not in tur_ok(repo, "recall", "width", "--include-stale")
    assert "held back" not in tur_ok(repo, "recall", "box")
