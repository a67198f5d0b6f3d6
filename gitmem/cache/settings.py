"""Validated settings, the ``settings`` memo: ``.tur/config.yaml`` as plain values, keyed by its bytes."""

from __future__ import annotations

from typing import Any

try:  # hashlib's own BLAKE2b: importing hashlib loads OpenSSL (~2 ms), which no read needs
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

from gitmem.cache.db import CacheDB

__all__ = ["SettingsFile"]

_KIND = "settings"


def _digest(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


class SettingsFile:
    """The settings one config file validated to, kept across processes (a ``SettingsMemo``).

    The payload is ``{"digest": <BLAKE2b-128 of the file's bytes>, "settings": <plain>}``,
    where *plain* is :meth:`gitmem.config.Settings.to_plain`.

    Args:
        files: the cache directory.
    """

    def __init__(self, files: CacheDB) -> None:
        self.files = files

    def settings_for(self, data: bytes) -> dict[str, Any] | None:
        """The plain settings the config file ``data`` validated to before, or ``None``."""
        payload = self.files.get(_KIND, "")
        if isinstance(payload, dict) and payload.get("digest") == _digest(data):
            plain = payload.get("settings")
            return plain if isinstance(plain, dict) else None
        return None

    def put_settings(self, data: bytes, plain: dict[str, Any]) -> None:
        """Remember that the config file ``data`` validates to ``plain``."""
        self.files.put(_KIND, "", {"digest": _digest(data), "settings": plain})
