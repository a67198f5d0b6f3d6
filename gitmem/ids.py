"""Memory ids (``<type>-<8 hex>``), content normalisation, and id-prefix resolution."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from gitmem.errors import AmbiguousId, UnknownMemory
from gitmem.vocabulary import MemoryType

__all__ = ["content_key", "memory_id", "normalise_content", "resolve_id", "resolve_legacy_id", "shard_of"]

_SPACE = re.compile(r"\s+")


def normalise_content(content: str) -> str:
    """Return the form of ``content`` used for de-duplication.

    NFKC, case-folded, runs of white space collapsed to one space, trimmed, and
    trailing sentence punctuation dropped: "SQLite uses WAL." and
    "sqlite  uses WAL" are the same memory.
    """
    text = unicodedata.normalize("NFKC", content).casefold()
    return _SPACE.sub(" ", text).strip().rstrip(".!;:").strip()


def content_key(content: str) -> str:
    """Return the 8-hex content hash shared by every memory with this normalised content."""
    return hashlib.sha256(normalise_content(content).encode("utf-8")).hexdigest()[:8]


def memory_id(type_: MemoryType | str, content: str) -> str:
    """Return the id ``<type>-<8 hex>`` of a memory of this type and content."""
    return f"{MemoryType(type_).value}-{content_key(content)}"


def shard_of(memory_id_: str) -> str:
    """Return the 2-hex fan-out directory of an id (the first two hex digits)."""
    return memory_id_.rsplit("-", 1)[1][:2]


def resolve_id(token: str, known: Iterable[str]) -> str:
    """Resolve a full id, an id prefix, or a bare hex prefix to one known id.

    Args:
        token: ``fact-8f2a1b9c``, ``fact-8f2a``, or ``8f2a`` (at least 4 characters).
        known: every id on the ref.

    Raises:
        UnknownMemory: nothing matches.
        AmbiguousId: more than one id matches.
    """
    token = token.strip()
    ids = list(known)
    if token in ids:
        return token
    if len(token) < 4:
        raise UnknownMemory(token, "an id prefix needs at least 4 characters; `tur list` shows the ids")
    matches = [i for i in ids if i.startswith(token) or i.rsplit("-", 1)[-1].startswith(token)]
    if not matches:
        raise UnknownMemory(token)
    if len(matches) > 1:
        raise AmbiguousId(token, matches)
    return matches[0]


def resolve_legacy_id(token: str, legacy: Mapping[str, Sequence[str]]) -> str | None:
    """Resolve an old id of an imported memory (``legacy_id``) to the memory's id.

    The rules of :func:`resolve_id`, over legacy ids: an exact legacy id, else a unique
    prefix of at least 4 characters (of the whole legacy id, or of its part after the
    last ``-``). Callers try the ids first, so an id always wins over a legacy id.

    Args:
        token: what the user typed.
        legacy: each legacy id -> the ids of the memories that carry it.

    Returns:
        The id, or ``None`` when no legacy id matches.

    Raises:
        AmbiguousId: the token names more than one memory.
    """
    token = token.strip()
    exact = legacy.get(token)
    if exact is not None:
        found = sorted(set(exact))
    elif len(token) < 4:
        return None
    else:
        found = sorted({memory for name, ids in legacy.items()
                        if name.startswith(token) or name.rsplit("-", 1)[-1].startswith(token)
                        for memory in ids})
    if len(found) > 1:
        raise AmbiguousId(token, found)
    return found[0] if found else None
