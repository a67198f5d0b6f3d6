"""Anchors ``path[#Lstart-Lend]``: parsing, learn-time validation, fingerprints, range mapping.

Pure logic over bytes and diff hunks; reading git objects is ``gitmem.store.code``'s job.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gitmem.errors import InvalidAnchor

__all__ = [
    "covered_lines",
    "Anchor",
    "Hunk",
    "LinesChanged",
    "LooseText",
    "MappedRange",
    "anchor_fingerprint",
    "find_fingerprint",
    "fingerprint",
    "fingerprint_windows",
    "indent_kind",
    "indent_profile",
    "is_binary",
    "map_range",
    "map_window",
    "parse_anchor",
    "resolve_anchor",
    "same_modulo_whitespace",
    "split_lines",
    "squeeze",
]

_RANGE = re.compile(r"^L(?P<start>[0-9]+)(?:-L?(?P<end>[0-9]+))?$")

#: Bytes inspected for a NUL when deciding that a file is binary (git uses the same 8000).
_BINARY_SNIFF = 8000


@dataclass(frozen=True)
class Anchor:
    """A repo-relative POSIX path, optionally with a 1-based inclusive line range.

    ``start`` and ``end`` are both ``None`` for a whole-file anchor, else both set
    with ``1 <= start <= end``.
    """

    path: str
    start: int | None = None
    end: int | None = None

    def ref(self) -> str:
        """Return the stored form: ``path`` or ``path#Lstart-Lend``."""
        if self.start is None:
            return self.path
        return f"{self.path}#L{self.start}-L{self.end}"


def _check_path(path: str, ref: str) -> str:
    # Fast path for the common, already normal path (verify parses thousands).
    segments = path.split("/")
    odd = "\\" in path or "\x00" in path or segments[0] == ".git"
    if not odd and not {"", ".", ".."} & set(segments):
        return path
    if not path:
        raise InvalidAnchor(f"anchor {ref!r} has no path")
    if "\\" in path or "\x00" in path:
        raise InvalidAnchor(f"anchor {ref!r}: path must use '/' and contain no NUL")
    pure = PurePosixPath(path)
    if pure.is_absolute():
        raise InvalidAnchor(
            f"anchor {ref!r}: path must be relative to the repository root",
        )
    parts = [p for p in pure.parts if p != "."]
    if not parts or ".." in parts:
        raise InvalidAnchor(
            f"anchor {ref!r}: path leaves the repository",
            "give a path inside the repository",
        )
    if parts[0] == ".git":
        raise InvalidAnchor(f"anchor {ref!r}: path is inside .git")
    return "/".join(parts)


def _parse_range(text: str, ref: str) -> tuple[int, int]:
    match = _RANGE.match(text)
    if not match:
        raise InvalidAnchor(
            f"anchor {ref!r}: malformed line range {text!r}",
            "write it as path#L12 or path#L12-L20",
        )
    start = int(match["start"])
    end = int(match["end"]) if match["end"] is not None else start
    if start < 1:
        raise InvalidAnchor(f"anchor {ref!r}: line numbers start at 1")
    if end < start:
        raise InvalidAnchor(
            f"anchor {ref!r}: range ends (L{end}) before it starts (L{start})",
            f"write #L{end}-L{start}",
        )
    return start, end


def split_ref(ref: str) -> tuple[str, str]:
    """``(path, range)`` of an anchor text: split at the last ``#`` when a range follows it.

    What follows counts as a range (well formed or not, so that a typo is reported as one)
    when it starts with ``L`` or a digit and holds no ``.`` or ``/``, which no range has;
    any other ``#`` belongs to the file name (``docs/c#sharp.md``, ``notes/v#1.2.md``).
    ``range`` is ``""`` when there is none.
    """
    path, sep, rng = ref.rpartition("#")
    if sep and rng[:1] in ("L", *"0123456789") and "." not in rng and "/" not in rng:
        return path, rng
    return ref, ""


def parse_anchor(ref: str) -> Anchor:
    """Parse a stored ``context_ref`` (``path``, ``path#L5``, ``path#L5-L9``, ``path#L5-9``).

    The path is normalised (``./`` dropped) but never resolved against a filesystem.

    Raises:
        InvalidAnchor: empty or absolute path, ``..`` components, a path into ``.git``,
            a malformed range (``#Lx``, ``#L9-L3``, ``#L0``).
    """
    path, rng = split_ref(ref)
    path = _check_path(path, ref)
    if not rng:
        return Anchor(path)
    start, end = _parse_range(rng, ref)
    return Anchor(path, start, end)


