"""The YAML writer: ruamel.yaml round-trip (imported lazily), for new records and read-modify-write.

See :mod:`gitmem.codec` for the contract. It shares the YAML 1.2 core schema
with :mod:`gitmem.codec.read` (:mod:`gitmem.codec.scalars`), so both read every
unquoted value the same way.

A new record whose every value is of a kind :func:`_emit` writes (the records
``tur learn`` makes) is written without ruamel, byte for byte as ruamel writes
it: :func:`_emit` decides each scalar's style by the rules of ruamel's emitter
(``Emitter.analyze_scalar`` and ``choose_scalar_style``) and returns ``None``
for anything else, which ruamel then writes. ``tests/test_codec.py`` compares
the two on many records (their output, not ruamel's source). Neither PyYAML nor
ruamel.yaml is imported for it.

Why the emitter stays beside ruamel (measured on the shared 2-core machine, one
record as ``tur learn`` writes it, in a fresh process): :func:`_emit` 2-3 ms for
the first record, 0.03-0.07 ms after; ruamel ``YAML(typ="rt").dump`` 37-59 ms for
the first (importing ruamel.yaml and building the ``YAML`` object), 1.4-1.8 ms
after. A ``tur learn`` writes one record in a fresh process, so ruamel would add
35-55 ms to it: with detect-secrets now imported as it is (``requests``
included, see :mod:`gitmem.sharing.secret_scan`), that is what would take
``learn`` at 10,000 memories past its 0.25 s target. Edits of existing records
(:func:`update`) and anything :func:`_emit` declines still go through ruamel.
"""

from __future__ import annotations

import io
import math
import re
import threading
from datetime import UTC, datetime
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from gitmem.codec.scalars import CORE_RESOLVERS as _CORE_RESOLVERS
from gitmem.codec.scalars import FLOAT_TAG as _FLOAT
from gitmem.codec.scalars import NULL_TAG as _NULL
from gitmem.codec.scalars import needs_quotes as _needs_quotes
from gitmem.errors import MalformedRecord
from gitmem.record.models import Decay, Memory, Provenance, Refutation, Relation
from gitmem.vocabulary import iso_z

__all__ = ["dump_mapping", "dump_new", "update"]

# Which fields of a model hold nested models, so that a read-modify-write
# merges them key by key (key order itself comes from ``model_fields``).
_NESTED: dict[type[BaseModel], dict[str, type[BaseModel]]] = {
    Memory: {
        "provenance": Provenance,
        "decay": Decay,
        "relations": Relation,
        "refutation": Refutation,
    },
}

# ---------------------------------------------------------------------------
# Model -> plain values
# ---------------------------------------------------------------------------


def _plain(model: BaseModel) -> dict[str, Any]:
    # Known fields in declaration order (the canonical key order), ``None`` and
    # empty lists omitted; then extras, whose ``None`` values are kept because
    # they were in the YAML.
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is None or (isinstance(value, list) and not value):
            continue
        out[name] = _plain_value(value)
    for name, value in (model.model_extra or {}).items():
        out[name] = _plain_value(value)
    return out


def _plain_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _plain(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_value(v) for v in value]
    return value


def _iso(value: datetime) -> str:
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return iso_z(value)


# ---------------------------------------------------------------------------
# Writer (ruamel.yaml round-trip, imported lazily)
# ---------------------------------------------------------------------------

#: Indentation of records written by :func:`dump_new`: (mapping, sequence, offset).
_DEFAULT_INDENT = (2, 4, 2)
_rt_lock = threading.Lock()
_rt_instances: dict[tuple[int, int, int], Any] = {}

# Characters a plain or single-quoted scalar may hold; anything else (control
# characters, tabs, line breaks, BOM, non-characters) goes double-quoted.
_SIMPLE_TEXT = re.compile("[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*")
# Text a literal block scalar reproduces exactly: ``\n`` line breaks only, no
# trailing spaces on any line and no leading space (which would need an
# indentation indicator).
_LITERAL_TEXT = re.compile(
    "(?![ \n])[^\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*"
)
_TRAILING_SPACE = re.compile(r" (?:\n|$)")


