"""The anchored code's diff since the observed commit, from the user's ``git`` (read-only).

The TUI has no pygit2 (only ``gitmem/store/`` has); this runs the plumbing
``git diff-index -p <sha> -- <path>`` in a subprocess instead, which compares the observed
commit with the working tree, the same pair staleness is judged on. The porcelain
``git diff`` is avoided on purpose: it refreshes (rewrites) the index even with
``GIT_OPTIONAL_LOCKS=0`` (git 2.39), and the TUI must never write to the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gitmem.models import Memory

__all__ = ["AnchoredDiff", "anchored_diff"]

_SHA = re.compile(r"[0-9a-f]{4,64}")
MAX_LINES = 400
"""Lines of diff kept for display (a huge rewrite is cut, and says so)."""
TIMEOUT_S = 10.0
"""Seconds ``git diff-index`` may take before the pane gives up."""


@dataclass(frozen=True)
class AnchoredDiff:
    """The diff of one memory's anchored file.

    Attributes:
        text: unified diff (``""`` when nothing changed), at most :data:`MAX_LINES` lines.
        note: why there is no diff, or that it was cut (``None`` otherwise).
    """

    text: str
    note: str | None = None


def anchored_diff(memory: Memory, cwd: Path, max_lines: int = MAX_LINES) -> AnchoredDiff:
    """Run ``git diff-index -p <git_sha> -- :(top,literal)<path>`` for ``memory``'s anchor, in ``cwd``.

    Args:
        memory: the record; its ``provenance.git_sha`` and anchored path are used.
        cwd: any directory inside the repository (``gm.cwd``).
        max_lines: lines kept.

    Returns:
        The diff, or an empty one with a ``note`` (no anchor, git missing or failing).
        Never raises for git trouble: the detail pane shows the note instead.
    """
    prov = memory.provenance
    path = memory.anchor_path
    if prov is None or not prov.git_sha or not path:
        return AnchoredDiff("", "no anchored file")
    if not _SHA.fullmatch(prov.git_sha) or path.startswith("-"):
        return AnchoredDiff("", "anchor is not a commit and path")
    cmd = ["git", "--no-pager", "diff-index", "-p", "--no-color", "--no-ext-diff", "--no-textconv",
           prov.git_sha, "--", f":(top,literal){path}"]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT_S,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return AnchoredDiff("", f"git diff-index failed: {exc}")
    if out.returncode != 0:
        err = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return AnchoredDiff("", "git diff-index failed: " + (err[0] if err else f"exit {out.returncode}"))
    lines = out.stdout.decode("utf-8", "replace").splitlines()
    if not lines:
        return AnchoredDiff("", f"{path} unchanged since {prov.git_sha[:12]}")
    if len(lines) > max_lines:
        return AnchoredDiff("\n".join(lines[:max_lines]),
                            f"diff cut at {max_lines} of {len(lines)} lines")
    return AnchoredDiff("\n".join(lines))
