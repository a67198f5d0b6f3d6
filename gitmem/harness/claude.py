"""Claude Code: hooks in ``settings.json``, the MCP server in ``.mcp.json``, instructions in ``CLAUDE.md``.

Formats (docs/harness.md#claude-code has the sources):

- hooks: ``.claude/settings.json`` (project) or ``~/.claude/settings.json`` (user), key
  ``hooks.<Event>`` = list of ``{"matcher": ..., "hooks": [{"type": "command", "command":
  ...}]}``. SessionStart's matcher is the start's source (``startup|clear|compact``), PreToolUse's
  the tool name. The stdout of SessionStart and UserPromptSubmit hooks is added to the
  context; a PreToolUse hook adds context with ``hookSpecificOutput.additionalContext``, which
  ``tur hook pre-tool`` prints by default. Claude Code keeps about 10,000 characters of a
  hook's output inline. A Stop hook that answers ``{"decision": "block", "reason": ...}``
  has Claude go on with the reason as its instruction (``tur hook stop``, the reminder to
  learn); the next Stop of that turn carries ``stop_hook_active: true``.
- MCP: ``.mcp.json`` at the project root (project) or ``~/.claude.json`` (user), key
  ``mcpServers.<name>`` = ``{"type": "stdio", "command": ..., "args": [...]}``.
- instructions: ``CLAUDE.md`` at the project root, or ``~/.claude/CLAUDE.md``.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.hooks import hook_command
from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import HookEntry, JsonFile, KeyEntry
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"type": "stdio", "command": "tur", "args": ["mcp", "--harness", "claude"]}


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup claude`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".claude" if user else root / ".claude"
    hooks = JsonFile(base / "settings.json", [
        HookEntry("SessionStart", "startup|clear|compact", *hook_command("session-start", "claude")),
        HookEntry("UserPromptSubmit", None, *hook_command("pre-turn", "claude")),
        HookEntry("PreToolUse", "Read|Edit|MultiEdit|Write", *hook_command("pre-tool", "claude")),
        HookEntry("Stop", None, *hook_command("stop", "claude")),
    ])
    mcp = JsonFile(home / ".claude.json" if user else root / ".mcp.json",
                   [KeyEntry(("mcpServers", "tur"), MCP_SERVER, MCP_LABEL)])
    text = instructions("claude-code", hooks=True, tool_hook=True, user=user)
    guide = MarkdownFile(base / "CLAUDE.md" if user else root / "CLAUDE.md", Block(text))
    return Plan([hooks, mcp, guide])