@cache
def _ruamel_resolver() -> type:
    from ruamel.yaml.resolver import BaseResolver

    class CoreResolver(BaseResolver):
        """ruamel resolver with exactly the fast reader's YAML 1.2 core schema."""

        def __init__(self, version: Any = None, loader: Any = None, loadumper: Any = None):
            super().__init__(loader if loader is not None else loadumper)
            self._loader_version = version

        @property
        def processing_version(self) -> tuple[int, int]:
            return (1, 2)

    for tag, pattern, first in _CORE_RESOLVERS:
        CoreResolver.add_implicit_resolver_base(tag, re.compile(pattern), list(first))
    CoreResolver.add_implicit_resolver_base(_NULL, re.compile(r"^$"), [""])
    return CoreResolver


def _rt_yaml(indent: tuple[int, int, int]) -> Any:
    # Creating a YAML object is slow, so one per indentation style is kept.
    instance = _rt_instances.get(indent)
    if instance is None:
        from ruamel.yaml import YAML

        instance = YAML(typ="rt")
        instance.Resolver = _ruamel_resolver()
        instance.Representer = _ruamel_representer()
        instance.width = 2**20  # never re-fold long strings
        instance.preserve_quotes = True
        instance.allow_duplicate_keys = False
        instance.indent(mapping=indent[0], sequence=indent[1], offset=indent[2])
        _rt_instances[indent] = instance
    return instance


def _float_text(value: float) -> str:
    # Python's repr is the shortest text that reads back as the same float
    # (ruamel's own formatting loses digits of subnormals); a ".0" mantissa
    # keeps exponent forms a float for YAML 1.1 readers too.
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


@cache
def _ruamel_representer() -> type:
    from ruamel.yaml.representer import RoundTripRepresenter
    from ruamel.yaml.scalarfloat import ScalarFloat

    from gitmem.codec.read import parse_float as _float

    class Representer(RoundTripRepresenter):
        """Round-trip representer that writes new floats exactly (see :func:`_float_text`)."""

        def represent_exact_float(self, data: float) -> Any:
            return self.represent_scalar(_FLOAT, _float_text(data))

        def represent_scalar_float(self, data: Any) -> Any:
            # A float read from the original keeps its written form, unless
            # ruamel's re-formatting would change its value.
            node = super().represent_scalar_float(data)
            try:
                exact = _float(node.value.replace("_", "")) == float(data)
            except ValueError:
                exact = False
            if not exact and not math.isnan(data):
                node.value = _float_text(float(data))
            return node

    Representer.add_representer(float, Representer.represent_exact_float)
    Representer.add_representer(ScalarFloat, Representer.represent_scalar_float)
    return Representer


def _str_style(text: str, key: Any = None) -> str:
    """How a string value is written: ``'"'`` double-quoted, ``"|"`` literal block, ``""`` ruamel's choice."""
    if key == "git_sha":
        return '"'
    if "\n" in text and _LITERAL_TEXT.fullmatch(text) and not _TRAILING_SPACE.search(text):
        return "|"
    if not _SIMPLE_TEXT.fullmatch(text) or _needs_quotes(text):
        return '"'
    # ruamel still picks single quotes when the syntax needs them ('# x', '- x', 'a: b').
    return ""


def _styled_str(text: str, key: Any = None) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

    style = _str_style(text, key)
    if style == '"':
        return DoubleQuotedScalarString(text)
    if style == "|":
        return LiteralScalarString(text)
    return text


