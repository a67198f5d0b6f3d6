"""The results of the ``tur mcp`` tools: pydantic models whose JSON schemas are the tools' output schemas.

Field descriptions are part of every session's tool list, so they are short. Field names are
the facade's (:func:`gitmem.api.memory_to_json`), so a result reads as ``tur … --format json``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = [
    "CommitOut",
    "EditResult",
    "ForgetResult",
    "LearnResult",
    "LinkResult",
    "ListResult",
    "MemoryEntry",
    "MemoryRecord",
    "RecallHit",
    "RecallResult",
    "RefuteResult",
    "Relation",
    "ShowResult",
    "StatusChange",
    "StatusResult",
    "VerifyResult",
    "WakeResult",
]

# -- results ------------------------------------------------------------------------------------


class MemoryEntry(BaseModel):
    """One memory as ``list`` and ``recall`` give it (read from the cache, no full record)."""

    id: str = Field(description="`<type>-<8 hex>`; any unique prefix names it too")
    type: str = Field(description="axiom | core | fact | insight | preference")
    content: str
    status: str = Field(description="fresh | stale | unanchored | refuted")
    reason: str | None = Field(default=None, description="why it is stale, unanchored or refuted")
    anchor: str | None = Field(default=None, description="`path` or `path#Lx-Ly` it was observed at")
    confidence: float = Field(description="in [0, 1]")
    observed_at: str | None = Field(default=None, description="first observation, ISO 8601 UTC")
    author: str | None = Field(default=None, description="who stated it (`Name <email>`), if known")
    source_agent: str | None = Field(default=None, description="the agent that learned it")
    weight: float | None = Field(default=None, description="current decay weight in [0, 1] (list only)")


class Relation(BaseModel):
    """A typed link to another memory."""

    type: str
    target: str


class MemoryRecord(MemoryEntry):
    """One whole record (``show``, ``learn``, ``refute`` and ``tur://memory/{id}``)."""

    git_sha: str | None = Field(default=None, description="the commit the anchor refers to")
    source_harness: str | None = None
    last_verified_at: str | None = Field(default=None, description="ISO 8601 UTC; restarts time decay")
    half_life_days: float | None = Field(default=None, description="null: never decays with time")
    relations: list[Relation] = Field(default_factory=list)
    refuted_by: str | None = None
    visibility: list[str] = Field(default_factory=list)


class CommitOut(BaseModel):
    """A commit on refs/tur/memories that changed a record."""

    sha: str
    message: str
    author: str
    time: str


class ShowResult(MemoryRecord):
    """``show``: the record and the commits that touched it, newest first."""

    commits: list[CommitOut] = Field(default_factory=list)


class WakeResult(BaseModel):
    """``wake``: the prompt and a summary of its assembly record."""

    text: str = Field(description="the markdown an agent reads at session start")
    tokens: int = Field(description="tokens of `text`")
    budget: int | None = Field(description="the token budget; null when unbounded")
    omitted: int = Field(description="memories left out for the budget (recall finds them)")
    included: list[str] | None = Field(default=None, description="with `explain`: ids in the text, in order "
                                       "(`persona`, `continuity` for those blocks)")
    excluded: dict[str, int] | None = Field(default=None, description="with `explain`: memories left out, "
                                            "by reason")
    warnings: list[str] = Field(default_factory=list, description="records that were skipped")


class RecallHit(MemoryEntry):
    """One recalled memory: its score and the score's parts."""

    score: float = Field(description="BM25 over the memory and its neighbours, plus the field boost")
    bm25: float
    boost: float = Field(description="the field boost: the query names its author, path or identifiers")
    stale: bool = Field(description="stale or superseded (only with include_stale)")


class RecallResult(BaseModel):
    """``recall``: hits best first, and the block an agent reads."""

    query: str
    hits: list[RecallHit]
    text: str = Field(description="the hits as a markdown-prompt block ('' when none)")
    warnings: list[str] = Field(default_factory=list)


class LearnResult(BaseModel):
    """``learn``: the stored record; ``created`` false when it was known (then re-verified)."""

    memory: MemoryRecord
    created: bool
    commit: str | None = Field(description="the commit on refs/tur/memories, null if none")
    notes: list[str] = Field(default_factory=list, description="what the CLI prints on stderr")
    visibility_was: list[str] | None = Field(default=None, description="before `for` changed it")


class VerifyResult(BaseModel):
    """``verify``: one memory checked against HEAD and the working tree, and recorded."""

    id: str
    status: str
    reason: str | None
    weight: float
    changed: bool = Field(description="whether its record changed (status, reason or anchor)")
    anchor: str | None = Field(description="its anchor after the check (moved lines follow)")
    moved: bool
    hint: str | None
    commit: str | None


class RefuteResult(BaseModel):
    """``refute``: the refuted record."""

    memory: MemoryRecord
    commit: str | None


class ListResult(BaseModel):
    """``list``: memories with stored status and current weight, sorted by id."""

    memories: list[MemoryEntry]
    total: int = Field(description="memories matching the filters")
    truncated: bool = Field(description="more match than `limit`")
    warnings: list[str] = Field(default_factory=list)


class StatusChange(BaseModel):
    """A memory whose status or anchor `tur verify` would change."""

    id: str
    status: str
    reason: str | None
    anchor: str | None
    hint: str | None


class StatusResult(BaseModel):
    """``status``: the staleness check of ``tur status`` (nothing written)."""

    head: str | None = Field(description="HEAD's commit")
    tip: str | None = Field(description="refs/tur/memories' commit")
    memories: int
    counts: dict[str, int] = Field(description="memories per status, checked now")
    changes: list[StatusChange] = Field(description="what `verify` would record")
    warnings: list[str] = Field(default_factory=list)



class EditResult(BaseModel):
    """``edit``: the record after the change; ``changed`` false when it already said that."""

    memory: MemoryRecord
    changed: bool
    commit: str | None


class ForgetResult(BaseModel):
    """``forget``: the id removed from the tree (it stays in the ref's history), or restored."""

    id: str
    commit: str | None
    restored: bool = Field(default=False, description="with `undo`: brought back from history")


class LinkResult(BaseModel):
    """``link``: the relation ``source --type--> target``, added or (``removed``) taken out.

    ``changed`` is false when it already existed (or there was none to take out).
    """

    source: str
    type: str | None
    target: str
    changed: bool
    commit: str | None
    removed: bool = False
