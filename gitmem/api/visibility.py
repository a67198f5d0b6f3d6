"""Agent names as the surfaces take them (``--for``, ``--agent``, ``--harness``): checked, one error."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitmem.errors import InvalidInput

__all__ = ["agent_names", "bindings_of", "given_names"]


def agent_names(values: Iterable[str]) -> tuple[str, ...]:
    """The agent or harness names of ``values`` (each maybe a comma list), checked.

    Args:
        values: names as given on a command line (``["claude", "codex,gemini"]``).

    Returns:
        The names in first-seen order, without repeats.

    Raises:
        InvalidInput: a name that is not a lowercase identifier (nothing is stored).
    """
    from gitmem.record.visibility import parse_names

    try:
        return parse_names(values)
    except ValueError as exc:
        raise InvalidInput(str(exc), "use names such as claude, codex, gemini") from None


def given_names(values: Iterable[str] | None) -> list[str] | None:
    """:func:`agent_names` of ``values`` as a record's ``visibility``; ``None`` when none were given."""
    return None if values is None else list(agent_names(values))


def bindings_of(ids: Sequence[str], vis: Sequence[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The visibility of each row bound to some agents, by id (a records table's ``ids`` and ``vis``).

    The rows with an empty visibility (for everyone, the usual case) are passed over in C
    (:func:`itertools.compress`), so a store of 100,000 unbound memories costs one pass.
    """
    from itertools import compress

    return {ids[r]: tuple(vis[r]) for r in compress(range(len(vis)), vis)}
