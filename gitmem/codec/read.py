"""The hot-path YAML reader: PyYAML's C loader with the YAML 1.2 core schema, refusing unsafe input.

See :mod:`gitmem.codec` for the contract. Nothing here imports ruamel.yaml.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from gitmem.codec.scalars import (
    BOOL_TAG,
    CORE_RESOLVERS,
    FLOAT_TAG,
    INT_TAG,
    MAP_TAG,
    NULL_TAG,
    SEQ_TAG,
    STR_TAG,
)
from gitmem.errors import MalformedRecord
from gitmem.record.limits import MAX_RECORD_BYTES
from gitmem.record.models import Memory

__all__ = [
    "CORE_RESOLVERS",
    "FLOAT_TAG",
    "MAX_RECORD_BYTES",
    "NULL_TAG",
    "load",
    "load_mapping",
    "load_with_mapping",
    "parse_float",
]


_TAG = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = STR_TAG, NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG
_MAP, _SEQ = MAP_TAG, SEQ_TAG
_CORE_RESOLVERS = CORE_RESOLVERS


# ---------------------------------------------------------------------------
# Fast safe reader
# ---------------------------------------------------------------------------

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreLoader(_BaseLoader):
    """PyYAML loader with the YAML 1.2 core-schema resolvers and no timestamps.

    Only composition (parse + resolve) is used; construction is done by
    :func:`_build`, which is faster than PyYAML's constructor and refuses what
    a record must not contain.
    """

    # PyYAML API: per-class tables (first character -> [(tag, pattern)]; path resolvers unused)
    yaml_implicit_resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}
    yaml_path_resolvers: dict[Any, Any] = {}

    # The composer calls these three once per node; these lean versions (no
    # path resolvers, quoted scalars are strings at once) save ~15% of a load.
    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        """Tag of a node without an explicit tag (core schema; quoted scalars are strings)."""
        if kind is ScalarNode:
            if implicit[0]:
                for tag, regexp in self.yaml_implicit_resolvers.get(value[:1], ()):
                    if regexp.match(value):
                        return tag
            return _STR
        return _SEQ if kind is SequenceNode else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """No path resolvers: nothing to track."""

    def ascend_resolver(self) -> None:
        """No path resolvers: nothing to track."""


for _tag, _pattern, _first in _CORE_RESOLVERS:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
# Empty plain scalars (``key:``) are null.
_CoreLoader.add_implicit_resolver(_NULL, re.compile(r"^$"), [""])


class _Refused(Exception):
    """A construct a record may not contain; carries the YAML node for its position."""

    def __init__(self, reason: str, node: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


def _int(text: str) -> int:
    sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    if digits[:2] == "0o":
        return sign * int(digits[2:], 8)
    if digits[:2] == "0x":
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)


def _float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered[0] == "-" else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


def _scalar(node: Any) -> Any:
    tag, value = node.tag, node.value
    if tag == _STR:
        return value
    if tag == _NULL:
        return None
    try:
        if tag == _INT:
            return _int(value)
        if tag == _FLOAT:
            return _float(value)
    except ValueError:
        raise _Refused(f"{value!r} is not a valid {tag.removeprefix(_TAG)}", node) from None
    if tag == _BOOL and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _Refused(f"tag {tag!r} is not allowed in a record", node)


def _build(node: Any, seen: set[int]) -> Any:
    # An alias is the same node object reached a second time: refusing it here
    # stops alias bombs before anything is expanded.
    if id(node) in seen:
        raise _Refused(_NO_ANCHORS, node)
    seen.add(id(node))
    if node.__class__ is ScalarNode:
        return node.value if node.tag == _STR else _scalar(node)
    if node.__class__ is MappingNode:
        if node.tag != _MAP:
            raise _Refused(f"tag {node.tag!r} is not allowed in a record", node)
        return _build_mapping(node, seen)
    if node.__class__ is SequenceNode and node.tag == _SEQ:
        return [_build(child, seen) for child in node.value]
    raise _Refused(f"tag {node.tag!r} is not allowed in a record", node)


def _build_mapping(node: Any, seen: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _build(key_node, seen)
        if not isinstance(key, str):
            raise _Refused(f"key {key!r} is not a string", key_node)
        if key in out:
            raise _Refused(f"duplicate key {key!r}", key_node)
        if id(value_node) in seen:  # the node's own mark is the anchor's, not the alias's
            raise _Refused(f"{_NO_ANCHORS} (key {key!r})", key_node)
        out[key] = _build(value_node, seen)
    return out


_NO_ANCHORS = "anchors and aliases (&name, *name) are not allowed in a record"


def _first_anchor(data: bytes) -> Any:
    """Mark of the first anchor in ``data``, or ``None`` (also for unparsable data)."""
    # Only blobs containing "&" get this extra event pass, so typical records
    # pay nothing; aliases need an anchor, so this also stops alias bombs.
    if b"&" not in data:
        return None
    loader = _CoreLoader(data)
    try:
        while loader.check_event():
            event = loader.get_event()
            if getattr(event, "anchor", None) is not None:
                return event.start_mark
    except yaml.YAMLError:
        return None  # reported by the composing pass with its position
    finally:
        loader.dispose()
    return None


def _position(mark: Any) -> str:
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def _yaml_error_reason(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        return ": ".join(parts) + _position(exc.problem_mark or exc.context_mark)
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def load_mapping(data: bytes, where: str, *, allow_empty: bool = False) -> dict[str, Any]:
    """Parse a record blob into a plain dict, safely, without validating its fields.

    Used for records of any vintage, including legacy EP-0131 files
    (``.tur/memories/*.yaml``). Scalars follow the YAML 1.2 core schema;
    timestamps are returned as strings.

    Args:
        data: The blob's bytes (UTF-8, at most :data:`MAX_RECORD_BYTES`).
        where: Human label of the blob, e.g.
            ``blob 3f2a1b9 (memories/ab/fact-ab12cd34.yaml)``.
        allow_empty: an empty document (nothing, or only comments) is ``{}`` instead of
            an error (a configuration file that sets nothing).

    Returns:
        The top-level mapping with string keys; values are str, int, float,
        bool, None, lists and dicts.

    Raises:
        MalformedRecord: naming ``where`` when the blob is too large, is not
            YAML, has more than one document, is not a mapping at top level,
            uses an anchor or alias, a duplicate or non-string key, or any tag outside
            the core schema (``!!str``, ``!!int``, ``!!float``, ``!!bool``,
            ``!!null``, ``!!map``, ``!!seq``).
    """
    if len(data) > MAX_RECORD_BYTES:
        raise MalformedRecord(
            where, f"record is {len(data)} bytes, larger than the {MAX_RECORD_BYTES} byte limit"
        )
    anchor = _first_anchor(data)
    if anchor is not None:
        raise MalformedRecord(where, _NO_ANCHORS + _position(anchor))
    try:
        loader = _CoreLoader(data)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
        if node is None:
            if allow_empty:
                return {}
            raise MalformedRecord(where, "empty document; a record must be a mapping")
        if node.__class__ is not MappingNode:
            _build(node, set())  # a forbidden tag or alias is the better reason
            raise _Refused("top level must be a mapping", node)
        result: dict[str, Any] = _build(node, set())  # a mapping node builds a dict
    except _Refused as exc:
        raise MalformedRecord(where, exc.reason + _position(exc.node.start_mark)) from None
    except yaml.YAMLError as exc:
        raise MalformedRecord(where, _yaml_error_reason(exc)) from None
    except RecursionError:
        raise MalformedRecord(where, "record is nested too deeply") from None
    return result


def _validation_reason(exc: ValidationError) -> str:
    reasons = []
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        loc = ".".join(str(part) for part in error["loc"])
        reasons.append(f"{loc}: {message}" if loc else message)
    return "; ".join(reasons)


def load(data: bytes, where: str) -> Memory:
    """Parse and validate a record blob (the hot path: PyYAML C loader + pydantic).

    Args:
        data: The blob's bytes.
        where: Human label of the blob, named in every error.

    Returns:
        The validated :class:`Memory`; unknown keys are kept as model extras.

    Raises:
        MalformedRecord: as :func:`load_mapping`, or when a field is invalid;
            the reason names the field, e.g.
            ``confidence: Input should be less than or equal to 1``.
    """
    return load_with_mapping(data, where)[0]


def load_with_mapping(data: bytes, where: str) -> tuple[Memory, dict[str, Any]]:
    """As :func:`load`, also returning the plain mapping the record was validated from.

    Raises:
        MalformedRecord: as :func:`load`.
    """
    mapping = load_mapping(data, where)
    try:
        return Memory.model_validate(mapping), mapping
    except ValidationError as exc:
        raise MalformedRecord(where, _validation_reason(exc)) from None


#: The reading of a float scalar, which the writer shares with this reader (the schema's tables
#: are in :mod:`gitmem.codec.scalars`).
parse_float = _float
