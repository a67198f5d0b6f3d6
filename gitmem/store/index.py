"""The index (staging area) as git itself reads it: ``git ls-files --stage``.

Through the user's ``git`` rather than libgit2, so that every index git writes reads
right (split index, sparse index, newer index versions). Read-only: ``--no-optional-locks``
keeps git from refreshing and rewriting the index while an editor or a watcher asks.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["index_entries"]


def index_entries(workdir: Path, paths: Iterable[str] | None = None) -> dict[str, str]:
    """Map each path in the index to ``"<mode> <blob id> <stage>"`` (stages joined by ``;``).

    A conflicted path has one entry per stage. Stat data is left out: it changes when git
    merely refreshes the index, and no verdict depends on it.

    Args:
        workdir: the root of the working tree whose index is read.
        paths: keep only these repository-relative POSIX paths (all when ``None``).

    Returns:
        The entries; empty when git cannot read the index (no repository, no git).
    """
    try:
        proc = subprocess.run(
            ["git", "--no-optional-locks", "ls-files", "--stage", "-z"],
            cwd=workdir, capture_output=True, check=False, stdin=subprocess.DEVNULL,
        )
    except OSError:
        return {}
    if proc.returncode != 0:
        return {}
    wanted = None if paths is None else set(paths)
    out: dict[str, str] = {}
    for record in proc.stdout.split(b"\0"):
        meta, sep, raw = record.partition(b"\t")
        if not sep:
            continue
        path = raw.decode("utf-8", "surrogateescape")
        if wanted is not None and path not in wanted:
            continue
        entry = meta.decode("ascii", "replace")
        out[path] = f"{out[path]};{entry}" if path in out else entry
    return out
