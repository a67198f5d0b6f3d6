"""Anchors ``path[#Lstart-Lend]``: parsing, learn-time validation, fingerprints, range mapping.

Pure logic over bytes and diff hunks; reading git objects is ``gitmem.store.code``'s job.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gitmem.errors import InvalidAnchor

__all__ = [
    "Anchor",
    "Hunk",
    "LinesChanged",
    "MappedRange",
    "anchor_fingerprint",
    "find_fingerprint",
    "fingerprint",
    "fingerprint_windows",
    "is_binary",
    "map_range",
    "parse_anchor",
    "resolve_anchor",
    "split_lines",
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


def parse_anchor(ref: str) -> Anchor:
    """Parse a stored ``context_ref`` (``path``, ``path#L5``, ``path#L5-L9``, ``path#L5-9``).

    The path is normalised (``./`` dropped) but never resolved against a filesystem.

    Raises:
        InvalidAnchor: empty or absolute path, ``..`` components, a path into ``.git``,
            a malformed range (``#Lx``, ``#L9-L3``, ``#L0``).
    """
    path, sep, rng = ref.partition("#")
    path = _check_path(path, ref)
    if not sep:
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
    path_part, sep, rng = spec.partition("#")
    if not path_part:
        raise InvalidAnchor(f"anchor {spec!r} has no path")
    rel = _relative_to_root(repo_root, cwd, path_part, spec)
    anchor = parse_anchor(rel + (sep + rng if sep else ""))
    if text is None:
        target = Path(repo_root) / anchor.path
        if not target.is_file():
            what = "is a directory" if target.is_dir() else "does not exist"
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
