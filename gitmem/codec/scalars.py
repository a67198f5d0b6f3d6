"""The YAML scalar rules gitmem's reader and writer share, without a YAML library.

* :data:`CORE_RESOLVERS`: the YAML 1.2 *core* schema, by which both
  :mod:`gitmem.codec.read` and :mod:`gitmem.codec.write` read an unquoted scalar.
* :func:`needs_quotes`: whether some YAML reader would read a string written unquoted
  as something else (``no``, ``~``, ``0x10``, ``1e3``, ``2024-01-02``, ``<<``): the
  implicit resolvers of PyYAML (YAML 1.1) and of ruamel.yaml (1.1 and 1.2), and the core
  schema. The writer double-quotes such strings.

The resolvers' patterns are written out here (:data:`LIBRARY_PATTERNS`) rather than taken
from the libraries, so that writing a new record needs neither PyYAML nor ruamel.yaml
(see :mod:`gitmem.codec.write` for the figures), and so that a record's bytes do not
depend on which versions of them are installed. They are gitmem's quoting rule, not a copy
kept in step: ``tests/test_codec.py`` checks the behaviour (each such string, written,
reads back as the same string in PyYAML, ruamel 1.1/1.2/round-trip and gitmem's reader),
not the libraries' source.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

__all__ = [
    "BOOL_TAG",
    "CORE_RESOLVERS",
    "FIRST_CHARACTERS",
    "FLOAT_TAG",
    "INT_TAG",
    "LIBRARY_PATTERNS",
    "MAP_TAG",
    "NULL_TAG",
    "SEQ_TAG",
    "STR_TAG",
    "needs_quotes",
]

_TAG = "tag:yaml.org,2002:"
STR_TAG, NULL_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG = (_TAG + t for t in ("str", "null", "bool", "int", "float"))
MAP_TAG, SEQ_TAG = _TAG + "map", _TAG + "seq"

#: YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution): (tag, pattern,
#: first characters), as the libraries' resolvers take them.
CORE_RESOLVERS: list[tuple[str, str, str]] = [
    (BOOL_TAG, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (NULL_TAG, r"^(?:~|null|Null|NULL|)$", "~nN"),
    (INT_TAG, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        FLOAT_TAG,
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
]

#: Every implicit resolver of PyYAML (``yaml.resolver.Resolver``) and of ruamel.yaml
#: (``ruamel.yaml.resolver.implicit_resolvers``), one per distinct regular expression, written
#: without the verbose flag the libraries use (as of PyYAML 6.0 and ruamel.yaml 0.18).
LIBRARY_PATTERNS: tuple[str, ...] = (
    # PyYAML: bool, null, float, int, timestamp, merge, value, yaml
    r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
    r"^(?:~|null|Null|NULL|)$",
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
    r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
    r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
    r"^(?:<<)$",
    r"^(?:=)$",
    r"^(?:!|&|\*)$",
    # ruamel.yaml: bool 1.2 and 1.1, float 1.2 and 1.1, int 1.2 and 1.1 (null and timestamp:
    # the same as PyYAML's)
    r"^(?:true|True|TRUE|false|False|FALSE)$",
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
    r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
    r"|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$",
    r"^(?:[-+]?0b[0-1_]+|[-+]?0?[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
)

_BOOLS, _NUMBERS = "yYnNtTfFoO", "-+0123456789._"

#: The characters a non-empty string matched by each pattern of :data:`LIBRARY_PATTERNS` and
#: :data:`CORE_RESOLVERS` can begin with, a superset of every alternative's (``_`` included:
#: ``[0-9_]+`` matches ``_1``), not the libraries' narrower dispatch characters, so that
#: :func:`needs_quotes` is as wide as the patterns. ``tests/test_codec.py`` checks it.
FIRST_CHARACTERS: dict[str, str] = {
    **dict.fromkeys(LIBRARY_PATTERNS, _NUMBERS),
    LIBRARY_PATTERNS[0]: _BOOLS, LIBRARY_PATTERNS[1]: "~nN", LIBRARY_PATTERNS[5]: "<",
    LIBRARY_PATTERNS[6]: "=", LIBRARY_PATTERNS[7]: "!&*", LIBRARY_PATTERNS[8]: _BOOLS,
    LIBRARY_PATTERNS[9]: _BOOLS,
    **{pattern: _BOOLS if tag == BOOL_TAG else "~nN" if tag == NULL_TAG else _NUMBERS
       for tag, pattern, _first in CORE_RESOLVERS},
}


@cache
def _patterns_for(first: str) -> tuple[re.Pattern[str], ...]:
    # Compiled on first need, by the first character: a record's keys and words need two or
    # three of the sixteen (compiling them all costs a write ~5 ms).
    return tuple(re.compile(pattern) for pattern, chars in FIRST_CHARACTERS.items() if first in chars)


#: Strings up to this many characters are memoised: keys and short values (types, scopes,
#: dates) repeat in every record, while a memory's text is met once, and holding it would
#: make a long-running process keep up to 4,096 whole texts.
_MEMOISED_CHARS = 64


def needs_quotes(text: str) -> bool:
    """True when some YAML 1.1 or 1.2 reader would not read ``text`` unquoted as a string.

    The empty string, and every string one of the patterns above matches in full; whatever
    first character a library would dispatch on, so that this is never narrower than any.
    """
    return _short_needs_quotes(text) if len(text) <= _MEMOISED_CHARS else _needs_quotes(text)


@lru_cache(maxsize=4096)
def _short_needs_quotes(text: str) -> bool:
    return _needs_quotes(text)


def _needs_quotes(text: str) -> bool:
    return text == "" or any(p.match(text) for p in _patterns_for(text[0]))
