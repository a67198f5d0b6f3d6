"""The instructions block of a markdown file (``CLAUDE.md``, ``AGENTS.md``...): put in, checked, taken out.

The block lies between :data:`BEGIN_MARKER` and :data:`END_MARKER`. A user may write inside
it; the lines ``tur setup`` did not write are found by a line diff (difflib's
:class:`~difflib.SequenceMatcher`, Ratcliff/Obershelp matching) against the block as
``tur setup`` last wrote it (from the journal, :mod:`gitmem.harness.journal`; the current
block when the journal has none) and are kept: ``--remove`` takes out only gitmem's lines
and leaves the user's where the block was; an update rewrites gitmem's lines and keeps the
user's at the end of the block. Either says which lines it kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from gitmem.errors import HarnessConfigError
from gitmem.harness.files import delete, write_atomic
from gitmem.harness.journal import Original
from gitmem.harness.merge import Outcome, read_merged

__all__ = ["BEGIN_MARKER", "END_MARKER", "Block", "MarkdownFile"]

BEGIN_MARKER = "<!-- BEGIN gitmem: written by `tur setup`; `tur setup --remove` takes it out -->"
"""First line of the instructions block ``tur setup`` writes into a markdown file."""
END_MARKER = "<!-- END gitmem -->"
"""Last line of that block."""

_QUOTED = 3
"""User lines quoted in a note (the rest are counted)."""


@dataclass(frozen=True)
class Block:
    """The instructions block of a markdown file.

    Attributes:
        text: the block's body (markdown), without the markers.
        prefix: written before the block only when ``tur setup`` creates the file (e.g. a
            Cursor rule's front matter); the file is deleted on removal when nothing but
            the prefix is left.
        label: the block in words.
    """

    text: str
    prefix: str = ""
    label: str = "agent instructions"

    def render(self) -> str:
        """The block with its markers, ending with a newline."""
        return f"{BEGIN_MARKER}\n{self.text.rstrip()}\n{END_MARKER}\n"


def user_lines(found: str, written: str) -> tuple[list[str], bool]:
    """The lines of the block ``found`` that are not in the block ``written``, and whether that is all.

    Returns ``(lines, only_added)``: the lines inserted or changed by someone else, in
    order (none when they are all blank), and whether ``found`` is ``written`` with lines
    inserted and nothing of it changed or deleted.
    """
    ours, theirs = written.splitlines(), found.splitlines()
    ops = SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes()
    added = [line for tag, _, _, j1, j2 in ops if tag in ("insert", "replace")
             for line in theirs[j1:j2]]
    only_added = all(tag in ("equal", "insert") for tag, *_ in ops)
    return (added if any(line.strip() for line in added) else []), only_added


def _kept_note(lines: list[str]) -> str:
    quoted = "; ".join(f'"{line.strip()[:60]}"' for line in lines if line.strip())
    shown = [line for line in lines if line.strip()]
    more = len(shown) - _QUOTED
    if more > 0:
        quoted = "; ".join(f'"{line.strip()[:60]}"' for line in shown[:_QUOTED]) + f"; and {more} more"
    noun = "line" if len(shown) == 1 else "lines"
    return f"kept {len(shown)} {noun} you wrote inside the block: {quoted}"


class MarkdownFile:
    """A markdown file (``AGENTS.md``, ``CLAUDE.md``...) with one block between markers.

    Args:
        path: the file (it may not exist yet).
        block: what goes between the markers.
    """

    def __init__(self, path: Path, block: Block) -> None:
        self.path = path
        self.block = block

    def _span(self, text: str) -> tuple[int, int] | None:
        start = text.find(BEGIN_MARKER)
        if start < 0:
            return None
        end = text.find(END_MARKER, start)
        if end < 0:
            raise HarnessConfigError(
                f"{self.path} has the gitmem begin marker but no end marker; nothing was changed",
                f"add the line {END_MARKER} after the block, or delete the block")
        end += len(END_MARKER)
        if text[end:end + 1] == "\n":
            end += 1
        return start, end

    def _outcome(self, state: str, note: str = "") -> list[Outcome]:
        return [Outcome(self.path, self.block.label, state, note)]

    def _current(self, found: str) -> bool:
        """Whether ``found`` is this block, with at most lines of the user's inserted."""
        block = self.block.render()
        return found == block or user_lines(found, block)[1]

    def check(self) -> list[Outcome]:
        """``wired`` (the block as written, lines of the user's in it or not), ``differs`` or ``missing``."""
        text = read_merged(self.path) or ""
        span = self._span(text)
        if span is None:
            return self._outcome("missing")
        return self._outcome("wired" if self._current(text[span[0]:span[1]]) else "differs")

    def apply(self, written: str | None = None) -> list[Outcome]:
        """Append the block (creating the file), or replace an older version of it.

        Args:
            written: the block as ``tur setup`` last wrote it into this file (the journal's),
                to tell the user's lines in an older version from gitmem's; ``None``: unknown.
        """
        text = read_merged(self.path)
        block = self.block.render()
        if text is None:
            write_atomic(self.path, self.block.prefix + block)
            return self._outcome("added")
        span = self._span(text)
        if span is not None:
            found = text[span[0]:span[1]]
            if self._current(found):
                return self._outcome("unchanged")
            theirs, _ = user_lines(found, written or block)
            if theirs:  # the user's lines go at the end of the new block
                block = block[: -len(END_MARKER) - 1] + "\n".join(theirs) + f"\n{END_MARKER}\n"
            write_atomic(self.path, text[:span[0]] + block + text[span[1]:])
            return self._outcome("updated", _kept_note(theirs) if theirs else "")
        # One blank line between the user's text and the block; remove takes it out again.
        joint = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        write_atomic(self.path, text + joint + block)
        return self._outcome("added")

    def remove(self, original: Original | None = None, written: str | None = None) -> list[Outcome]:
        """Take gitmem's lines out (and the blank line ``apply`` put before them); keep the user's.

        With ``original``: a file that existed before set-up is never deleted, and when
        what is left is the original text (up to line endings), the original bytes come back.
        Without it, a file left empty (or holding only the block's prefix) is deleted.

        Args:
            original: what the file held before ``tur setup`` first wrote into it.
            written: the block as ``tur setup`` last wrote it (see :meth:`apply`).
        """
        text = read_merged(self.path)
        span = None if text is None else self._span(text)
        if text is None or span is None:
            return self._outcome("absent")
        start, end = span
        theirs, _ = user_lines(text[start:end], written or self.block.render())
        before, after = text[:start], text[end:]
        if theirs:
            before += "\n".join(theirs) + "\n"
        elif before.endswith("\n\n"):
            before = before[:-1]
        rest = before + after
        if original is not None and original.text is not None:
            if rest == original.text.replace("\r\n", "\n"):
                write_atomic(self.path, original.text, exact=True)
            else:
                write_atomic(self.path, rest)
        elif not rest.strip() or rest == self.block.prefix:
            delete(self.path, "")
        else:
            write_atomic(self.path, rest)
        return self._outcome("removed", _kept_note(theirs) if theirs else "")
