"""Where :mod:`gitmem.api` finds the names it serves on first access (a leaf: imports nothing)."""

from __future__ import annotations

__all__ = ["LAZY"]

#: Names served on first access: name -> (module, attribute). The result types too: a warm
#: wake builds none of them, and their module creates some thirty dataclasses.
LAZY = {
    **{name: ("gitmem.api.results", name) for name in (
        "CommitInfo", "DoctorReport", "ImportResult", "LearnActions", "LearnResult", "RepoPaths",
        "Skipped", "TurImportResult")},
    **{name: ("gitmem.api.status_results", name) for name in (
        "AnchorStep", "RowFilter", "StatusRow", "StatusView", "VerifyOutcome")},
    "Memory": ("gitmem.record.models", "Memory"),
    "MemoryView": ("gitmem.cache", "MemoryView"),
    "AnchoredDiff": ("gitmem.store.worktree_diff", "AnchoredDiff"),
    "AssemblyEntry": ("gitmem.context.wake", "AssemblyEntry"),
    "CacheInfo": ("gitmem.cache", "CacheInfo"),
    "Hit": ("gitmem.context.recall", "Hit"),
    "RecallResult": ("gitmem.context.recall", "RecallResult"),
    "SyncResult": ("gitmem.sharing.sync", "SyncResult"),
    "WakeResult": ("gitmem.context.wake", "WakeResult"),
    "WAKE_FORMATS": ("gitmem.vocabulary", "WAKE_FORMATS"),
    "RECALL_FORMATS": ("gitmem.vocabulary", "RECALL_FORMATS"),
    "render_wake": ("gitmem.context.render", "render_wake"),
    "render_explain": ("gitmem.context.render", "render_explain"),
    "render_recall": ("gitmem.context.render", "render_recall"),
    "empty_notice": ("gitmem.context.render", "empty_notice"),
    "NO_MEMORIES_YET": ("gitmem.context.render", "NO_MEMORIES_YET"),
    "memory_to_json": ("gitmem.context.entry", "memory_to_json"),
    "split_anchor_ref": ("gitmem.record.anchors", "split_ref"),
    "worktree_path": ("gitmem.store.paths", "worktree_path"),
    "render_hook": ("gitmem.context.render", "render_hook"),
    "refuse_personal_anchor": ("gitmem.api.personal", "refuse_anchor"),
    "personal_store_path": ("gitmem.api.personal", "store_path"),
    "HOOK_FORMATS": ("gitmem.context.render", "HOOK_FORMATS"),
    "HookOutput": ("gitmem.api.hooks", "HookOutput"),
    "StaleNote": ("gitmem.context.stale_notes", "StaleNote"),
    "RepairActions": ("gitmem.context.stale_notes", "RepairActions"),
    "SetupReport": ("gitmem.harness", "SetupReport"),
    "SetupItem": ("gitmem.harness", "SetupItem"),
    "HARNESSES": ("gitmem.harness", "HARNESSES"),
    "Via": ("gitmem.context.injection", "Via"),
    "current_via": ("gitmem.context.injection", "current_via"),
    "injecting": ("gitmem.context.injection", "injecting"),
    "agent_names": ("gitmem.api.visibility", "agent_names"),
    "Injection": ("gitmem.context.injection", "Injection"),
    "render_injection": ("gitmem.context.render", "render_injection"),
}