def _to_node(value: Any, key: Any = None) -> Any:
    """Turn a plain value into ruamel round-trip nodes with gitmem's scalar styles."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, dict):
        node = CommentedMap()
        for k, v in value.items():
            node[_styled_key(k)] = _to_node(v, k)
        return node
    if isinstance(value, list):
        return CommentedSeq(_to_node(v) for v in value)
    if isinstance(value, datetime):
        return DoubleQuotedScalarString(_iso(value))
    if isinstance(value, str):
        return _styled_str(value, key)
    if value is None or isinstance(value, bool | int | float):
        return value
    raise TypeError(f"cannot write {type(value).__name__} value {value!r} of key {key!r} to YAML")


def _styled_key(key: str) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if _needs_quotes(key) or not _SIMPLE_TEXT.fullmatch(key):
        return DoubleQuotedScalarString(key)
    return key


def _dump(node: Any, indent: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    with _rt_lock:
        _rt_yaml(indent).dump(node, buffer)
    return buffer.getvalue()


# -- new records without ruamel -------------------------------------------------------------

#: Longest string :func:`_emit` writes (characters): far below ruamel's line width (2**20, see
#: :func:`_rt_yaml`), so that ruamel does not fold it either.
_EMIT_AT_MOST = 1 << 16
#: Keys :func:`_emit` writes (every field name of a record), plain as ruamel writes them.
_PLAIN_KEY = re.compile(r"[a-z][a-z_]*")
#: What ruamel's emitter takes for white space around an indicator (``Emitter.analyze_scalar``).
_WS = "\0 \t\r\n\x85\u2028\u2029"
#: A ``: `` or `` #`` (or a ``:`` at the end): an indicator that a plain scalar may not hold.
_INNER_INDICATOR = re.compile(f":(?:[{_WS}]|\\Z)|[{_WS}]#")
#: What ruamel escapes in a double-quoted scalar (``Emitter.write_double_quoted``, with
#: ``allow_unicode``): quotes, backslashes, special line breaks and BOM, and every character
#: outside the printable ranges.
_ESCAPED = re.compile('["\\\\\x85\u2028\u2029\ufeff\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]')
_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\x09": "t", "\x0a": "n", "\x0b": "v", "\x0c": "f",
            "\x0d": "r", "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N", "\xa0": "_", "\u2028": "L",
            "\u2029": "P"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_CORE_FLOAT = re.compile(next(p for tag, p, _ in _CORE_RESOLVERS if tag == _FLOAT))


class _Unwritten(Exception):
    """A value :func:`_emit` leaves to ruamel."""


def _emit(mapping: dict[str, Any]) -> str | None:
    """``mapping`` (a record's plain values) as ruamel writes it with :data:`_DEFAULT_INDENT`, or ``None``.

    Block mappings with plain keys; at the top level, sequences of scalars or of mappings of
    scalars; strings (each in the style ruamel picks), floats and datetimes. ``None`` when
    anything else is met (``None``, ``bool`` and ``int`` values, empty containers, long
    strings, keys that need quotes, lone surrogates, literal blocks that keep trailing
    newlines), for :func:`_dump` to write.
    """
    out: list[str] = []
    try:
        _emit_mapping(mapping, 0, out)
    except _Unwritten:
        return None
    return "".join(out)


def _emit_mapping(mapping: dict[str, Any], indent: int, out: list[str], first: str = "") -> None:
    """Write a block mapping at ``indent``; its first key after ``first`` (``"  - "`` in a sequence)."""
    if not mapping:
        raise _Unwritten
    pad = " " * indent
    for key, value in mapping.items():
        if not isinstance(key, str) or not _PLAIN_KEY.fullmatch(key) or _needs_quotes(key):
            raise _Unwritten
        out.append(f"{first or pad}{key}:")
        first = ""
        if isinstance(value, dict):
            out.append("\n")
            _emit_mapping(value, indent + 2, out)
        elif isinstance(value, list):
            if indent or not value:
                raise _Unwritten
            out.append("\n")
            for item in value:
                if isinstance(item, dict):
                    if any(isinstance(v, dict | list) for v in item.values()):
                        raise _Unwritten
                    _emit_mapping(item, indent + 4, out, first=f"{pad}  - ")
                else:
                    out.append(f"{pad}  -{_emit_scalar(item, None, indent + 4, block=False)}\n")
        else:
            out.append(f"{_emit_scalar(value, key, indent)}\n")


def _emit_scalar(value: Any, key: str | None, indent: int, block: bool = True) -> str:
    """A scalar value as ruamel writes it after ``key:`` (or ``-``), its leading space included."""
    if isinstance(value, datetime):
        return " " + _double_quoted(_iso(value))
    if isinstance(value, float):
        text = _float_text(value)
        if not _CORE_FLOAT.match(text):
            raise _Unwritten
        return " " + text
    if not isinstance(value, str) or len(value) > _EMIT_AT_MOST:
        raise _Unwritten
    style = _str_style(value, key)
    if style == '"':
        return " " + _double_quoted(value)
    if _SURROGATE.search(value):
        raise _Unwritten  # ruamel escapes them (plain) or fails to encode them (literal)
    if style == "|":
        if not block or (value[-1] == "\n" and (len(value) == 1 or value[-2] == "\n")):
            raise _Unwritten  # a literal kept with "+" (trailing line breaks)
        body, chomp = (value, "-") if value[-1] != "\n" else (value[:-1], "")
        pad = " " * (indent + 2)
        return f" |{chomp}\n" + "\n".join(pad + line if line else "" for line in body.split("\n"))
    # ruamel's choice (Emitter.choose_scalar_style) for text that is printable, on one line,
    # and read back as a string by every reader: plain where a plain block scalar may stand,
    # else double-quoted if it holds an apostrophe, else single-quoted.
    if not (value[0] == " " or value[-1] == " " or _block_indicators(value)):
        return " " + value
    if "'" in value:
        return " " + _double_quoted(value)
    return " '" + value.replace("'", "''") + "'"


def _block_indicators(text: str) -> bool:
    """Whether ``text`` holds what ruamel's ``analyze_scalar`` calls block indicators."""
    first = text[0]
    followed = len(text) == 1 or text[1] in _WS
    return (text.startswith(("---", "..."))
            or first in "#,[]{}&*!|>'\"%@`"
            or (first in "?-" and followed)
            or _INNER_INDICATOR.search(text) is not None)


def _double_quoted(text: str) -> str:
    """``text`` double-quoted as ruamel's ``write_double_quoted`` writes a line shorter than its width."""
    def escape(found: re.Match[str]) -> str:
        ch = found.group()
        if ch in _ESCAPES:
            return "\\" + _ESCAPES[ch]
        return f"\\x{ord(ch):02X}" if ch <= "\xff" else f"\\u{ord(ch):04X}"

    return '"' + _ESCAPED.sub(escape, text) + '"'


def dump_new(memory: Memory) -> bytes:
    """Serialise a new record in canonical form.

    Key order: ``id, type, scope, content, confidence, provenance{observed_at,
    git_sha, source_agent, source_harness, context_ref, fingerprint},
    decay{half_life_days, last_verified_at, staleness_status, reason},
    relations, refutation``, then unknown (extra) keys in their order. Known
    fields that are ``None`` and an empty ``relations`` are omitted.
    Timestamps are quoted ISO-8601 UTC strings (``"2026-08-27T15:00:00Z"``).

    Args:
        memory: The record to write.

    Returns:
        UTF-8 YAML ending with a newline; :func:`load` reads it back equal.

    Raises:
        TypeError: if an extra value is not YAML data (str, number, bool,
            None, datetime, list, dict).
    """
    plain = _plain(memory)
    text = _emit(plain)
    if text is not None:  # what ruamel would write, without loading it (see _emit)
        return text.encode("utf-8")
    return _dump(_to_node(plain), _DEFAULT_INDENT)


def dump_mapping(mapping: dict[str, Any]) -> bytes:
    """Serialise plain YAML data (not a record, e.g. ``persona.yaml``) with a record's styles.

    Strings are quoted where any YAML reader would read them as something else, as in
    :func:`dump_new`, so :func:`gitmem.codec.load_mapping` reads ``mapping`` back equal.

    Raises:
        TypeError: a value is not YAML data (str, number, bool, None, datetime, list, dict).
    """
    return _dump(_to_node(mapping), _DEFAULT_INDENT)


# --- read-modify-write -----------------------------------------------------


def _same_scalar(old: Any, new: Any) -> bool:
    if new is None or old is None:
        return old is None and new is None
    if isinstance(new, datetime):
        return _same_time(old, new)
    if isinstance(new, bool) or isinstance(old, bool):
        return isinstance(new, bool) and isinstance(old, bool) and old == new
    if isinstance(new, int | float):
        if not isinstance(old, int | float):
            return False
        return old == new or (math.isnan(old) and math.isnan(new))
    if isinstance(new, str):
        return isinstance(old, str) and str(old) == new
    return False


@cache
def _datetime_adapter() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(datetime)


def _same_time(old: Any, new: datetime) -> bool:
    try:
        parsed = _datetime_adapter().validate_python(str(old) if isinstance(old, str) else old)
    except ValidationError:
        return False
    parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
    return bool(parsed == new)


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list)


