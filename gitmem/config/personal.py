"""Where the person's own memory store lives: ``$XDG_DATA_HOME/gitmem/personal.git``.

Personal memories (docs/personal.md) follow a person across repositories; they live in a
bare git repository of gitmem's own format, outside every project, so that no project ref
and no teammate ever receives them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["PERSONAL_DIR", "personal_path"]

PERSONAL_DIR = Path("gitmem") / "personal.git"
"""The store's path under the XDG data directory."""


def personal_path(environ: Mapping[str, str] | None = None) -> Path:
    """The personal store's path (it may not exist: it is created on the first write only).

    ``$XDG_DATA_HOME/gitmem/personal.git``; when ``XDG_DATA_HOME`` is unset, empty or not
    absolute (the XDG Base Directory rule), ``~/.local/share/gitmem/personal.git``.

    Args:
        environ: the environment to read (default: ``os.environ``).
    """
    env = os.environ if environ is None else environ
    data = env.get("XDG_DATA_HOME", "")
    if not data or not os.path.isabs(data):
        home = env.get("HOME") or str(Path.home())
        data = os.path.join(home, ".local", "share")
    return Path(data) / PERSONAL_DIR
