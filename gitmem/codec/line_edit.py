"""Line-level edits of a record's scalar fields, the fast path of :func:`gitmem.codec.update`.

``tur verify`` changes a handful of one-line scalars per record (``git_sha``,
``context_ref``, ``fingerprint``, ``last_verified_at``, ``staleness_status``,
``reason``) in thousands of records at once; a ruamel round-trip costs ~3 ms a
record. When every difference between the stored record and the new model is
such a scalar (changed, removed, or added at the end of its block), the lines
are edited directly. The result is parsed back with the fast reader and must
equal the model exactly; anything else returns ``None`` and the caller falls
back to the ruamel round-trip. So this path can only be faster, never wrong:
it touches no other line, and what it writes reads back as the model.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from gitmem.vocabulary import iso_z

__all__ = ["edit_scalars"]

_ABSENT: Any = object()
# Plain scalars we emit: no indicator first, no ": " or " #", nothing YAML could retype.
_PLAIN = re.compile(r"[A-Za-z0-9_./(][^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*")


def edit_scalars(text: str, old: dict[str, Any], new: dict[str, Any],
                 order: dict[str, tuple[str, ...]], render_float: Any,
                 needs_quotes: Any, always_quoted: frozenset[str]) -> str | None:
    """Apply the scalar differences between ``old`` and ``new`` (plain mappings) to ``text``.

    Args:
        text: the record's YAML, as stored.
        old: the stored record as a plain mapping (the fast reader's output).
        new: the new record as plain values (datetimes allowed).
        order: canonical key order of each nested block (``{"decay": (...), ...}``).
        render_float: exact text of a float (shared with the ruamel writer).
        needs_quotes: whether a string would be retyped by some YAML reader.
        always_quoted: keys whose string values are always double-quoted (``git_sha``).

    Returns:
        The edited text, or ``None`` when the change is not a set of one-line scalar edits.
    """
    edits: list[tuple[tuple[str, ...], Any]] = []
    if not _collect(old, new, (), edits):
        return None
    lines = text.split("\n")
    for path, value in edits:
        if not _apply(lines, path, value, order, render_float, needs_quotes, always_quoted):
            return None
    return "\n".join(lines)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | datetime)


def _collect(old: Any, new: Any, path: tuple[str, ...], edits: list) -> bool:
    for key in list(old) + [k for k in new if k not in old]:
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if isinstance(before, dict) and isinstance(after, dict):
            if len(path) >= 1 or not _collect(before, after, (*path, key), edits):
                return False
        elif before is _ABSENT or after is _ABSENT or (_is_scalar(before) and _is_scalar(after)):
            if before is _ABSENT and not _is_scalar(after):
                return False
            if after is _ABSENT and not _is_scalar(before):
                return False
            if not _same(before, after):
                edits.append(((*path, key), after))
        elif before != after:
            return False
    return True


def _same(before: Any, after: Any) -> bool:
    if isinstance(after, datetime):
        # The reader keeps timestamps as text; the same instant written another way
        # (a hand-written record) is left as it is. Naive times are UTC, as the model reads them.
        try:
            parsed = datetime.fromisoformat(before) if isinstance(before, str) else None
        except ValueError:
            return False
        if parsed is not None and parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed == after
    return type(before) is type(after) and before == after


def _render(key: str, value: Any, render_float: Any, needs_quotes: Any,
            always_quoted: frozenset[str]) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_float(value)
    if isinstance(value, datetime):
        return '"' + iso_z(value) + '"'
    if not isinstance(value, str) or not _PRINTABLE.fullmatch(value):
        return None
    plain = (key not in always_quoted and _PLAIN.fullmatch(value) and value == value.strip()
             and ": " not in value and " #" not in value and not value.endswith(":")
             and not needs_quotes(value))
    return value if plain else json.dumps(value, ensure_ascii=False)


def _block(lines: list[str], parent: str | None) -> tuple[int, int, str] | None:
    """(first, end, indent) of the lines of a top-level block (``parent=None``: the document)."""
    if parent is None:
        return 0, len(lines), ""
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"{parent}:"), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " #"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    body = [line for line in lines[start + 1:end] if line.strip() and not line.lstrip().startswith("#")]
    if not body:
        return None
    indent = body[0][: len(body[0]) - len(body[0].lstrip(" "))]
    return start + 1, end, indent


def _key_line(lines: list[str], first: int, end: int, indent: str, key: str) -> int | None:
    prefix = f"{indent}{key}:"
    hits = [i for i in range(first, end) if lines[i].startswith(prefix)
            and not lines[i][len(indent)].isspace()]
    if len(hits) != 1:
        return None
    i = hits[0]
    rest = lines[i][len(prefix):]
    # One-line scalar only: a value on the line, no block indicator, no comment,
    # and no continuation lines below it.
    if not rest.startswith(" ") or rest.strip()[:1] in ("|", ">", "", "#") or " #" in rest:
        return None
    if i + 1 < len(lines) and lines[i + 1].startswith(indent + " "):
        return None
    return i


def _apply(lines: list[str], path: tuple[str, ...], value: Any, order: dict,
           render_float: Any, needs_quotes: Any, always_quoted: frozenset[str]) -> bool:
    parent, key = (None, path[0]) if len(path) == 1 else (path[0], path[1])
    block = _block(lines, parent)
    if block is None:
        return False
    first, end, indent = block
    if parent is None:
        indent = ""
    at = _key_line(lines, first, end, indent, key)
    if value is _ABSENT or value is None:
        if at is None:
            return False
        del lines[at]
        return True
    rendered = _render(key, value, render_float, needs_quotes, always_quoted)
    if rendered is None:
        return False
    if at is not None:
        lines[at] = f"{indent}{key}: {rendered}"
        return True
    # A new key goes last in its block, and only where that is its canonical place.
    fields = order.get(parent) if parent else None
    if not fields or key not in fields:
        return False
    present = [line.strip().split(":", 1)[0] for line in lines[first:end]
               if line.startswith(indent) and line.strip() and not line.strip().startswith("#")
               and not line[len(indent)].isspace()]
    if any(k not in fields or fields.index(k) > fields.index(key) for k in present):
        return False
    lines.insert(end, f"{indent}{key}: {rendered}")
    return True
