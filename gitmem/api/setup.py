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
        """See :meth:`gitmem.api.Gitmem.setup_harness`."""
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
