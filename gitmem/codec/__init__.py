"""YAML codec between record blobs on the memory ref and :class:`gitmem.record.models.Memory`.

Two readers, one writer:

* :func:`load` / :func:`load_mapping` are the hot path. They use PyYAML's C
  loader (``yaml.CSafeLoader``; the pure-Python ``SafeLoader`` if libyaml is
  missing) with the YAML 1.2 *core* schema (bool only ``true``/``false``, null
  only ``~``/``null``/empty, ints decimal/``0o``/``0x``, floats) and no
  timestamp resolver: timestamps stay strings and pydantic parses them. The
  node tree is turned into plain dicts/lists/scalars by a small walker that
  refuses duplicate keys, non-string keys and every tag outside the core
  schema, so no object is ever built from a YAML tag. Anchors and aliases are
  refused before composing (alias bombs never expand). ``ruamel.yaml`` is
  not imported on this path.
* :func:`dump_new` and :func:`update` use ``ruamel.yaml`` round-trip mode
  (imported lazily, one ``YAML`` object per indentation style, created once;
  :func:`dump_new` writes the records ``tur learn`` makes itself, byte for byte
  as ruamel would, and leaves other records to it),
  configured with the *same* core-schema resolver so that both readers agree
  on every scalar. :func:`update` applies a model onto the original YAML and
  keeps unknown keys, key order and comments; only edited lines change, and
  an unchanged record comes back byte-identical.

Strings are written so that any YAML reader gets them back as the same
string: a string that a YAML 1.1 or 1.2 reader (PyYAML, ruamel, core schema)
would resolve to a non-string (``no``, ``on``, ``~``, ``0x10``, ``1e3``,
``2024-01-02``, ``12:30:00``, ``.inf``, ``0192117``) is double-quoted, as are
timestamps (``"2026-08-27T15:00:00Z"``), every ``git_sha`` and any string with
control characters, tabs or unusual line breaks. Multi-line text without such
characters is written as a literal block (``|``, ``|-`` or ``|+``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.record.limits import MAX_RECORD_BYTES

if TYPE_CHECKING:
    from gitmem.record.models import Memory

# The reader (PyYAML) and the round-trip writer (ruamel.yaml) are imported by the functions
# that use them: a ``tur learn`` writes its new record with neither (see dump_new).

__all__ = [
    "MAX_RECORD_BYTES",
    "dump_mapping",
    "dump_new",
    "load",
    "load_mapping",
    "load_with_mapping",
    "update",
]


def load(data: bytes, where: str) -> Memory:
    """Parse and validate one record blob; see :func:`gitmem.codec.read.load`.

    Raises:
        MalformedRecord: not a safe YAML mapping, or not a valid record.
    """
    from gitmem.codec.read import load as _load

    return _load(data, where)


def load_mapping(data: bytes, where: str, *, allow_empty: bool = False) -> dict[str, Any]:
    """Parse a YAML mapping with the fast safe reader; see :func:`gitmem.codec.read.load_mapping`.

    Raises:
        MalformedRecord: not a safe YAML mapping.
    """
    from gitmem.codec.read import load_mapping as _load_mapping

    return _load_mapping(data, where, allow_empty=allow_empty)


def load_with_mapping(data: bytes, where: str) -> tuple[Memory, dict[str, Any]]:
    """:func:`load`, with the parsed mapping; see :func:`gitmem.codec.read.load_with_mapping`.

    Raises:
        MalformedRecord: as :func:`load`.
    """
    from gitmem.codec.read import load_with_mapping as _load_with_mapping

    return _load_with_mapping(data, where)


def dump_new(memory: Memory) -> bytes:
    """Serialise a new record (canonical key order); see :func:`gitmem.codec.write.dump_new`."""
    from gitmem.codec.write import dump_new as _dump_new

    return _dump_new(memory)


def dump_mapping(mapping: dict[str, Any]) -> bytes:
    """Serialise plain YAML data that is not a record; see :func:`gitmem.codec.write.dump_mapping`."""
    from gitmem.codec.write import dump_mapping as _dump_mapping

    return _dump_mapping(mapping)


def update(original: bytes, memory: Memory, where: str = "record") -> bytes:
    """Apply ``memory`` onto an existing record's YAML; see :func:`gitmem.codec.write.update`.

    Returns ``original`` itself (the same bytes) when nothing changed.

    Raises:
        MalformedRecord: ``original`` is not a safe record mapping.
    """
    from gitmem.codec.write import update as _update

    return _update(original, memory, where)


