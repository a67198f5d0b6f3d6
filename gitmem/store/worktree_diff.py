"""The diff of a file since a commit, from the user's ``git`` (read-only).

This runs the plumbing ``git diff-index -p <sha> -- <path>`` in a subprocess, which compares
the commit with the working tree: for a memory's anchor, the same pair staleness is judged
on (see :meth:`gitmem.api.Gitmem.anchored_diff`). The porcelain
``git diff`` is avoided on purpose: it refreshes (rewrites) the index even with
``--no-optional-locks`` (git 2.39), and the TUI must never write to the repository.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_LINES", "AnchoredDiff", "diff_since"]

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


def diff_since(sha: str, path: str, cwd: Path, max_lines: int = MAX_LINES) -> AnchoredDiff:
    """Run ``git diff-index -p <sha> -- :(top,literal)<path>`` in ``cwd``.

    Args:
        sha: the commit compared with the working tree (hex).
        path: repository-relative file path.
        cwd: any directory inside the repository.
        max_lines: lines kept.

    Returns:
        The diff, or an empty one with a ``note`` (bad input, git missing or failing).
        Never raises for git trouble: a caller shows the note instead.
    """
    if not _SHA.fullmatch(sha) or path.startswith("-"):
        return AnchoredDiff("", "anchor is not a commit and path")
    # --no-optional-locks is GIT_OPTIONAL_LOCKS=0: git takes no lock it could do without.
    cmd = ["git", "--no-pager", "--no-optional-locks", "diff-index", "-p", "--no-color",
           "--no-ext-diff", "--no-textconv", sha, "--", f":(top,literal){path}"]
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return AnchoredDiff("", f"git diff-index failed: {exc}")
    if out.returncode != 0:
        err = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return AnchoredDiff("", "git diff-index failed: " + (err[0] if err else f"exit {out.returncode}"))
    lines = out.stdout.decode("utf-8", "replace").splitlines()
    if not lines:
        return AnchoredDiff("", f"{path} unchanged since {sha[:12]}")
    if len(lines) > max_lines:
        return AnchoredDiff("\n".join(lines[:max_lines]),
                            f"diff cut at {max_lines} of {len(lines)} lines")
    return AnchoredDiff("\n".join(lines))
