"""Who a memory is for: its ``visibility``, a tuple of agent or harness names (empty: everyone).

docs/storage.md, ``visibility``: a memory bound to some agents (``tur learn --for claude``) is
never given to a session of another agent; the injection log records it as left out with the
reason ``visibility``. A caller that names nobody (a person's plain ``tur wake``) sees every
memory. Names are lowercase identifiers, so that one spelling means one agent everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

__all__ = ["NAME_PATTERN", "bound_to", "parse_names", "visible_to"]

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,39}")
"""An agent or harness name: a lowercase letter, then up to 39 of ``a-z 0-9 _ -``."""


def parse_names(values: Iterable[str]) -> tuple[str, ...]:
    """The names of ``values`` (each maybe a comma list), in first-seen order, without repeats.

    Args:
        values: names as given (``["claude", "codex,gemini"]``); blanks around commas ignored.

    Returns:
        A tuple of names (empty when ``values`` holds none).

    Raises:
        ValueError: a name that is not a lowercase identifier (see :data:`NAME_PATTERN`).
    """
    names: dict[str, None] = {}
    for value in values:
        given = [part.strip() for part in str(value).split(",") if part.strip()]
        if not given:
            raise ValueError("an empty agent name")
        for name in given:
            if not NAME_PATTERN.fullmatch(name):
                raise ValueError(f"agent name {name!r} is not a lowercase identifier "
                                 "(a-z, then a-z 0-9 _ -, at most 40)")
            names[name] = None
    return tuple(names)


def visible_to(visibility: Collection[str], asking: Collection[str]) -> bool:
    """Whether a memory bound to ``visibility`` goes to a caller named ``asking``.

    Args:
        visibility: the memory's names (empty: it is for everyone).
        asking: the caller's agent and harness names (empty: an unnamed caller, who sees all).
    """
    if not visibility or not asking:
        return True
    return any(name in visibility for name in asking)


def bound_to(visibility: Collection[str]) -> str:
    """Whom a memory is for, in words: ``for claude, codex``, or ``everyone`` when it is bound to none."""
    return "for " + ", ".join(visibility) if visibility else "everyone"
