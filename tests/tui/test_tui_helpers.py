"""The TUI's plain helpers: escaping, filtering, the anchored diff, and the ``tur tui`` command."""

from __future__ import annotations

from gitmem.api import Gitmem
from gitmem.cli import build_parser, main
from tests.conftest import git
from tui.rows import Filter, Row, apply_filter
from tui.screens.confidence import parse_confidence
from tui.text import first_line, literal, printable


def row(id_, type_="fact", status="fresh", content="x") -> Row:
    return Row(id=id_, type=type_, status=status, weight=1.0, confidence=1.0, anchor="",
               content=content, reason=None)


def test_control_and_bidi_characters_are_escaped_newlines_kept():
    assert printable("a\x1b[31mb\tc\u202ed\ne") == "a\\x1b[31mb\\tc\\u202ed\ne"
    assert printable("a\nb", keep_newlines=False) == "a\\nb"


def test_literal_text_keeps_markup_as_characters():
    text = literal("[bold]x[/bold] [link=http://e]y[/link]")
    assert text.plain == "[bold]x[/bold] [link=http://e]y[/link]"
    assert text.spans == []


def test_first_line_skips_blank_lines_and_cuts_with_an_ellipsis():
    assert first_line("\n  \n  hello world  \nsecond") == "hello world"
    assert first_line("abcdefghij", limit=5) == "abcd…"


def test_filter_matches_type_status_and_every_search_word_case_insensitively():
    rows = [row("fact-00000001", content="Queue uses WAL"),
            row("insight-00000002", "insight", "stale", "WAL checkpoints are slow"),
            row("fact-00000003", status="refuted", content="port 8080")]
    assert [r.id for r in apply_filter(rows, Filter(text="wal"))] == ["fact-00000001",
                                                                      "insight-00000002"]
    assert [r.id for r in apply_filter(rows, Filter(text="wal SLOW"))] == ["insight-00000002"]
    assert [r.id for r in apply_filter(rows, Filter(type="fact"))] == ["fact-00000001",
                                                                       "fact-00000003"]
    assert [r.id for r in apply_filter(rows, Filter(status="refuted"))] == ["fact-00000003"]
    assert [r.id for r in apply_filter(rows, Filter(text="00000002"))] == ["insight-00000002"]


def test_parse_confidence_accepts_only_numbers_in_the_unit_interval():
    assert [parse_confidence(t) for t in ("0", "1", "0.25", "1.5", "-0.1", "x", "")] == [
        0.0, 1.0, 0.25, None, None, None, None]


def anchored_diff(memory, where, max_lines=400):
    """The facade's diff as seen from ``where`` (the repository or a subdirectory)."""
    return Gitmem.open(where).anchored_diff(memory, max_lines)


def test_anchored_diff_shows_committed_and_working_tree_changes_since_the_sha(repo):
    gm = Gitmem.open(repo)
    memory = gm.learn("line three matters", file="src/app.py#L3-L3").memory
    assert anchored_diff(memory, repo).note == f"src/app.py unchanged since {memory.provenance.git_sha[:12]}"
    (repo / "src/app.py").write_text((repo / "src/app.py").read_text().replace("line 3\n", "LINE 3\n"))
    diff = anchored_diff(memory, repo / "src")  # from a subdirectory too
    assert diff.note is None
    assert "-line 3" in diff.text.splitlines() and "+LINE 3" in diff.text.splitlines()
    git(repo, "commit", "-qam", "shout")
    assert "+LINE 3" in anchored_diff(memory, repo).text.splitlines()
    assert anchored_diff(memory, repo, max_lines=3).note.startswith("diff cut at 3 of ")


def test_anchored_diff_of_an_unanchored_memory_says_so(repo):
    memory = Gitmem.open(repo).learn("no file here").memory
    assert anchored_diff(memory, repo).text == ""
    assert anchored_diff(memory, repo).note == "no anchored file"


def test_anchored_diff_never_writes_the_index(repo):
    gm = Gitmem.open(repo)
    memory = gm.learn("x", file="src/app.py").memory
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns
    (repo / "src/app.py").touch()
    anchored_diff(memory, repo)
    assert index.stat().st_mtime_ns == before


def test_tur_tui_is_a_registered_command():
    parser = build_parser()
    args = parser.parse_args(["tui", "--poll", "0.5"])
    assert args.poll == 0.5
    assert args.func.__module__ == "gitmem.cli.tui_cmds"


def test_tur_tui_rejects_a_non_positive_poll_interval(repo, capsys):
    assert main(["-C", str(repo), "tui", "--poll", "0"]) == 2
    assert capsys.readouterr().err == "tur: error: --poll must be > 0, got 0.0\n"
