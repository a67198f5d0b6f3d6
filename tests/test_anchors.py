"""Anchors: parsing, learn-time validation, fingerprints and range mapping."""

from __future__ import annotations

import os

import pytest

from gitmem.errors import InvalidAnchor
from gitmem.record.anchors import (
    Anchor,
    Hunk,
    LinesChanged,
    LooseText,
    MappedRange,
    anchor_fingerprint,
    find_fingerprint,
    fingerprint,
    fingerprint_windows,
    indent_kind,
    indent_profile,
    is_binary,
    map_range,
    map_window,
    parse_anchor,
    resolve_anchor,
    same_modulo_whitespace,
    split_lines,
    squeeze,
)

# -- parse_anchor -------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("src/app.py", Anchor("src/app.py")),
        ("src/app.py#L3-L7", Anchor("src/app.py", 3, 7)),
        ("src/app.py#L3-7", Anchor("src/app.py", 3, 7)),
        ("src/app.py#L5", Anchor("src/app.py", 5, 5)),
        ("./src//app.py#L1-L1", Anchor("src/app.py", 1, 1)),
        ("a/../b.py", None),
    ],
)
def test_parse_anchor_accepts_the_documented_forms(ref, expected):
    if expected is None:
        with pytest.raises(InvalidAnchor, match="leaves the repository"):
            parse_anchor(ref)
    else:
        assert parse_anchor(ref) == expected


def test_anchor_ref_round_trips():
    assert Anchor("src/a.py", 3, 7).ref() == "src/a.py#L3-L7"
    assert Anchor("src/a.py").ref() == "src/a.py"
    assert parse_anchor(Anchor("x/y.txt", 2, 2).ref()) == Anchor("x/y.txt", 2, 2)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("src/app.py#L9-L3", "anchor 'src/app.py#L9-L3': range ends (L3) before it starts (L9)"),
        ("src/app.py#Lx", "anchor 'src/app.py#Lx': malformed line range 'Lx'"),
        ("src/app.py#L3-", "anchor 'src/app.py#L3-': malformed line range 'L3-'"),
        ("src/app.py#3-5", "anchor 'src/app.py#3-5': malformed line range '3-5'"),
        ("src/app.py#L0-L2", "anchor 'src/app.py#L0-L2': line numbers start at 1"),
        ("#L1-L2", "anchor '#L1-L2' has no path"),
        ("/etc/passwd", "anchor '/etc/passwd': path must be relative to the repository root"),
        ("../x.py", "anchor '../x.py': path leaves the repository"),
        (".git/config", "anchor '.git/config': path is inside .git"),
    ],
)
def test_parse_anchor_rejects_malformed_anchors_with_a_clear_message(ref, message):
    with pytest.raises(InvalidAnchor) as err:
        parse_anchor(ref)
    assert err.value.message == message


# -- resolve_anchor -------------------------------------------------------------


def test_resolve_anchor_from_a_subdirectory_gives_a_repo_relative_path(repo):
    anchor = resolve_anchor(repo, repo / "src", "app.py#L2-L4")
    assert anchor == Anchor("src/app.py", 2, 4)


def test_resolve_anchor_accepts_an_absolute_path_inside_the_repository(repo):
    assert resolve_anchor(repo, repo, str(repo / "src" / "app.py")) == Anchor("src/app.py")


def test_resolve_anchor_accepts_dotdot_that_stays_inside(repo):
    assert resolve_anchor(repo, repo / "src", "../src/app.py#L1") == Anchor("src/app.py", 1, 1)


def test_resolve_anchor_rejects_dotdot_leaving_the_repository(repo, tmp_path):
    (tmp_path / "outside.py").write_text("x\n")
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "../outside.py")
    assert err.value.message.startswith("anchor '../outside.py' is outside the repository")
    assert err.value.hint == "give a path inside the repository"


