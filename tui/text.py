"""Memory text made safe to display: control and format characters shown as escapes, never markup."""

from __future__ import annotations

from rich.text import Text

from gitmem import text as gitmem_text

__all__ = ["first_line", "literal", "printable"]


def printable(text: str, keep_newlines: bool = True) -> str:
    r"""Return ``text`` with control/format characters replaced by escapes (``\x1b``, ``\u202e``, ``\t``).

    Args:
        text: any string (memory content, a reason, a diff line).
        keep_newlines: keep ``\n`` as a line break; otherwise it is shown as ``\n`` too.
    """
    return gitmem_text.printable(text, keep="\n" if keep_newlines else "")


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, escaped, cut to ``limit`` characters (with ``…``).

    See :func:`gitmem.text.first_words` for the cut (whitespace runs become one space).
    """
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return gitmem_text.first_words(printable(line.strip(), keep_newlines=False), limit)


def literal(text: str, style: str = "", keep_newlines: bool = True) -> Text:
    """A Rich :class:`~rich.text.Text` showing ``text`` exactly (``[bold]`` stays literal), escaped."""
    return Text(printable(text, keep_newlines), style=style)
