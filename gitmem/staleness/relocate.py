"""Where anchored text went: matches modulo white space, moves to other files, similar regions.

The searches behind two verdicts of :mod:`gitmem.staleness.verdicts` (docs/staleness.md):

- *reformatted*: the anchored lines are found in their file again, changed only in white
  space (:func:`gitmem.record.anchors.squeeze`), their relative indentation kept where it
  carries meaning (:func:`gitmem.record.anchors.indent_profile`), as ``git diff -w`` sees it;
- *moved*: the anchored lines left their file (:func:`left_file`) and the same text is in
  another one — first the files that changed between the observed commit and HEAD (as
  ``git blame -C`` looks in the files changed by the same commit), then the rest of
  HEAD's tree (as ``-C -C`` widens it). When only a similar block is found
  (:func:`similar_regions`), the code was moved and edited.

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