def is_binary(data: bytes) -> bool:
    """Return True if ``data`` looks binary (a NUL in the first 8000 bytes, git's rule)."""
    return b"\x00" in data[:_BINARY_SNIFF]


def split_lines(data: bytes) -> list[str]:
    """Split file content into lines the way git counts them (on newlines only).

    A trailing newline does not start an extra line. Undecodable bytes are kept
    as surrogate escapes so that the text stays comparable byte for byte.
    """
    if not data:
        return []
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def fingerprint(text_lines: list[str]) -> str:
    """Return ``sha256:<hex>`` of lines normalised by ``rstrip`` (drops CR and trailing blanks).

    Used for a range (its lines) and for a whole file (all its lines).
    """
    norm = "\n".join(line.rstrip() for line in text_lines)
    digest = hashlib.sha256(norm.encode("utf-8", errors="surrogateescape")).hexdigest()
    return f"sha256:{digest}"


def anchor_fingerprint(anchor: Anchor, data: bytes) -> str:
    """Fingerprint of what ``anchor`` covers in ``data`` (the range's lines, or the whole file)."""
    lines = split_lines(data)
    if anchor.start is None:
        return fingerprint(lines)
    return fingerprint(lines[anchor.start - 1 : anchor.end])


def fingerprint_windows(lines: list[str], length: int) -> dict[str, list[int]]:
    """Map the fingerprint of every run of ``length`` consecutive lines to its 1-based starts.

    One SHA-256 per position over a once-normalised text, O(lines); build it once per
    (file version, length) and share it between memories.
    """
    out: dict[str, list[int]] = {}
    if length < 1 or length > len(lines):
        return out
    text = "\n".join(line.rstrip() for line in lines)
    # offsets[i] = where line i starts in `text`; the last entry is one past the end
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.rstrip()) + 1)
    for i in range(len(lines) - length + 1):
        window = text[offsets[i] : offsets[i + length] - 1]
        digest = hashlib.sha256(window.encode("utf-8", errors="surrogateescape")).hexdigest()
        out.setdefault(f"sha256:{digest}", []).append(i + 1)
    return out


def find_fingerprint(
    lines: list[str],
    fp: str,
    length: int,
    near: int | None = None,
    unique: bool = False,
    windows: dict[str, list[int]] | None = None,
) -> int | None:
    """Find where ``length`` consecutive lines with fingerprint ``fp`` start (1-based).

    Args:
        lines: the file's lines (see :func:`split_lines`).
        fp: ``sha256:<hex>`` from :func:`fingerprint`.
        length: number of lines in the fingerprinted block (>= 1).
        near: preferred start line; among several matches the closest one wins.
        unique: return a match only if there is exactly one.
        windows: :func:`fingerprint_windows` of ``lines`` for ``length``, if already built.

    Returns:
        The 1-based start line, or ``None`` when not found (or ambiguous with ``unique``).
    """
    if windows is None:
        windows = fingerprint_windows(lines, length)
    hits = windows.get(fp, [])
    if not hits or (unique and len(hits) > 1):
        return None
    pivot = near if near is not None else 1
    return min(hits, key=lambda s: (abs(s - pivot), s))


def _relative_to_root(repo_root: Path, cwd: Path, spec_path: str, spec: str) -> str:
    root = Path(os.path.realpath(repo_root))
    candidate = Path(spec_path)
    if not candidate.is_absolute():
        candidate = Path(cwd) / candidate
    # normpath (not realpath) on the name, so that `..` is judged on what the user typed
    # and a symlink inside the repository keeps its own path; the directories are
    # resolved so that a symlinked cwd (/tmp -> /private/tmp) still compares equal.
    lexical = Path(os.path.normpath(candidate))
    located = Path(os.path.realpath(lexical.parent)) / lexical.name
    outside = InvalidAnchor(
        f"anchor {spec!r} is outside the repository {str(root)!r}",
        "give a path inside the repository",
    )
    try:
        rel = located.relative_to(root)
        Path(os.path.realpath(located)).relative_to(root)
    except ValueError:
        raise outside from None
    if not rel.parts or rel.parts == (".",):
        raise InvalidAnchor(f"anchor {spec!r} names the repository root, not a file")
    return rel.as_posix()