def _merge(
    old: Any, new: Any, schema: type[BaseModel] | None, key: Any = None
) -> tuple[Any, bool]:
    """Return (node, changed): ``old`` edited in place to equal ``new``, or a new node."""
    if isinstance(new, dict) and isinstance(old, dict):
        return old, _merge_map(old, new, schema)
    if isinstance(new, list) and isinstance(old, list):
        return old, _merge_seq(old, new, schema)
    if not _is_container(new) and not _is_container(old) and _same_scalar(old, new):
        return old, False
    return _replacement(old, new, key), True


def _replacement(old: Any, new: Any, key: Any) -> Any:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    node = _to_node(new, key)
    # Keep a hand-written double-quoted style when the new text allows it.
    if isinstance(old, DoubleQuotedScalarString) and type(node) is str:
        return DoubleQuotedScalarString(node)
    return node


def _merge_map(node: Any, target: dict[str, Any], schema: type[BaseModel] | None) -> bool:
    fields = tuple(schema.model_fields) if schema is not None else ()
    nested = _NESTED.get(schema, {}) if schema is not None else {}
    changed = False
    for key in list(node):
        if key in target:
            continue
        # A known field that is null or [] in the YAML equals its absence in the model.
        if key in fields and (node[key] is None or node[key] == []):
            continue
        _delete_key(node, key)
        changed = True
    for key, value in target.items():
        if key in node:
            merged, edited = _merge(node[key], value, nested.get(key), key)
            if edited:
                if merged is not node[key]:
                    _replace_value(node, key, merged)
                changed = True
        elif not (schema is not None and _is_static_default(schema, key, value)):
            _insert_key(node, key, _to_node(value, key), fields)
            changed = True
    return changed


