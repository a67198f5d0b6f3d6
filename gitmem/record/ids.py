"""Memory ids (``<type>-<8 hex>``, longer on a collision), content normalisation, id-prefix resolution.

An id's hex part is the start of the SHA-256 of the normalised content: 8 digits, so that
ids stay short to type. 32 bits collide (about one pair is expected among 100,000
memories), so a statement whose 8 digits already name a *different* statement gets 16
digits, and should those be taken too, all 64 (:func:`pick_id`). Ids already stored never
change.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from gitmem.errors import AmbiguousId, UnknownMemory
from gitmem.vocabulary import MemoryType

__all__ = [
    "ID_HEX_LENGTHS",
    "check_prefix",
    "content_digest",
    "content_key",
    "id_hex",
    "memory_id",
    "normalise_content",
    "pick_id",
    "resolve_id",
    "resolve_legacy_id",
    "shard_of",
]

#: Lengths of an id's hex part, in the order they are tried: 8, then 16 and 64 on collisions.
ID_HEX_LENGTHS = (8, 16, 64)

_SPACE = re.compile(r"\s+")


def normalise_content(content: str) -> str:
    """Return the form of ``content`` used for de-duplication.

    NFKC, case-folded, runs of white space collapsed to one space, trimmed, and
    trailing sentence punctuation dropped: "SQLite uses WAL." and
    "sqlite  uses WAL" are the same memory.
    """
    text = unicodedata.normalize("NFKC", content).casefold()
    return _SPACE.sub(" ", text).strip().rstrip(".!;:").strip()


def content_digest(content: str) -> str:
    """Return the 64-hex SHA-256 of the normalised content; every id's hex part is a prefix of it."""
    return _sha256_hex(normalise_content(content))


def _sha256_hex(text: str) -> str:
    # hashlib lazily: it loads OpenSSL (~2 ms), and a read (which finds ids) hashes nothing.
    from hashlib import sha256

    return sha256(text.encode("utf-8")).hexdigest()


def content_key(content: str) -> str:
    """Return the 8-hex content hash shared by every memory with this normalised content."""
    return content_digest(content)[:8]


def memory_id(type_: MemoryType | str, content: str, hex_digits: int = 8) -> str:
    """Return the id ``<type>-<hex>`` of a memory of this type and content.

    Args:
        type_: the memory type.
        content: the statement.
        hex_digits: one of :data:`ID_HEX_LENGTHS`; 8 unless that id is taken (:func:`pick_id`).
    """
    return f"{MemoryType(type_).value}-{content_digest(content)[:hex_digits]}"


def id_hex(memory_id_: str) -> str:
    """Return the hex part of an id (``fact-8f2a1b9c`` -> ``8f2a1b9c``)."""
    return memory_id_.rsplit("-", 1)[-1]


def pick_id(type_: MemoryType | str, content: str, held: Mapping[str, str | None]) -> tuple[str, bool]:
    """Choose the id of a statement among the ids already stored; say whether it is known.

    The statement is known when one of ``held`` has the same normalised content; that
    record's id is returned (the shortest, then the first in order). Otherwise the id is
    ``<type>-<hex>`` with the shortest hex prefix of :func:`content_digest` (of the
    lengths :data:`ID_HEX_LENGTHS`) that no stored record holds: a collision gives the new
    memory a longer id and leaves the stored one (even an unreadable one) as it is.

    Args:
        type_: the memory type of a new record.
        content: the statement.
        held: id -> normalised content (``None``: unreadable) of the stored records that
            may hold this statement: those whose hex part is a prefix of its digest.

    Returns:
        ``(id, known)``.
    """
    norm = normalise_content(content)
    digest = _sha256_hex(norm)
    same = sorted((len(found), found) for found, other in held.items() if other == norm)
    if same:
        return same[0][1], True
    prefix = f"{MemoryType(type_).value}-"
    for digits in ID_HEX_LENGTHS:
        candidate = prefix + digest[:digits]
        if candidate not in held:  # an unreadable record is never written over
            return candidate, False
    # All 64 digits held by another statement: a SHA-256 collision.
    raise AssertionError(f"{prefix}{digest} is held by a different statement")