def resolve_anchor(
    repo_root: Path, cwd: Path, spec: str, text: bytes | None = None
) -> Anchor:
    """Validate a learn-time ``--file path[#Lx-Ly]`` and return the repo-relative anchor.

    Args:
        repo_root: the working tree root.
        cwd: directory the user typed the path from (a relative path is taken from here).
        spec: ``path`` or ``path#Lx-Ly`` as typed.
        text: the file's content; ``None`` reads ``repo_root/path`` from disk (pass
            HEAD's blob for a bare repository).

    Returns:
        The :class:`Anchor`; pair it with :func:`anchor_fingerprint` for the record.

    Raises:
        InvalidAnchor: malformed range, path outside the repository (``..``, absolute
            elsewhere, symlink leaving it), missing file or a directory, binary file with a
            line range, range past the end of the file.
    """
    path_part, rng = split_ref(spec)
    if not path_part:
        raise InvalidAnchor(f"anchor {spec!r} has no path")
    rel = _relative_to_root(repo_root, cwd, path_part, spec)
    anchor = parse_anchor(rel + ("#" + rng if rng else ""))
    if text is None:
        target = Path(repo_root) / anchor.path
        if not target.is_file():
            what = "is a directory" if target.is_dir() else "does not exist"
            base, hash_, fragment = anchor.path.rpartition("#")
            if hash_ and _RANGE.match(fragment.upper()) and (Path(repo_root) / base).is_file():
                raise InvalidAnchor(f"anchor {spec!r}: {anchor.path} {what}",
                                    f"a line range is written with a capital L: {base}#{fragment.upper()}")
            raise InvalidAnchor(f"anchor {spec!r}: {anchor.path} {what}")
        text = target.read_bytes()
    if anchor.start is None:
        return anchor
    if is_binary(text):
        raise InvalidAnchor(
            f"anchor {spec!r}: {anchor.path} is a binary file; line ranges need text",
            "anchor the whole file instead (drop #L…)",
        )
    count = len(split_lines(text))
    assert anchor.end is not None  # start and end are set together
    if anchor.end > count:
        raise InvalidAnchor(
            f"anchor {spec!r}: range L{anchor.start}-L{anchor.end} is past the end of "
            f"{anchor.path} ({count} lines)",
        )
    return anchor


# ---------------------------------------------------------------------------
# Range mapping through a diff


@dataclass(frozen=True)
class Hunk:
    """One zero-context diff hunk, as git reports it (``@@ -os,oc +ns,nc @@``).

    With ``old_lines == 0`` (pure insertion) the new lines go after old line ``old_start``.
    """

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


@dataclass(frozen=True)
class MappedRange:
    """The anchored lines are unchanged; they now sit at ``start``-``end`` (1-based)."""

    start: int
    end: int


@dataclass(frozen=True)
class LinesChanged:
    """Some anchored lines changed; ``start``-``end`` are the affected old line numbers."""

    start: int
    end: int


def map_range(hunks: list[Hunk], start: int, end: int) -> MappedRange | LinesChanged:
    """Map the old range ``start``-``end`` through zero-context ``hunks`` (old -> new).

    A hunk that replaces or deletes any line of the range, or inserts lines strictly
    inside it, changes it; hunks wholly before it shift it by their size difference,
    hunks after it do not matter. Hunks must be sorted by ``old_start`` (git order).

    Returns:
        :class:`MappedRange` with the new line numbers, or :class:`LinesChanged` naming
        the first and last changed old lines (clipped to the range).
    """
    delta = 0
    lo: int | None = None
    hi: int | None = None
    for h in hunks:
        if h.old_lines == 0:
            # Pure insertion after old line `old_start`.
            if h.old_start < start:
                delta += h.new_lines
            elif h.old_start < end:
                lo = h.old_start if lo is None else lo
                hi = h.old_start + 1
            continue
        first, last = h.old_start, h.old_start + h.old_lines - 1
        if last < start:
            delta += h.new_lines - h.old_lines
        elif first <= end:
            lo = max(first, start) if lo is None else lo
            hi = min(last, end)
    if lo is not None and hi is not None:
        return LinesChanged(lo, hi)
    return MappedRange(start + delta, end + delta)


