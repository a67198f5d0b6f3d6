"""Importing legacy EP-0131 records (``.tur/memories/*.yaml`` files) as gitmem memories."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from gitmem import codec
from gitmem.errors import InvalidInput, MalformedRecord
from gitmem.ids import memory_id
from gitmem.models import Memory

__all__ = ["expand_paths", "to_memory"]


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
            raise InvalidInput(f"no such file or directory: {path}")
    return files


def to_memory(path: Path) -> Memory:
    """Read one legacy record file and return it as a :class:`Memory` with a gitmem id.

    The id is recomputed from type and content; the original id is kept in the
    ``legacy_id`` field when it differs.

    Raises:
        MalformedRecord: unreadable YAML, or a record that does not validate.
    """
    where = str(path)
    data = codec.load_mapping(path.read_bytes(), where)
    if not isinstance(data.get("content"), str) or not isinstance(data.get("type"), str):
        raise MalformedRecord(where, "a record needs string 'type' and 'content' fields")
    data = dict(data)
    old_id = data.pop("id", None)
    try:
        new_id = memory_id(data["type"], data["content"])
    except ValueError:
        raise MalformedRecord(where, f"type: unknown memory type {data['type']!r}") from None
    if old_id and old_id != new_id:
        data["legacy_id"] = str(old_id)
    data["id"] = new_id
    try:
        return Memory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise MalformedRecord(where, f"{loc}: {first['msg']}") from None
