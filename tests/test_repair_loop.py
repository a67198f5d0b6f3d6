"""The repair loop on real repositories: stale at the point of use, confirm that follows the code,
re-anchor, forget and restore, unlink (issue 27, items 1-3)."""

from __future__ import annotations

import json

from tests.conftest import commit_file, git, learn, memory_ref, tur, tur_ok

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


def test_pre_tool_judges_a_memory_recorded_fresh_when_the_code_moved_since_and_no_verify_ran(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    fresh = learn(repo, "x1 is the first constant", "--file", "a.py#L1-L1")
    stale = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    sha = commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    before = memory_ref(repo)
    text = _context(tur_ok(repo, "hook", "pre-tool", stdin=_edit(repo / "a.py")))
    note = next(line for line in text.splitlines() if stale in line)
    assert f"changed in {sha[:7]}" in note and "a.py#L16-L18" in note
    assert sum(stale in line for line in text.splitlines()) == 1  # never also as a fresh entry
    assert fresh in text
    assert memory_ref(repo) == before  # the point of use records nothing: verify does


def test_show_and_status_v_say_where_the_lines_are_before_any_verify_recorded_the_change(repo):
    mid = _moved_and_edited(repo)
    assert _shown(repo, mid)["decay"]["staleness_status"] == "fresh"  # as recorded: no verify ran
    status = tur_ok(repo, "status", "-v")
    assert "at HEAD:" in status and "a.py#L16-L18" in status
    assert "a.py#L16-L18" in tur_ok(repo, "show", mid)


def test_a_memory_sent_fresh_at_session_start_gets_its_note_once_the_code_moved(repo):
    commit_file(repo, "a.py", BEFORE, "area")
    stale = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    start = json.dumps({"session_id": "s-9", "hook_event_name": "SessionStart", "source": "startup"})
    assert stale in tur_ok(repo, "hook", "session-start", stdin=start)
    commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    first = _context(tur_ok(repo, "hook", "pre-tool", stdin=_edit(repo / "a.py", "s-9")))
    assert stale in first and "a.py#L16-L18" in first
    again = _context(tur_ok(repo, "hook", "pre-tool", stdin=_edit(repo / "a.py", "s-9")))
    assert stale not in again  # once per session


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
    assert out.splitlines()[-1] == "> 1 stale match held back (`tur recall --include-stale` shows it)."
    assert "held back" not in tur_ok(repo, "recall", "width", "--include-stale")
    assert "held back" not in tur_ok(repo, "recall", "box")


# -- 3. the repair loop --------------------------------------------------------------------------

def test_show_and_status_v_print_where_the_lines_are_at_head_and_the_anchored_diff(repo):
    mid = _moved_and_edited(repo)
    tur_ok(repo, "verify")
    shown = tur_ok(repo, "show", mid)
    at_head = next(line for line in shown.splitlines() if line.startswith("# at HEAD: "))
    assert "its lines are now at a.py#L16-L18" in at_head
    assert "+    # width times height" in shown.splitlines()
    assert _shown(repo, mid)["at_head"]["maps_to"] == "a.py#L16-L18"
    status = tur_ok(repo, "status", "-v").splitlines()
    assert any(line.startswith("    at HEAD: ") and "a.py#L16-L18" in line for line in status)
    assert "    +    # width times height" in status
    # A fresh memory has nothing to repair.
    fresh = learn(repo, "y1 is one", "--file", "a.py#L19-L19")
    assert "# at HEAD" not in tur_ok(repo, "show", fresh)


def test_edit_reanchor_takes_the_mapping_and_refuses_without_one(repo):
    mid = _moved_and_edited(repo)
    out = tur_ok(repo, "edit", mid, "--reanchor", "--content", "area is width times height")
    assert "re-anchored at a.py#L16-L18" in out
    record = _shown(repo, mid)
    assert record["provenance"]["context_ref"] == "a.py#L16-L18"
    assert record["content"] == "area is width times height"
    assert record["decay"]["staleness_status"] == "fresh"
    both = tur(repo, "edit", mid, "--reanchor", "--file", "a.py#L1-L2")
    assert both.code == 2 and "not both" in both.err
    area = "def area(w, h):\n    # width times height\n    return w * h\n"
    commit_file(repo, "a.py", AFTER.replace(area, ""), "drop area")
    before = memory_ref(repo)
    gone = tur(repo, "edit", mid, "--reanchor")
    assert gone.code == 2 and "--file path#Lx-Ly" in gone.err and len(gone.err.splitlines()) == 1
    assert memory_ref(repo) == before


def test_forget_undo_restores_the_last_version_and_show_says_when_it_was_forgotten(repo):
    mid = learn(repo, "line three is the third line", "--file", "src/app.py#L3-L3")
    tur_ok(repo, "confidence", mid, "0.7")
    text = tur_ok(repo, "show", mid, "--format", "json")
    assert f"tur forget --undo {mid}" in tur_ok(repo, "forget", mid)
    gone = tur(repo, "show", mid)
    assert gone.code != 0 and len(gone.err.splitlines()) == 1
    forgot = git(repo, "rev-parse", "refs/tur/memories").strip()
    assert "forgotten on" in gone.err and forgot[:12] in gone.err
    assert f"`tur forget --undo {mid}` restores it" in gone.err
    assert tur_ok(repo, "forget", "--undo", mid).startswith(f"restored {mid}")
    back = json.loads(tur_ok(repo, "show", mid, "--format", "json"))
    assert back["confidence"] == 0.7 and back["content"] == json.loads(text)["content"]
    again = tur(repo, "forget", "--undo", mid)
    assert again.code == 2 and "is not forgotten" in again.err
    never = tur(repo, "forget", "--undo", "fact-00000000")
    assert never.code != 0 and "no forgotten memory" in never.err


def test_a_forgotten_memory_is_named_by_a_prefix_as_a_stored_one_is(repo):
    mid = learn(repo, "the build cache lives in .cache/build")
    near = mid[:7]  # the type and 2 hex digits: another memory of the shard may share them
    prefix = mid.rsplit("-", 1)[1][:4]
    tur_ok(repo, "forget", prefix)
    gone = tur(repo, "show", prefix.upper())
    assert gone.code != 0 and f"no memory with id '{mid}'" in gone.err
    assert f"`tur forget --undo {mid}` restores it" in gone.err  # the whole id, to copy
    too_short = tur(repo, "forget", "--undo", near)
    assert too_short.code != 0 and "4 hex digits after the type" in too_short.err
    for typed in ("fact", "FACT"):
        assert "is a memory type, not an id" in tur(repo, "forget", "--undo", typed).err
    assert tur_ok(repo, "forget", "--undo", prefix).startswith(f"restored {mid}")
    stored = tur(repo, "forget", "--undo", prefix)
    assert stored.code == 2 and f"{mid} is not forgotten" in stored.err


def test_an_unlink_names_a_target_forgotten_since_by_its_prefix_in_either_case(repo):
    a = learn(repo, "the parser reads flags")
    b = learn(repo, "flags are read once at start")
    tur_ok(repo, "link", a, b, "--type", "supports")
    tur_ok(repo, "forget", b)
    again = tur(repo, "forget", b[:9])
    assert again.code != 0 and f"`tur forget --undo {b}` restores it" in again.err  # it was forgotten
    typed = b.rsplit("-", 1)[1][:4].upper()
    assert tur_ok(repo, "link", "--remove", a, typed).strip() == f"unlinked {a} -/-> {b}"
    assert not _shown(repo, a).get("relations")


def test_link_remove_takes_out_the_relation_and_refuses_one_that_is_not_there(repo):
    a = learn(repo, "the parser reads flags")
    b = learn(repo, "flags are read once at start")
    tur_ok(repo, "link", a, b, "--type", "supports")
    assert _shown(repo, a)["relations"]
    assert tur_ok(repo, "link", "--remove", a, b[:9]).strip() == f"unlinked {a} -/-> {b}"  # the whole id
    assert not _shown(repo, a).get("relations")
    missing = tur(repo, "link", "--remove", a, b)
    assert missing.code == 2 and "has no link" in missing.err
    untyped = tur(repo, "link", a, b)
    assert untyped.code == 2 and "--type" in untyped.err


def test_a_warm_pre_tool_reads_what_verify_found_stale_without_loading_the_code_history(repo):
    from tests.test_speed_paths import run_hook

    mid = learn(repo, "line six says six", "--file", "src/app.py#L5-L7")
    body = "".join(f"line {i}\n" if i != 6 else "line six changed\n" for i in range(1, 21))
    commit_file(repo, "src/app.py", body, "change line 6")
    tur_ok(repo, "verify")
    tool = {"tool_name": "Edit", "tool_input": {"file_path": str(repo / "src" / "app.py")}}
    # The first builds the cache and counts the lines' tokens (kept across processes).
    run_hook(repo, "pre-tool", {**tool, "session_id": "cold"})
    warm = run_hook(repo, "pre-tool", {**tool, "session_id": "warm"})
    assert warm["code"] == 0 and warm["err"] == ""
    assert f"[{mid}] stale: line 6 changed in" in warm["out"]
    assert "its lines are now at src/app.py#L5-L7" in warm["out"]
    assert warm["heavy"] == []


def test_recall_with_a_file_gives_the_notes_to_every_surface_in_its_own_spelling(repo):
    from gitmem.api import Gitmem, RepairActions, render_recall

    mid = _moved_and_edited(repo)
    gm = Gitmem.open(repo)
    gm.verify()
    result, _ = gm.recall("", file=str(repo / "a.py"), full_records=False)
    assert [(n.memory_id, n.maps_to) for n in result.stale] == [(mid, "a.py#L16-L18")]
    assert gm.stale_note(mid) == result.stale[0]
    tools = RepairActions(confirm="verify(ids=['{id}'], confirm=true)",
                          reword="edit(id='{id}', reanchor=true)",
                          anchor="edit(id='{id}', file='path#Lx-Ly')",
                          refute="refute(id='{id}', reason=...)",
                          include_stale="recall(include_stale=true)")
    doc = json.loads(render_recall(result, "json", actions=tools))
    assert doc["stale"][0]["maps_to"] == "a.py#L16-L18"
    text = doc["stale"][0]["text"]
    assert f"verify(ids=['{mid}'], confirm=true)" in text and "tur " not in text
