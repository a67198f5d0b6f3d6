"""The words for memories that are not fresh, where the agent acts (docs/staleness.md, At the point of use).

A recall with a file (the pre-tool hook, ``tur recall --file``, MCP recall with a file)
ends, after the fresh memories of the file, with one :class:`StaleNote` per memory of that
file that is not fresh: its id, why (status and reason, which names the commit), where its
lines are at HEAD (git's diff mapping, or that they are gone) and the commands that settle
it. A recall also says how many matches it held back as stale. Every surface words them
here; only how a command is spelled is the surface's (:class:`RepairActions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitmem.context.entry import neutralise

__all__ = ["CLI_ACTIONS", "RepairActions", "StaleNote", "held_back_line", "stale_tail"]

#: Characters of a memory's statement quoted in its note (enough to recognise it).
PREVIEW_CHARS = 80

#: The line that opens the notes in the text formats.
NOTES_HEADER = "Not fresh, anchored here (check the lines before relying on them):"


@dataclass(frozen=True)
class RepairActions:
    """How a surface spells the commands a note names; ``{id}`` is replaced by the memory's id.

    The defaults are the ``tur`` command line's; the MCP server passes its tools' calls.
    """

    confirm: str = "tur verify {id} --confirm"
    """Still true: re-anchor it where git's diff maps its lines, and set it fresh."""
    reword: str = 'tur edit {id} --reanchor --content "..."'
    """True in other words: take the mapping and the new statement."""
    anchor: str = "tur edit {id} --file path#Lx-Ly"
    """Its lines are gone: anchor it where it holds now."""
    refute: str = 'tur refute {id} --reason "..."'
    """Wrong now."""
    include_stale: str = "tur recall --include-stale"
    """What shows the matches held back as stale."""


#: The command line's spelling (the hooks' output is read by an agent with a shell).
CLI_ACTIONS = RepairActions()


@dataclass(frozen=True)
class StaleNote:
    """One memory of the file that is not fresh, as the point of use shows it.

    Attributes:
        memory_id: the memory's id.
        status: ``stale`` or ``unanchored`` (a :class:`~gitmem.vocabulary.Status` value).
        reason: why (``lines 21-22 changed in 647b63e``, ``working tree: line 4 modified``),
            or ``None`` when none is recorded.
        maps_to: where its lines are at HEAD (``path#Lx-Ly``, or a path for a whole-file
            anchor), as git's diff maps them; ``None`` when they are gone.
        statement: the memory's content (shown as a short preview).
        blob_id: the record's blob (what a hook's session log remembers); not shown.
    """

    memory_id: str
    status: str
    reason: str | None
    maps_to: str | None
    statement: str = ""
    blob_id: str = ""

    def text(self, actions: RepairActions | None = None) -> str:
        """The note in one line, without a list marker or newline.

        ``[fact-1a2b3c4d] stale: lines 21-22 changed in 647b63e; its lines are now at
        a.py#L16-L18. "area multiplies…" Still true: `tur verify fact-1a2b3c4d --confirm`;
        reworded: `…`; wrong: `…`.``
        """
        actions = actions or CLI_ACTIONS
        mid = self.memory_id
        why = f"{self.status}: {_flat(self.reason)}" if self.reason else self.status
        where = f"its lines are now at {self.maps_to}" if self.maps_to else "its lines are gone"
        said = _flat(self.statement)
        if len(said) > PREVIEW_CHARS:
            said = said[: PREVIEW_CHARS - 1].rstrip() + "…"
        quoted = f' "{said}"' if said else ""
        if self.maps_to:
            settle = (f"Still true: `{actions.confirm.format(id=mid)}`; "
                      f"reworded: `{actions.reword.format(id=mid)}`")
        else:
            settle = f"Still true elsewhere: `{actions.anchor.format(id=mid)}`"
        return f"[{mid}] {why}; {where}.{quoted} {settle}; wrong: `{actions.refute.format(id=mid)}`."


def held_back_line(count: int, actions: RepairActions | None = None) -> str:
    """``2 stale matches held back (`tur recall --include-stale` shows them).``; ``""`` for 0."""
    if count <= 0:
        return ""
    actions = actions or CLI_ACTIONS
    noun, pronoun = ("match", "it") if count == 1 else ("matches", "them")
    return f"{count} stale {noun} held back (`{actions.include_stale}` shows {pronoun})."


def stale_tail(notes: Sequence[StaleNote], held_back: int, fmt: str, *, header: str | None = None,
               actions: RepairActions | None = None) -> str:
    """What a recall's text ends with: the notes, then the held-back line (``""`` when neither).

    Args:
        notes: the notes, in order.
        held_back: matches held back as stale.
        fmt: ``markdown-prompt`` (lines quoted with ``"> "``, as the hits are) or ``plain``.
        header: the block's first line when no hit opened it (``markdown-prompt``), else ``None``.
        actions: how the commands are spelled (default :data:`CLI_ACTIONS`).
    """
    lines = []
    if notes:
        lines.append(NOTES_HEADER)
        lines.extend(f"- {note.text(actions)}" for note in notes)
    held = held_back_line(held_back, actions)
    if held:
        lines.append(held)
    if not lines:
        return ""
    if fmt == "markdown-prompt":
        return (header or "") + "".join(f"> {line}\n" for line in lines)
    return "".join(f"{line}\n" for line in lines)


def _flat(text: str | None) -> str:
    """Stored text in one line, inert as markdown (it can never forge structure)."""
    return neutralise(" ".join((text or "").split()))[0]
