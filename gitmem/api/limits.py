"""The limits of one call: explicit argument > harness config > persona's own > global default.

docs/configuration.md, ``harness.<name>``: ``.tur/config.yaml`` may set a harness's
``wake_budget``, ``char_cap`` and ``recall_top_k``; a persona (``persona.yaml``) may set the
same keys for every harness. ``tur setup`` therefore writes no numbers into hook commands:
the config holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gitmem.config.settings import HarnessSettings, Settings
from gitmem.defaults import HARNESS_LIMITS

__all__ = ["LIMIT_KEYS", "resolve"]

LIMIT_KEYS = ("wake_budget", "char_cap", "recall_top_k")
"""The limits a harness section or a persona may set."""


def resolve(key: str, given: int | None, settings: Settings, harness: str,
            persona: Callable[[], Mapping[str, Any] | None], default: int | None) -> int | None:
    """The value of limit ``key`` for a call of ``harness``.

    Args:
        key: one of :data:`LIMIT_KEYS`.
        given: the caller's explicit value (``None``: not given).
        settings: the configuration (its ``harness`` section).
        harness: the harness name, ``""`` when not known.
        persona: returns the persona mapping (called only when neither of the above set it).
        default: the global default for this surface (tokens, characters or hits).

    Returns:
        The first of ``given``, the harness's setting (else its built-in one,
        :data:`gitmem.defaults.HARNESS_LIMITS`), the persona's whole-number setting, ``default``.
    """
    if given is not None:
        return given
    found = getattr(settings.harness.get(harness, HarnessSettings()), key) if harness else None
    if found is None:
        found = HARNESS_LIMITS.get(harness, {}).get(key)
    if found is not None:
        return found
    mapping = persona() or {}
    own = mapping.get(key) if isinstance(mapping, Mapping) else None
    if isinstance(own, int) and not isinstance(own, bool) and own >= (1 if key == "recall_top_k" else 0):
        return own
    return default
