"""TUI fixtures: a real repository with four memories learned at a fixed time, and a fixed clock.

Determinism: memories are learned with ``now=LEARNED`` and the app's clock returns
``LEARNED``, so every weight equals the confidence; the code commits have fixed dates
(``tests/conftest.py``), so anchor SHAs are the same on every run. Commits on the memory
ref carry the real time, so snapshots hide the detail pane's history section.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gitmem.api import Gitmem
from tests.conftest import commit_file

LEARNED = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    """The app's clock: always ``LEARNED``."""
    return lambda: LEARNED


@pytest.fixture
def tui_repo(repo):
    """``repo`` plus ``src/store.py``; returns (path, gm, ids by short name)."""
    commit_file(repo, "src/store.py", "".join(f"store {i}\n" for i in range(1, 11)), "store")
    gm = Gitmem.open(repo)
    ids = {
        "axiom": gm.learn("Only the store imports pygit2", type="axiom", now=LEARNED).memory.id,
        "port": gm.learn("The service listens on port 8080", file="src/app.py#L3-L5",
                         confidence=0.8, now=LEARNED).memory.id,
        "wal": gm.learn("Queue uses [bold]WAL[/bold] mode", type="insight",
                        file="src/store.py#L2-L4", now=LEARNED).memory.id,
        "pref": gm.learn("Prefer small commits", type="preference", confidence=0.9,
                         now=LEARNED).memory.id,
    }
    return repo, gm, ids
