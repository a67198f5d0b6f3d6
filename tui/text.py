"""Memory text made safe to display: control and format characters shown as escapes, never markup."""

from __future__ import annotations

import unicodedata

from rich.text import Text

__all__ = ["first_line", "literal", "printable"]

# Cc (C0/C1 controls such as ESC) and Cf (zero-width and bidi overrides) could move the
# cursor or reorder what the reader sees, so they are shown as Python escapes instead.
_HIDDEN = {"Cc", "Cf"}


def printable(text: str, keep_newlines: bool = True) -> str:
    r"""Return ``text`` with control/format characters replaced by escapes (``\x1b``, ``\u202e``, ``\t``).

    Args:
        text: any string (memory content, a reason, a diff line).
        keep_newlines: keep ``\n`` as a line break; otherwise it is shown as ``\n`` too.
    """
    out: list[str] = []
    for ch in text:
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif unicodedata.category(ch) in _HIDDEN:
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, escaped, cut to ``limit`` characters (with ``…``)."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = printable(line.strip(), keep_newlines=False)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def literal(text: str, style: str = "", keep_newlines: bool = True) -> Text:
    """A Rich :class:`~rich.text.Text` showing ``text`` exactly (``[bold]`` stays literal), escaped."""
    return Text(printable(text, keep_newlines), style=style)
