"""The public API: one :class:`Gitmem` facade over a repository's memory store.

The CLI, TUI, watcher and MCP server import only this package and :mod:`gitmem.errors`.
:class:`Gitmem` is a thin composition of explicit parts, each a class in this package that
receives what it uses (records, weights, verify, context, hooks, setup, curate, edits,
imports, sharing: docs/architecture.md says which does what), defined in
:mod:`gitmem.api.facade`, where each method's docstring is the contract; the parts' methods
point back to it.

Every value a method returns is defined in (or re-exported by) :mod:`gitmem.api.results`.
Names that would load heavy modules (``Memory`` needs pydantic, the renderers need the
algorithms) are imported on first access, so ``import gitmem.api`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.api.facade import Gitmem
from gitmem.api.names import LAZY
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status, utc_now

# Under TYPE_CHECKING, every name LAZY serves too (``X as X``: re-exported), so that mypy
# sees its real type where the surfaces use it.
if TYPE_CHECKING:
    from gitmem.api.personal import refuse_anchor as refuse_personal_anchor  # noqa: F401 - served by LAZY
    from gitmem.api.personal import store_path as personal_store_path  # noqa: F401 - served by LAZY
    from gitmem.api.results import AnchoredDiff as AnchoredDiff
    from gitmem.api.results import CacheInfo as CacheInfo
    from gitmem.api.results import CommitInfo as CommitInfo
    from gitmem.api.results import DoctorReport as DoctorReport
    from gitmem.api.results import HookOutput as HookOutput
    from gitmem.api.results import ImportResult as ImportResult
    from gitmem.api.results import LearnActions as LearnActions
    from gitmem.api.results import LearnResult as LearnResult
    from gitmem.api.results import RecallResult as RecallResult
    from gitmem.api.results import RepoPaths as RepoPaths
    from gitmem.api.results import SetupReport as SetupReport
    from gitmem.api.results import Skipped as Skipped
    from gitmem.api.results import SyncResult as SyncResult
    from gitmem.api.results import TurImportResult as TurImportResult
    from gitmem.api.results import WakeResult as WakeResult
    from gitmem.api.status_results import AnchorStep as AnchorStep
    from gitmem.api.status_results import RowFilter as RowFilter
    from gitmem.api.status_results import StatusRow as StatusRow
    from gitmem.api.status_results import StatusView as StatusView
    from gitmem.api.status_results import VerifyOutcome as VerifyOutcome
    from gitmem.api.visibility import agent_names as agent_names
    from gitmem.cache import MemoryView as MemoryView
    from gitmem.context.entry import memory_to_json as memory_to_json
    from gitmem.context.injection import Injection as Injection
    from gitmem.context.injection import Via as Via
    from gitmem.context.injection import current_via as current_via
    from gitmem.context.injection import injecting as injecting
    from gitmem.context.recall import Hit as Hit
    from gitmem.context.render import HOOK_FORMATS as HOOK_FORMATS
    from gitmem.context.render import NO_MEMORIES_YET as NO_MEMORIES_YET
    from gitmem.context.render import empty_notice as empty_notice
    from gitmem.context.render import render_explain as render_explain
    from gitmem.context.render import render_hook as render_hook
    from gitmem.context.render import render_injection as render_injection
    from gitmem.context.render import render_recall as render_recall
    from gitmem.context.render import render_wake as render_wake
    from gitmem.context.stale_notes import RepairActions as RepairActions
    from gitmem.context.stale_notes import StaleNote as StaleNote
    from gitmem.context.wake import AssemblyEntry as AssemblyEntry
    from gitmem.harness import HARNESSES as HARNESSES
    from gitmem.harness import SetupItem as SetupItem
    from gitmem.record.anchors import split_ref as split_anchor_ref  # noqa: F401 - served by LAZY
    from gitmem.record.models import Memory as Memory
    from gitmem.store.paths import worktree_path as worktree_path
    from gitmem.vocabulary import RECALL_FORMATS as RECALL_FORMATS
    from gitmem.vocabulary import WAKE_FORMATS as WAKE_FORMATS

__all__ = [
    "AnchorStep", "CommitInfo", "DoctorReport", "Gitmem", "ImportResult", "LearnActions",
    "LearnResult", "MemoryType", "RelationType", "RepoPaths", "RowFilter", "Scope", "Skipped",
    "Status", "StatusRow", "StatusView", "TurImportResult", "VerifyOutcome", "utc_now"
]

def __getattr__(name: str) -> Any:
    found = LAZY.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(found[0]), found[1])
