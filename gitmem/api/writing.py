"""What the writing parts of the facade share: checks of input, anchors, supersedes chains.

:mod:`gitmem.api.curate` (learn), :mod:`gitmem.api.edits` (refute, confidence, link,
forget, doctor) and :mod:`gitmem.api.imports` (import) each make their own commits; these
are the checks and values more than one of them needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from gitmem.errors import GitmemError, InvalidInput
from gitmem.store import worktree_path
from gitmem.vocabulary import MemoryType, RelationType, Scope

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.record.anchors import Anchor
    from gitmem.record.models import Memory

__all__ = ["anchor_at", "differs", "is_utf8", "parse_enum", "refuse_supersedes_cycle"]

_E = TypeVar("_E", MemoryType, Scope, RelationType)


def anchor_at(ws: Workspace, spec: str, head: str | None) -> tuple[Anchor, str]:
    """Validate ``--file`` against the working tree; return (anchor, fingerprint).

    Raises:
        InvalidAnchor: bare repository, bad path or range, or a file not in HEAD.
    """
    from gitmem.errors import InvalidAnchor
    from gitmem.record import anchors

    root = ws.store.workdir
    if root is None:
        raise InvalidAnchor("a bare repository has no working tree to anchor --file in")
    anchor = anchors.resolve_anchor(root, ws.cwd, spec)
    if head is not None and ws.store.blob_id_at(head, anchor.path) is None:
        raise InvalidAnchor(
            f"{anchor.path} is not in HEAD's tree",
            "commit it first, so that gitmem can tell when it changes",
        )
    code = ws.store.code()
    # As git would store it: a file with a clean/smudge filter is compared cleaned.
    data = code.worktree_file(anchor.path)
    if data is None:
        data = worktree_path(root, anchor.path).read_bytes()
    fingerprint = anchors.anchor_fingerprint(anchor, data)
    committed = code.blob_at(head, anchor.path) if head is not None else None
    if committed is not None and anchors.anchor_fingerprint(anchor, committed) != fingerprint:
        # The anchor pairs HEAD's SHA with these lines: they must be HEAD's lines.
        raise InvalidAnchor(
            f"{anchor.ref()} has uncommitted changes in the working tree",
            "commit them first, so that the anchor points at code git knows",
        )
    return anchor, fingerprint


def refuse_supersedes_cycle(ws: Workspace, source_id: str, target_id: str) -> None:
    """Raise if ``target_id`` already supersedes ``source_id``, directly or by a chain."""
    seen, frontier = {target_id}, [target_id]
    while frontier:
        current = frontier.pop()
        try:
            targets = ws.records.get(current).relation_targets(RelationType.SUPERSEDES)
        except GitmemError:
            continue  # a link to a forgotten or unreadable memory ends the chain
        if source_id in targets:
            raise InvalidInput(
                f"{target_id} already supersedes {source_id}; a supersedes cycle would hide both",
                "refute the memory that no longer holds instead",
            )
        frontier.extend(t for t in targets if t not in seen)
        seen.update(targets)


def differs(before: Memory, after: Memory) -> bool:
    """Whether a change altered the record (then it is stamped and committed)."""
    return not before.same_as(after)


def is_utf8(text: str) -> bool:
    """True when ``text`` can be stored as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_enum(enum: type[_E], value: Any, what: str) -> _E:
    """``value`` as a member of ``enum``.

    Raises:
        InvalidInput: not one of its values (the message names ``what`` and the choices).
    """
    try:
        return enum(value)
    except ValueError:
        choices = " | ".join(e.value for e in enum)
        raise InvalidInput(f"unknown {what} {value!r}", f"use one of {choices}") from None
