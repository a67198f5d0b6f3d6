"""Settings: ``.tur/config.yaml`` at the repository root, validated; ``TUR_CONFIG`` overrides the path.

The values are the plain frozen dataclasses of :mod:`gitmem.config.settings` (re-exported here), their
defaults those of :mod:`gitmem.defaults`. The file is validated by the pydantic schema in
:mod:`gitmem.config.schema`, imported only when a file must be validated: a repository with
no config file, or whose file was validated before (the result is memoised in the read
cache, keyed by a digest of the file's bytes), starts without pydantic.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from gitmem.config.settings import RecallSettings, Settings, WakeSettings
from gitmem.errors import ConfigError

__all__ = ["RecallSettings", "Settings", "SettingsMemo", "WakeSettings", "config_path", "load_settings"]


class SettingsMemo(Protocol):
    """Where validated settings are remembered by the file's bytes (the read cache)."""

    def settings_for(self, data: bytes) -> dict[str, Any] | None:
        """:meth:`Settings.to_plain` of the file ``data`` validated before, or ``None``."""

    def put_settings(self, data: bytes, plain: dict[str, Any]) -> None:
        """Remember that ``data`` validates to ``plain``."""


def config_path(repo_root: Path | None) -> Path | None:
    """Path of the config file: ``$TUR_CONFIG``, else ``<repo root>/.tur/config.yaml``."""
    override = os.environ.get("TUR_CONFIG")
    if override:
        return Path(override)
    return repo_root / ".tur" / "config.yaml" if repo_root is not None else None


def load_settings(repo_root: Path | None, memo: SettingsMemo | None = None) -> Settings:
    """Read and validate the settings; a missing file gives the defaults.

    Args:
        repo_root: the working tree root (``None`` for a bare repository).
        memo: remembers validated files by their bytes, so an unchanged file is not
            validated again; only successful validations are remembered.

    Raises:
        ConfigError: the file is not valid YAML or a value is bad; names the key.
    """
    path = config_path(repo_root)
    if path is None:
        return Settings()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if os.environ.get("TUR_CONFIG"):
            raise ConfigError(f"TUR_CONFIG names {path}, which does not exist",
                              "fix the path, or unset TUR_CONFIG for .tur/config.yaml") from None
        return Settings()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    if memo is not None:
        plain = memo.settings_for(data)
        if plain is not None:
            try:
                return Settings.from_plain(plain)
            except (KeyError, ValueError, TypeError, ConfigError):
                pass  # a memo that does not rebuild is ignored; the file is validated again
    from gitmem.codec import load_mapping
    from gitmem.config.schema import validate_settings
    from gitmem.errors import MalformedRecord

    try:
        mapping = load_mapping(data, str(path), allow_empty=True)
    except MalformedRecord as exc:
        raise ConfigError(f"{path}: {exc.reason}") from exc
    settings = validate_settings(mapping, str(path))
    if memo is not None:
        memo.put_settings(data, settings.to_plain())
    return settings
