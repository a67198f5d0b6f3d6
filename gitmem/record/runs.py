"""Verify runs: what a whole ``tur verify`` judged, kept on the memory ref as ``runs/verify.yaml``.

A whole verify that found a memory's anchored code unchanged corroborates it without
rewriting its record (docs/staleness.md, "Runs"): the run says which HEAD it compared with,
when, and which ``memories`` tree holds the records as it left them. A memory whose record in
that tree is ``fresh`` and anchored, and whose provenance has not changed since, was
corroborated by the run; its effective verification point is the newer of its own
``(git_sha, last_verified_at)`` and that run's ``(head, at)``.

The file holds the newest :data:`KEEP_RUNS` runs, newest first, one a line, in YAML's
flow style (which is JSON, so that this layer reads it without the codec)::

    {"runs": [
    {"head": "3f2a1b9c...", "at": "2026-08-27T15:04:00Z", "tree": "9c1d...", "except": ["fact-ab12cd34"]}
    ]}

``head``: the code commit the run compared with (full SHA); ``at``: when (UTC); ``tree``: the
``memories`` tree the run left (a tree of the ref's commit that recorded it); ``except``
(optional): records of that tree the run did not judge as they stand there.

Two clones' files merge as the union of their runs, then the newest :data:`KEEP_RUNS` by
``(at, head, tree)`` (:func:`merge_runs`): symmetric, so clones converge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gitmem.vocabulary import iso_z

__all__ = ["KEEP_RUNS", "RUNS_PATH", "VerifyRun", "merge_run_files", "merge_runs", "parse_runs",
           "render_runs", "runs_from_plain"]

RUNS_PATH = "runs/verify.yaml"
"""Where the verify runs are in the memory ref's tree (outside ``memories/``)."""

KEEP_RUNS = 3
"""Runs kept: the newest, and two more so that a merge of two clones' runs keeps both sides'."""

_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, order=True)
class VerifyRun:
    """One whole verify run: the HEAD (full SHA) it compared with, when, and the tree it left.

    Attributes:
        at: when it ran (aware UTC datetime, whole seconds as gitmem writes times).
        head: the code commit it compared every memory with (40 hex digits).
        tree: id of the ``memories`` tree of the commit that recorded the run, as the run
            left it (40 hex digits).
        excluded: ids of records of ``tree`` that the run did not judge as they stand there
            (a concurrent write won, or a verdict too large to write): never corroborated.

    Ordered by ``(at, head, tree)``: :func:`merge_runs` keeps the greatest.
    """

    at: datetime
    head: str
    tree: str
    excluded: tuple[str, ...] = field(default=(), compare=False)

    def to_plain(self) -> dict[str, Any]:
        """The run as the file's mapping (``head``, ``at``, ``tree``, ``except``)."""
        plain: dict[str, Any] = {"head": self.head, "at": iso_z(self.at), "tree": self.tree}
        if self.excluded:
            plain["except"] = list(self.excluded)
        return plain


def _sha(value: Any) -> str | None:
    return value if isinstance(value, str) and len(value) == 40 and set(value) <= _HEX else None


def runs_from_plain(doc: Any) -> list[VerifyRun]:
    """The runs of a loaded ``runs/verify.yaml`` mapping, newest first.

    A malformed entry is left out (a newer gitmem may write more; an older file is still
    read); a document that is not a mapping with a ``runs`` list gives ``[]``. Never raises.
    """
    entries = doc.get("runs") if isinstance(doc, Mapping) else None
    if not isinstance(entries, list):
        return []
    runs = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        head, tree, at = _sha(entry.get("head")), _sha(entry.get("tree")), entry.get("at")
        excluded = entry.get("except", [])
        if head is None or tree is None or not isinstance(at, str) or not isinstance(excluded, list):
            continue
        try:
            moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            continue
        runs.append(VerifyRun(moment.astimezone(UTC), head, tree,
                              tuple(sorted(str(i) for i in excluded if isinstance(i, str)))))
    return merge_runs(runs, [])


def merge_runs(ours: Iterable[VerifyRun], theirs: Iterable[VerifyRun],
               keep: int = KEEP_RUNS) -> list[VerifyRun]:
    """The union of two lists of runs, the newest ``keep`` by ``(at, head, tree)``, newest first.

    Symmetric in its two arguments (a run in both is kept once; of two runs equal in
    ``(at, head, tree)`` the one with more exceptions wins, then the greater list).
    """
    best: dict[tuple[datetime, str, str], VerifyRun] = {}
    for run in (*ours, *theirs):
        key = (run.at, run.head, run.tree)
        other = best.get(key)
        if other is None or (len(run.excluded), run.excluded) > (len(other.excluded), other.excluded):
            best[key] = run
    return [best[k] for k in sorted(best, reverse=True)[:keep]]


def parse_runs(data: bytes) -> list[VerifyRun]:
    """The runs of a ``runs/verify.yaml`` blob, newest first; ``[]`` when it is not readable.

    Never raises: an unreadable file corroborates nothing (every memory keeps its own point).
    """
    import json  # lazily: a warm wake loads no json

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return []
    return runs_from_plain(doc)


def render_runs(runs: Iterable[VerifyRun]) -> bytes:
    """The bytes of ``runs/verify.yaml`` for ``runs`` (newest first, as given): one run a line."""
    import json

    lines = [json.dumps(run.to_plain()) for run in runs]
    return ("{\"runs\": [\n" + ",\n".join(lines) + ("\n" if lines else "") + "]}\n").encode()


def merge_run_files(ours: bytes, theirs: bytes) -> bytes:
    """Two ``runs/verify.yaml`` blobs merged (:func:`merge_runs`), as bytes: symmetric."""
    return render_runs(merge_runs(parse_runs(ours), parse_runs(theirs)))
