"""Where anchored text went: matches modulo white space, moves to other files, similar regions.

The searches behind two verdicts of :mod:`gitmem.staleness.verdicts` (docs/staleness.md):

- *reformatted*: the anchored lines are found in their file again, changed only in white
  space (:func:`gitmem.record.anchors.squeeze`), their relative indentation kept where it
  carries meaning (:func:`gitmem.record.anchors.indent_profile`), as ``git diff -w`` sees it;
- *moved*: the anchored lines left their file (:func:`left_file`) and the same text is in
  another one — first the files that changed between the observed commit and HEAD (as
  ``git blame -C`` looks in the files changed by the same commit), then the rest of
  HEAD's tree (as ``-C -C`` widens it). When only a similar block is found
  (:func:`similar_regions`), the code was moved and edited;
- *copies*: a block now in several places re-anchors to one, :func:`pick_copy`'s rule
  (the successor file first, then the copy nearest the line the diff predicts), never
  to a copy that was already there (:func:`kept_elsewhere`);
- *split*: a deleted file whose lines all live on, in order, in two or more files
  (:func:`find_split`).

:class:`Texts` memoises every form of a blob (lines, squeezed text, line index) for one run.
Nothing here writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from gitmem.record.anchors import (
    Hunk,
    LooseText,
    indent_kind,
    indent_profile,
    map_window,
    split_lines,
    squeeze,
)
from gitmem.store.code import CodeHistory

__all__ = [
    "Match",
    "Texts",
    "block_text",
    "find_in_blob",
    "find_moved",
    "left_file",
    "searchable",
    "share_in",
    "similar_regions",
    "copies_note",
    "covers_file",
    "find_split",
    "kept_elsewhere",
    "pick_copy",
    "predicted_line",
]

#: A block squeezed to fewer characters than this (``pass``, ``return x``) is too common to
#: follow to another file: a wrong "moved" would keep a memory fresh that is not.
MIN_SEARCH_CHARS = 16

#: The rest of HEAD's tree is searched only for blocks of at least this many non-blank lines.
MIN_SWEEP_LINES = 2

#: Text read from the rest of HEAD's tree, once per run (bytes); files past it are not searched.
SWEEP_BUDGET = 64 << 20

#: Files larger than this (bytes) are left out of the sweep of the rest of the tree.
SWEEP_MAX_FILE = 1 << 20

#: A block is similar enough to have been moved and edited when this share of its lines is kept.
SIMILARITY = 0.5

#: Blocks longer than this (lines) are not compared for similarity (a whole big file).
MAX_SIMILAR_LINES = 400

_WORD = re.compile(r"\w{3,}")


@dataclass(frozen=True)
class Match:
    """The anchored text found at ``path`` lines ``start``-``end`` (1-based, inclusive).

    ``exact`` is true when the lines are the same but for trailing white space.
    """

    path: str
    start: int
    end: int
    exact: bool

    def ref(self) -> str:
        """The anchor ``path#Lstart-Lend``."""
        return f"{self.path}#L{self.start}-L{self.end}"


