"""The parsed persona, the ``persona`` memo: the ``persona.yaml`` mapping of one blob."""

from __future__ import annotations

from gitmem.cache.db import CacheDB

__all__ = ["PersonaMemo"]

_KIND = "persona"


class PersonaMemo:
    """The parsed persona of the last blob asked for, kept across processes.

    The payload is ``{"blob": <blob id>, "mapping": <parsed persona.yaml>}``.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files

    def get(self, blob_id: str) -> dict | None:
        """The cached parsed persona of ``blob_id``, or ``None`` (another blob, or none)."""
        payload = self.files.get(_KIND, "")
        if isinstance(payload, dict) and payload.get("blob") == blob_id:
            mapping = payload.get("mapping")
            return mapping if isinstance(mapping, dict) else None
        return None

    def put(self, blob_id: str, mapping: dict) -> None:
        """Remember that the blob ``blob_id`` parses to ``mapping`` (plain, marshal-able)."""
        self.files.put(_KIND, "", {"blob": blob_id, "mapping": mapping})
