"""Codex CLI: hooks in ``hooks.json``, the MCP server in ``config.toml``, instructions in ``AGENTS.md``.

Formats (docs/harness.md#codex-cli has the sources):

- hooks: ``.codex/hooks.json`` (project) or ``~/.codex/hooks.json`` (user), the same shape
  as Claude Code's (``hooks.<Event>`` = list of matcher groups). SessionStart's matcher is the
  source (``startup|resume|clear``); its plain stdout, and UserPromptSubmit's, is added to
  the context. PreToolUse fires for ``apply_patch`` (Codex's file edits), with the patch in
  ``tool_input.command``; it adds context through ``hookSpecificOutput.additionalContext``.
  Codex moves a hook's text past 2,500 tokens out of the context, so the session start is
  capped at 2,400 tokens. Stop takes ``{"decision": "block", "reason": ...}`` (Codex goes on
  with the reason as a new prompt; its output schema allows no other keys) and sends
  ``stop_hook_active``.
- MCP: ``[mcp_servers.<name>]`` with ``command`` and ``args`` in ``.codex/config.toml``
  (project, for trusted projects) or ``~/.codex/config.toml``; edited with tomlkit, which
  keeps the user's comments and formatting.
- instructions: ``AGENTS.md`` at the project root, or ``~/.codex/AGENTS.md``.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.harness.hooks import hook_command
from gitmem.harness.instructions import instructions
from gitmem.harness.markdown import Block, MarkdownFile
from gitmem.harness.merge import HookEntry, JsonFile, KeyEntry, TomlFile
from gitmem.harness.plan import MCP_LABEL, Plan

__all__ = ["plan"]

MCP_SERVER = {"command": "tur", "args": ["mcp", "--harness", "codex"]}


def plan(scope: str, root: Path, home: Path) -> Plan:
    """What ``tur setup codex`` writes: ``project`` scope under ``root``, ``user`` under ``home``."""
    user = scope == "user"
    base = home / ".codex" if user else root / ".codex"
    hooks = JsonFile(base / "hooks.json", [
        # Its 2,400-token session start is codex's built-in limit (gitmem.defaults.HARNESS_LIMITS).
        HookEntry("SessionStart", "startup|clear", hook_command("session-start", "codex")[0],
                  ("tur hook session-start --token-budget 2400", "tur hook session-start")),
        HookEntry("UserPromptSubmit", None, *hook_command("pre-turn", "codex")),
        HookEntry("PreToolUse", "apply_patch", *hook_command("pre-tool", "codex")),
        HookEntry("Stop", None, "tur hook stop --harness codex"),
    ])
    mcp = TomlFile(base / "config.toml", [KeyEntry(("mcp_servers", "tur"), MCP_SERVER, MCP_LABEL)])
    text = instructions("codex", hooks=True, tool_hook=True, user=user)
    guide = MarkdownFile(base / "AGENTS.md" if user else root / "AGENTS.md", Block(text))
    notes = ["Codex runs hooks.json while its hooks feature is on (the default in current "
             "releases; older ones need `[features] codex_hooks = true` in config.toml)."]
    return Plan([hooks, mcp, guide], notes)