def test_resolve_anchor_rejects_a_symlink_pointing_outside(repo, tmp_path):
    (tmp_path / "secret.txt").write_text("s\n")
    os.symlink(tmp_path / "secret.txt", repo / "link.txt")
    with pytest.raises(InvalidAnchor, match="outside the repository"):
        resolve_anchor(repo, repo, "link.txt")


def test_resolve_anchor_rejects_a_missing_file(repo):
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "src/nope.py#L1-L2")
    assert err.value.message == "anchor 'src/nope.py#L1-L2': src/nope.py does not exist"


def test_a_line_range_in_lower_case_is_refused_with_the_spelling_that_works(repo):
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "src/app.py#l2-l3")
    assert err.value.hint == "a line range is written with a capital L: src/app.py#L2-L3"
    assert resolve_anchor(repo, repo, "src/app.py#L2-L3").start == 2
    with pytest.raises(InvalidAnchor) as err:  # no such file either way: no such hint
        resolve_anchor(repo, repo, "src/nope.py#l2-l3")
    assert "capital" not in (err.value.hint or "")


def test_resolve_anchor_rejects_a_directory(repo):
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "src")
    assert err.value.message == "anchor 'src': src is a directory"


def test_resolve_anchor_rejects_a_range_past_the_end_of_the_file(repo):
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "src/app.py#L18-L21")
    assert err.value.message == (
        "anchor 'src/app.py#L18-L21': range L18-L21 is past the end of src/app.py (20 lines)"
    )
    assert resolve_anchor(repo, repo, "src/app.py#L18-L20") == Anchor("src/app.py", 18, 20)


def test_resolve_anchor_rejects_a_line_range_on_a_binary_file(repo):
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x00\x00data\n")
    with pytest.raises(InvalidAnchor) as err:
        resolve_anchor(repo, repo, "logo.png#L1-L1")
    assert err.value.message == (
        "anchor 'logo.png#L1-L1': logo.png is a binary file; line ranges need text"
    )
    assert resolve_anchor(repo, repo, "logo.png") == Anchor("logo.png")


def test_resolve_anchor_rejects_a_malformed_range(repo):
    with pytest.raises(InvalidAnchor, match="malformed line range 'Lx'"):
        resolve_anchor(repo, repo, "src/app.py#Lx")
    with pytest.raises(InvalidAnchor, match=r"range ends \(L3\) before it starts \(L9\)"):
        resolve_anchor(repo, repo, "src/app.py#L9-L3")


def test_resolve_anchor_uses_given_text_instead_of_the_disk(repo):
    # bare repositories pass HEAD's blob; the file need not exist on disk
    anchor = resolve_anchor(repo, repo, "gone.py#L2", text=b"a\nb\n")
    assert anchor == Anchor("gone.py", 2, 2)


# -- lines and fingerprints ---------------------------------------------------


def test_split_lines_counts_like_git():
    assert split_lines(b"") == []
    assert split_lines(b"a\nb\n") == ["a", "b"]
    assert split_lines(b"a\nb") == ["a", "b"]
    assert split_lines(b"a\n\n") == ["a", ""]


def test_fingerprint_ignores_trailing_whitespace_and_crlf():
    plain = fingerprint(["def f():", "    return 1"])
    assert plain == fingerprint(["def f():  ", "    return 1\r"])
    assert plain != fingerprint(["def f():", "    return 2"])
    assert plain.startswith("sha256:") and len(plain) == 7 + 64


def test_anchor_fingerprint_covers_the_range_or_the_whole_file():
    data = b"one\ntwo\nthree\n"
    assert anchor_fingerprint(Anchor("f", 2, 3), data) == fingerprint(["two", "three"])
    assert anchor_fingerprint(Anchor("f"), data) == fingerprint(["one", "two", "three"])