def _is_static_default(schema: type[BaseModel], key: str, value: Any) -> bool:
    # A missing key means the field's default (``scope: universal``,
    # ``confidence: 1.0``), so writing the default would change bytes, not
    # meaning. Defaults from a factory (timestamps: now) are real new values.
    field = schema.model_fields.get(key)
    if field is None or field.default_factory is not None or field.is_required():
        return False
    return _same_scalar(_plain_value(field.default), value)


def _replace_value(node: Any, key: Any, value: Any) -> None:
    # CommentedMap.__setitem__ would re-apply the old value's scalar style
    # (e.g. a literal block) to a plain str; gitmem picks the style itself.
    from ruamel.yaml.compat import ordereddict

    ordereddict.__setitem__(node, key, value)


def _merge_seq(node: Any, target: list[Any], schema: type[BaseModel] | None) -> bool:
    changed = False
    for index, value in enumerate(target[: len(node)]):
        merged, edited = _merge(node[index], value, schema)
        if edited:
            if merged is not node[index]:
                node[index] = merged
            changed = True
    for value in target[len(node) :]:
        node.append(_to_node(value))
        changed = True
    while len(node) > len(target):
        del node[-1]
        changed = True
    return changed


# --- comment bookkeeping ----------------------------------------------------
# ruamel attaches the comment lines *after* a value (e.g. a blank line and
# "# Decay Configuration" before the next block) to the last key before them.
# When that key is deleted, or a key is inserted after it, those lines are
# moved so that they stay in front of the block they introduce.


def _last_leaf(node: Any, key: Any) -> tuple[Any, Any]:
    """The (mapping, key) holding the comment that follows ``node[key]``'s subtree."""
    from ruamel.yaml.comments import CommentedMap

    value = node[key]
    while isinstance(value, CommentedMap) and len(value):
        node, key = value, next(reversed(value))
        value = node[key]
    return node, key


def _take_following_lines(node: Any, key: Any) -> str:
    """Detach and return the comment lines after ``node[key]``'s own line ('' if none)."""
    from ruamel.yaml.comments import CommentedMap

    if not isinstance(node, CommentedMap) or key not in node:
        return ""
    leaf, leaf_key = _last_leaf(node, key)
    entry = leaf.ca.items.get(leaf_key)
    token = entry[2] if entry and len(entry) > 2 else None
    if token is None or "\n" not in token.value:
        return ""
    head, _, rest = token.value.partition("\n")
    if not rest:
        return ""
    if head:
        token.value = head + "\n"
    else:
        entry[2] = None
    return rest


def _give_following_lines(node: Any, key: Any, lines: str) -> None:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import CommentMark
    from ruamel.yaml.tokens import CommentToken

    if not lines or not isinstance(node, CommentedMap) or key not in node:
        return
    leaf, leaf_key = _last_leaf(node, key)
    entry = leaf.ca.items.setdefault(leaf_key, [None, None, None, None])
    token = entry[2]
    if token is None:
        entry[2] = CommentToken("\n" + lines, CommentMark(0), None)
    else:
        token.value = token.value + lines


def _insert_key(node: Any, key: str, value: Any, fields: tuple[str, ...]) -> None:
    keys = list(node)
    position = len(keys)
    if key in fields:
        before = set(fields[: fields.index(key)])
        position = 0
        for index, existing in enumerate(keys):
            if existing in before:
                position = index + 1
    node.insert(position, _styled_key(key), value)
    if position > 0:
        lines = _take_following_lines(node, keys[position - 1])
        _give_following_lines(node, key, lines)