class Texts:
    """Per-run memo of what the searches need of each blob (keyed by immutable blob ids).

    Args:
        history: the code history blobs are read from.
    """

    def __init__(self, history: CodeHistory) -> None:
        self.h = history
        self._lines: dict[str, list[str]] = {}
        self._line_index: dict[str, dict[str, list[int]]] = {}
        self._loose: dict[str, LooseText] = {}
        self._compact: dict[str, str] = {}
        self._pieces: dict[str, list[tuple[int, str]]] = {}
        self._swept: dict[str, bytes | None] = {}
        self._swept_bytes = 0

    def lines(self, blob_id: str) -> list[str]:
        """The blob's lines (see :func:`gitmem.record.anchors.split_lines`)."""
        if blob_id not in self._lines:
            self._lines[blob_id] = split_lines(self.h.blob(blob_id))
        return self._lines[blob_id]

    def is_text(self, blob_id: str) -> bool:
        """False for a binary blob (git's NUL rule)."""
        return not self.h.is_binary(self.h.blob(blob_id))

    def occurrences(self, blob_id: str, block: list[str]) -> list[int]:
        """1-based starts where ``block`` (rstripped lines) occurs in a blob's lines."""
        index = self._line_index.get(blob_id)
        if index is None:
            index = {}
            for i, line in enumerate(self.lines(blob_id), start=1):
                index.setdefault(line.rstrip(), []).append(i)
            self._line_index[blob_id] = index
        lines = self.lines(blob_id)
        n = len(block)
        return [
            s
            for s in index.get(block[0], [])
            if [x.rstrip() for x in lines[s - 1 : s - 1 + n]] == block
        ]

    def loose(self, blob_id: str) -> LooseText:
        """The blob as one squeezed string (see :class:`gitmem.record.anchors.LooseText`)."""
        if blob_id not in self._loose:
            self._loose[blob_id] = LooseText.of(self.lines(blob_id))
        return self._loose[blob_id]

    def compact(self, blob_id: str) -> str:
        """The blob's text with every white space removed: a cheap test before :meth:`loose`."""
        if blob_id not in self._compact:
            self._compact[blob_id] = "".join("".join(self.lines(blob_id)).split())
        return self._compact[blob_id]

    def pieces(self, blob_id: str) -> list[tuple[int, str]]:
        """``(line number, squeezed line)`` of every non-blank line of the blob."""
        if blob_id not in self._pieces:
            self._pieces[blob_id] = [
                (n, p) for n, p in enumerate(map(squeeze, self.lines(blob_id)), start=1) if p
            ]
        return self._pieces[blob_id]

    def swept(self, blob_id: str) -> bytes | None:
        """A blob's bytes for the sweep of the rest of the tree, read once per run.

        ``None`` for a binary or oversized blob, and for every blob read once the run's
        :data:`SWEEP_BUDGET` is spent (so a huge tree costs a bounded time).
        """
        if blob_id in self._swept:
            return self._swept[blob_id]
        data: bytes | None = None
        if self._swept_bytes < SWEEP_BUDGET:
            data = self.h.blob(blob_id, keep=False)
            self._swept_bytes += len(data)
            if len(data) > SWEEP_MAX_FILE or self.h.is_binary(data):
                data = None
        self._swept[blob_id] = data
        return data


def block_text(known: list[str]) -> str:
    """The squeezed text of a block (what :meth:`LooseText.find` looks for)."""
    return squeeze("\n".join(known))


def searchable(needle: str) -> bool:
    """True when a squeezed block is distinctive enough to be looked for in other files."""
    return len(needle) >= MIN_SEARCH_CHARS and _WORD.search(needle) is not None


def _pad(span: tuple[int, int], known: list[str], lines: list[str]) -> tuple[int, int]:
    """Widen a match (which starts and ends on non-blank lines) by the block's blank edges."""
    start, end = span
    lead = next((i for i, line in enumerate(known) if squeeze(line)), 0)
    trail = next((i for i, line in enumerate(reversed(known)) if squeeze(line)), 0)
    while lead and start > 1 and not lines[start - 2].strip():
        start, lead = start - 1, lead - 1
    while trail and end < len(lines) and not lines[end].strip():
        end, trail = end + 1, trail - 1
    return start, end


def find_in_blob(
    texts: Texts,
    path: str,
    blob_id: str,
    known: list[str],
    kind: str | None,
    *,
    loose: bool,
    needle: str | None = None,
) -> list[Match]:
    """Every place of a blob holding the block ``known``, in file order.

    Args:
        texts: the run's memo.
        path: the blob's path (for the matches).
        blob_id: the blob to search.
        known: the anchored lines as observed.
        kind: :func:`gitmem.record.anchors.indent_kind` that applies (relative indentation must
            then be kept by a match modulo white space).
        loose: also match modulo white space; else only exact (trailing space ignored).
        needle: :func:`block_text` of ``known``, when the caller has it (many blobs).
    """
    if not known or not texts.is_text(blob_id):
        return []
    lines = texts.lines(blob_id)
    wanted = [line.rstrip() for line in known]
    if not loose:
        return [Match(path, s, s + len(known) - 1, True) for s in texts.occurrences(blob_id, wanted)]
    needle = block_text(known) if needle is None else needle
    if needle.replace(" ", "") not in texts.compact(blob_id):
        return []  # not even the same characters: no need to squeeze the file
    spans = texts.loose(blob_id).find(needle)
    profile = indent_profile(known, kind) if spans else ()
    out = []
    for first, last in spans:
        if kind is not None and indent_profile(lines[first - 1 : last], kind) != profile:
            continue
        start, end = _pad((first, last), known, lines)
        exact = [line.rstrip() for line in lines[start - 1 : end]] == wanted
        out.append(Match(path, start, end, exact))
    return out


