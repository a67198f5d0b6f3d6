"""Where a command reads and writes: :class:`Env`, with output escaped on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from gitmem.text import for_reader

if TYPE_CHECKING:
    from gitmem.api import Gitmem

__all__ = ["Env"]

@dataclass
class Env:
    """Where a command reads and writes, and the repository it works on (opened on first use)."""

    inp: IO[str] = field(default_factory=lambda: sys.stdin)
    out: IO[str] = field(default_factory=lambda: sys.stdout)
    err: IO[str] = field(default_factory=lambda: sys.stderr)
    path: str = "."
    _gm: Gitmem | None = None
    _warned: set[str] = field(default_factory=set)

    @property
    def gm(self) -> Gitmem:
        """The :class:`gitmem.api.Gitmem` for ``path`` (raises NotARepository)."""
        if self._gm is None:
            from gitmem.api import Gitmem

            self._gm = Gitmem.open(self.path)
            if self.err.isatty():
                from gitmem.cli.progress import ProgressBar

                # A cold read, or the first after a big write, parses thousands of records.
                self._gm.set_read_progress(ProgressBar(self.err, "reading memories"))
        return self._gm

    @contextmanager
    def progress(self, label: str) -> Iterator[Callable[[int, int], None] | None]:
        """A ``progress(done, total)`` callback for long work, or ``None`` when stderr is not a terminal.

        The bar (Rich, on stderr) appears only for long work and is gone when the block ends.
        """
        if not self.err.isatty():
            yield None
            return
        from gitmem.cli.progress import ProgressBar

        bar = ProgressBar(self.err, label)
        try:
            yield bar
        finally:
            bar.close()

    def write(self, text: str) -> None:
        r"""Write ``text`` to stdout as given (no markup, no wrapping).

        On a terminal, control and format characters other than newline and tab are
        shown escaped (``\x1b``, ``\u202e``; see :func:`gitmem.text.for_reader`): a memory
        synced from someone else must not be able to restyle or rewrite the user's screen.
        Piped output is exact.
        """
        if self.out.isatty():
            text = for_reader(text)
        self.out.write(text)

    def print(self, text: str = "") -> None:
        """Write one line to stdout (see :meth:`write`)."""
        self.write(text + "\n")

    def warn(self, text: str) -> None:
        """Write one line to stderr, escaped on a terminal as :meth:`write` does.

        Warnings quote stored text too (a refutation's reason, a malformed record's blob).
        """
        if self.err.isatty():
            text = for_reader(text)
        self.err.write(text + "\n")

    def note(self, text: str | None) -> None:
        """Write ``text`` as one line to stderr only when stderr is a terminal (``None``: nothing).

        For what a person at the keyboard wants to hear and a script does not: that a wake
        or recall found nothing (:func:`gitmem.api.empty_notice`). A pipe gets no line, so
        that empty output stays empty.
        """
        if text and self.err.isatty():
            self.warn(text)

    def warn_skipped(self, skipped: Sequence[Any]) -> None:
        """Warn about each skipped entry (malformed record, layout problem, cache notice), once a command."""
        for item in skipped:
            line = item.warning()
            if line not in self._warned:
                self._warned.add(line)
                self.warn(line)

    def warn_notices(self) -> None:
        """Print what the repository's store noted during the command (a stale lock removed)."""
        if self._gm is not None:
            for line in self._gm.take_notices():
                self.warn(line)
