"""Display helpers shared by the CLI and the TUI: one escaping table, one "first words" cut."""

from __future__ import annotations

import pytest

from gitmem.cli.output import one_line
from gitmem.text import first_words, printable


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),  # C0: starts an ANSI sequence
        ("\x00", "\\x00"),
        ("\x7f", "\\x7f"),  # DEL
        ("\x9b", "\\x9b"),  # C1: a one-byte CSI
        ("\u200b", "\\u200b"),  # zero-width space
        ("\ufeff", "\\ufeff"),  # zero-width no-break space
        ("\u200e", "\\u200e"),  # bidi marks, embeddings, overrides, isolates
        ("\u202e", "\\u202e"),
        ("\u2067", "\\u2067"),
        ("\u00ad", "\\xad"),  # any other format character (Cf): a soft hyphen
        ("\t", "\\t"),
        ("\r", "\\r"),
    ],
)
def test_every_control_and_format_character_is_escaped(char, shown):
    assert printable(f"a{char}b") == f"a{shown}b"


def test_printable_keeps_newlines_by_default_and_what_the_caller_keeps():
    assert printable("a\nb\tc") == "a\nb\\tc"
    assert printable("a\nb\tc", keep="\n\t") == "a\nb\tc"
    assert printable("a\nb", keep="") == "a\\nb"
    text = "[bold]é ü 中文 🙂 \\x1b[/bold]"
    assert printable(text) == text  # markup, accents, wide characters and backslashes stay


def test_the_cli_table_cell_escapes_the_same_characters_keeping_tabs():
    assert one_line("a\x1b[2J\x9b\u202eb\tc\nd", escape=True) == "a\\x1b[2J\\x9b\\u202eb\tc ⏎ d"
    assert one_line("a\x1b\nb") == "a\x1b ⏎ b"  # piped: exact


def test_first_words_is_one_line_cut_with_an_ellipsis():
    assert first_words("  Queue uses\n\tWAL   mode  ") == "Queue uses WAL mode"
    assert first_words("Queue uses\nWAL mode", 12) == "Queue uses…"
    assert first_words("abcdefghij", 5) == "abcd…"
    assert first_words("abcde", 5) == "abcde"
    assert len(first_words("x" * 200)) == 60