def left_file(known: list[str], hunks: list[Hunk], start: int, end: int, new_lines: list[str]) -> bool:
    """True when the anchored lines ``start``-``end`` left their file rather than changed in place.

    Fewer than half of the block's non-blank lines (compared squeezed) are still in what
    the diff put where the range was (:func:`gitmem.record.anchors.map_window`): a function
    moved out, or a file split, leaves an import or nothing; an edit keeps most lines.
    """
    pieces = [p for p in map(squeeze, known) if p]
    if not pieces:
        return False
    window = map_window(hunks, start, end)
    there = "" if window is None else squeeze("\n".join(new_lines[window[0] - 1 : window[1]]))
    kept = sum(1 for p in pieces if p in there)
    return kept * 2 < len(pieces)


def find_moved(
    texts: Texts,
    head: str,
    candidates: tuple[str, ...],
    known: list[str],
    skip: set[str],
    kind: str | None,
    *,
    loose: bool,
) -> list[Match]:
    """Where the block ``known`` is in HEAD's tree outside the paths in ``skip``.

    The ``candidates`` (the files changed since the observed commit) first; only when
    none holds it, the rest of the tree, for blocks of at least :data:`MIN_SWEEP_LINES`
    non-blank lines, through a byte search for the block's longest word before any
    line is compared (and within :data:`SWEEP_BUDGET`).
    """
    found: list[Match] = []
    needle = block_text(known)
    for path in candidates:
        if path in skip:
            continue
        blob_id = texts.h.blob_id_at(head, path)
        if blob_id is not None:
            found += find_in_blob(texts, path, blob_id, known, kind or indent_kind(path),
                                  loose=loose, needle=needle)
    if found or sum(1 for line in known if line.strip()) < MIN_SWEEP_LINES:
        return found
    words = _WORD.findall(needle)
    if not words:
        return found
    token = max(words, key=len).encode("utf-8", errors="surrogateescape")
    done = skip | set(candidates)
    for path, blob_id in texts.h.files_at(head):
        if path in done:
            continue
        data = texts.swept(blob_id)
        if data is not None and token in data:
            found += find_in_blob(texts, path, blob_id, known, kind or indent_kind(path),
                                  loose=loose, needle=needle)
    return found