def test_find_fingerprint_prefers_the_match_nearest_the_old_position():
    lines = ["x", "a", "b", "y", "a", "b", "z"]
    fp = fingerprint(["a", "b"])
    assert find_fingerprint(lines, fp, 2, near=5) == 5
    assert find_fingerprint(lines, fp, 2, near=1) == 2
    assert find_fingerprint(lines, fp, 2, unique=True) is None
    assert find_fingerprint(lines, fingerprint(["y", "a"]), 2, unique=True) == 4
    assert find_fingerprint(lines, fingerprint(["q"]), 1) is None


def test_is_binary_uses_the_nul_rule():
    assert is_binary(b"abc\x00def")
    assert not is_binary("héllo\n".encode())


# -- map_range ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hunks", "expected"),
    [
        ([], MappedRange(10, 14)),
        ([Hunk(2, 0, 3, 3)], MappedRange(13, 17)),  # 3 lines inserted above
        ([Hunk(1, 4, 0, 0)], MappedRange(6, 10)),  # 4 lines removed above
        ([Hunk(9, 0, 10, 2)], MappedRange(12, 16)),  # inserted right before line 10
        ([Hunk(14, 0, 15, 2)], MappedRange(10, 14)),  # inserted right after line 14
        ([Hunk(20, 3, 20, 1)], MappedRange(10, 14)),  # change below
        ([Hunk(12, 1, 12, 1)], LinesChanged(12, 12)),  # one line replaced inside
        ([Hunk(8, 4, 8, 1)], LinesChanged(10, 11)),  # change overlapping the start
        ([Hunk(11, 0, 12, 1)], LinesChanged(11, 12)),  # insertion inside the range
        ([Hunk(14, 1, 13, 0)], LinesChanged(14, 14)),  # last line deleted
        ([Hunk(1, 1, 1, 2), Hunk(12, 2, 13, 2)], LinesChanged(12, 13)),
    ],
)
def test_map_range_moves_or_reports_changed_lines(hunks, expected):
    assert map_range(hunks, 10, 14) == expected


def test_fingerprint_windows_index_every_run_of_lines():
    lines = ["a", "b  ", "a", "b"]
    windows = fingerprint_windows(lines, 2)
    assert windows[fingerprint(["a", "b"])] == [1, 3]
    assert windows[fingerprint(["b", "a"])] == [2]
    assert fingerprint_windows(lines, 5) == {}


# -- white space: squeeze, LooseText, indentation -----------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("f(a, b)", "f(\n    a,\n    b\n)", True),
        ("x = 1   ", "x=1", True),
        ("return x", "return  x", True),
        ("return x", "returnx", False),
        ("a\n\n\nb", "a\nb", True),
        ('s = "a b"', 's = "ab"', False),
    ],
)
def test_squeeze_ignores_white_space_except_between_words(a, b, same):
    assert (squeeze(a) == squeeze(b)) is same


def test_loose_text_finds_whole_lines_only():
    lines = ["def f():", "    return g(a,", "             b)", "", "xreturn g(a, b)", "y = 1"]
    text = LooseText.of(lines)
    assert text.find(squeeze("return g(a, b)")) == [(2, 3)]
    assert text.find(squeeze("y = 1")) == [(6, 6)]
    assert text.find("1") == []  # inside a line
    assert text.find("") == []


def test_python_indentation_profile_follows_statements_not_continuation_lines():
    loose = ["def f(a,", "      b):", "  if a:", "    return b", "  return a"]
    black = ["def f(a, b):", "    if a:", "        return b", "    return a"]
    assert indent_profile(loose, "python") == indent_profile(black, "python") == (0, 1, 2, 1)
    dedented = ["def f(a, b):", "    if a:", "        return b", "        return a"]
    assert indent_profile(dedented, "python") != indent_profile(black, "python")
    # a triple-quoted string's lines are not statements
    doc = ['x = """', "    text", '"""', "y = 1"]
    assert indent_profile(doc, "python") == (0, 0)


