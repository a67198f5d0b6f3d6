"""Cursor: the MCP server in ``mcp.json`` and a project rule; Cursor's hooks cannot add context.

Formats (docs/harness.md#cursor has the sources):

- MCP: ``.cursor/mcp.json`` (project) or ``~/.cursor/mcp.json`` (user), key
  ``mcpServers.<name>`` = ``{"command": ..., "args": [...]}``.
- instructions: a project rule, ``.cursor/rules/gitmem.mdc``, whose front matter
  ``alwaysApply: true`` puts it into every request. User rules live in Cursor's settings,
  not in a file, so ``--scope user`` writes none.
- hooks: Cursor's hooks can allow or deny an action but not add to the agent's context, so
  memories reach Cursor through MCP. Its ``stop`` hook, though, may answer
  ``{"followup_message": ...}``, sent as the next user message (``loop_count`` in the payload
  counts those): ``.cursor/hooks.json``, ``{"version": 1, "hooks": {"stop": [{"command":
  ...}]}}``, runs ``tur hook stop --harness cursor``. Project scope only: a user hook runs
  in ``~/.cursor``, outside the repository.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import JsonFile, KeyEntry, ListEntry
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"command": "tur", "args": ["mcp", "--harness", "cursor"]}
STOP = "tur hook stop --harness cursor"
RULE_FRONT_MATTER = ("---\ndescription: gitmem memories: how to read, check and record them\n"
                     "alwaysApply: true\n---\n")


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup cursor`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".cursor" if user else root / ".cursor"
    files: list = [JsonFile(base / "mcp.json", [KeyEntry(("mcpServers", "tur"), MCP_SERVER, MCP_LABEL)])]
    notes = ["Cursor's hooks cannot add context to the agent, so memories reach it through MCP "
             "(`tur mcp`); its stop hook gives the reminder to learn (project scope only)."]
    if user:
        notes.append("Cursor keeps user rules in its settings, not in a file: no instructions "
                     "were written; `tur setup cursor` in a repository writes a project rule.")
    else:
        text = instructions("cursor", hooks=False, tool_hook=False, user=False)
        files.append(MarkdownFile(base / "rules" / "gitmem.mdc",
                                  Block(text, prefix=RULE_FRONT_MATTER, label="agent instructions (rule)")))
        files.append(JsonFile(base / "hooks.json", [
            ListEntry(("hooks", "stop"), {"command": STOP}, f"stop hook: {STOP}",
                      header=(("version", 1),))]))
    return Plan(files, notes)