def _score(block: list[str], pieces: list[tuple[int, str]]) -> tuple[float, int, int]:
    """How much of ``block`` one region of ``pieces`` keeps: (share, first line, last line).

    The longest run of matching lines (difflib) is the core; neighbouring runs join it
    while the gap between them stays under half the block. The region is widened by the
    block lines before the first and after the last run (edited lines at its edges).
    """
    matcher = SequenceMatcher(None, block, [p for _, p in pieces], autojunk=False)
    runs = [m for m in matcher.get_matching_blocks() if m.size]
    if not runs:
        return 0.0, 0, 0
    core = max(range(len(runs)), key=lambda i: runs[i].size)
    gap = max(3, len(block) // 2)
    lo = hi = core
    while lo > 0 and runs[lo].b - (runs[lo - 1].b + runs[lo - 1].size) <= gap:
        lo -= 1
    while hi + 1 < len(runs) and runs[hi + 1].b - (runs[hi].b + runs[hi].size) <= gap:
        hi += 1
    kept = sum(m.size for m in runs[lo : hi + 1])
    first = max(0, runs[lo].b - runs[lo].a)
    last = min(len(pieces) - 1, runs[hi].b + runs[hi].size - 1 + len(block) - runs[hi].a - runs[hi].size)
    return kept / len(block), pieces[first][0], pieces[last][0]


def share_in(texts: Texts, blob_id: str | None, known: list[str]) -> float:
    """How much of the block the most similar region of a blob keeps (0 for none, or binary)."""
    block = [p for p in map(squeeze, known) if p]
    if not block or blob_id is None or not texts.is_text(blob_id):
        return 0.0
    return _score(block, texts.pieces(blob_id))[0]


def similar_regions(
    texts: Texts,
    since: str,
    head: str,
    candidates: tuple[str, ...],
    known: list[str],
    skip: set[str],
    own: str | None,
) -> list[Match]:
    """The regions of the ``candidates`` most like the block: where moved and edited code went.

    Blocks of 3 to :data:`MAX_SIMILAR_LINES` non-blank lines only. A region must keep at
    least :data:`SIMILARITY` of the block's lines, more than stayed in the block's own
    file (blob ``own`` at HEAD, ``None`` when deleted: an edit in place is no move), and more
    than the same file held at ``since`` (so that a similar block that was already there,
    a sibling, is not taken for the moved one). Returns the best region, or every region
    tied for best (in different files), with ``exact`` false.
    """
    block = [p for p in map(squeeze, known) if p]
    if not 3 <= len(block) <= MAX_SIMILAR_LINES:
        return []
    need = max(SIMILARITY * len(block), 1.0)
    best: list[tuple[float, Match]] = []
    floor: float | None = None
    for path in candidates:
        blob_id = texts.h.blob_id_at(head, path)
        if path in skip or blob_id is None or not texts.is_text(blob_id):
            continue
        compact = texts.compact(blob_id)  # a cheap upper bound before any line is squeezed
        if sum(1 for p in block if p.replace(" ", "") in compact) < need:
            continue
        share, first, last = _score(block, texts.pieces(blob_id))
        if floor is None:
            floor = share_in(texts, own, known)
        if share < SIMILARITY or share <= floor:
            continue
        if share <= share_in(texts, texts.h.blob_id_at(since, path), known):
            continue
        if not best or share > best[0][0]:
            best = [(share, Match(path, first, last, False))]
        elif share == best[0][0]:
            best.append((share, Match(path, first, last, False)))
    return [m for _, m in best]


def predicted_line(hunks: list[Hunk], start: int, end: int) -> int:
    """The new-side line (1-based) where git's diff puts old lines ``start``-``end``.

    ``hunks`` are git's zero-context hunks (libgit2's Myers diff) from the old blob to the new.

    The first line of :func:`gitmem.record.anchors.map_window`; when the range was deleted
    with nothing in its place, the line that now follows the deletion.
    """
    window = map_window(hunks, start, end)
    if window is not None:
        return window[0]
    delta = 0
    for h in hunks:
        if h.old_lines and h.old_start <= end and h.old_start + h.old_lines - 1 >= start:
            return max(1, h.new_start + 1)  # a deletion's new_start is the line before it
        if (h.old_start + h.old_lines - 1 if h.old_lines else h.old_start) < start:
            delta += h.new_lines - h.old_lines
    return max(1, start + delta)


def _old_line_of(hunks: list[Hunk], new_line: int) -> int | None:
    """The old line a new line was kept from by the diff, ``None`` when a hunk wrote it."""
    delta = 0
    for h in hunks:
        if h.new_lines and h.new_start <= new_line < h.new_start + h.new_lines:
            return None
        last = h.new_start + h.new_lines - 1 if h.new_lines else h.new_start
        if last >= new_line:
            break
        delta += h.new_lines - h.old_lines
    return new_line - delta


def kept_elsewhere(hunks: list[Hunk], first: int, last: int, start: int, end: int) -> bool:
    """True when new lines ``first``-``last`` are a copy that was already in the file.

    Every one of them is a line git's diff kept unchanged from an old line outside the
    anchored range ``start``-``end``: a sibling of the anchored block, not where it went
    (an edit of the block in place leaves its siblings so). A copy with any line written
    by a hunk is new, and may be where the block went.
    """
    for n in range(first, last + 1):
        old = _old_line_of(hunks, n)
        if old is None or start <= old <= end:
            return False
    return True


def pick_copy(copies: list[Match], successor: str | None, predicted: int) -> Match:
    """The copy a block found in several places re-anchors to: one rule, deterministic.

    Copies in the ``successor`` file (the anchored file at HEAD: itself, or what git's
    rename detection renamed it to) first; among those (or, when it holds none, among
    all), exact copies before copies equal only modulo white space; then the copy whose
    first line is nearest ``predicted`` (:func:`predicted_line`, line numbers compared
    as they are, in whichever file), then the earlier line, then path order.

    Raises:
        ValueError: ``copies`` is empty.
    """
    if not copies:
        raise ValueError("pick_copy needs at least one copy")
    group = [m for m in copies if m.path == successor] or copies
    return min(group, key=lambda m: (not m.exact, abs(m.start - predicted), m.start, m.path))


def copies_note(m: Match, copies: list[Match], *, whole: bool = False) -> str | None:
    """What verify says of the copy ``m`` picked of several ``copies``, ``None`` for the only one.

    ``nearest of 3 copies, also at a.py#L9-L12, b.py#L1-L4`` (at most three others named;
    with ``whole``, copies that are whole files, by path).
    """
    others = [c.path if whole else c.ref() for c in copies if c != m]
    if not others:
        return None
    listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
    return f"nearest of {len(copies)} copies, also at {listed}"


def covers_file(texts: Texts, m: Match, blob_id: str) -> bool:
    """True when ``m`` spans every non-blank line of the blob it was found in (a whole file)."""
    pieces = texts.pieces(blob_id)
    return bool(pieces) and m.start <= pieces[0][0] and m.end >= pieces[-1][0]


#: At most this share of a split file's lines may be found only as single lines (the
#: package clause, the imports each part repeats); the rest must be found in runs.
SPLIT_LOOSE_SHARE = 0.25


def find_split(
    texts: Texts,
    head: str,
    candidates: tuple[str, ...],
    known: list[str],
    skip: set[str],
    successor: str | None,
) -> list[tuple[str, int]]:
    """The files a deleted file was split into, most of it first; ``[]`` when it was not.

    Compared as :func:`similar_regions` compares (non-blank lines, squeezed; the matching
    blocks of Python's difflib, Ratcliff and Obershelp's gestalt pattern matching, so each
    file holds its part in the original order). A split needs
    all of these, among the ``candidates`` at HEAD not in ``skip``:

    - every non-blank line of ``known`` (3 to :data:`MAX_SIMILAR_LINES` of them) is held
      by one of the parts, no more than :data:`SPLIT_LOOSE_SHARE` of them only as a
      single line;
    - at least two parts, each holding two or more of the lines that no other file
      holds (so a file that merely repeats a few lines is no part).

    Returns:
        ``(path, lines of known it holds)`` per part: most lines first, then the
        ``successor`` (the rename target git paired, if any), then path order.
    """
    block = [p for p in map(squeeze, known) if p]
    if not 3 <= len(block) <= MAX_SIMILAR_LINES:
        return []
    runs: dict[str, list[tuple[int, int]]] = {}
    for path in candidates:
        blob_id = texts.h.blob_id_at(head, path)
        if path in skip or blob_id is None or not texts.is_text(blob_id):
            continue
        compact = texts.compact(blob_id)  # a cheap test before any line is squeezed
        if sum(1 for p in block if p.replace(" ", "") in compact) < 2:
            continue
        matcher = SequenceMatcher(None, block, [p for _, p in texts.pieces(blob_id)],
                                  autojunk=False)
        found = [(m.a, m.size) for m in matcher.get_matching_blocks() if m.size]
        if any(size >= 2 for _, size in found):
            runs[path] = found
    holders: list[set[str]] = [set() for _ in block]
    in_run = [False] * len(block)
    for path, found in runs.items():
        for a, size in found:
            for i in range(a, a + size):
                holders[i].add(path)
                in_run[i] = in_run[i] or size >= 2
    if not all(holders) or in_run.count(False) > SPLIT_LOOSE_SHARE * len(block):
        return []
    parts = [
        path for path, found in runs.items()
        if sum(1 for a, size in found for i in range(a, a + size) if holders[i] == {path}) >= 2
    ]
    if len(parts) < 2 or not all(holders[i] & set(parts) for i in range(len(block))):
        return []
    held = {path: sum(size for _, size in runs[path]) for path in parts}
    return sorted(held.items(), key=lambda kv: (-kv[1], kv[0] != successor, kv[0]))
