"""The ``tur`` command line: parse, call :class:`gitmem.api.Gitmem`, render; errors as one stderr line.

Start-up matters (agents call ``tur`` every turn), so this module imports only
the standard library and :mod:`gitmem.text`; running a command imports only its module and
builds only its sub-parser, and ``tur --help`` lists the commands from the static table in
:mod:`gitmem.cli.commands`. Each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from gitmem.cli.commands import COMMANDS, EXAMPLES
from gitmem.cli.env import Env
from gitmem.cli.process import exempt_survivors, settle_process

__all__ = ["Env", "build_parser", "main"]

# One module per command group, each with ``PARSERS`` (name -> function adding the parser).
# Every command of a module also has its row in gitmem.cli.commands.COMMANDS (its one-line
# help), which is what lets `tur --help` and `tur COMMAND` skip the other modules.
_COMMAND_MODULES = (
    "gitmem.cli.memory_cmds",
    "gitmem.cli.verify_cmds",
    "gitmem.cli.context_cmds",
    "gitmem.cli.log_cmds",
    "gitmem.cli.sync_cmds",
    "gitmem.cli.tui_cmds",
    "gitmem.cli.watch_cmds",
    "gitmem.cli.cache_cmds",
    "gitmem.cli.setup_cmds",
    "gitmem.cli.completion_cmds",
    "gitmem.cli.mcp_cmds",
)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs (skipping ``-C PATH``), or ``None`` before any other option."""
    args = iter(argv)
    for arg in args:
        if arg == "-C":
            next(args, None)
        elif arg.startswith("-"):
            if not arg.startswith("-C"):  # -CPATH
                return None
        else:
            return arg
    return None


def _version() -> str:
    # The package constant, not importlib.metadata: that import alone costs ~50 ms.
    from gitmem.version import __version__

    return __version__


_INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '(.*?)' \(choose from (.*)\)$", re.S)


class _UsageError(Exception):
    """Bad command-line input, as the one line ``main`` prints (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        # The innermost (sub)command that left arguments it does not know is the one whose
        # --help a user needs: argparse reports them from the top parser, as `tur --help`.
        if extras and not hasattr(parsed, "_prog_left_over"):
            parsed._prog_left_over = self.prog
        return parsed, extras

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            prog = getattr(parsed, "_prog_left_over", self.prog)
            raise _UsageError(f"tur: error: unrecognized arguments: {' '.join(extras)} (see `{prog} --help`)")
        return parsed

    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other bad input
        bad = _INVALID_CHOICE.match(message)
        if bad:
            message = _did_you_mean(self.prog, *bad.groups())
        raise _UsageError(f"tur: error: {message} (see `{self.prog} --help`)")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every add_argument (to check its metavar), and one
        # without a width imports shutil, with bz2 and lzma (~3 ms a run), for its width.
        return self.formatter_class(prog=self.prog, width=_help_width())  # type: ignore[call-arg]


def _help_width() -> int:
    """The default help width of argparse, ``shutil.get_terminal_size().columns - 2``, without shutil.

    The same steps as :func:`shutil.get_terminal_size`: ``COLUMNS`` when set and positive,
    else the terminal's width when ``COLUMNS`` or ``LINES`` is unset, else 80.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns - 2


def _did_you_mean(prog: str, argument: str, given: str, listed: str) -> str:
    """The "invalid choice" error of argparse as one line, naming the nearest choice (``difflib``)."""
    import difflib

    choices = re.findall(r"'([^']*)'", listed)
    near = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    if argument in ("COMMAND", "ACTION", "HOOK", "SUBCOMMAND", "SHELL"):
        what = "command" if argument == "COMMAND" else argument.lower()
        message = f"unknown {what} '{given}'"
        return message + (f"; did you mean `{prog} {near[0]}`?" if near else "")
    message = f"argument {argument}: invalid choice '{given}' (choose from {', '.join(choices)})"
    return message + (f"; did you mean '{near[0]}'?" if near else "")


