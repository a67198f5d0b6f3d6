"""GitHub Copilot CLI: the MCP server and custom instructions; its hooks cannot add context.

Formats (docs/harness.md#github-copilot-cli has the sources):

- MCP: ``.github/mcp.json`` (project, the shared per-repository file) or
  ``~/.copilot/mcp-config.json`` (user), key ``mcpServers.<name>`` = ``{"type": "local",
  "command": ..., "args": [...], "tools": ["*"]}``.
- instructions: ``.github/copilot-instructions.md`` (repository-wide) or
  ``~/.copilot/copilot-instructions.md`` (user).
- hooks: Copilot CLI's hooks (``.github/hooks/*.json``) ignore what a session-start hook
  returns, so gitmem reaches Copilot CLI through MCP instead.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import JsonFile, KeyEntry
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"type": "local", "command": "tur", "args": ["mcp"], "tools": ["*"]}


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup copilot`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".copilot" if user else root / ".github"
    mcp = JsonFile(base / ("mcp-config.json" if user else "mcp.json"),
                   [KeyEntry(("mcpServers", "tur"), MCP_SERVER, MCP_LABEL)])
    text = instructions("copilot", hooks=False, tool_hook=False, user=user)
    guide = MarkdownFile(base / "copilot-instructions.md", Block(text))
    notes = ["Copilot CLI's hooks cannot add context to the agent today, so gitmem is wired "
             "through MCP (`tur mcp`)."]
    return Plan([mcp, guide], notes)