def map_window(hunks: list[Hunk], start: int, end: int) -> tuple[int, int] | None:
    """New-side lines (1-based, inclusive) holding what became of old lines ``start``-``end``.

    The unchanged lines of the range, mapped, plus the new side of every hunk that
    replaces lines of the range or inserts inside it; ``None`` when all of it was deleted
    with nothing in its place. Hunks must be sorted by ``old_start`` (git order).
    """
    delta = 0
    pos = start  # first old line of the range not yet accounted for
    spans: list[tuple[int, int]] = []
    for h in hunks:
        if h.old_lines == 0:  # pure insertion after old line `old_start`
            if h.old_start < start:
                delta += h.new_lines
                continue
            if h.old_start >= end:
                break
            spans += [(pos + delta, h.old_start + delta), (h.new_start, h.new_start + h.new_lines - 1)]
            pos = h.old_start + 1
            delta += h.new_lines
            continue
        first, last = h.old_start, h.old_start + h.old_lines - 1
        if last < start:
            delta += h.new_lines - h.old_lines
            continue
        if first > end:
            break
        if pos < first:
            spans.append((pos + delta, first - 1 + delta))
        if h.new_lines:
            spans.append((h.new_start, h.new_start + h.new_lines - 1))
        pos = last + 1
        delta += h.new_lines - h.old_lines
    if pos <= end:
        spans.append((pos + delta, end + delta))
    spans = [(a, b) for a, b in spans if a <= b]
    if not spans:
        return None
    return min(a for a, _ in spans), max(b for _, b in spans)


# ---------------------------------------------------------------------------
# Whitespace-insensitive comparison (what survives a formatter run)

#: A run of white space between two word characters: the one kind :func:`squeeze` keeps.
_WORD_GAP = re.compile(r"(?<=\w)\s+(?=\w)")


def _is_word(ch: str) -> bool:
    # what `\w` matches in a str pattern: str.isalnum() or the underscore
    return ch.isalnum() or ch == "_"


def squeeze(text: str) -> str:
    r"""The whitespace-insensitive form of ``text``: as ``git diff -w`` compares it, nearly.

    Every run of white space (spaces, tabs, line breaks) is dropped, except that a run
    between two word characters becomes one space, so that ``return x`` and
    ``returnx`` stay different while ``f(a, b)`` and ``f(\\n    a,\\n    b\\n)`` are equal.
    """
    # split() and join() run in C: far cheaper than a substitution with a callback
    return " ".join("".join(part.split()) for part in _WORD_GAP.split(text))


@dataclass(frozen=True)
class LooseText:
    """A file's lines as one :func:`squeeze`-d string, with where each non-blank line lies in it.

    Attributes:
        text: the squeezed text of every line (what :func:`squeeze` gives for the whole file).
        starts: offset in ``text`` where each non-blank line's part starts.
        ends: offset one past where it ends.
        numbers: the 1-based line number of each non-blank line.
    """

    text: str
    starts: list[int]
    ends: list[int]
    numbers: list[int]

    @classmethod
    def of(cls, lines: list[str]) -> LooseText:
        """Build it from a file's lines (see :func:`split_lines`); O(characters)."""
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        numbers: list[int] = []
        pos = 0
        last = ""
        for number, line in enumerate(lines, start=1):
            piece = squeeze(line)
            if not piece:
                continue
            if last and _is_word(last) and _is_word(piece[0]):
                parts.append(" ")
                pos += 1
            starts.append(pos)
            pos += len(piece)
            ends.append(pos)
            numbers.append(number)
            parts.append(piece)
            last = piece[-1]
        return cls("".join(parts), starts, ends, numbers)

    def find(self, needle: str) -> list[tuple[int, int]]:
        """Line spans ``(first, last)`` (1-based) whose squeezed text is exactly ``needle``.

        Only whole lines count: an occurrence that starts or ends inside a line is no match.
        Spans start and end on non-blank lines, in file order.
        """
        out: list[tuple[int, int]] = []
        if not needle:
            return out
        i = self.text.find(needle)
        while i != -1:
            k = bisect_left(self.starts, i)
            if k < len(self.starts) and self.starts[k] == i:
                j = bisect_left(self.ends, i + len(needle))
                if j < len(self.ends) and self.ends[j] == i + len(needle):
                    out.append((self.numbers[k], self.numbers[j]))
            i = self.text.find(needle, i + 1)
        return out


#: File kinds whose meaning depends on indentation, by suffix (lower case) or by file name.
_INDENT_SUFFIXES = {
    ".py": "python", ".pyi": "python", ".pyw": "python", ".pyx": "python",
    ".yml": "lines", ".yaml": "lines", ".mk": "make",
    ".hs": "lines", ".elm": "lines", ".fs": "lines", ".fsx": "lines", ".nim": "lines",
    ".coffee": "lines", ".sass": "lines", ".pug": "lines", ".haml": "lines", ".slim": "lines",
}
_INDENT_NAMES = {"Makefile": "make", "makefile": "make", "GNUmakefile": "make"}