def build_parser(command: str | None = None, *, names_only: bool = False) -> argparse.ArgumentParser:
    """Build the ``tur`` parser.

    Args:
        command: build only this command's sub-parser (what running it needs); ``None``
            builds every command's (what completion and the tests need).
        names_only: with no ``command``, list every command with its one-line help
            (from :data:`gitmem.cli.commands.COMMANDS`) without building or importing
            any of them: what ``tur --help`` and an unknown command need.
    """
    parser = _Parser(
        prog="tur",
        description="gitmem: git-native memory for AI coding agents. Memories live on "
        "refs/tur/memories in this repository; staleness comes from the commit graph.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tur (gitmem) {_version()}",
                        help="print the version and exit")
    parser.add_argument("-C", dest="path", default=".", metavar="PATH",
                        help="run as if tur was started in PATH")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if names_only and command not in COMMANDS:
        # Each ArgumentParser costs ~1 ms (argparse looks up gettext catalogues on disk), so
        # the list is made of argparse's own help entries, all behind one empty parser: a
        # known command is always run with its own parser built (see main).
        stub = _Parser(prog="tur COMMAND", add_help=False)
        for name, known in COMMANDS.items():
            sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), known.help))
            sub._name_parser_map[name] = stub
        return parser
    for name in [command] if command in COMMANDS else list(COMMANDS):
        importlib.import_module(COMMANDS[name].module).PARSERS[name](sub)
    return parser


def _complete() -> None:
    """Answer a shell's completion request (``_ARGCOMPLETE`` set by the script) and exit."""
    import argcomplete

    from gitmem.vocabulary import ID_PATTERN

    def valid(completion: str, prefix: str) -> bool:
        # A memory id is offered for what `tur show` resolves, not only for its own prefix
        # (`12cc` names fact-12cc...): the id completer has already matched it.
        return completion.startswith(prefix) or ID_PATTERN.match(completion) is not None

    argcomplete.autocomplete(build_parser(), always_complete_options="long", validator=valid)


def main(argv: Sequence[str] | None = None, env: Env | None = None) -> int:
    """Run ``tur`` with ``argv``; return the exit code (0 ok, 1 error, 2 bad input, 130 interrupted)."""
    from gitmem.errors import GitmemError

    env = env or Env()
    if argv is None:
        argv = sys.argv[1:]
    if "_ARGCOMPLETE" in os.environ:
        _complete()
    command = _command_of(argv)
    parser = build_parser(command, names_only=command not in COMMANDS)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    except _UsageError as exc:
        env.warn(str(exc))
        # A harness reads a hook's exit 2 as "block" (Claude Code drops the prompt, stops the
        # tool call or keeps the turn going): a hook command with a bad option must not.
        return 0 if command == "hook" else 2
    if not getattr(args, "func", None):
        parser.print_help(env.out)
        return 0
    env.path = args.path
    try:
        try:
            from gitmem.cli.personal import route

            routed = route(command, args, env)
            return routed if routed is not None else int(args.func(args, env) or 0)
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
        from gitmem.errors import disk_full

        full = disk_full(exc)
        if full is not None:  # wherever the write was (an object, the cache, a log): one line
            env.warn(f"tur: error: {full}")
            return full.exit_code
        if os.environ.get("TUR_DEBUG"):
            raise
        env.warn(f"tur: internal error: {type(exc).__name__}: {exc} (rerun with TUR_DEBUG=1 for details)")
        return 1


def run() -> None:
    """Console-script entry point: process-level settings, :func:`main`, exit with its code."""
    settle_process()
    code = main()
    # What is still alive goes with the process. Out of the cyclic collector's reach, it is
    # not walked again by the collections the interpreter runs while it shuts down (a few
    # tens of milliseconds after a command that loaded pydantic, libgit2 and detect-secrets).
    # Python never promised finalizers at exit; gitmem closes what it writes as it goes.
    exempt_survivors()
    sys.exit(code)
