"""The relation graph between memories: who supersedes whom, and how central a memory is.

Used by wake (salience, ``superseded`` exclusions) and by recall (superseded candidates), so
that neither algorithm imports the other. Pure functions on records or on id-sorted columns.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from typing import TYPE_CHECKING

from gitmem.vocabulary import RelationType

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = ["centrality", "linked_degrees", "row_finder", "superseded_by"]


def superseded_by(
    memories: Iterable[Memory], active: Callable[[Memory], bool]
) -> dict[str, str]:
    """Ids superseded by an active memory, mapped to the (smallest) id superseding them.

    Args:
        memories: the memories whose ``supersedes`` relations are read.
        active: whether a memory's ``supersedes`` relations count (an inactive one, e.g.
            stale or refuted, supersedes nothing).

    Returns:
        Superseded id -> superseding id; a memory superseding itself is ignored.
    """
    result: dict[str, str] = {}
    linking = [m for m in memories if m.relation_targets(RelationType.SUPERSEDES)]
    for memory in sorted(linking, key=lambda m: m.id, reverse=True):
        if active(memory):
            for target in memory.relation_targets(RelationType.SUPERSEDES):
                if target != memory.id:
                    result[target] = memory.id
    return result


def centrality(degree: int) -> float:
    """Graph centrality factor of salience: ``1 + ln(1 + degree)``.

    An isolated memory gets 1 (never zeroed); each further neighbour adds less (1.69 for one,
    2.10 for two, 3.40 for ten), so a hub cannot drown out confidence and decay.

    Args:
        degree: number of distinct neighbours, >= 0 (see :func:`linked_degrees`).
    """
    return 1.0 + math.log1p(degree)


def linked_degrees(
    ids: Sequence[str], relations: Sequence[Sequence[tuple[str, str]]]
) -> dict[int, int]:
    """Degree of each row with a neighbour in the undirected relation graph.

    A neighbour counts once however many relations join the two; self-links and links to
    ids not in ``ids`` are ignored. Most memories have no relation, so only linked rows get
    a neighbour set.

    Args:
        ids: memory ids, sorted ascending and unique; row *i* is ``ids[i]``.
        relations: per row, its ``(relation type, target id)`` pairs (the type is not read).

    Returns:
        Row -> number of distinct neighbours, for rows with at least one (others are 0).
    """
    row_of = row_finder(ids)
    neighbours: dict[int, set[int]] = {}
    for r in compress(range(len(relations)), relations):  # linked rows only, picked in C
        for _, target in relations[r]:
            t = row_of(target)
            if t is not None and t != r:
                neighbours.setdefault(r, set()).add(t)
                neighbours.setdefault(t, set()).add(r)
    return {r: len(linked) for r, linked in neighbours.items()}


def row_finder(ids: Sequence[str]) -> Callable[[str], int | None]:
    """The row of an id in sorted ``ids``, or ``None`` (binary search: no index is built).

    Args:
        ids: memory ids, sorted ascending.

    Returns:
        A function from a memory id to its row.
    """
    n = len(ids)

    def find(memory_id: str) -> int | None:
        r = bisect_left(ids, memory_id)
        return r if r < n and ids[r] == memory_id else None

    return find
