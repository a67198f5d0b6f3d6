"""Stored text made safe and short for display: invisible characters escaped, one-line summaries.

Memory content comes from other agents and other clones, so on a screen it must not be able to
move the cursor, restyle the terminal or reorder what the reader sees. One escaping table and
one "first words" helper serve the command line (:mod:`gitmem.cli`), the TUI (:mod:`tui.text`)
and commit messages. Standard library only, so the command line can import it at start-up.
"""

from __future__ import annotations

import unicodedata

__all__ = ["first_words", "for_reader", "printable"]

# Cc: C0 and C1 controls and DEL (ESC starts ANSI sequences; 0x9b is a one-byte CSI).
# Cf: format characters, among them zero-width ones (U+200B, U+FEFF) and the bidi marks,
# embeddings, overrides and isolates (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).
_HIDDEN = frozenset({"Cc", "Cf"})


class _Escapes(dict):
    r"""A :meth:`str.translate` table filled on first sight of each character.

    A hidden character maps to its Python escape (``\x1b``, ``\u202e``, ``\t``); any other
    character, and those in ``keep``, to itself. Memoised per code point, so escaping a long
    output costs one category lookup per distinct character.
    """

    __slots__ = ("_keep",)

    def __init__(self, keep: str) -> None:
        super().__init__()
        self._keep = frozenset(map(ord, keep))

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if code not in self._keep and unicodedata.category(char) in _HIDDEN:
            shown = char.encode("unicode_escape").decode("ascii")
        else:
            shown = char
        self[code] = shown
        return shown


_TABLES: dict[str, _Escapes] = {}


def printable(text: str, keep: str = "\n") -> str:
    r"""``text`` with control and format characters (Unicode Cc and Cf) shown as escapes.

    C0 and C1 controls, DEL, zero-width characters and bidi marks become their Python escape
    (``\x1b``, ``\x9b``, ``\x7f``, ``\u200b``, ``\u202e``; tab ``\t``, newline ``\n``); every other
    character, markup included, is kept as it is.

    Args:
        text: any string (memory content, a reason, a diff line).
        keep: characters left as they are even though hidden, e.g. ``"\n\t"`` for a terminal
            that should still break lines and tabulate.

    Returns:
        The escaped text; equal to ``text`` when it holds nothing to escape.
    """
    table = _TABLES.get(keep)
    if table is None:
        table = _TABLES.setdefault(keep, _Escapes(keep))
    return text.translate(table)


def for_reader(text: str) -> str:
    r"""``text`` as every reader of gitmem's output gets it: hidden characters escaped, lines kept.

    The one escaping of stored text on its way out, to a terminal or through a pipe: wake,
    recall, hook and MCP output reach an agent, which reads a raw ESC, a bidi override or an
    invisible tag character (U+E0000-U+E007F, Unicode Cf) as text a person never saw. It is
    :func:`printable` keeping newline and tab: ``for_reader("a\x1bb")`` is ``a\x1bb`` spelled
    with a backslash, four characters where ESC was one.

    Args:
        text: any string (an entry, a persona line, a continuity note).

    Returns:
        The escaped text; equal to ``text`` when it holds nothing to escape.
    """
    return printable(text, "\n\t")


def first_words(text: str, limit: int = 60) -> str:
    r"""``text`` as one line of at most ``limit`` characters, a cut marked with ``…``.

    Runs of whitespace, newlines included, become one space and the ends are stripped; a line
    longer than ``limit`` keeps its first ``limit - 1`` characters (trailing spaces dropped)
    and ends with ``…``. Nothing is escaped: see :func:`printable`.

    Args:
        text: any string (a memory, a continuity note, a table cell).
        limit: maximum length of the result in characters, >= 1.

    Returns:
        The line, e.g. ``first_words("Queue uses\nWAL mode", 12) == "Queue uses…"``.
    """
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[: max(limit - 1, 0)].rstrip() + "…"
