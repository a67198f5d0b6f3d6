"""Gemini CLI: hooks and the MCP server in ``settings.json``, instructions in ``GEMINI.md``.

Formats (docs/harness.md#gemini-cli has the sources):

- hooks: ``.gemini/settings.json`` (project) or ``~/.gemini/settings.json`` (user), key
  ``hooks.<Event>`` = list of matcher groups as Claude Code's. A hook's stdout must be JSON
  only, so every gitmem hook runs with ``--format json`` and answers with
  ``hookSpecificOutput.additionalContext``. SessionStart (matcher: the exact source,
  ``startup`` or ``clear``) injects the wake; BeforeAgent, after the prompt is submitted, the
  recall; BeforeTool cannot add context, so the memories of a file come with AfterTool, appended
  to the result of ``read_file`` and the edit tools. AfterAgent (once per turn, after the
  final response) takes ``{"decision": "deny", "reason": ...}``, which sends the reason to the
  agent as a new prompt, and carries ``stop_hook_active`` on that retry.
- MCP: ``mcpServers.<name>`` = ``{"command": ..., "args": [...]}`` in the same file.
- instructions: ``GEMINI.md`` at the project root, or ``~/.gemini/GEMINI.md``.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.hooks import hook_command
from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import HookEntry, JsonFile, KeyEntry
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"command": "tur", "args": ["mcp", "--harness", "gemini"]}
FILE_TOOLS = "read_file|read_many_files|replace|write_file"


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup gemini`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".gemini" if user else root / ".gemini"
    start = hook_command("session-start", "gemini", "--format json")
    settings = JsonFile(base / "settings.json", [
        HookEntry("SessionStart", "startup", *start),
        HookEntry("SessionStart", "clear", *start),
        HookEntry("BeforeAgent", None, *hook_command("pre-turn", "gemini", "--format json")),
        HookEntry("AfterTool", FILE_TOOLS, *hook_command("pre-tool", "gemini", "--format json")),
        HookEntry("AfterAgent", None, "tur hook stop --harness gemini"),
        KeyEntry(("mcpServers", "tur"), MCP_SERVER, MCP_LABEL),
    ])
    text = instructions("gemini", hooks=True, tool_hook=True, user=user)
    guide = MarkdownFile(base / "GEMINI.md" if user else root / "GEMINI.md", Block(text))
    return Plan([settings, guide])
