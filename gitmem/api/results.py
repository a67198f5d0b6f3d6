"""Every value the :class:`gitmem.api.Gitmem` facade returns, in one place.

The surfaces (CLI, TUI, watcher) import result types from here through
:mod:`gitmem.api`, never from the modules that build them. Types defined elsewhere
(``WakeResult`` in :mod:`gitmem.context.wake`, ``RecallResult`` in :mod:`gitmem.context.recall`, …) are
re-exported lazily, so that importing this module loads no algorithm module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.cache.reader import Skipped
from gitmem.record.visibility import bound_to
from gitmem.store import CommitInfo
from gitmem.text import first_words
from gitmem.vocabulary import Status

if TYPE_CHECKING:
    from gitmem.api.hooks import HookOutput
    from gitmem.api.status_results import (
        AnchorStep,
        RowFilter,
        StatusRow,
        StatusView,
        VerifyLine,
        VerifyOutcome,
    )
    from gitmem.cache import CacheInfo
    from gitmem.context.recall import Hit, RecallResult
    from gitmem.context.wake import AssemblyEntry, WakeResult
    from gitmem.harness import SetupItem, SetupReport
    from gitmem.record.models import Memory
    from gitmem.sharing.sync import SyncResult
    from gitmem.store import Store
    from gitmem.store.worktree_diff import AnchoredDiff

__all__ = [
    "AnchorStep",
    "AnchoredDiff",
    "AssemblyEntry",
    "CacheInfo",
    "CommitInfo",
    "DoctorReport",
    "Hit",
    "HookOutput",
    "ImportResult",
    "LearnActions",
    "LearnResult",
    "RecallResult",
    "RepoPaths",
    "RowFilter",
    "SetupItem",
    "SetupReport",
    "Skipped",
    "StatusRow",
    "StatusView",
    "SyncResult",
    "TurImportResult",
    "VerifyLine",
    "VerifyOutcome",
    "WakeResult",
]

#: Result types built by other modules: name -> module, imported on first access.
_ELSEWHERE = {
    "AnchorStep": "gitmem.api.status_results",
    "RowFilter": "gitmem.api.status_results",
    "StatusRow": "gitmem.api.status_results",
    "StatusView": "gitmem.api.status_results",
    "VerifyLine": "gitmem.api.status_results",
    "VerifyOutcome": "gitmem.api.status_results",
    "AnchoredDiff": "gitmem.store.worktree_diff",
    "AssemblyEntry": "gitmem.context.wake",
    "CacheInfo": "gitmem.cache",
    "Hit": "gitmem.context.recall",
    "HookOutput": "gitmem.api.hooks",
    "RecallResult": "gitmem.context.recall",
    "SetupItem": "gitmem.harness",
    "SetupReport": "gitmem.harness",
    "SyncResult": "gitmem.sharing.sync",
    "WakeResult": "gitmem.context.wake",
}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class RepoPaths:
    """Where a repository lives on disk (absolute paths).

    Attributes:
        workdir: root of the working tree, ``None`` for a bare repository.
        git_dir: this worktree's git directory.
        common_dir: the git directory shared by all worktrees (refs, objects, ``tur/``).
    """

    workdir: Path | None
    git_dir: Path
    common_dir: Path

    @classmethod
    def of(cls, store: Store) -> RepoPaths:
        """The paths of ``store``'s repository."""
        return cls(workdir=store.workdir, git_dir=store.git_dir, common_dir=store.common_dir)


@dataclass(frozen=True)
class LearnResult:
    """Outcome of :meth:`Gitmem.learn`: the record, whether it is new (else re-verified), the commit.

    ``collided_with`` names the stored memory of a different statement whose id this one
    would have had; the new memory then has a longer id (docs/storage.md, Ids).
    """

    memory: Memory
    created: bool
    commit: CommitInfo | None
    similar: tuple[str, ...] = ()
    """Ids of memories that may say the same thing (same anchored lines, or a near-duplicate
    statement: :mod:`gitmem.context.similarity`); the caller may suggest a ``supersedes`` link."""
    collided_with: str | None = None
    similar_statements: tuple[str | None, ...] = ()
    """The statement of each of ``similar``, in order, as stored on the tip the memory was
    learned on (``None``: the record could not be read)."""
    visibility_was: tuple[str, ...] | None = None
    """The agents a known memory was for before this learn bound it to others (``()``:
    everyone); ``None`` when its binding did not change (and for a new memory)."""

    def notes(self, asked_type: str | None = None, actions: LearnActions | None = None) -> list[str]:
        """What to tell the user after the learn, one line each (``[]``: nothing to add).

        In order: an id collision, a type asked for but not kept, a memory already known
        (refuted, still stale, or re-verified), its binding changed (from → to), an
        unanchored memory, then each similar one.
        The words are the same on every surface; only the actions they suggest are named by
        the surface (``actions``; by default in words, without a command).

        Args:
            asked_type: the type the caller asked for (``None``: it asked for none).
            actions: how the surface names the actions the notes suggest.
        """
        how = actions or LearnActions()
        m = self.memory
        notes = []
        if self.collided_with:
            notes.append(f"{self.collided_with} is a different statement with the same 8 hex "
                         f"digits; this one is stored as {m.id}")
        if not self.created and asked_type and asked_type != m.type.value:
            article = "an" if m.type.value[0] in "aeiou" else "a"  # an axiom, an insight
            notes.append(f"{m.id} was already known as {article} {m.type.value}; type {asked_type} is "
                         f"ignored (to change it: {how.retype.format(id=m.id)})")
        if not self.created and m.status is Status.REFUTED:
            reason = f" ({m.refutation.reason})" if m.refutation else ""
            notes.append(f"{m.id} was already known and is refuted{reason}; it stays refuted")
        elif not self.created and m.status is Status.STALE:
            reason = f": {m.decay.reason}" if m.decay and m.decay.reason else ""
            notes.append(f"{m.id} was already known and its anchor is still stale{reason}; "
                         f"{how.re_anchor.format(id=m.id)}, or refute it if it no longer holds")
        elif not self.created:
            notes.append(f"{m.id} was already known; re-verified it")
        if self.visibility_was is not None:
            notes.append(f"binding of {m.id} changed: {bound_to(self.visibility_was)} → "
                         f"{bound_to(m.visibility)}")
        if m.status is Status.UNANCHORED and m.decay and m.decay.reason:
            notes.append(f"{m.id} is unanchored: {m.decay.reason}")
        for n, other in enumerate(self.similar):
            said = self.similar_statements[n] if n < len(self.similar_statements) else None
            quoted = f' ("{first_words(said)}")' if said is not None else ""
            notes.append(f"{m.id} may say the same as {other}{quoted}; if it replaces it: "
                         f"{how.supersede.format(id=m.id, other=other)}")
        return notes


