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
