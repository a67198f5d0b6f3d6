"""Reading one record blob of the memory ref into a model; the shapes a whole read returns.

A whole read of the ref goes through the read cache (:meth:`gitmem.api.records.Records.snapshot`),
which parses each blob with :func:`parse_record` once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import MalformedRecord
from gitmem.store import Store

if TYPE_CHECKING:
    from gitmem.record.models import Memory

__all__ = ["Skipped", "Snapshot", "parse_record", "read_record", "record_path"]


def record_path(memory_id: str) -> str:
    """Tree path of a record: ``memories/<2 hex>/<id>.yaml``."""
    from gitmem.record.ids import shard_of

    return f"memories/{shard_of(memory_id)}/{memory_id}.yaml"


@dataclass(frozen=True)
class Skipped:
    """An entry of the memory tree that was not read: a malformed record, or a layout problem.

    A malformed record names its id; a layout problem (an entry that is not where its
    name says, or not a regular file) names its tree ``path``. ``hint`` says what to do
    (empty: the default for the kind, see :meth:`warning`).
    """

    memory_id: str
    blob_id: str
    reason: str
    path: str = ""
    hint: str = ""

    def warning(self) -> str:
        """One line naming the entry and what to do about it, for stderr."""
        if self.path:
            hint = self.hint or f"`tur doctor --fix` repairs it, `tur forget --path {self.path}` removes it"
            return f"warning: skipped {self.path} ({self.blob_id[:12]}): {self.reason} — {hint}"
        hint = self.hint or (f"`tur forget {self.memory_id}` removes it (it stays in the ref's history)"
                             if self.memory_id else "")
        line = f"warning: skipped malformed record blob {self.blob_id[:12]} ({self.memory_id}): {self.reason}"
        return f"{line} — {hint}" if hint else line


@dataclass
class Snapshot:
    """All records at one tip of the memory ref.

    ``records`` maps id to model (each with its ``blob_id``); ``skipped`` lists the
    blobs that failed to parse or validate; ``blobs`` maps id to blob id for every
    entry, readable or not.
    """

    tip: str | None
    records: dict[str, Memory] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    blobs: dict[str, str] = field(default_factory=dict)


def read_record(store: Store, memory_id: str, blob_id: str) -> Memory:
    """Parse one record blob stored as ``memories/<shard>/<memory_id>.yaml``.

    Raises:
        MalformedRecord: the blob is not a valid record, or its id is not ``memory_id``.
    """
    memory, _ = parse_record(store, memory_id, blob_id)
    return memory


def parse_record(store: Store, memory_id: str, blob_id: str) -> tuple[Memory, dict[str, Any]]:
    """Parse one record blob; return the model (with its blob id) and its plain mapping.

    Raises:
        MalformedRecord: the blob is not a valid record, or its id is not ``memory_id``.
    """
    # Lazy: a warm read through the cache never parses YAML.
    from gitmem.codec import load_with_mapping

    where = f"blob {blob_id[:12]} (memories/{memory_id}.yaml)"
    memory, mapping = load_with_mapping(store.read_blob(blob_id), where)
    if memory.id != memory_id:
        raise MalformedRecord(where, f"id field {memory.id!r} does not match the file name")
    memory.bind_blob(blob_id)
    return memory, mapping
