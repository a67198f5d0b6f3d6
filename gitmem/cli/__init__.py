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
from typing import NoReturn

from gitmem.cli.env import Env

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
    "gitmem.cli.setup_cmds",
    "gitmem.cli.mcp_cmds",
)

#: Commands a harness runs on every turn or tool call: when one of them is run, only its
#: module is imported and registered (the full parser costs ~20 ms of imports and set-up).
_FAST_COMMANDS = {"hook": "gitmem.cli.context_cmds"}


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (skipping ``-C PATH``), or ``None`` before any other option."""
    args = iter(argv)
    for arg in args:
        if arg == "-C":
            next(args, None)
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


def _version() -> str:
    # The package constant, not importlib.metadata: that import alone costs ~50 ms.
    from gitmem.version import __version__

    return __version__


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other bad input
        self.exit(2, f"tur: error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the ``tur`` parser: every command, or only ``command``'s group when it is fast.

    A fast command is one harnesses run each turn (:data:`_FAST_COMMANDS`).
    """
    parser = _Parser(
        prog="tur",
        description="gitmem: git-native memory for AI coding agents. Memories live on "
        "refs/tur/memories in this repository; staleness comes from the commit graph.",
    )
    parser.add_argument("--version", action="version", version=f"tur (gitmem) {_version()}")
    parser.add_argument("-C", dest="path", default=".", metavar="PATH",
                        help="run as if tur was started in PATH")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    fast = _FAST_COMMANDS.get(command or "")
    for name in (fast,) if fast else _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None, env: Env | None = None) -> int:
    """Run ``tur`` with ``argv``; return the exit code (0 ok, 1 error, 2 bad input, 130 interrupted)."""
    from gitmem.errors import GitmemError

    env = env or Env()
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(env.out)
        return 0
    env.path = args.path
    try:
        try:
            return int(args.func(args, env) or 0)
        finally:
            env.warn_notices()
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
    except Exception as exc:
        if os.environ.get("TUR_DEBUG"):
            raise
        env.warn(f"tur: internal error: {type(exc).__name__}: {exc} (rerun with TUR_DEBUG=1 for details)")
        return 1


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
