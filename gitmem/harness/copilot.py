"""GitHub Copilot CLI: the MCP server, custom instructions, and a hooks file for the reminder to learn.

Formats (docs/harness.md#github-copilot-cli has the sources):

- MCP: ``.github/mcp.json`` (project, the shared per-repository file) or
  ``~/.copilot/mcp-config.json`` (user), key ``mcpServers.<name>`` = ``{"type": "local",
  "command": ..., "args": [...], "tools": ["*"]}``.
- instructions: ``.github/copilot-instructions.md`` (repository-wide) or
  ``~/.copilot/copilot-instructions.md`` (user).
- hooks: ``*.json`` files in ``.github/hooks/`` (project) or ``~/.copilot/hooks/`` (user),
  each ``{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": ...,
  "timeoutSec": ...}]}}``. A session-start hook's output is ignored, so memories reach
  Copilot CLI through MCP; but ``agentStop`` may answer ``{"decision": "block", "reason":
  ...}``, which queues the reason as the agent's next prompt: gitmem's own file,
  ``gitmem.json``, runs ``tur hook stop`` there (and at ``sessionStart``, to record the
  session's start).
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import JsonFile, KeyEntry
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"type": "local", "command": "tur", "args": ["mcp", "--harness", "copilot"], "tools": ["*"]}
STOP = "tur hook stop --harness copilot"
HOOKS = {
    "sessionStart": [{"type": "command", "bash": f"{STOP} --start", "timeoutSec": 10}],
    "agentStop": [{"type": "command", "bash": STOP, "timeoutSec": 10}],
}


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup copilot`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".copilot" if user else root / ".github"
    mcp = JsonFile(base / ("mcp-config.json" if user else "mcp.json"),
                   [KeyEntry(("mcpServers", "tur"), MCP_SERVER, MCP_LABEL)])
    text = instructions("copilot", hooks=False, tool_hook=False, user=user)
    guide = MarkdownFile(base / "copilot-instructions.md", Block(text))
    hooks = JsonFile(base / "hooks" / "gitmem.json", [
        KeyEntry(("version",), 1, "hooks file format: version 1"),
        KeyEntry(("hooks",), HOOKS, f"sessionStart and agentStop hooks: {STOP}"),
    ])
    notes = ["Copilot CLI's hooks cannot add context to the agent today, so memories reach it "
             "through MCP (`tur mcp`); its agentStop hook gives the reminder to learn."]
    return Plan([mcp, guide, hooks], notes)
