"""Every ``tur`` command by name: the module that builds its parser and its one-line help.

A static table, so that ``tur --help``, shell completion of command names and "did you
mean" know every command without importing a command module, and running one command
imports and builds only that command's parser. A leaf: the standard library only (the id
completer imports the facade when a shell asks).

A new command: add a row to :data:`COMMANDS` and, in its module, a builder in that module's
``PARSERS`` (``name -> function(parser)``); :func:`add_command` gives it its help from here.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

__all__ = ["COMMANDS", "EXAMPLES", "Command", "add_command", "add_format", "add_id_argument",
           "complete_memory_ids"]


class Command(NamedTuple):
    """Where a command's parser is built and what ``tur --help`` says about it."""

    module: str
    help: str


_MEMORY = "gitmem.cli.memory_cmds"
_CONTEXT = "gitmem.cli.context_cmds"

#: Every command, in the order ``tur --help`` lists them.
COMMANDS: dict[str, Command] = {
    "learn": Command(_MEMORY, "remember a statement, observed at HEAD"),
    "list": Command(_MEMORY, "list memories with status and weight"),
    "show": Command(_MEMORY, "show one record and the commits that touched it"),
    "refute": Command(_MEMORY, "mark a memory as wrong, with a reason (--undo withdraws it)"),
    "edit": Command(_MEMORY, "change a memory's content, type or anchor in place (the id stays)"),
    "forget": Command(_MEMORY, "remove a memory (it stays in the ref's history)"),
    "doctor": Command(_MEMORY, "list what readers skip in the memory tree; --fix repairs the layout"),
    "confidence": Command(_MEMORY, "set a memory's confidence"),
    "link": Command(_MEMORY, "relate two memories: SOURCE TARGET --type RELATION"),
    "import": Command(_MEMORY, "import record files, or a whole Tur store (--from-tur), in one commit"),
    "verify": Command("gitmem.cli.verify_cmds", "recompute staleness and record it in one commit"),
    "status": Command("gitmem.cli.verify_cmds",
                      "staleness summary with weight and reason, without writing"),
    "wake": Command(_CONTEXT, "the token-budgeted prompt for the start of a session"),
    "recall": Command(_CONTEXT, "memories relevant to a query (BM25 with neighbours and field boosts)"),
    "hook": Command(_CONTEXT, "entry points for agent harness hooks (always exit 0)"),
    "persona": Command(_CONTEXT, "tier 0 identity and invariants (persona.yaml on the ref)"),
    "spark": Command(_CONTEXT, "leave a continuity note for the next session"),
    "log": Command("gitmem.cli.log_cmds", "what wake and recall gave agents, per session (this clone)"),
    "remote": Command("gitmem.cli.sync_cmds", "configure a git remote to carry memories"),
    "sync": Command("gitmem.cli.sync_cmds", "fetch, merge and push memories (never a force push)"),
    "watch": Command("gitmem.cli.watch_cmds", "mark memories stale as soon as their anchored code changes"),
    "tui": Command("gitmem.cli.tui_cmds", "browse, verify, refute and curate memories; preview wake"),
    "setup": Command("gitmem.cli.setup_cmds", "wire an agent harness: hooks and/or MCP, and instructions"),
    "mcp": Command("gitmem.cli.mcp_cmds",
                   "serve memories to agents over the Model Context Protocol (stdio)"),
    "serve": Command("gitmem.cli.mcp_cmds",
                     "serve the retrieval API and MCP over HTTP on a local port"),
    "cache": Command("gitmem.cli.cache_cmds", "the read cache (parsed records, token counts, indexes)"),
    "completion": Command("gitmem.cli.completion_cmds",
                          "print the shell completion script (bash, zsh, fish)"),
}

#: What ``tur --help`` ends with, as ``gh`` does.
EXAMPLES = """\
examples:
  $ tur learn "The queue retries failed jobs 3 times" --file src/queue.py#L10-L24
  $ tur wake                      # the prompt for a new session
  $ tur recall "how are jobs retried"
  $ tur status --exit-code        # in CI: exit 1 when a memory is stale
  $ tur verify                    # record new statuses in one commit
  $ tur watch                     # keep statuses current while you work
  $ eval "$(tur completion bash)" # tab completion (also zsh, fish)

Every command has --help. The manual: docs/commands.md."""


def add_command(sub: argparse._SubParsersAction, name: str,
                description: str | None = None) -> argparse.ArgumentParser:
    """Add ``name``'s parser to ``sub``, with its one-line help from :data:`COMMANDS`.

    Args:
        sub: the ``tur`` parser's sub-parsers.
        name: a key of :data:`COMMANDS`.
        description: what ``tur NAME --help`` says above the options (default: the help line).

    Returns:
        The new parser, for the command's options.
    """
    text = COMMANDS[name].help
    return sub.add_parser(name, help=text, description=description or text[:1].upper() + text[1:] + ".")


def add_format(parser: argparse.ArgumentParser, choices: tuple[str, ...] = ("plain", "json")) -> None:
    """Add ``--format`` with ``choices`` (the first is the default) and its help line."""
    rest = ", ".join(choices[1:])
    parser.add_argument("--format", default=choices[0], choices=choices,
                        help=f"output: {choices[0]} (default) or {rest}, for scripts")


def complete_memory_ids(prefix: str, parsed_args: argparse.Namespace, **_: object) -> dict[str, str]:
    """Argcomplete completer: the memory ids starting with ``prefix``, each described by its content.

    Reads the repository named by ``-C`` (default: the current directory); outside a
    repository, or on any gitmem error, nothing is offered rather than an error printed
    into the user's command line. After ``tur refute --undo`` only refuted memories are
    offered: no other can have its refutation withdrawn.
    """
    from gitmem.api import Gitmem
    from gitmem.errors import GitmemError
    from gitmem.vocabulary import Status

    status = Status.REFUTED.value if getattr(parsed_args, "undo", False) else None
    try:
        return Gitmem.open(getattr(parsed_args, "path", ".") or ".").id_choices(prefix, status=status)
    except GitmemError:
        return {}


def add_id_argument(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> argparse.Action:
    """``parser.add_argument(name, **kwargs)`` for a memory id, which the shell completes from the store."""
    action = parser.add_argument(name, **kwargs)
    action.completer = complete_memory_ids  # type: ignore[attr-defined]  # argcomplete reads it
    return action
