"""Staleness of memories against the code: anchored-range diffs, re-anchoring, renames, moves.

``check`` turns memories into one :class:`Verdict` each (EP-0131, docs/staleness.md);
``apply_verdict`` turns a verdict back into an updated
record. Nothing here writes to git.

Algorithm, per anchored memory (work shared by every memory with the same observed
SHA and path, and diffs shared by blob pair):

1. Find the file at HEAD: same path, else the rename target (similarity detection
   between the observed tree and HEAD's), else it was deleted.
2. Whole file: stale when the blob changed, unless only its white space did. Range: map
   it through git's zero-context diff of the two blobs. Lines only shifted -> re-anchor;
   a line inside changed -> look for the fingerprinted lines elsewhere in the file, then
   for the same text modulo white space where the diff put the range (a formatter run:
   fresh, ``reformatted in <sha>``) or, when the lines left their place, anywhere in the
   file (re-indented and moved, as a rename with a reformat leaves them), else stale,
   naming the commit that changed them (bisection of ``observed..HEAD``) and the lines.
3. Lines that left their file, or a deleted file, are looked for in the other files
   (:mod:`gitmem.staleness.relocate`): found -> fresh, ``moved to <anchor> in <sha>``; only
   a similar block -> stale, ``moved to <anchor> and changed in <sha>``. Lines still in
   place never cost a search. A whole-file anchor whose file is gone (deleted, or paired
   by git with a file that does not hold it) follows its content: to a file that is the
   content (a whole-file anchor again), into a bigger file (a range), or, split into
   several files, to the part holding most of it (:func:`relocate.find_split`).
   Copies: a block found in several places re-anchors by :func:`relocate.pick_copy`
   (the successor file first, then the copy nearest the line the diff predicts); a copy
   made only of lines the diff kept from outside the range was already there and does
   not count (:func:`relocate.kept_elsewhere`).
4. The fingerprint confirms a mapped range; when the observed commit is gone it is
   the only way back: the lines found unchanged at HEAD keep the memory fresh.
5. The index and working tree are compared with HEAD: an uncommitted change to the
   anchored lines is this clone's local state (:attr:`Verdict.worktree`), never part of
   the verdict that is recorded on the shared ref (docs/sharing.md, What is local).
6. Fresh anchored memories are corroborated: the anchor moves to HEAD; how it travelled
   (renamed, reformatted, moved) is the verdict's reason, which verify puts in its
   commit message (the record of a fresh memory keeps no reason).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.config.settings import VerifySettings
from gitmem.errors import EmptyRepository, InvalidAnchor
from gitmem.record.anchors import (
    Anchor,
    Hunk,
    LinesChanged,
    find_fingerprint,
    fingerprint,
    fingerprint_windows,
    indent_kind,
    map_range,
    map_window,
    parse_anchor,
    same_modulo_whitespace,
)
from gitmem.record.decay import DecayPolicy, half_life_for
from gitmem.staleness.outcomes import Located as _Located
from gitmem.staleness.outcomes import Outcome as _Outcome
from gitmem.staleness.outcomes import VerifyCache
from gitmem.staleness.relocate import (
    Match,
    Texts,
    block_text,
    copies_note,
    covers_file,
    find_in_blob,
    find_moved,
    find_split,
    kept_elsewhere,
    left_file,
    pick_copy,
    predicted_line,
    searchable,
    similar_regions,
)
from gitmem.store.code import CodeHistory, Distance, WorktreeState
from gitmem.vocabulary import Status

if TYPE_CHECKING:
    # Only apply_verdict builds a model: checking cache rows (status, verify) loads no pydantic.
    from gitmem.record.models import Memory

__all__ = ["StalenessReport", "Verdict", "VerifyCache", "apply_verdict", "check"]

UNSHALLOW_HINT = (
    "run `git fetch --unshallow` if this is a shallow clone, "
    "or `tur verify --confirm <id>` to vouch for it and re-anchor it at HEAD"
)


@dataclass(frozen=True)
class Verdict:
    """Result of checking one memory against HEAD (and the working tree).

    Attributes:
        memory_id: the memory's id.
        status: fresh | stale | unanchored | refuted (refuted is passed through untouched).
        reason: why, e.g. ``lines 3-7 changed in 3f2a1b9``; for a fresh verdict how the
            anchor travelled (``reformatted in 3f2a1b9``, ``renamed from a.py in 3f2a1b9``,
            ``moved to b.py#L4-L9 in 3f2a1b9``), ``None`` when it stayed in its file.
        hint: what the user can do (e.g. ``git fetch --unshallow``), or ``None``.
        new_git_sha: HEAD when the anchor moves (corroboration), else ``None``.
        new_context_ref: the moved anchor (new path and line range), else ``None``.
        new_fingerprint: fingerprint of the moved anchor's lines, else ``None``.
        commit_distance: commits from the anchor to HEAD once the verdict is applied
            (0 when corroborated), ``None`` when unknown.
        observed_distance: commits from the stored ``git_sha`` to HEAD, ``None`` if unknown.
        diverged: HEAD does not descend from the stored ``git_sha``.
        merge_base: full SHA of the merge base when diverged.
        corroborated: the anchored code was found unchanged (``last_verified_at`` resets).
        changed: applying the verdict changes the record (status, reason or anchor).
        last_text: the last known anchored text, when the anchor was lost.
        moved_to: where the anchored code went when it was moved and edited (stale), the
            anchor ``tur verify --confirm`` re-anchors to; else ``None``.
        worktree: why uncommitted changes (index, then working tree) make the memory stale
            in this clone (``working tree: line 80 modified``), else ``None``. Local only:
            ``status`` and ``changed`` are the committed verdict, what verify records.
        maps_to: for a stale anchored memory, where its lines are at HEAD: the new side of
            git's zero-context diff for what became of the range (:func:`map_window`, in the
            file at HEAD, a rename followed), the moved-to range for code moved and edited,
            the file for a whole-file anchor whose file changed; ``None`` when the lines are
            gone (deleted with nothing in their place, or their file deleted) or the verdict
            is not stale. What ``tur verify ID --confirm`` re-anchors to.
    """

    memory_id: str
    status: Status
    reason: str | None = None
    hint: str | None = None
    new_git_sha: str | None = None
    new_context_ref: str | None = None
    new_fingerprint: str | None = None
    commit_distance: int | None = None
    observed_distance: int | None = None
    diverged: bool = False
    merge_base: str | None = None
    corroborated: bool = False
    changed: bool = False
    last_text: str | None = None
    moved_to: str | None = None
    worktree: str | None = None
    maps_to: str | None = None


@dataclass
class StalenessReport:
    """One verdict per input memory, in input order.

    Attributes:
        head_sha: the HEAD everything was compared with.
        verdicts: the verdicts.
        bare: the repository has no working tree (only HEAD's tree was compared).
    """

    head_sha: str
    verdicts: list[Verdict] = field(default_factory=list)
    bare: bool = False

    def changed(self) -> list[Verdict]:
        """Verdicts whose application changes the record (what verify must commit)."""
        return [v for v in self.verdicts if v.changed]

    def counts(self) -> dict[Status, int]:
        """Number of verdicts per status."""
        return dict(Counter(v.status for v in self.verdicts))


class _Run(Texts):
    """Per-run memo of everything shared by memories (HEAD blobs, lines, file targets)."""

    def __init__(
        self,
        history: CodeHistory,
        head: str,
        policy: DecayPolicy,
        cache: VerifyCache | None = None,
        options: VerifySettings | None = None,
    ) -> None:
        super().__init__(history)
        self.head = head
        self.policy = policy
        self.cache = cache
        self.options = options or VerifySettings()
        self.worktree: WorktreeState = history.worktree()
        self._targets: dict[tuple[str, str], str | None] = {}
        self._windows: dict[tuple[str, int], dict[str, list[int]]] = {}

    def windows(self, blob_id: str, length: int) -> dict[str, list[int]]:
        """Fingerprint -> starts of every ``length``-line window of a blob (memoised)."""
        key = (blob_id, length)
        if key not in self._windows:
            self._windows[key] = fingerprint_windows(self.lines(blob_id), length)
        return self._windows[key]

    def target(self, obs: str, path: str) -> str | None:
        """Path of the observed file at HEAD: same path, rename target, or ``None``."""
        key = (obs, path)
        if key not in self._targets:
            if self.h.blob_id_at(self.head, path) is not None:
                self._targets[key] = path
            else:
                self._targets[key] = self.h.renamed_path(obs, self.head, path)
        return self._targets[key]

    def short(self, sha: str) -> str:
        return self.h.short(sha)


def check(
    memories: list[Memory],
    history: CodeHistory,
    policy: DecayPolicy | None = None,
    cache: VerifyCache | None = None,
    options: VerifySettings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> StalenessReport:
    """Check every memory against HEAD and the working tree; one verdict each, in order.

    Args:
        memories: records to check (refuted ones are passed through untouched).
        history: the code history of the repository the memories belong to.
        policy: decay parameters (for the commit-distance limit); default policy if ``None``.
        cache: outcomes from earlier runs, read and filled in (see :class:`VerifyCache`);
            its ``tag`` must be ``options.tag()``.
        options: whether white-space-only changes and moves are followed (both by default).
        progress: called as ``progress(checked, len(memories))`` every 64 memories and
            at the end.

    Returns:
        A :class:`StalenessReport`. A weird stored anchor gives a stale or unanchored
        verdict with a reason, never an exception.

    Raises:
        EmptyRepository: HEAD is unborn, so there is nothing to compare with.
    """
    policy = policy or DecayPolicy.default()
    head = history.head_sha()
    if head is None:
        raise EmptyRepository(
            "HEAD is unborn: the repository has no commits to verify memories against",
            "commit something first",
        )
    run = _Run(history, head, policy, cache, options)
    if progress is None:
        verdicts = [_judge(m, run) for m in memories]
    else:
        verdicts = []
        for memory in memories:
            verdicts.append(_judge(memory, run))
            if len(verdicts) % 64 == 0 or len(verdicts) == len(memories):
                progress(len(verdicts), len(memories))
    return StalenessReport(head_sha=head, verdicts=verdicts, bare=run.worktree.bare)


def _judge(memory: Memory, run: _Run) -> Verdict:
    if memory.refutation is not None:
        return Verdict(memory.id, Status.REFUTED, memory.refutation.reason)
    prov = memory.provenance
    if prov is None:
        return _final(memory, Status.UNANCHORED, "no provenance (legacy record)")
    anchor: Anchor | None = None
    if prov.context_ref:
        try:
            anchor = parse_anchor(prov.context_ref)
        except InvalidAnchor as err:
            return _final(memory, Status.UNANCHORED, f"invalid anchor: {err.message}")
    obs = run.h.resolve_commit(prov.git_sha) if prov.git_sha else None
    if obs is None:
        return _judge_without_commit(memory, anchor, run)
    dist = run.h.commit_distance(obs, run.head)
    if anchor is None:
        return _judge_by_distance(memory, obs, dist, run)
    key = (obs, run.head, prov.context_ref or "", prov.fingerprint or "")
    outcome = run.cache.get(key) if run.cache is not None else None
    if outcome is None:
        outcome = _locate(memory, anchor, obs, run)
        if run.cache is not None:
            run.cache.put(key, outcome)
    return _conclude(memory, anchor, outcome, dist, run)


def _judge_without_commit(memory: Memory, anchor: Anchor | None, run: _Run) -> Verdict:
    prov = memory.provenance
    assert prov is not None
    if prov.git_sha:
        reason = f"observed commit {prov.git_sha[:7]} is not in the object database"
        hint: str | None = UNSHALLOW_HINT
    else:
        reason, hint = "no observed commit", None
    if anchor is not None and prov.fingerprint:
        located = _search_head(anchor, prov.fingerprint, run, unique=False)
        if located is not None:
            return _conclude(memory, anchor, _Outcome(located), None, run)
        reason += f"; the anchored lines of {anchor.ref()} are not at HEAD"
    return _final(memory, Status.UNANCHORED, reason, hint=hint)


def _judge_by_distance(memory: Memory, obs: str, dist: Distance, run: _Run) -> Verdict:
    limit = run.policy.max_commit_distance
    if dist.commits > limit:
        reason = f"{dist.commits} commits since observed {run.short(obs)} (limit {limit})"
        if dist.diverged:
            reason += _diverged_note(dist, run)
        return _final(memory, Status.STALE, reason, dist=dist)
    return _final(memory, Status.FRESH, None, dist=dist)


def _diverged_note(dist: Distance, run: _Run) -> str:
    if dist.merge_base is None:
        return "; diverged: no common history with HEAD"
    return f"; diverged, measured from merge base {run.short(dist.merge_base)}"


def _search_head(
    anchor: Anchor,
    fp: str,
    run: _Run,
    *,
    unique: bool,
) -> _Located | None:
    """Find the fingerprinted lines (or file) at HEAD, at the anchor's path (nearest first)."""
    blob_id = run.h.blob_id_at(run.head, anchor.path)
    if blob_id is None or run.h.is_binary(run.h.blob(blob_id)):
        return None
    lines = run.lines(blob_id)
    if anchor.start is None or anchor.end is None:
        return _Located(anchor.path, None, None) if fingerprint(lines) == fp else None
    length = anchor.end - anchor.start + 1
    start = find_fingerprint(
        lines, fp, length, near=anchor.start, unique=unique, windows=run.windows(blob_id, length),
    )
    if start is None:
        return None
    return _Located(anchor.path, start, start + length - 1)


def _locate(memory: Memory, anchor: Anchor, obs: str, run: _Run) -> _Outcome:
    """Follow the anchor from the observed commit to HEAD."""
    prov = memory.provenance
    assert prov is not None
    old_blob = run.h.blob_id_at(obs, anchor.path)
    if old_blob is None:
        if prov.fingerprint:
            located = _search_head(anchor, prov.fingerprint, run, unique=False)
            if located is not None:
                return _Outcome(located)
        return _Outcome(
            status=Status.UNANCHORED,
            reason=f"{anchor.path} is not in observed commit {run.short(obs)}",
        )
    new_path = run.target(obs, anchor.path)
    if new_path is None:
        sha = run.h.commit_deleting(anchor.path, obs, run.head)
        where = f"deleted in {sha}" if sha else f"deleted since {run.short(obs)}"
        if not run.is_text(old_blob):
            return _Outcome(reason=where)
        known = _old_lines(run, old_blob, anchor)
        moved = _follow_move(memory, anchor, obs, known, None, sha, where, run,
                             predicted=anchor.start or 1)
        return moved or _Outcome(reason=where, last_text="\n".join(known))
    new_blob = run.h.blob_id_at(run.head, new_path)
    assert new_blob is not None
    if anchor.start is None or anchor.end is None:
        outcome = _locate_file(anchor, obs, old_blob, new_path, new_blob, run)
        if outcome.located is None and new_path != anchor.path and run.is_text(old_blob):
            # git paired the path with a file that does not hold it (a split, most often):
            # the whole content may live on elsewhere all the same
            sha = run.h.commit_deleting(anchor.path, obs, run.head)
            moved = _follow_move(memory, anchor, obs, run.lines(old_blob), (new_path, new_blob),
                                 sha, outcome.reason or "", run, predicted=1, edited=False)
            if moved is not None:
                return moved
    else:
        outcome = _locate_range(memory, anchor, obs, old_blob, new_path, new_blob, run)
    if new_path == anchor.path or outcome.located is None or outcome.located.path != new_path:
        return outcome
    sha = run.h.commit_deleting(anchor.path, obs, run.head)
    note = f"renamed from {anchor.path}" + (f" in {sha}" if sha else "")
    return replace(outcome, reason=f"{note}; {outcome.reason}" if outcome.reason else note)


def _locate_file(
    anchor: Anchor, obs: str, old_blob: str, new_path: str, new_blob: str, run: _Run
) -> _Outcome:
    """A whole-file anchor: unchanged, changed only in white space, or changed."""
    if new_blob == old_blob:
        return _Outcome(_Located(new_path, None, None))
    sha = run.h.last_commit_touching(anchor.path, obs, run.head, new_path=new_path)
    if (run.options.ignore_whitespace and run.is_text(old_blob) and run.is_text(new_blob)
            and run.compact(old_blob) == run.compact(new_blob)  # cheap, and memoised per blob
            and same_modulo_whitespace(run.lines(old_blob), run.lines(new_blob),
                                       _kind(anchor.path, new_path))):
        return _Outcome(_Located(new_path, None, None), reason=_in("reformatted", sha))
    return _Outcome(reason=f"changed in {sha}" if sha else _differs(run, obs, new_path), maps_to=new_path)


def _kind(*paths: str) -> str | None:
    """The indentation rule of the first path that has one (see :func:`indent_kind`)."""
    return next((k for k in map(indent_kind, paths) if k is not None), None)


def _in(what: str, sha: str | None) -> str:
    return f"{what} in {sha}" if sha else what


def _earlier_culprit(memory: Memory, span: str, obs: str, run: _Run) -> str | None:
    """The commit named by the stored reason, if it still explains this change.

    A memory already stale for the same lines keeps its culprit while that commit is
    still between the observed commit and HEAD: the reason stays stable across runs
    and the bisection is skipped.
    """
    decay = memory.decay
    prefix = f"{span} changed in "
    if decay is None or decay.staleness_status is not Status.STALE or not decay.reason:
        return None
    if not decay.reason.startswith(prefix):
        return None
    short = decay.reason[len(prefix) :].split(";", 1)[0].strip()
    return short if run.h.is_between(short, obs, run.head) else None


def _differs(run: _Run, obs: str, path: str) -> str:
    return f"{path} differs from observed {run.short(obs)} (on the observed side of history)"


def _old_lines(run: _Run, blob_id: str, anchor: Anchor) -> list[str]:
    lines = run.lines(blob_id)
    if anchor.start is None:
        return lines
    return lines[anchor.start - 1 : anchor.end]


def _locate_range(
    memory: Memory,
    anchor: Anchor,
    obs: str,
    old_blob: str,
    new_path: str,
    new_blob: str,
    run: _Run,
) -> _Outcome:
    assert anchor.start is not None and anchor.end is not None
    fp = memory.provenance.fingerprint if memory.provenance else None
    if not run.is_text(old_blob) or not run.is_text(new_blob):
        if old_blob == new_blob:
            return _Outcome(_Located(new_path, anchor.start, anchor.end))
        return _Outcome(reason=f"{new_path} is binary and changed since {run.short(obs)}")
    old_lines = run.lines(old_blob)
    if anchor.end > len(old_lines):
        return _Outcome(
            status=Status.UNANCHORED,
            reason=f"range L{anchor.start}-L{anchor.end} is past the end of {anchor.path} "
            f"at {run.short(obs)} ({len(old_lines)} lines)",
        )
    known = old_lines[anchor.start - 1 : anchor.end]
    last_text = "\n".join(known)
    hunks = run.h.hunks(old_blob, new_blob) or []
    mapped = map_range(hunks, anchor.start, anchor.end)
    if isinstance(mapped, LinesChanged):
        if fp:
            copy = _copy_in_successor(known, fp, anchor, hunks, new_path, new_blob, run)
            if copy is not None:
                return copy
        return _changed_lines(memory, anchor, obs, known, mapped, hunks, new_path, new_blob, run)
    located = _Located(new_path, mapped.start, mapped.end)
    if fp and fingerprint(run.lines(new_blob)[mapped.start - 1 : mapped.end]) != fp:
        found = _search_head(Anchor(new_path, mapped.start, mapped.end), fp, run, unique=False)
        if found is None:
            return _Outcome(reason="anchor lost", last_text=last_text)
        located = found
    return _Outcome(located)


def _copy_in_successor(
    known: list[str], fp: str, anchor: Anchor, hunks: list[Hunk], new_path: str, new_blob: str,
    run: _Run,
) -> _Outcome | None:
    """The anchored lines, unchanged, elsewhere in their file at HEAD (a move inside it), or ``None``.

    In several copies, :func:`gitmem.staleness.relocate.pick_copy`'s rule chooses; a copy
    that was already there (:func:`gitmem.staleness.relocate.kept_elsewhere`) does not count.
    """
    if fingerprint(known) != fp:
        # the stored fingerprint is not of the observed lines: only it can find them
        found = _search_head(Anchor(new_path, anchor.start, anchor.end), fp, run, unique=True)
        return None if found is None else _Outcome(found)
    copies = find_in_blob(run, new_path, new_blob, known, None, loose=False)
    return _pick_in_file(copies, anchor, hunks, new_path, None)


def _pick_in_file(
    copies: list[Match], anchor: Anchor, hunks: list[Hunk], new_path: str, reformatted: str | None
) -> _Outcome | None:
    """Re-anchor to one of ``copies`` (found in the anchored file at HEAD), or ``None``.

    Copies made only of lines the diff kept from outside the range were already there
    and are left out; of the rest :func:`gitmem.staleness.relocate.pick_copy` picks one.
    ``reformatted`` is the reason for a copy equal only modulo white space.
    """
    assert anchor.start is not None and anchor.end is not None
    copies = [m for m in copies
              if not kept_elsewhere(hunks, m.start, m.end, anchor.start, anchor.end)]
    if not copies:
        return None
    m = pick_copy(copies, new_path, predicted_line(hunks, anchor.start, anchor.end))
    reason = None if m.exact else reformatted
    note = copies_note(m, copies)
    if note:
        reason = f"{reason} ({note})" if reason else note
    return _Outcome(_Located(m.path, m.start, m.end), reason=reason)


def _changed_lines(
    memory: Memory,
    anchor: Anchor,
    obs: str,
    known: list[str],
    mapped: LinesChanged,
    hunks: list[Hunk],
    new_path: str,
    new_blob: str,
    run: _Run,
) -> _Outcome:
    """Anchored lines that are not in their file as they were: reformatted, moved, or changed."""
    assert anchor.start is not None and anchor.end is not None
    span = f"line {mapped.start}" if mapped.start == mapped.end else (
        f"lines {mapped.start}-{mapped.end}"
    )
    sha = _earlier_culprit(memory, span, obs, run) or run.h.last_commit_touching(
        anchor.path, obs, run.head, lines=(anchor.start, anchor.end), new_path=new_path
    )
    reformatted = _in("reformatted", sha)
    loose: list[Match] = []
    if run.options.ignore_whitespace:
        loose = find_in_blob(run, new_path, new_blob, known, _kind(anchor.path, new_path),
                             loose=True)
        here = _reformatted_here(loose, anchor, hunks, new_path, reformatted)
        if here is not None:
            return here
    reason = f"{span} changed in {sha}" if sha else (
        f"{span} differ from observed {run.short(obs)} (on the observed side of history)"
    )
    if left_file(known, hunks, anchor.start, anchor.end, run.lines(new_blob)):
        # re-indented and moved inside the file (as a rename with a reformat leaves it)
        moved_here = _pick_in_file(loose, anchor, hunks, new_path, reformatted)
        if moved_here is not None:
            return moved_here
        moved = _follow_move(memory, anchor, obs, known, (new_path, new_blob), sha, reason, run,
                             predicted=predicted_line(hunks, anchor.start, anchor.end))
        if moved is not None:
            return moved
    window = map_window(hunks, anchor.start, anchor.end)
    maps_to = None if window is None else Anchor(new_path, window[0], window[1]).ref()
    return _Outcome(reason=reason, last_text="\n".join(known), maps_to=maps_to)


def _reformatted_here(
    loose: list[Match], anchor: Anchor, hunks: list[Hunk], new_path: str, reformatted: str
) -> _Outcome | None:
    """The anchored lines in their file again, changed only in white space, or ``None``.

    ``loose`` holds their places modulo white space in the file at HEAD. A formatter
    leaves code where it was: the match must overlap what the diff put where the range
    was (:func:`map_window`); of several, :func:`_pick_in_file` picks one.
    """
    assert anchor.start is not None and anchor.end is not None
    window = map_window(hunks, anchor.start, anchor.end)
    if window is None:
        return None
    found = [m for m in loose if m.start <= window[1] and m.end >= window[0]]
    return _pick_in_file(found, anchor, hunks, new_path, reformatted)


def _follow_move(
    memory: Memory,
    anchor: Anchor,
    obs: str,
    known: list[str],
    own: tuple[str, str] | None,
    sha: str | None,
    reason: str,
    run: _Run,
    *,
    predicted: int,
    edited: bool = True,
) -> _Outcome | None:
    """Where the anchored lines went when they left their file; ``None`` when nowhere.

    ``own`` is their file's path and blob at HEAD (``None`` when it was deleted), ``sha``
    the commit they left in, ``reason`` the verdict without a move, ``predicted`` the
    line the diff puts them at (:func:`gitmem.staleness.relocate.predicted_line`). Found
    in several places: :func:`gitmem.staleness.relocate.pick_copy`'s rule, after, for a
    whole-file anchor, the copies that are whole files. A whole-file anchor found as a
    whole file, or split into several (:func:`gitmem.staleness.relocate.find_split`),
    stays a whole-file anchor. With ``edited`` false, code moved and edited is not looked
    for (``None`` instead of a stale outcome).
    """
    if not run.options.follow_moves or not searchable(block_text(known)):
        return None
    candidates = run.h.changed_paths(obs, run.head)
    skip = {anchor.path} | ({own[0]} if own else set())
    kind = indent_kind(anchor.path)
    found = find_moved(run, run.head, candidates, known, skip, kind,
                       loose=run.options.ignore_whitespace)
    last_text = "\n".join(known)
    if found:
        whole = [] if anchor.start is not None else [
            m for m in found if covers_file(run, m, run.h.blob_id_at(run.head, m.path) or "")]
        m = pick_copy(whole or found, None, predicted)
        located = _Located(m.path, None, None) if whole else _Located(m.path, m.start, m.end)
        note = _in(f"moved to {m.path if whole else m.ref()}", sha)
        note += "" if m.exact else " (reformatted)"
        copies = copies_note(m, whole or found, whole=bool(whole))
        return _Outcome(located, reason=f"{note} ({copies})" if copies else note)
    if anchor.start is None:
        parts = find_split(run, run.head, candidates, known, {anchor.path},
                           own[0] if own else None)
        if parts:
            also = ", ".join(path for path, _ in parts[1:])
            return _Outcome(_Located(parts[0][0], None, None),
                            reason=_in(f"moved to {parts[0][0]}", sha) + f" (split, also in {also})")
    similar = [] if not edited else similar_regions(run, obs, run.head, candidates, known, skip,
                                                     own[1] if own else None)
    if not similar:
        return None
    if len(similar) > 1:
        return _Outcome(
            reason=f"moved to {' or '.join(m.ref() for m in similar)} and changed"
            + (f" in {sha}" if sha else ""),
            hint="learn the memory again with `--file` at the right one, if it still holds",
            last_text=last_text,
        )
    m = similar[0]
    return _Outcome(
        reason=_moved_and_changed(m, known, sha, run),
        hint=f"if the memory still holds, `tur verify {memory.id} --confirm` re-anchors it "
        f"at {m.ref()}",
        last_text=last_text,
        moved_to=m.ref(),
        maps_to=m.ref(),
    )


def _moved_and_changed(m: Match, known: list[str], sha: str | None, run: _Run) -> str:
    """The reason for code moved and edited: ``moved to X and changed in S``.

    ``moved to X in S1, changed in S2`` when it arrived unchanged in S1 and was edited later.
    """
    full = run.h.resolve_commit(sha) if sha else None
    if full is None:
        return _in(f"moved to {m.ref()} and changed", sha)
    blob_id = run.h.blob_id_at(full, m.path)
    arrived = [] if blob_id is None else find_in_blob(
        run, m.path, blob_id, known, _kind(m.path), loose=run.options.ignore_whitespace)
    if len(arrived) != 1:
        return f"moved to {m.ref()} and changed in {sha}"
    later = run.h.last_commit_touching(m.path, full, run.head,
                                       lines=(arrived[0].start, arrived[0].end))
    if later is None:
        return f"moved to {m.ref()} and changed in {sha}"
    return f"moved to {m.ref()} in {sha}, changed in {later}"


def _worktree_reason(located: _Located, anchor: Anchor, run: _Run) -> str | None:
    """Why uncommitted changes (index, then working tree) make the memory stale, or ``None``.

    ``working tree: line 80 modified``, ``index (staged): deleted``...
    """
    if not run.worktree.is_dirty(located.path):
        return None
    head_data = run.h.blob_at(run.head, located.path)
    for change in run.worktree.changes(located.path, head_data):
        if change.refused is not None:
            return f"{change.where}: refused: {change.refused}"
        if change.data is None:
            return f"{change.where}: deleted"
        if located.start is None or located.end is None:
            return f"{change.where}: modified"
        old = (head_data or b"").replace(b"\r\n", b"\n")
        hunks = run.h.hunks_of(old, change.data.replace(b"\r\n", b"\n"))
        if hunks is None:
            return f"{change.where}: modified"
        mapped = map_range(hunks, located.start, located.end)
        if isinstance(mapped, LinesChanged):
            # report in the stored anchor's numbering, which the user still sees
            shift = (anchor.start or located.start) - located.start
            lo, hi = mapped.start + shift, mapped.end + shift
            span = f"line {lo}" if lo == hi else f"lines {lo}-{hi}"
            return f"{change.where}: {span} modified"
    return None


def _conclude(
    memory: Memory, anchor: Anchor, outcome: _Outcome, dist: Distance | None, run: _Run
) -> Verdict:
    located = outcome.located
    if located is None:
        return _final(
            memory,
            outcome.status,
            outcome.reason,
            hint=outcome.hint,
            dist=dist,
            last_text=outcome.last_text,
            moved_to=outcome.moved_to,
            maps_to=outcome.maps_to if outcome.status is Status.STALE else None,
        )
    wt = _worktree_reason(located, anchor, run)
    new_anchor = Anchor(located.path, located.start, located.end)
    lines = run.lines(run.h.blob_id_at(run.head, located.path) or "")
    if located.start is None:
        fp = fingerprint(lines)
    else:
        fp = fingerprint(lines[located.start - 1 : located.end])
    prov = memory.provenance
    assert prov is not None
    moved = (prov.git_sha, prov.context_ref, prov.fingerprint) != (run.head, new_anchor.ref(), fp)
    return Verdict(
        memory_id=memory.id,
        status=Status.FRESH,
        reason=outcome.reason,
        new_git_sha=run.head,
        new_context_ref=new_anchor.ref(),
        new_fingerprint=fp,
        commit_distance=0,
        observed_distance=dist.commits if dist else None,
        diverged=dist.diverged if dist else False,
        merge_base=dist.merge_base if dist and dist.diverged else None,
        corroborated=True,
        changed=moved or _status_changed(memory, Status.FRESH, None),
        worktree=wt,
    )


def _status_changed(memory: Memory, status: Status, reason: str | None) -> bool:
    if memory.decay is None:
        # no decay block to hold a reason: only a status change is a change
        return status is not memory.status
    return memory.decay.staleness_status is not status or memory.decay.reason != reason


def _final(
    memory: Memory,
    status: Status,
    reason: str | None,
    *,
    hint: str | None = None,
    dist: Distance | None = None,
    last_text: str | None = None,
    moved_to: str | None = None,
    maps_to: str | None = None,
) -> Verdict:
    """A verdict that leaves the anchor where it is."""
    return Verdict(
        memory_id=memory.id,
        status=status,
        reason=reason,
        hint=hint,
        commit_distance=dist.commits if dist else None,
        observed_distance=dist.commits if dist else None,
        diverged=dist.diverged if dist else False,
        merge_base=dist.merge_base if dist and dist.diverged else None,
        changed=_status_changed(memory, status, reason),
        last_text=last_text,
        moved_to=moved_to,
        maps_to=maps_to,
    )


def apply_verdict(
    memory: Memory, verdict: Verdict, now: datetime, policy: DecayPolicy | None = None
) -> Memory:
    """Return ``memory`` updated by ``verdict`` (a copy; the input is not modified).

    Sets status and reason (none for a fresh memory: how its anchor travelled is said by
    the verify commit, not kept); on corroboration moves ``git_sha``, ``context_ref`` and
    ``fingerprint`` to HEAD and sets ``last_verified_at`` to ``now``, leaving
    ``observed_at`` alone. A refuted memory is returned unchanged. A record without a
    ``decay`` block gets one, with the policy's half-life for its type.
    """
    if memory.refutation is not None or verdict.status is Status.REFUTED:
        return memory
    if not verdict.changed and not verdict.corroborated:
        return memory
    from gitmem.record.models import Decay

    out = memory.model_copy(deep=True)
    if out.decay is None:
        if out.provenance is None:
            return memory  # legacy record: stays as loaded (unanchored, no decay)
        out.decay = Decay(
            half_life_days=half_life_for(out.type, policy or DecayPolicy.default()),
            last_verified_at=out.provenance.observed_at,
        )
    out.decay.staleness_status = verdict.status
    out.decay.reason = None if verdict.status is Status.FRESH else verdict.reason
    if verdict.corroborated and out.provenance is not None:
        out.provenance.git_sha = verdict.new_git_sha
        out.provenance.context_ref = verdict.new_context_ref
        out.provenance.fingerprint = verdict.new_fingerprint
        out.decay.last_verified_at = now
    return out
