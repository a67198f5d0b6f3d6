"""gitmem: a git-native memory store for AI coding agents.

Memories are YAML records on ``refs/tur/memories`` in the user's repository,
anchored to the commit and lines they were observed at. The public API is the
:class:`~gitmem.api.Gitmem` facade; import it from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.version import __version__

__all__ = ["Gitmem", "GitmemError", "Memory", "__version__"]

if TYPE_CHECKING:
    from gitmem.api import Gitmem
    from gitmem.errors import GitmemError
    from gitmem.record.models import Memory


def __getattr__(name: str):
    if name == "Gitmem":
        from gitmem.api import Gitmem

        return Gitmem
    if name == "GitmemError":
        from gitmem.errors import GitmemError

        return GitmemError
    if name == "Memory":
        from gitmem.record.models import Memory

        return Memory
    raise AttributeError(name)
