"""Importing records from elsewhere: legacy EP-0131 files, and the relations of an imported batch.

:func:`to_memory` reads one ``.tur/memories/*.yaml`` file; :func:`rewrite_relations` points the
relations of any imported batch (these files, or a Tur store read by :mod:`gitmem.importers.tur_store`)
at the new ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from gitmem import codec
from gitmem.errors import InvalidInput, MalformedRecord
from gitmem.record.ids import memory_id
from gitmem.record.models import Memory
from gitmem.vocabulary import RelationType

if TYPE_CHECKING:
    from gitmem.record.models import Relation

__all__ = ["expand_paths", "read", "rewrite_relations", "to_memory"]


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Expand files and directories (``*.yaml``/``*.yml`` inside, sorted) into a file list.

    Raises:
        InvalidInput: a path does not exist.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")))
        elif path.is_file():
            files.append(path)
        else:
            raise InvalidInput(f"no such file or directory: {path}",
                               "pass record files (.yaml) or directories that hold them")
    return files


def read(path: Path) -> tuple[Memory, bytes]:
    """Read one legacy record file: the :class:`Memory` with a gitmem id, and the file's bytes.

    The id is recomputed from type and content; the original id is kept in the
    ``legacy_id`` field when it differs. The bytes let the caller store the record with
    the file's comments and key order (:func:`gitmem.codec.update`).

    Raises:
        MalformedRecord: unreadable YAML, or a record that does not validate.
    """
    where = str(path)
    original = path.read_bytes()
    data = codec.load_mapping(original, where)
    if not isinstance(data.get("content"), str) or not isinstance(data.get("type"), str):
        raise MalformedRecord(where, "a record needs string 'type' and 'content' fields")
    data = dict(data)
    old_id = data.pop("id", None)
    try:
        new_id = memory_id(data["type"], data["content"])
    except ValueError:
        raise MalformedRecord(where, f"type: unknown memory type {data['type']!r}") from None
    before = data.get("legacy_id")
    if old_id and old_id != new_id and (before is None or isinstance(before, str | list)):
        names = [before] if isinstance(before, str) else list(before or [])
        if str(old_id) not in names:
            data["legacy_id"] = [*names, str(old_id)] if names else str(old_id)
    data["id"] = new_id
    try:
        return Memory.model_validate(data), original
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise MalformedRecord(where, f"{loc}: {first['msg']}") from None


def to_memory(path: Path) -> Memory:
    """Read one legacy record file and return it as a :class:`Memory` with a gitmem id (see :func:`read`).

    Raises:
        MalformedRecord: unreadable YAML, or a record that does not validate.
    """
    return read(path)[0]


def rewrite_relations(memories: Sequence[Memory], known: Callable[[str], str | None]) -> list[str]:
    """Point the relations of an imported batch at the new ids, in place; report what was kept.

    A target that is the id or a legacy id of a memory of the batch becomes that memory's
    id; otherwise ``known(target)`` names the memory already stored (by id or legacy id).
    A target neither knows is kept as written, and reported. A relation of a memory to
    itself, a duplicate, and a ``supersedes`` relation that would close a cycle (which
    would hide every memory on it) are dropped, and reported.

    Args:
        memories: the batch, with ``legacy_id`` set on the records that had another id.
        known: the stored memory's id for an id or legacy id, or ``None``.

    Returns:
        One line per relation kept pointing outside the store or dropped, naming both ends.
    """
    batch: dict[str, str] = {m.id: m.id for m in memories}
    for memory in memories:
        for name in memory.legacy_ids:
            batch.setdefault(name, memory.id)
    notes: list[str] = []
    supersedes: dict[str, set[str]] = {}
    for memory in sorted(memories, key=lambda m: m.id):
        kept: list[Relation] = []
        seen: set[tuple[RelationType, str]] = set()
        for relation in memory.relations:
            target = batch.get(relation.target) or known(relation.target)
            what = f"{memory.id} {relation.type.value} {relation.target}"
            if target is None:
                notes.append(f"{what}: no such memory in the store; kept as written")
                target = relation.target
            if target == memory.id:
                notes.append(f"{what}: a memory linked to itself; dropped")
                continue
            if (relation.type, target) in seen:
                continue
            if relation.type is RelationType.SUPERSEDES and _reaches(supersedes, target, memory.id):
                notes.append(f"{what}: would close a supersedes cycle; dropped")
                continue
            seen.add((relation.type, target))
            if relation.type is RelationType.SUPERSEDES:
                supersedes.setdefault(memory.id, set()).add(target)
            kept.append(relation if target == relation.target
                        else relation.model_copy(update={"target": target}))
        if kept != memory.relations:
            memory.relations = kept
    return notes


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    """True when ``goal`` is reachable from ``start`` along ``edges``."""
    seen, frontier = {start}, [start]
    while frontier:
        current = frontier.pop()
        if current == goal:
            return True
        for nxt in edges.get(current, ()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return False
