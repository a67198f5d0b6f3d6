"""``tur setup``, for the facade: wiring a harness to this repository or to the user's home."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import InvalidInput

if TYPE_CHECKING:
    from gitmem.harness import SetupReport
    from gitmem.store import Store

__all__ = ["HarnessSetup"]


class HarnessSetup:
    """Writes, checks and removes a harness's hooks, MCP configuration and instructions.

    Args:
        store: the repository (its working tree is where ``--scope project`` writes).
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def run(self, harness: str, *, scope: str = "project", check: bool = False,
            remove: bool = False, home: Path | None = None) -> SetupReport:
        """Wire ``harness`` to gitmem (``tur setup``): hooks and/or MCP, and agent instructions.

        Writes, in each harness's documented format (docs/harness.md), its hook
        configuration where it can inject context from a hook (Claude Code, Codex, Gemini
        CLI), its MCP configuration running ``tur mcp``, and an instructions block between
        begin and end markers (``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``, a Cursor rule,
        ``.github/copilot-instructions.md``). Idempotent: entries already there are left
        alone; everything in the files that ``tur setup`` did not write is kept. Never a git
        hook.

        Args:
            harness: ``claude``, ``codex``, ``cursor``, ``copilot`` or ``gemini``.
            scope: ``project`` (under the working tree) or ``user`` (under ``home``).
            check: write nothing; report each entry as wired, missing or differing.
            remove: take out exactly what ``tur setup`` writes (a file left empty is deleted).
            home: the user's home directory (default: ``Path.home()``).

        Returns:
            The :class:`~gitmem.harness.SetupReport`: one item per entry, and notes.

        Raises:
            InvalidInput: an unknown harness or scope, or ``check`` with ``remove``.
            HarnessConfigError: a settings file is not valid JSON/TOML or cannot be written
                (nothing of that harness is changed when a file cannot be read).
        """
        from gitmem.harness import run

        if check and remove:
            raise InvalidInput("--check and --remove do not go together",
                               "check first, then remove")
        workdir = self.store.workdir
        if workdir is None and scope == "project":
            raise InvalidInput("a bare repository has no working tree to wire",
                               "run tur setup in a clone, or use --scope user")
        root = Path(workdir or self.store.common_dir).resolve()
        action = "check" if check else "remove" if remove else "setup"
        journal = Path(self.store.common_dir) / "tur" / "setup.json"
        return run(harness, scope, action, root, (home or Path.home()).resolve(), journal)
