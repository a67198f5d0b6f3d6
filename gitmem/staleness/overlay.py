"""The working-tree overlay of this clone: memories made stale by uncommitted changes, kept locally.

The shared ref records only what follows from commits (docs/sharing.md, What is local). An
uncommitted change to anchored lines is this clone's state: ``verify``, ``status`` and the
watcher write it to ``<git dir>/tur/worktree.json`` (per worktree: each has its own working
tree and index), and every local surface reads it back through :func:`load` to show the memory
as ``stale (working tree: line 80 modified)``. Nothing here is ever committed.

An entry holds while what it was computed from is unchanged: the same HEAD, the anchored file
with the same size and modification time (and, for a staged change, the same index). Anything
else drops it, so an overlay never outlives the change it describes; the next ``verify``,
``status`` or watcher batch computes it again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

__all__ = ["OVERLAY_NAME", "LocalEntry", "load", "save"]

OVERLAY_NAME = "worktree.json"
"""File name of the overlay under ``<git dir>/tur/``."""
_VERSION = 1


class LocalEntry(NamedTuple):
    """Why uncommitted changes make one memory stale, and the file they are in.

    Attributes:
        reason: ``working tree: line 80 modified``, ``index (staged): deleted``...
        path: the anchored file (repository-relative POSIX path).
    """

    reason: str
    path: str


def _stat(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _worktree_stat(workdir: Path, path: str) -> list[int] | None:
    """``_stat`` of a work-tree file as git sees it (``lstat``); ``None`` when its path leaves the tree.

    A path through a symbolic link to outside is never looked at, so that whether the file
    there changed cannot be told from the overlay (:func:`gitmem.store.paths.worktree_path`).
    """
    from gitmem.errors import OutsideWorkTree
    from gitmem.store.paths import worktree_path

    try:
        st = worktree_path(workdir, path).lstat()
    except (OSError, OutsideWorkTree):
        return None
    return [st.st_mtime_ns, st.st_size]


def _file(git_dir: Path) -> Path:
    return git_dir / "tur" / OVERLAY_NAME


def _read(git_dir: Path) -> dict:
    try:
        text = _file(git_dir).read_text(encoding="utf-8")
    except OSError:
        return {}
    import json  # lazily: a clone without an overlay file (most) parses no JSON

    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(doc, dict) or doc.get("version") != _VERSION:
        return {}
    if not isinstance(doc.get("entries"), dict):
        return {}
    return doc


def _valid(raw: object, head: str | None, doc_head: object, workdir: Path, git_dir: Path) -> bool:
    if head is None or doc_head != head or not isinstance(raw, dict):
        return False
    reason, path = raw.get("reason"), raw.get("path")
    if not isinstance(reason, str) or not isinstance(path, str):
        return False
    if raw.get("file") != _worktree_stat(workdir, path):
        return False
    return not reason.startswith("index") or raw.get("index") == _stat(git_dir / "index")


def load(git_dir: Path, workdir: Path | None, head: str | None) -> dict[str, LocalEntry]:
    """The overlay entries that still hold (memory id -> entry); ``{}`` in a bare repository.

    Costs one small file read and a ``stat`` per entry.
    """
    if workdir is None or head is None:
        return {}
    doc = _read(git_dir)
    entries = doc.get("entries", {})
    return {memory_id: LocalEntry(raw["reason"], raw["path"]) for memory_id, raw in entries.items()
            if _valid(raw, head, doc.get("head"), workdir, git_dir)}


def save(git_dir: Path, workdir: Path | None, head: str | None, judged: Iterable[str],
         found: Mapping[str, LocalEntry]) -> None:
    """Record the overlay of the memories ``judged`` at ``head``: ``found`` holds those made stale.

    Entries of memories not judged this time stay while they hold. Best effort: an overlay
    that cannot be written only means the next surface shows the committed status.
    """
    if workdir is None or head is None:
        return
    doc = _read(git_dir)
    judged = set(judged)
    kept = {memory_id: raw for memory_id, raw in doc.get("entries", {}).items()
            if memory_id not in judged and _valid(raw, head, doc.get("head"), workdir, git_dir)}
    index = _stat(git_dir / "index")
    for memory_id, entry in found.items():
        kept[memory_id] = {"reason": entry.reason, "path": entry.path,
                           "file": _worktree_stat(workdir, entry.path), "index": index}
    target = _file(git_dir)
    if not kept and not target.exists():
        return
    import json

    with suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{OVERLAY_NAME}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": _VERSION, "head": head, "entries": kept}, sort_keys=True),
                       encoding="utf-8")
        os.replace(tmp, target)
