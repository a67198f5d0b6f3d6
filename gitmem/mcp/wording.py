"""The one place that turns gitmem's command-line wording into the words of the MCP tools.

The facade's messages, hints and prompt texts name what to do next as the CLI does
(`` `tur verify --confirm fact-1a2b3c4d` ``, ``pass --reason "why it is wrong"``, ``Use `tur
recall --query ...` ``). An agent talking to ``tur mcp`` has tools, not a shell: every text a
tool or resource returns goes through :func:`tool_words`, which rewrites

- a backquoted command that has a tool (`` `tur show ID` ``) into that tool and its arguments
  (`` `show` with id ID ``); ``tur verify --confirm`` is the ``confirm`` tool;
- ``pass --reason``, ``pass --content, --type or --file`` into ``give `reason```, …;
- a lone option of a tool (``--file``, ``--include-stale``) into the argument's name
  (`` `file` ``, `` `include_stale` ``).

Commands with no tool (`` `tur doctor` ``, `` `tur sync` ``, `` `git fetch --unshallow` ``)
are left as they are: they are for the person at a shell. Memory content inside a wake or
recall text is rewritten only where it holds a backquoted ``tur`` command of a tool, which
a statement about the code rarely does.
"""

from __future__ import annotations

import re

from gitmem.errors import GitmemError, SecretRefused

__all__ = ["NO_REPOSITORY", "SECRET_HINT", "TOOL_ARGUMENTS", "error_words", "tool_words"]

#: The hint of a refused credential: the CLI's names ``--allow-secret``, which no tool takes on
#: purpose (an agent must not be able to override the scan, only a person at a shell).
SECRET_HINT = ("leave the credential out; a person who knows it is not a real credential "
               "can store it with `tur learn --allow-secret` in a shell")

#: What every call answers when ``tur mcp`` started outside a git repository (``{where}``: its
#: directory).
NO_REPOSITORY = ("tur mcp was started outside a git repository ({where}): start it in a "
                 "repository, or register it with `tur mcp --repo PATH`")

#: Each tool's arguments, as its input schema names them (what a CLI option becomes); a test
#: holds this table to the schemas the server lists.
TOOL_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "wake": ("token_budget", "max_chars", "explain"),
    "recall": ("query", "top_k", "include_stale", "file"),
    "learn": ("content", "type", "file", "confidence", "source_agent", "personal", "for"),
    "verify": ("id",),
    "confirm": ("id",),
    "refute": ("id", "reason"),
    "edit": ("id", "content", "type", "file", "reanchor", "for"),
    "forget": ("id", "undo"),
    "link": ("source", "target", "type", "remove"),
    "show": ("id",),
    "list": ("file", "status", "limit"),
    "status": (),
}

# What each CLI option is called as an argument, where the names differ.
_RENAMED = {"agent": "source_agent", "top-k": "top_k", "include-stale": "include_stale",
            "max-chars": "max_chars", "token-budget": "token_budget"}
# Positional arguments of each command, in order (the rest are options).
_POSITIONAL = {"link": ("source", "target"), "recall": ("query",), "learn": ("content",)}
_COMMAND = re.compile(r"`tur ([a-z]+)((?: [^`]*)?)`")
_PASS = re.compile(r"\bpass (--[a-z][a-z-]*(?:(?:, | or )--[a-z][a-z-]*)*)")
_OPTION = re.compile(r"`?(?<![\w-])--([a-z][a-z-]*)\b`?")
_ALL_ARGUMENTS = {a for args in TOOL_ARGUMENTS.values() for a in args}


def _argument(option: str) -> str | None:
    name = _RENAMED.get(option, option.replace("-", "_"))
    return name if name in _ALL_ARGUMENTS else None


def _command(match: re.Match[str]) -> str:
    """One backquoted ``tur COMMAND ARGS`` as the tool call it stands for (or as it was)."""
    command, rest = match.group(1), match.group(2).split()
    flags = [w for w in rest if w.startswith("--")]
    tool = "confirm" if command == "verify" and "--confirm" in flags else command
    if tool not in TOOL_ARGUMENTS:
        return match.group(0)
    given: list[str] = []
    positional = iter(_POSITIONAL.get(tool, ("id",)))
    words = iter(rest)
    for word in words:
        if word == "--confirm" and tool == "confirm":
            continue
        if word.startswith("--"):
            option, _, value = word[2:].partition("=")
            name = _argument(option)
            if name not in TOOL_ARGUMENTS[tool]:  # an option no tool takes: a shell command
                return match.group(0)
            if not value and name not in ("undo", "remove", "reanchor", "explain", "include_stale"):
                value = next(words, "")
            given.append(f"{name} {value}".strip() if value else f"{name} true")
        else:
            given.append(f"{next(positional, 'id')} {word}")
    return f"`{tool}`" + (f" with {', '.join(given)}" if given else "")


def _passed(match: re.Match[str]) -> str:
    return "give " + _OPTION.sub(lambda m: f"`{_argument(m.group(1)) or m.group(1)}`", match.group(1))


def _option(match: re.Match[str]) -> str:
    name = _argument(match.group(1))
    return f"`{name}`" if name is not None else match.group(0)


def tool_words(text: str) -> str:
    """``text`` with every CLI form that has an MCP counterpart said in the tools' words.

    ``pass --reason "why it is wrong"`` → ``give `reason` "why it is wrong"``;
    ``"`tur verify fact-1a2b --confirm` re-anchors it"`` → ``"`confirm` with id fact-1a2b
    re-anchors it"``; ``"Use `tur recall --query ...` for on-demand retrieval."`` →
    ``"Use `recall` with query ... for on-demand retrieval."``. Anything else is unchanged.
    """
    if "tur " not in text and "--" not in text:
        return text
    text = _COMMAND.sub(_command, text)
    text = _PASS.sub(_passed, text)
    return _OPTION.sub(_option, text)


def error_words(exc: BaseException) -> str:
    """The one line a tool error carries for ``exc``, in the tools' words.

    A :class:`~gitmem.errors.GitmemError` gives its message and hint (what ``tur`` prints
    after ``tur: error:``, through :func:`tool_words`); a refused credential gets
    :data:`SECRET_HINT`; an ``OSError`` names the file and the system's reason (a full
    disk, a name too long); anything else is ``internal error: <type>: <message>``.
    """
    if isinstance(exc, SecretRefused):
        return tool_words(str(SecretRefused(exc.message, SECRET_HINT)))
    if isinstance(exc, GitmemError):
        return tool_words(str(exc))
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror.lower()}{where}"
    return " ".join(f"internal error: {type(exc).__name__}: {exc}".split())
