"""Size limits of what gitmem stores, enforced by every writer and relied on by every reader.

A reader refuses a record blob larger than :data:`MAX_RECORD_BYTES` (it would cost memory
and time on every cold read, in every clone), so every writer refuses first, on the bytes
it is about to store: ``learn``, ``import``, curation, ``verify`` and ``sync`` alike. A
memory that a writer accepted is therefore always readable. Persona and continuity notes
have their own, smaller limits: wake reads them whole at the start of every session.
"""

from __future__ import annotations

from gitmem.errors import TooLarge

__all__ = ["MAX_NOTE_BYTES", "MAX_PERSONA_BYTES", "MAX_RECORD_BYTES", "check_size"]

MAX_RECORD_BYTES = 1 << 20
"""Largest record blob (bytes of its YAML, as stored): 1 MiB."""

MAX_PERSONA_BYTES = 64 << 10
"""Largest ``persona.yaml`` (bytes): 64 KiB."""

MAX_NOTE_BYTES = 64 << 10
"""Largest continuity note (bytes of UTF-8): 64 KiB."""


def check_size(data: bytes, limit: int, what: str, hint: str | None = None) -> None:
    """Raise unless ``data`` (the exact bytes to be stored) fits in ``limit`` bytes.

    Args:
        data: the serialised record, persona or note.
        limit: one of the limits of this module (bytes).
        what: names the thing in the message (``"record fact-8f2a1b9c"``).
        hint: what to do instead (default: store a shorter text).

    Raises:
        TooLarge: ``len(data) > limit``; nothing is stored.
    """
    if len(data) > limit:
        raise TooLarge(
            f"{what} would be {len(data)} bytes, larger than the {limit} byte limit; nothing was stored",
            hint or "store a shorter text (a summary, with the details in a file the memory anchors to)",
        )
