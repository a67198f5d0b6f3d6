"""The settings as plain frozen dataclasses, with their defaults from :mod:`gitmem.defaults`.

Both the loader (:mod:`gitmem.config`) and the pydantic schema that validates a file
(:mod:`gitmem.config.schema`) build these values, so they live below both: the schema never
imports the loader, and the loader imports the schema (and pydantic) only to validate a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitmem import defaults
from gitmem.record.decay import DecayPolicy
from gitmem.vocabulary import SIGNATURE_MARKS, MemoryType

__all__ = ["HarnessSettings", "LogSettings", "RecallSettings", "Settings", "TrustSettings", "VerifySettings",
           "WakeSettings"]


@dataclass(frozen=True)
class WakeSettings:
    """The budgeted wake prompt (EP-0132).

    Attributes:
        token_budget: default budget in tokens; 0 means unbounded.
        shares: budget shares of tier 0 (persona), tier 1 (continuity, axioms, core) and
            tier 2 (the rest); non-negative, summing to 1.
        personal_share: the share of ``token_budget`` reserved for personal memories (in
            [0, 1]); what they leave unused goes to the project's memories.
    """

    token_budget: int = defaults.WAKE_TOKEN_BUDGET
    shares: tuple[float, float, float] = defaults.WAKE_SHARES
    personal_share: float = defaults.WAKE_PERSONAL_SHARE


@dataclass(frozen=True)
class RecallSettings:
    """Query-time recall.

    Attributes:
        top_k: number of memories returned by default.
    """

    top_k: int = defaults.RECALL_TOP_K


@dataclass(frozen=True)
class VerifySettings:
    """How far ``tur verify`` follows anchored code (docs/staleness.md).

    Attributes:
        ignore_whitespace: code changed only in white space (re-indented, re-wrapped,
            trailing spaces, blank lines) is unchanged; relative indentation still counts
            where it carries meaning (Python, YAML, Makefiles).
        follow_moves: code that left its file (or whose file was deleted) is looked for
            in the other files and followed there.
    """

    ignore_whitespace: bool = defaults.VERIFY_IGNORE_WHITESPACE
    follow_moves: bool = defaults.VERIFY_FOLLOW_MOVES

    def tag(self) -> str:
        """A short string that differs whenever the settings do (keys cached outcomes)."""
        return f"ws={int(self.ignore_whitespace)},mv={int(self.follow_moves)}"


@dataclass(frozen=True)
class TrustSettings:
    """Whose memories wake treats as instructions (docs/sharing.md, Trust).

    Attributes:
        authors: ``Name <email>`` (or just the email) of the authors whose axiom and core
            memories go to Tier 1 of wake, besides the local git identity.
        require_signatures: only a commit whose signature git verifies (``%G?`` is ``G``)
            makes its author trusted; an unsigned commit's author is marked ``(unsigned)``
            (:data:`gitmem.vocabulary.UNSIGNED`). A commit with a signature git cannot verify is
            never trusted, with or without this setting (``(signature not verified)``).
    """

    authors: tuple[str, ...] = ()
    require_signatures: bool = defaults.TRUST_REQUIRE_SIGNATURES

    def trusts(self, author: str | None, local: str) -> bool:
        """Whether memories stated by ``author`` may be instructions for the ``local`` identity.

        An author carrying a signature mark (:data:`gitmem.vocabulary.SIGNATURE_MARKS`) is
        never trusted: git did not verify that the named person made the commit.
        """
        if author is None or author.endswith(SIGNATURE_MARKS):
            return False
        if author == local or author in self.authors:
            return True
        email = author.rsplit("<", 1)[-1].rstrip(">").strip().lower() if "<" in author else None
        return email is not None and email in {a.strip().lower() for a in self.authors}


@dataclass(frozen=True)
class HookSettings:
    """What the harness hooks do besides sending memories (docs/harness.md).

    Attributes:
        learn_reminder: the end-of-turn hook (``tur hook stop``) reminds, once per session,
            a session that changed files and recorded no memory to record what it learned.
    """

    learn_reminder: bool = defaults.HOOKS_LEARN_REMINDER


@dataclass(frozen=True)
class LogSettings:
    """The local injection log (docs/log.md).

    Attributes:
        max_bytes: bytes past which the log file is rotated (at least 1,024).
        files: files kept, the current one included (at least 1).
    """

    max_bytes: int = defaults.LOG_MAX_BYTES
    files: int = defaults.LOG_FILES


@dataclass(frozen=True)
class HarnessSettings:
    """The limits of one harness's calls (``harness.<name>:``; docs/configuration.md).

    Each ``None`` when not set: the persona's own setting, else the global default applies
    (:mod:`gitmem.api.limits`).

    Attributes:
        wake_budget: tokens of its session-start wake (0: unbounded).
        char_cap: characters a hook's text may take (0: no cap).
        recall_top_k: memories a recall returns (at least 1).
    """

    wake_budget: int | None = None
    char_cap: int | None = None
    recall_top_k: int | None = None


@dataclass(frozen=True)
class Settings:
    """Everything configurable, read from ``.tur/config.yaml``; every key is optional.

    Attributes:
        decay: decay of memory weight with time (days) and commit distance (commits).
        wake: the wake budget and tier shares.
        recall: recall defaults.
        verify: how far verify follows anchored code.
        tokenizer: tiktoken encoding name; must be loadable offline.
        trust: whose axiom and core memories wake takes as instructions.
        hooks: what the harness hooks do besides sending memories.
        log: the size of the local injection log.
        harness: limits per harness name (``claude``, ``codex``…).
    """

    decay: DecayPolicy = field(default_factory=DecayPolicy)
    wake: WakeSettings = field(default_factory=WakeSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    verify: VerifySettings = field(default_factory=VerifySettings)
    tokenizer: str = defaults.TOKENIZER
    trust: TrustSettings = field(default_factory=TrustSettings)
    hooks: HookSettings = field(default_factory=HookSettings)
    log: LogSettings = field(default_factory=LogSettings)
    harness: dict[str, HarnessSettings] = field(default_factory=dict)

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
            "wake": {"token_budget": self.wake.token_budget, "shares": list(self.wake.shares),
                     "personal_share": self.wake.personal_share},
            "recall": {"top_k": self.recall.top_k},
            "verify": {"ignore_whitespace": self.verify.ignore_whitespace,
                       "follow_moves": self.verify.follow_moves},
            "tokenizer": self.tokenizer,
            "trust": {"authors": list(self.trust.authors),
                      "require_signatures": self.trust.require_signatures},
            "hooks": {"learn_reminder": self.hooks.learn_reminder},
            "log": {"max_bytes": self.log.max_bytes, "files": self.log.files},
            "harness": {name: vars(limits).copy() for name, limits in sorted(self.harness.items())},
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
            wake=WakeSettings(data["wake"]["token_budget"], tuple(data["wake"]["shares"]),
                              data["wake"].get("personal_share", defaults.WAKE_PERSONAL_SHARE)),
            recall=RecallSettings(data["recall"]["top_k"]),
            verify=VerifySettings(bool(data["verify"]["ignore_whitespace"]),
                                  bool(data["verify"]["follow_moves"])),
            tokenizer=data["tokenizer"],
            trust=TrustSettings(tuple(data["trust"]["authors"]),
                                bool(data["trust"].get("require_signatures", False))),
            hooks=HookSettings(bool(data["hooks"]["learn_reminder"])),
            log=LogSettings(**data.get("log", {})),
            harness={name: HarnessSettings(**limits) for name, limits in data.get("harness", {}).items()},
        )
