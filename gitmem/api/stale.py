"""Stale memories at the point of use, for recall and the hooks (docs/staleness.md, At the point of use).

A recall with files ends with one :class:`~gitmem.context.stale_notes.StaleNote` per memory
of those files that is not fresh, where its lines are at HEAD found by the staleness check
itself (:attr:`gitmem.staleness.verdicts.Verdict.maps_to`: git's diff, never a second
mapper); a recall with a query says how many matches it held back as stale. Both fit in the
recall's size caps: :func:`fit_tail` takes their room first, at most half of each cap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from gitmem.errors import EmptyRepository
from gitmem.vocabulary import Status

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.cache import RecordTable
    from gitmem.context.stale_notes import StaleNote
    from gitmem.record.models import Memory
    from gitmem.staleness.outcomes import Outcome
    from gitmem.staleness.verdicts import StalenessReport

__all__ = ["VERIFY_CACHE", "fit_tail", "held_back", "judge", "note_of", "stale_notes"]

_NOT_FRESH = frozenset({Status.STALE.value, Status.UNANCHORED.value})

#: The read cache's file for anchor-check outcomes (see :class:`gitmem.staleness.VerifyCache`).
VERIFY_CACHE = ("", "verify")


def judge(ws: Workspace, subjects: Sequence[Any],
          progress: Callable[[int, int], None] | None = None) -> StalenessReport:
    """Verdicts at HEAD on ``subjects`` (records or cache views): :func:`gitmem.staleness.check`.

    With the outcomes of earlier runs with the same ``verify`` settings from the read cache
    (keys are immutable SHAs, so they never go stale); the outcomes learned are saved
    (``verify.bin``, only this HEAD's), not held past the check. Every check of verify,
    status and the point of use goes through here.

    Raises:
        EmptyRepository: HEAD is unborn.
    """
    from gitmem.staleness.verdicts import VerifyCache, check

    store, policy, options = ws.store, ws.settings.decay, ws.settings.verify
    tag = options.tag()
    plain = ws.records.cache.read_payload(*VERIFY_CACHE)
    verify_cache = VerifyCache.from_plain(plain, tag) if plain is not None else VerifyCache(tag)
    known = len(verify_cache)
    report = check(cast("list[Memory]", list(subjects)), store.code(), policy, cache=verify_cache,
                   options=options, progress=progress)
    # Only this HEAD's entries: the next run compares with this HEAD or a newer one.
    saved = verify_cache.to_plain(report.head_sha)
    if not len(saved["entries"]) == known == len(verify_cache):  # else the file holds this already
        ws.records.cache.write_payload(*VERIFY_CACHE, saved)
    return report


def stale_notes(ws: Workspace, table: RecordTable, rows: Sequence[int],
                skip: Callable[[Any], bool] | None = None,
                unjudged: Callable[[int], bool] | None = None) -> list[StaleNote]:
    """One note per row of ``rows`` (a file's memories, best first) that is not fresh, in that order.

    Not fresh: ``stale`` or ``unanchored`` here (the working-tree overlay counts; refuted
    memories are settled and left out), or recorded fresh but ``unjudged(row)`` (no verify
    has judged it at HEAD: the code moved since) and found stale now. Each is checked
    against HEAD now for where its lines are: what the verify cache holds as stale at HEAD
    is read from it (no libgit2 loads), the rest is judged (:func:`judge`); a memory found
    fresh at HEAD and in the working tree gets no note. ``skip`` leaves out what a hook
    already sent this session. Reads git objects; writes only the read cache.
    """
    statuses = table.statuses()
    fresh = Status.FRESH.value
    views = [table.view(r) for r in rows if statuses[r] in _NOT_FRESH
             or (unjudged is not None and statuses[r] == fresh and unjudged(r))]
    views = [v for v in views if skip is None or not skip(v)]
    if not views:
        return []
    from gitmem.context.stale_notes import StaleNote

    notes: dict[str, StaleNote] = {}
    settled: set[str] = set()
    for view, outcome in zip(views, _cached_outcomes(ws, views), strict=True):
        # What a verify at this HEAD found stale is read back from its cache: no libgit2 loads.
        if outcome is not None and outcome.located is None and outcome.status is Status.STALE:
            notes[view.id] = StaleNote(view.id, outcome.status.value, outcome.reason, outcome.maps_to,
                                       view.content, view.blob_id or "")
        elif outcome is not None and outcome.located is None and outcome.status is Status.FRESH:
            settled.add(view.id)  # a check at this HEAD found it fresh: no note, no second check
    rest = [v for v in views if v.id not in notes and v.id not in settled]
    try:
        # The others are checked (the check loads the code history).
        verdicts = judge(ws, rest).verdicts if rest else []
    except EmptyRepository:
        verdicts, rest = [], []
    for view, verdict in zip(rest, verdicts, strict=True):
        reason: str | None
        if verdict.worktree:
            reason, maps_to, status = verdict.worktree, verdict.new_context_ref, Status.STALE
        elif verdict.status is Status.FRESH:
            continue  # fresh at HEAD: the next verify records it
        else:
            reason, maps_to, status = verdict.reason, verdict.maps_to, verdict.status
        notes[view.id] = StaleNote(view.id, status.value, reason, maps_to, view.content, view.blob_id or "")
    return [notes[v.id] for v in views if v.id in notes]


def _cached_outcomes(ws: Workspace, views: Sequence[Any]) -> list[Outcome | None]:
    """The verify cache's outcome for each view at HEAD (``None`` where it has none).

    Keyed as :func:`gitmem.staleness.verdicts.check` keys it: (observed SHA, HEAD, anchor,
    fingerprint), the observed SHA as stored (a check resolves a short one; it then misses).
    A view with a working-tree reason is left to the check.
    """
    from gitmem.staleness.outcomes import VerifyCache

    head = ws.store.head_sha()
    plain = ws.records.cache.read_payload(*VERIFY_CACHE) if head else None
    if plain is None or head is None:
        return [None] * len(views)
    cache = VerifyCache.from_plain(plain, ws.settings.verify.tag())
    out: list[Outcome | None] = []
    for view in views:
        prov = view.provenance
        if prov is None or view.local_reason or not prov.git_sha or not prov.context_ref:
            out.append(None)
            continue
        out.append(cache.get((prov.git_sha, head, prov.context_ref, prov.fingerprint or "")))
    return out


def held_back(ws: Workspace, table: RecordTable, query: str, kept: Sequence[int],
              skip: Callable[[Any], bool] | None = None) -> int:
    """How many stale or superseded memories (not refuted) have affinity to ``query``.

    ``kept`` are the rows recall ranked (its candidates); the others of
    ``table.recall_selection(True)`` are what ``include_stale`` would add. Affinity is
    :func:`gitmem.context.recall.rank_memories`'s (a score above 0: a query term), on an
    index of those memories kept in the read cache per tree.
    """
    if not query.strip():
        return 0
    from gitmem.cache.table import RowViews
    from gitmem.context.recall import TOPK_SCORING, rank_memories
    from gitmem.context.topk import matching

    everyone, _ = table.recall_selection(True)
    # The rows are ascending (table order): a C set difference, sorted back.
    rows = sorted(set(everyone.rows).difference(kept))
    if not rows:
        return 0
    views = RowViews(table, rows)
    index = ws.records.cache.recall_index(table.tree)(views)
    if not TOPK_SCORING:
        return len(rank_memories(query, views, index=index, skip=skip))
    # A count of the memories with a score: the union of the query's postings, no scoring.
    found = matching(index, query)
    return len(found) if skip is None else sum(1 for p in found if not skip(views[p]))


def fit_tail(notes: list[StaleNote], held: int, token_budget: int | None, max_chars: int | None,
             counter: Callable[[str], int]) -> tuple[list[StaleNote], str]:
    """The notes that fit in half of each cap, and the tail they make after the hits.

    The tail alone (:func:`gitmem.context.stale_notes.stale_tail` in ``markdown-prompt``, with
    the block's header, as when no hit opens it) is measured in characters for ``max_chars``
    and with ``counter`` (tokens) for ``token_budget``; recall then measures each choice of
    hits with the tail after them (``suffix``), so the whole output keeps both caps. ``None``
    or 0: no cap.
    """
    from gitmem.context.entry import RECALL_HEADER
    from gitmem.context.stale_notes import stale_tail

    def fits(kept: list[StaleNote]) -> bool:
        text = stale_tail(kept, held, "markdown-prompt", header=RECALL_HEADER)
        if max_chars and len(text) > max_chars // 2:
            return False
        # A BPE token is at least one byte: a short tail needs no count (no BPE tables load).
        return (not token_budget or len(text.encode("utf-8", "surrogatepass")) <= token_budget // 2
                or counter(text) <= token_budget // 2)

    if notes and not fits(notes):
        # The longest prefix that fits, by bisection: a note adds a whole line to the tail, so
        # a prefix that fits stays fitting when shortened (characters, bytes and tokens grow
        # with it), and a long file's notes cost a few measures instead of one per note.
        fitting, too_long = 0, len(notes)
        while too_long - fitting > 1:
            middle = (fitting + too_long) // 2
            if fits(notes[:middle]):
                fitting = middle
            else:
                too_long = middle
        notes = notes[:fitting]
    return notes, stale_tail(notes, held, "markdown-prompt")


def note_of(ws: Workspace, memory_id: str) -> StaleNote | None:
    """See :meth:`gitmem.api.Gitmem.stale_note`."""
    records = ws.records
    memory_id = records.resolve(memory_id)
    table, _ = records.table(records.tip())
    row = table.row(memory_id)
    if row is None:
        return None
    # Asked of one memory: judged at HEAD whatever its recorded status says.
    notes = stale_notes(ws, table, [row], unjudged=lambda _row: True)
    return notes[0] if notes else None