def indent_kind(path: str) -> str | None:
    """How indentation carries meaning in the file at ``path``, or ``None`` where it does not.

    ``"python"`` (``.py`` and kin: the indentation of each statement), ``"make"``
    (Makefiles: indentation, and whether a line starts with a tab), ``"lines"`` (YAML and
    other off-side-rule languages: the indentation of every line).
    """
    name = path.rsplit("/", 1)[-1]
    if name in _INDENT_NAMES:
        return _INDENT_NAMES[name]
    dot = name.rfind(".")
    return _INDENT_SUFFIXES.get(name[dot:].lower()) if dot > 0 else None


def _skip_string(line: str, i: int, quote: str) -> int:
    """Index just past the one-line string literal opened at ``line[i]`` (or the line's end)."""
    j = i + 1
    while j < len(line):
        if line[j] == "\\":
            j += 2
            continue
        if line[j] == quote:
            return j + 1
        j += 1
    return j


def _python_statement_starts(lines: list[str]) -> list[bool]:
    """For each line, whether it starts a Python statement (the lines whose indentation matters).

    A small scanner: lines inside brackets, inside a triple-quoted string or after a
    backslash continue a statement; blank and comment-only lines start none. A range may
    begin inside a statement; the scan then errs the same way on both sides of a change.
    """
    out: list[bool] = []
    depth, open_string, continued = 0, "", False
    for line in lines:
        stripped = line.strip()
        out.append(not (depth or open_string or continued) and bool(stripped)
                    and not stripped.startswith("#"))
        i = 0
        while i < len(line):
            if open_string:
                close = line.find(open_string, i)
                if close == -1:
                    break
                i, open_string = close + len(open_string), ""
                continue
            ch = line[i]
            if ch == "#":
                break
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(0, depth - 1)
            elif ch in "'\"":
                if line.startswith(ch * 3, i):
                    open_string = ch * 3
                    i += 3
                    continue
                i = _skip_string(line, i, ch)
                continue
            i += 1
        continued = not open_string and line.rstrip().endswith("\\")
    return out


def indent_profile(lines: list[str], kind: str | None) -> tuple[object, ...]:
    """The relative indentation of a block: what a re-indent keeps and a structural change does not.

    The indentation widths (tabs to 8 columns) of the lines that matter for ``kind`` (see
    :func:`indent_kind`), each replaced by its rank among the block's distinct widths: a
    block indented as a whole, or from 2 to 4 spaces, keeps its profile; a line moved
    into or out of a block does not. For ``"make"`` each entry also says whether the
    line starts with a tab. Empty for ``kind`` ``None``.
    """
    if kind is None:
        return ()
    if kind == "python":
        starts = _python_statement_starts(lines)
    else:
        starts = [bool(s) and not s.startswith("#") for s in (line.strip() for line in lines)]
    chosen = [line.expandtabs(8) for line, start in zip(lines, starts, strict=True) if start]
    widths = [len(line) - len(line.lstrip()) for line in chosen]
    rank = {w: r for r, w in enumerate(sorted(set(widths)))}
    if kind == "make":
        tabs = [line.startswith("\t") for line, start in zip(lines, starts, strict=True) if start]
        return tuple(zip(tabs, (rank[w] for w in widths), strict=True))
    return tuple(rank[w] for w in widths)


def same_modulo_whitespace(old: list[str], new: list[str], kind: str | None) -> bool:
    """True when two blocks differ only in white space that does not change their meaning.

    Their :func:`squeeze` forms are equal and, where indentation matters (``kind``, see
    :func:`indent_kind`), so are their :func:`indent_profile`.
    """
    old_text, new_text = "\n".join(old), "\n".join(new)
    # Necessary, and cheap: the same characters once every white space is gone.
    if "".join(old_text.split()) != "".join(new_text.split()):
        return False
    if squeeze(old_text) != squeeze(new_text):
        return False
    return kind is None or indent_profile(old, kind) == indent_profile(new, kind)


def covered_lines(ref: str | None) -> float:
    """How many lines the anchor ``ref`` covers: ``inf`` for a whole file, 0 for none (or a bad one).

    The prior by which ``tur recall --file`` orders the file's memories that the query does
    not rank: an edit somewhere in a file falls in a unit with a chance that grows with the
    unit's lines (on the code development set, hit@5 with ``--file`` 0.625 -> 0.707).
    """
    if not ref:
        return 0.0
    try:
        anchor = parse_anchor(ref)
    except InvalidAnchor:
        return 0.0
    if anchor.start is None or anchor.end is None:
        return math.inf
    return float(anchor.end - anchor.start + 1)