def shard_of(memory_id_: str) -> str:
    """Return the 2-hex fan-out directory of an id (the first two hex digits, whatever its length)."""
    return memory_id_.rsplit("-", 1)[1][:2]


def _long_enough(token: str) -> bool:
    """Whether a prefix has 4 characters after its last ``-`` (all of it, without one).

    As git asks of an abbreviated object name, and after a type too, so that ``fact-5`` (an
    agent's "fifth fact") or ``fact`` never names ``fact-5c0ffee1`` and forgets it.
    """
    return len(token.rsplit("-", 1)[-1]) >= 4


#: What a prefix of an id can look like: a type, a type and hex digits, or hex digits. Only such
#: a token is told it is too short; any other names no id (``5567-``, ``fact-8f2a1b9c-x``).
_ID_SHAPED = re.compile(rf"(?:(?:{'|'.join(t.value for t in MemoryType)})(?:-[0-9a-f]*)?|[0-9a-f]*)")


def _names(token: str, name: str) -> bool:
    """Whether prefix ``token`` names ``name``: a prefix of it, or (no ``-`` in ``token``) of its hex part."""
    if "-" in token:
        return name.startswith(token)
    return name.rsplit("-", 1)[-1].startswith(token)


def check_prefix(token: str) -> None:
    """Refuse a type name, and an id-shaped prefix too short to name an id (:func:`_long_enough`).

    Raises:
        UnknownMemory: it is one, with a hint that says so.
    """
    if token in {t.value for t in MemoryType}:
        raise UnknownMemory(token, f"'{token}' is a memory type, not an id: give 4 hex digits "
                            f"after it (`{token}-8f2a`); `tur list` shows the ids")
    if _ID_SHAPED.fullmatch(token) and not _long_enough(token):
        raise UnknownMemory(token, "an id prefix needs at least 4 characters (4 hex digits after "
                            "the type); `tur list` shows the ids")


def resolve_id(token: str, known: Iterable[str]) -> str:
    """Resolve a full id, an id prefix, or a bare hex prefix to one known id.

    Args:
        token: ``fact-8f2a1b9c``, ``fact-8f2a``, or ``8f2a`` (a prefix: at least 4 characters,
            and 4 hex digits after a type), in any case: ids are lower case, so ``FACT-8F2A``
            names the same memory.
        known: every id on the ref.

    Raises:
        UnknownMemory: nothing matches.
        AmbiguousId: more than one id matches.
    """
    token = token.strip()
    ids = list(known)
    if token in ids:
        return token
    token = token.lower()
    if token in ids:
        return token
    check_prefix(token)
    matches = [i for i in ids if _names(token, i)]
    if not matches:
        raise UnknownMemory(token)
    whole = [i for i in matches if i.rsplit("-", 1)[-1] == token]
    if len(whole) == 1:  # `c8c2468e` names fact-c8c2468e, not also its 16-digit neighbour
        return whole[0]
    if len(matches) > 1:
        raise AmbiguousId(token, matches)
    return matches[0]


def resolve_legacy_id(token: str, legacy: Mapping[str, Sequence[str]]) -> str | None:
    """Resolve an old id of an imported memory (``legacy_id``) to the memory's id.

    The rules of :func:`resolve_id`, over legacy ids and in either case: an exact legacy id, else a unique
    prefix with at least 4 characters after its last ``-`` (of the whole legacy id, or
    without a ``-``, of its part after the last ``-``). Callers try the ids first, so an id
    always wins over a legacy id.

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
    if exact is None:  # old ids are hashes, typed in either case
        folded = token.lower()
        exact = [memory for name, ids in legacy.items() if name.lower() == folded for memory in ids] or None
    if exact is not None:
        found = sorted(set(exact))
    elif not _long_enough(token):
        return None
    else:
        folded = token.lower()
        found = sorted({memory for name, ids in legacy.items() if _names(folded, name.lower())
                        for memory in ids})
    if len(found) > 1:
        raise AmbiguousId(token, found)
    return found[0] if found else None