def _delete_key(node: Any, key: Any) -> None:
    keys = list(node)
    lines = _take_following_lines(node, key)
    index = keys.index(key)
    del node[key]
    if index > 0:
        _give_following_lines(node, keys[index - 1], lines)


_INDENT_LINE = re.compile(r"( *)(- +)?")


def _guess_indent(text: str) -> tuple[int, int, int]:
    """Guess the (mapping, sequence, offset) indentation of block-style YAML.

    ruamel applies one indentation to a whole document, so a record written
    with other indentation than gitmem's is dumped with its own, lest an edit
    re-indent unrelated lines. ``sequence`` is the column of an item's content
    and ``offset`` the column of its dash, both relative to the parent key.
    """
    mapping = sequence = None
    parent: int | None = None  # indent of the previous line if it opened a block
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _INDENT_LINE.match(line)
        assert match is not None  # the pattern matches every line (its groups may be empty)
        indent, dash = len(match.group(1)), match.group(2)
        if parent is not None and dash and sequence is None and indent >= parent:
            sequence = (indent - parent, indent - parent + len(dash))
        elif parent is not None and not dash and mapping is None and indent > parent:
            mapping = indent - parent
        parent = indent if stripped.endswith(":") and not dash else None
    offset, content = sequence or (_DEFAULT_INDENT[2], _DEFAULT_INDENT[1])
    return (mapping or _DEFAULT_INDENT[0], content, offset)


def _unchanged(mapping: dict[str, Any], memory: Memory) -> bool:
    try:
        current = Memory.model_validate(mapping)
    except ValidationError:
        return False
    # Field-wise equality; Memory.__eq__ would also compare the private blob id.
    return current.__dict__ == memory.__dict__ and current.model_extra == memory.model_extra


_BLOCK_ORDER = {
    "provenance": tuple(Provenance.model_fields),
    "decay": tuple(Decay.model_fields),
    "refutation": tuple(Refutation.model_fields),
}


def _line_edit(text: str, mapping: dict[str, Any], memory: Memory, where: str) -> bytes | None:
    """The one-line scalar edits of :mod:`~gitmem.codec.line_edit`, kept if they read back as ``memory``."""
    from gitmem.codec.line_edit import edit_scalars
    from gitmem.codec.read import load_mapping

    if text.startswith("---") or "\r" in text:
        return None
    edited = edit_scalars(text, mapping, _plain(memory), _BLOCK_ORDER, _float_text,
                          _needs_quotes, frozenset({"git_sha"}))
    if edited is None:
        return None
    data = edited.encode("utf-8")
    try:
        ok = _unchanged(load_mapping(data, where), memory)
    except MalformedRecord:
        ok = False
    return data if ok else None


def update(original: bytes, memory: Memory, where: str = "record") -> bytes:
    """Apply ``memory`` onto an existing record's YAML (ruamel round-trip).

    Unknown keys (top level and nested), key order, comments and scalar
    styles survive; only the lines of edited values change; new keys go to
    their canonical place. Known fields that became ``None`` (e.g. a cleared
    ``refutation``) and extras missing from the model are deleted. Values are
    compared by meaning, so ``half_life_days: 14`` stays as written for 14.0.

    Args:
        original: The current blob's bytes.
        memory: The record's new state.
        where: Human label of the blob, named in errors.

    Returns:
        The new YAML bytes; exactly ``original`` (same bytes) if nothing changed.

    Raises:
        MalformedRecord: if ``original`` is not a safe record mapping (see
            :func:`load_mapping`).
    """
    from gitmem.codec.read import load_mapping

    mapping = load_mapping(original, where)  # refuses tags, aliases, oversize blobs first
    if _unchanged(mapping, memory):
        return original  # the common case, without the ~3 ms ruamel round-trip
    try:
        text = original.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MalformedRecord(where, f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    fast = _line_edit(text, mapping, memory, where)
    if fast is not None:
        return fast
    indent = _guess_indent(text)
    try:
        with _rt_lock:
            document = _rt_yaml(indent).load(text)
    except Exception as exc:  # ruamel raises many unrelated types for bad input
        raise MalformedRecord(where, f"cannot round-trip: {exc}".splitlines()[0]) from None
    if not _merge_map(document, _plain(memory), Memory):
        return original
    return _dump(document, indent)