def test_makefile_profile_tells_a_tab_from_spaces():
    assert indent_profile(["a:", "\tcc"], "make") != indent_profile(["a:", "        cc"], "make")
    assert indent_profile(["a:", "\tcc"], "make") == indent_profile(["a:", "\t cc"], "make")


@pytest.mark.parametrize(
    ("path", "kind"),
    [("a/b.py", "python"), ("x.PYI", "python"), ("ci.yml", "lines"), ("Makefile", "make"),
     ("rules.mk", "make"), ("a.js", None), ("README", None), (".py", None)],
)
def test_indent_kind_by_suffix_or_name(path, kind):
    assert indent_kind(path) == kind


def test_same_modulo_whitespace_needs_the_same_relative_indentation_where_it_matters():
    a = ["if x:", "    y()", "z()"]
    b = ["if x:", "    y()", "    z()"]
    assert same_modulo_whitespace(a, b, None)
    assert not same_modulo_whitespace(a, b, "python")
    assert same_modulo_whitespace(a, ["  if x:", "      y()", "  z()"], "python")


@pytest.mark.parametrize(
    ("hunks", "window"),
    [
        ([], (10, 15)),
        ([Hunk(2, 0, 2, 3)], (13, 18)),  # inserted above: shifted
        ([Hunk(10, 6, 9, 0)], None),  # deleted with nothing in its place
        ([Hunk(10, 6, 10, 1)], (10, 10)),  # replaced by one line (an import)
        ([Hunk(12, 1, 12, 2)], (10, 16)),  # one line replaced by two inside
        ([Hunk(12, 0, 13, 1)], (10, 16)),  # one line inserted inside
        ([Hunk(20, 1, 20, 1)], (10, 15)),  # after it
    ],
)
def test_map_window_covers_what_became_of_the_range(hunks, window):
    assert map_window(hunks, 10, 15) == window


def test_a_hash_in_a_file_name_belongs_to_the_path(repo):
    from gitmem.record.anchors import parse_anchor, split_ref
    from tests.conftest import commit_file
    from tests.test_cli import tur

    assert split_ref("docs/c#sharp.md") == ("docs/c#sharp.md", "")
    assert split_ref("docs/c#sharp.md#L1-L2") == ("docs/c#sharp.md", "L1-L2")
    assert parse_anchor("docs/c#sharp.md#L2").path == "docs/c#sharp.md"
    commit_file(repo, "docs/c#sharp.md", "a\nb\n", "a file with a hash")
    whole = tur(repo, "learn", "csharp doc", "--file", "docs/c#sharp.md")
    ranged = tur(repo, "learn", "csharp second line", "--file", "docs/c#sharp.md#L2")
    assert whole.code == 0 and ranged.code == 0, whole.err + ranged.err
    listed = tur(repo, "list", "--file", "docs/c#sharp.md").out
    assert "docs/c#sharp.md#L2" in listed and "csharp doc" in listed
    # After a '#', what looks like a line number but holds a '.' or '/' is the file's name.
    assert split_ref("app/odd#L1.py") == ("app/odd#L1.py", "")
    assert split_ref("app/odd#L1.py#L2") == ("app/odd#L1.py", "L2")
    assert split_ref("app/x.py#L1-Lx") == ("app/x.py", "L1-Lx")  # a typo is still a range
    commit_file(repo, "app/odd#L1.py", "x = 1\n", "a file named like a range")
    odd = tur(repo, "learn", "odd file name", "--file", "app/odd#L1.py")
    assert odd.code == 0, odd.err
    assert tur(repo, "status", odd.out.strip(), "--format", "json").code == 0
    assert "app/odd#L1.py" in tur(repo, "show", odd.out.strip()).out


def test_a_negative_zero_confidence_is_stored_as_zero(repo):
    from tests.test_cli import tur

    mid = tur(repo, "learn", "zero confidence", "--confidence", "-0").out.strip()
    assert "confidence: 0.0" in tur(repo, "show", mid).out
