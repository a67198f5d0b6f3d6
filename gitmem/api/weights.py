"""Commit distances and decay weights, computed once for wake, status and verify."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from gitmem.record.decay import FROM_POLICY, weight_column

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.api.runs import Effective
    from gitmem.cache import RecordTable

__all__ = ["Inputs", "Weights"]

Inputs = tuple[list[float | str | None], list[int | None], list[int | None]]
"""Half-lives, commit distances and verification times by row (see :meth:`Weights.inputs`)."""


class Weights:
    """Weights (in [0, 1]) and commit distances (commits) of the memory ref's records.

    Args:
        ws: the shared workspace (store, reader and its cache, settings).
    """

    def __init__(self, ws: Workspace) -> None:
        from gitmem.api.runs import Runs

        self.ws = ws
        self.runs = Runs(ws)

    def distance_column(self, shas: list[str | None], head: str | None) -> list[int | None]:
        """Commit distance (commits) of each SHA to ``head`` (``None``: no SHA, or unknown).

        One history walk per distinct SHA; distances of full SHAs are remembered in the read
        cache per HEAD, so a warm wake walks no history.
        """
        if head is None:
            return [None] * len(shas)
        cache = self.ws.records.cache
        known: dict[str, int] = cache.distances(head)
        # A few hundred commits for 100,000 rows.
        distinct: set[str] = {s for s in set(shas) if s is not None}
        wanted = {s for s in distinct if s not in known}
        if wanted:
            self._carry_distances(head, known, wanted)
        per_sha: dict[str | None, int | None] = {None: None}
        per_sha.update(known)
        history = None
        for sha in sorted({s for s in distinct if s not in per_sha}):
            if sha == head:  # anchored at HEAD: no history to load
                per_sha[sha] = known[sha] = 0
                cache.mark_distances()
                continue
            history = history or self.ws.store.code()
            full = history.resolve_commit(sha)
            found = history.commit_distance(full, head) if full else None
            distance = found.commits if found is not None else None
            per_sha[sha] = distance
            if full == sha and found is not None:
                known[sha] = found.commits
                if not found.ahead and found.behind:
                    cache.note_behind(sha)
                cache.mark_distances()
        return list(map(per_sha.__getitem__, shas))

    def _carry_distances(self, head: str, known: dict[str, int], wanted: set[str]) -> None:
        """Distances to ``head`` from those to its parent, when ``head`` is a new commit on it.

        With one parent P, the commits reachable from ``head`` are P's and ``head`` itself,
        and ``head`` is in no observed commit's history unless that commit descends from P:
        a distance of ``d`` commits ahead to P is ``d + 1`` to ``head``, and P itself is 1
        commit from ``head``. Distances that counted commits P was behind (P an ancestor of the observed
        commit) are left to the history walk. Reads ``head``'s loose object, not libgit2:
        the first wake after a commit loads no history.
        """
        cache = self.ws.records.cache
        previous = cache.previous_distances()
        if previous is None:
            return
        parent, distances, behind = previous
        if not any(sha in distances or sha == parent for sha in wanted):
            return
        if self.ws.store.loose_commit_parents(head) != [parent]:
            return
        for sha in wanted:
            if sha == parent:
                known[sha] = 1
            else:
                d = distances.get(sha)
                if d is not None and d > 0 and sha not in behind:
                    known[sha] = d + 1
        cache.mark_distances()

    def inputs(self, table: RecordTable, effective: Effective | None = None,
               ) -> Inputs:
        """What :func:`~gitmem.record.decay.weight_column` reads of ``table`` besides its columns, by row.

        The verification point of each row is its effective one (:meth:`gitmem.api.runs.Runs.effective`):
        its own, or the newest verify run that corroborated it (``effective``, when the
        caller has it already).

        Returns:
            Half-lives as ``weight_column`` takes them (the record's own, :data:`FROM_POLICY`,
            or ``None`` for a legacy record), commit distances to HEAD from the effective SHA
            (commits; ``None``: no observed commit, or unknown) and the effective
            ``last_verified_at`` (microseconds, ``None``: none).
        """
        c = table.columns
        provs, decays = c["prov"], c["decay"]
        effective = effective or self.runs.effective(table)
        distances = self.distance_column(effective.shas, self.ws.store.head_sha())
        half_lives = [d[0] if d is not None else FROM_POLICY if p is not None else None
                      for d, p in zip(decays, provs, strict=True)]
        return half_lives, distances, effective.verified

    def table_weights(self, table: RecordTable, now: datetime,
                      inputs: Inputs | None = None,
                      ) -> tuple[list[float], list[int | None]]:
        """Weights and commit distances of every row of ``table``, in row order.

        The columns go through :func:`gitmem.record.decay.weight_column` (equal to
        :func:`gitmem.record.decay.weight` of each record at its effective verification
        point) without an object per memory. ``inputs`` is :meth:`inputs` of ``table`` when
        the caller has it already.
        """
        c = table.columns
        half_lives, distances, verified = inputs if inputs is not None else self.inputs(table)
        weights = weight_column(c["type"], c["status"], c["conf"], half_lives, verified,
                                distances, now, self.ws.settings.decay)
        return weights, distances
