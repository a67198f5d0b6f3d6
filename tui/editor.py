"""Opening a memory's anchored lines in the user's editor: which command line to run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess  # the user's editor only, never git (tests/test_architecture.py allows this module)
from pathlib import Path

__all__ = ["anchor_location", "editor_command", "run_editor", "user_editor"]

#: Editors that take ``+LINE FILE`` (vi, emacs and nano families and their kin).
PLUS_LINE = frozenset({
    "vi", "vim", "nvim", "gvim", "mvim", "view", "ex", "elvis", "nvi", "vis", "emacs", "emacsclient",
    "mg", "jove", "nano", "pico", "rnano", "micro", "joe", "jed", "ne", "kak", "mcedit", "le", "tilde",
})
#: Editors that take ``FILE:LINE`` (helix, sublime, zed) and those that need ``--goto`` first.
COLON_LINE = frozenset({"hx", "helix", "subl", "zed", "gedit", "kate"})
GOTO_LINE = frozenset({"code", "codium", "code-insiders", "cursor", "windsurf"})

_RANGE = re.compile(r"#L?(?P<start>\d+)(?:-L?\d+)?$")


def user_editor() -> str | None:
    """``$VISUAL`` or ``$EDITOR`` (the first set and not blank), as git picks one; else ``None``."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def anchor_location(workdir: Path, ref: str) -> tuple[Path, int | None]:
    """The file and first line of a stored anchor (``src/app.py#L3-L5`` → ``(workdir/src/app.py, 3)``).

    A whole-file anchor gives line ``None``.
    """
    found = _RANGE.search(ref)
    path = ref[: found.start()] if found else ref
    return workdir / path, int(found["start"]) if found else None


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The argv that opens ``path`` at ``line`` in ``editor`` (a command line, as ``$EDITOR`` holds it).

    ``+LINE FILE`` for the vi, emacs and nano families; ``FILE:LINE`` for helix, sublime,
    zed; ``--goto FILE:LINE`` for VS Code and its kin; only ``FILE`` for any other editor
    (or no line).
    """
    argv = shlex.split(editor)
    name = Path(argv[0]).name if argv else ""
    if line is None:
        return [*argv, str(path)]
    if name in PLUS_LINE:
        return [*argv, f"+{line}", str(path)]
    if name in COLON_LINE:
        return [*argv, f"{path}:{line}"]
    if name in GOTO_LINE:
        return [*argv, "--goto", f"{path}:{line}"]
    return [*argv, str(path)]


def run_editor(argv: list[str], interactive: bool = True) -> int:
    """Run the editor and wait for it; return its exit status.

    Args:
        argv: from :func:`editor_command`.
        interactive: the editor gets the terminal's input; ``False`` gives it none
            (a headless run, as in the tests).

    Raises:
        OSError: the editor cannot be started (not found, not executable).
    """
    return subprocess.call(argv, stdin=None if interactive else subprocess.DEVNULL)
