"""The ``tur`` command line: parse, call :class:`gitmem.api.Gitmem`, render; errors as one stderr line.

Start-up matters (agents call ``tur`` every turn), so this module imports only
the standard library and :mod:`gitmem.text`; each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from gitmem.text import printable

__all__ = ["Env", "main"]

# One module per command group; each has ``register(subparsers)``.
_COMMAND_MODULES = (
    "gitmem.cli.memory_cmds",
    "gitmem.cli.verify_cmds",
    "gitmem.cli.context_cmds",
    "gitmem.cli.sync_cmds",
    "gitmem.cli.tui_cmds",
    "gitmem.cli.watch_cmds",
    "gitmem.cli.cache_cmds",
)

#: What a terminal keeps of the characters :func:`gitmem.text.printable` escapes.
_TERMINAL_KEEPS = "\n\t"


@dataclass
class Env:
    """Where a command reads and writes, and the repository it works on (opened on first use)."""

    inp: IO[str] = field(default_factory=lambda: sys.stdin)
    out: IO[str] = field(default_factory=lambda: sys.stdout)
    err: IO[str] = field(default_factory=lambda: sys.stderr)
    path: str = "."
    _gm: Any = None

    @property
    def gm(self):  # noqa: ANN201 - gitmem.api.Gitmem, imported lazily
        """The :class:`gitmem.api.Gitmem` for ``path`` (raises NotARepository)."""
        if self._gm is None:
            from gitmem.api import Gitmem

            self._gm = Gitmem.open(self.path)
        return self._gm

    def write(self, text: str) -> None:
        r"""Write ``text`` to stdout as given (no markup, no wrapping).

        On a terminal, control and format characters other than newline and tab are
        shown escaped (``\x1b``, ``\u202e``; see :func:`gitmem.text.printable`): a memory
        synced from someone else must not be able to restyle or rewrite the user's screen.
        Piped output is exact.
        """
        if self.out.isatty():
            text = printable(text, _TERMINAL_KEEPS)
        self.out.write(text)

    def print(self, text: str = "") -> None:
        """Write one line to stdout (see :meth:`write`)."""
        self.write(text + "\n")

    def warn(self, text: str) -> None:
        """Write one line to stderr, escaped on a terminal as :meth:`write` does.

        Warnings quote stored text too (a refutation's reason, a malformed record's blob).
        """
        if self.err.isatty():
            text = printable(text, _TERMINAL_KEEPS)
        self.err.write(text + "\n")

    def warn_skipped(self, skipped: Sequence[Any]) -> None:
        """Warn once per malformed record blob that was skipped."""
        for item in skipped:
            self.warn(item.warning())


def _version() -> str:
    # The package constant, not importlib.metadata: that import alone costs ~50 ms.
    from gitmem.version import __version__

    return __version__


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(2, f"tur: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the full ``tur`` parser (every command registered)."""
    parser = _Parser(
        prog="tur",
        description="gitmem: git-native memory for AI coding agents. Memories live on "
        "refs/tur/memories in this repository; staleness comes from the commit graph.",
    )
    parser.add_argument("--version", action="version", version=f"tur (gitmem) {_version()}")
    parser.add_argument("-C", dest="path", default=".", metavar="PATH",
                        help="run as if tur was started in PATH")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None, env: Env | None = None) -> int:
    """Run ``tur`` with ``argv``; return the exit code (0 ok, 1 error, 2 bad input, 130 interrupted)."""
    from gitmem.errors import GitmemError

    env = env or Env()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(env.out)
        return 0
    env.path = args.path
    try:
        return int(args.func(args, env) or 0)
    except GitmemError as exc:
        env.warn(f"tur: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        env.warn("tur: interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `tur list | head`); not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback reaches a user
        if os.environ.get("TUR_DEBUG"):
            raise
        env.warn(f"tur: internal error: {type(exc).__name__}: {exc} (rerun with TUR_DEBUG=1 for details)")
        return 1


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
