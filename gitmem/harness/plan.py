"""What one harness's set-up consists of: the files, their entries, and notes for the user."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitmem.harness.markdown import MarkdownFile
from gitmem.harness.merge import JsonFile, TomlFile

__all__ = ["MCP_LABEL", "Plan"]

MCP_LABEL = 'MCP server "tur": tur mcp'
"""How the MCP entry is named in reports."""


@dataclass
class Plan:
    """The files ``tur setup HARNESS`` keeps entries in, and what to tell the user.

    Attributes:
        files: each file with the entries gitmem owns in it.
        notes: lines for the user (what cannot be wired, and what is used instead).
    """

    files: list[JsonFile | TomlFile | MarkdownFile]
    notes: list[str] = field(default_factory=list)