@dataclass(frozen=True)
class LearnActions:
    """How a surface names the actions :meth:`LearnResult.notes` suggests.

    Each is a ``str.format`` template: ``{id}`` is the learned memory, ``{other}`` the
    similar one. The defaults name no command, for a surface that has none of its own.
    """

    supersede: str = "link {id} to {other} as superseding it"
    """Make ``{id}`` supersede ``{other}``."""
    re_anchor: str = "learn it again with a file to re-anchor it"
    """Re-anchor a known memory whose anchor is stale (the note adds the refute choice)."""
    retype: str = "forget {id}, then learn it again"
    """Give a known memory another type."""


@dataclass
class ImportResult:
    """Outcome of :meth:`Gitmem.import_legacy`."""

    imported: list[str] = field(default_factory=list)
    """Ids written (new or replaced)."""
    unchanged: list[str] = field(default_factory=list)
    """Ids already stored with the same record."""
    failed: list[str] = field(default_factory=list)
    """One line per file that could not be imported (path: reason)."""
    renamed: list[str] = field(default_factory=list)
    """One line per record given a longer id because a different statement held its id."""
    notes: list[str] = field(default_factory=list)
    """One line per relation kept pointing outside the store, or dropped."""
    commit: CommitInfo | None = None
    dry_run: bool = False
    """Nothing was written: the lists say what an import would do."""


@dataclass
class DoctorReport:
    """Outcome of :meth:`Gitmem.doctor`: what readers skip in the memory tree, and the repairs."""

    problems: list[Skipped] = field(default_factory=list)
    """Layout problems: entries not where, or not what, gitmem reads (each has a ``path``)."""
    repairs: list[str] = field(default_factory=list)
    """One line per repair: made when ``commit`` is set, else what ``--fix`` would do."""
    malformed: list[Skipped] = field(default_factory=list)
    """Malformed records (never changed by the doctor) and cache notices."""
    commit: CommitInfo | None = None
    dry_run: bool = False
    """Nothing was written: ``repairs`` says what ``--fix`` would do."""


@dataclass
class TurImportResult:
    """Outcome of :meth:`Gitmem.import_tur`: what was read, what it became, what was not mapped.

    Counts are of Tur memory files. ``states`` maps a file's place in the Tur store
    (``active``, ``archive``, ``subsumed``, ``legacy``) to what its memories became
    (``active``, ``stale``, ``refuted``, ``superseded``) and how many; ``types`` maps Tur's
    ``memory_type`` to how many were mapped; ``anchors`` counts how provenance mapped
    (``anchored``, ``commit only``, ``commit not in this repository``, ``no commit``).
    """

    sources: list[str] = field(default_factory=list)
    """The ``.tur`` directories read."""
    persona: str = ""
    """The persona whose memories were read: ``name (uuid)``."""
    files: int = 0
    states: dict[str, Counter[str]] = field(default_factory=dict)
    types: Counter[str] = field(default_factory=Counter)
    mapped_as: dict[str, str] = field(default_factory=dict)
    """Tur ``memory_type`` -> the gitmem type it became (``event`` -> ``fact``)."""
    anchors: Counter[str] = field(default_factory=Counter)
    imported: list[str] = field(default_factory=list)
    """Ids of new records."""
    merged: list[str] = field(default_factory=list)
    """Ids of stored records that gained legacy ids or relations."""
    unchanged: list[str] = field(default_factory=list)
    """Ids already stored with everything the import would add (a second run)."""
    folded: int = 0
    """Tur memories merged into another with the same type and content (their ids resolve)."""
    failed: list[str] = field(default_factory=list)
    """One line per memory file that was not imported: ``path: reason``."""
    notes: list[str] = field(default_factory=list)
    """Relations kept pointing outside the store or dropped, fields kept under ``tur:``."""
    not_imported: list[str] = field(default_factory=list)
    """Parts of the Tur store that are not memories (its concept graph, sessions)."""
    persona_status: str = "none in the Tur store"
    """``imported``, ``unchanged``, ``kept the stored persona`` or ``none in the Tur store``."""
    note_status: str = "none in the Tur store"
    """The latest Tur session note as a continuity note: ``imported``, ``unchanged`` or ``none …``."""
    commit: CommitInfo | None = None
    dry_run: bool = False
    """Nothing was written: the report says what an import would do."""
