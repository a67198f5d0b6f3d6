"""The one read path: every record, table and view of the memory ref goes through :class:`Records`.

The read cache (:class:`gitmem.cache.RecordCache`) is always there: a cold read builds it
(parsing each blob once), a warm read is one file. Nothing else in the facade parses the
whole ref.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.cache.reader import Skipped, Snapshot, read_record, record_path
from gitmem.errors import MalformedRecord, UnknownMemory
from gitmem.record.ids import check_prefix, resolve_id, resolve_legacy_id
from gitmem.store import CommitInfo, Mutation, Store
from gitmem.vocabulary import ID_PATTERN

if TYPE_CHECKING:
    from gitmem.cache import RecordCache, RecordTable
    from gitmem.config import Settings
    from gitmem.record.models import Memory
    from gitmem.staleness.overlay import LocalEntry

__all__ = ["Records", "Workspace"]


class Records:
    """Reads records of the memory ref, always through the read cache.

    Args:
        store: the repository's store (the only git access).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._progress: Callable[[int, int], None] | None = None

    @cached_property
    def cache(self) -> RecordCache:
        """The repository's read cache (in memory only when its directory is not writable)."""
        from gitmem.cache import RecordCache

        cache = RecordCache.for_store(self.store)
        cache.set_progress(self._progress)
        return cache

    def set_progress(self, progress: Callable[[int, int], None] | None) -> None:
        """Report ``progress(parsed, to_parse)`` while a read parses record blobs."""
        self._progress = progress
        if "cache" in self.__dict__:
            self.cache.set_progress(progress)

    def tip(self) -> str | None:
        """The memory ref's current commit, or ``None`` before the first write."""
        return self.store.tip()

    def table(self, tip: str | None) -> tuple[RecordTable, list[Skipped]]:
        """The columns of every record at ``tip``, and the blobs skipped (notices first).

        The table carries this clone's working-tree overlay (:meth:`local`): its views and
        :meth:`RecordTable.statuses` show those memories stale. Warm: one tree lookup and
        one file read (and the overlay's small file).
        """
        table = self.cache.table(tip)
        local = self.local()
        table.set_local({row: entry.reason for memory_id, entry in local.items()
                         if (row := table.row(memory_id)) is not None})
        return table, [*self.cache.take_notices(), *self.layout_problems(tip), *table.layout, *table.bad]

    def writers(self, table: RecordTable, require_signatures: bool = False) -> list[tuple[str, ...]]:
        """Who made each row's version, as **git** says (``Name <email>``, newest first), in row order.

        The author of the commit on the memory ref that last changed the record (all of its
        authors when a merge made it: :meth:`gitmem.store.Store.attribution`); ``()`` when
        git names nobody. Never the record's own ``author`` field: that is a claim
        (docs/sharing.md, Trust). Kept in the read cache per tree; after the ref moves on,
        only the commits since the cached tip are walked (``git log OLD..NEW``).
        An author whose commit's signature git does not verify carries the mark of
        :meth:`gitmem.store.Store.attribution` (``require_signatures``: unsigned ones too).
        """
        tree, tip = table.tree, self.store.tip()
        if tree is None or tip is None:
            return [()] * len(table.ids)
        name = _ATTRIBUTION + ("-signed" if require_signatures else "")
        payload = self.cache.read_payload("", name)
        known: dict[str, tuple[str, ...]] | None = None
        since = None
        if isinstance(payload, dict):
            if payload.get("tree") == tree and _shaped(payload):
                rows = payload.get("rows")
                if isinstance(rows, list) and len(rows) == len(table.ids) \
                        and set(map(type, rows)) <= {tuple}:  # C, no frame per row
                    return rows  # warm: the rows as last read; the id map is read only to walk
            known = _attribution_of(payload)
            since = payload.get("tip") if isinstance(payload.get("tip"), str) else None
        paths = {record_path(memory_id): memory_id for memory_id in table.ids}
        if known is None or since is None:
            known, since = {}, None
        # When ``since`` is no ancestor (a rewritten ref), the walk is a full one: every record
        # present is found, and overrides what was known.
        # gitmem's own writes since the cached tip (noted by the cache) descend from it: no check.
        mine = since is not None and self.cache.written_since(tip, since) is not None
        found = self.store.attribution(tip, set(paths), since, descends=mine,
                                       require_signatures=require_signatures)
        for path, who in found.items():
            known[paths[path]] = who
        missing = {p for p, memory_id in paths.items() if memory_id not in known}
        if missing and since is not None:
            for path, who in self.store.attribution(tip, missing,
                                                    require_signatures=require_signatures).items():
                known[paths[path]] = who
        one: dict[tuple[str, ...], tuple[str, ...]] = {}
        known = {memory_id: one.setdefault(who, who) for memory_id, who in known.items()}
        out = [known.get(memory_id, ()) for memory_id in table.ids]
        kept = {memory_id: known[memory_id] for memory_id in table.ids if memory_id in known}
        self.cache.write_payload("", name, {"tree": tree, "tip": tip, "ids": list(kept),
                                                    "who": list(kept.values()), "rows": out})
        return out

    def local_reasons(self) -> dict[str, str]:
        """:meth:`local` as memory id -> reason (``working tree: line 80 modified``)."""
        return {memory_id: entry.reason for memory_id, entry in self.local().items()}

    def local(self) -> dict[str, LocalEntry]:
        """The working-tree overlay of this clone: memory id -> why uncommitted changes make it stale.

        Only entries that still hold (same HEAD, same file); see :mod:`gitmem.staleness.overlay`.
        """
        from gitmem.staleness import overlay

        store = self.store
        return overlay.load(store.git_dir, store.workdir, store.head_sha())

    def layout_problems(self, tip: str | None) -> list[Skipped]:
        """Entries outside ``memories/`` that gitmem does not read (see ``Store.root_problems``)."""
        from gitmem.cache.records import layout_skipped

        return [layout_skipped(p.path, p.object_id, p.reason) for p in self.store.root_problems(tip)]

    def snapshot(self, tip: str | None = None) -> Snapshot:
        """All records at ``tip`` (default: the current tip) as full models.

        Malformed blobs and layout problems are listed in ``skipped``, never fatal;
        notices about untrusted cache files come first there.
        """
        tip = self.store.tip() if tip is None else tip
        snap = self.cache.snapshot(tip)
        from gitmem.cache import CacheNotice

        notices = [s for s in snap.skipped if isinstance(s, CacheNotice)]
        rest = [s for s in snap.skipped if not isinstance(s, CacheNotice)]
        snap.skipped = [*notices, *self.layout_problems(tip), *rest]
        return snap

    def memories(self) -> tuple[list[Memory], list[Skipped]]:
        """Every readable record (sorted by id) and the skipped malformed blobs."""
        snap = self.snapshot()
        return [snap.records[k] for k in sorted(snap.records)], snap.skipped

    def notices(self) -> list[Skipped]:
        """Cache notices gathered since the last call (each is reported once)."""
        return list(self.cache.take_notices())

    def flush(self) -> None:
        """Write what this process learned (token counts, distances) to the cache files."""
        self.cache.flush()

    # -- one record --------------------------------------------------------------------------

    def id_entries(self, token: str, tip: str | None) -> dict[str, str]:
        """Ids (mapped to blob ids) that ``token`` may resolve to at ``tip``.

        A token whose hex part starts with two hex digits (``fact-8f2a``, ``8f2a``) can only
        name records of that fan-out directory, so one shard tree is read instead of 256:
        a write costs the same with 100 or 100,000 memories.
        """
        hex_part = token.strip().lower().rsplit("-", 1)[-1]
        if len(hex_part) >= 2 and all(c in "0123456789abcdef" for c in hex_part):
            listing = self.store.list_dir(tip, f"memories/{hex_part[:2]}")
            return {n[: -len(".yaml")]: b for n, b in listing.items() if n.endswith(".yaml")}
        return self.store.entries(tip)

    def locate(self, token: str, tip: str | None) -> tuple[str, str]:
        """The (id, blob id) that ``token`` names at ``tip``; no record is parsed.

        ``token`` is an id or a unique id prefix, else an old id of an imported memory
        (``legacy_id``) or a unique prefix of one. Ids are tried first, in the one shard
        tree the token can live in; only a token that names no id reads the legacy ids,
        from the read cache's table (warm: one file; cold: the same build a first wake does).

        Raises:
            UnknownMemory: neither an id nor a legacy id matches.
            AmbiguousId: the prefix matches several ids, or several memories' legacy ids.
        """
        entries = self.id_entries(token, tip)
        try:
            found = resolve_id(token, entries)
        except UnknownMemory as missing:
            table = self.cache.table(tip)
            legacy = resolve_legacy_id(token, table.legacy_index())
            row = table.row(legacy) if legacy is not None else None
            if legacy is None or row is None:
                raise missing from None
            return legacy, table.blobs[row]
        return found, entries[found]

    def id_choices(self, prefix: str = "", limit: int = 200, status: str | None = None) -> dict[str, str]:
        """Ids that ``prefix`` may name, each with the first line of its content.

        For shell completion, matching what :meth:`resolve` accepts: a prefix of the id, of
        its hex part (``12cc``), or of an old id kept by ``tur import`` (the memory's current
        id is offered); only memories of stored ``status`` when given. Read from the read
        cache's table (warm: one file), no record parsed; at most ``limit`` ids, in id order.
        """
        table = self.cache.table(self.store.tip())
        contents, statuses = table.columns["content"], table.columns["status"]
        rows = [row for row, memory_id in enumerate(table.ids)
                if memory_id.startswith(prefix) or memory_id.rsplit("-", 1)[-1].startswith(prefix)]
        if prefix and not rows:
            wanted = {memory_id for old, ids in table.legacy_index().items()
                      if old.startswith(prefix) or old.rsplit("-", 1)[-1].startswith(prefix)
                      for memory_id in ids}
            rows = [row for row, memory_id in enumerate(table.ids) if memory_id in wanted]
        if status is not None:
            rows = [row for row in rows if statuses[row] == status]
        found: dict[str, str] = {}
        for row in rows[:limit]:
            text = str(contents[row]).strip()
            found[table.ids[row]] = text.splitlines()[0][:60] if text else ""
        return found

    def legacy_index(self, tip: str | None) -> dict[str, list[str]]:
        """Each legacy id at ``tip`` -> the ids of the memories that carry it (from the read cache)."""
        return self.cache.table(tip).legacy_index()

    def legacy_ids(self) -> dict[str, tuple[str, ...]]:
        """Each imported memory's id -> its legacy ids, at the current tip (from the read cache)."""
        table = self.cache.table(self.store.tip())
        return {table.ids[row]: names for row, names in enumerate(table.columns["legacy"]) if names}

    def resolve(self, token: str) -> str:
        """The full id that ``token`` (an id, a legacy id, or a unique prefix) names; nothing is parsed.

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        return self.locate(token, self.store.tip())[0]

    def forgotten_error(self, token: str) -> UnknownMemory | None:
        """The error for ``token`` when it names a forgotten memory (when, by whom, how to restore it).

        ``None`` when it names none (:meth:`forgotten_id`); the surfaces raise it instead of
        a plain :class:`UnknownMemory` after a lookup of a stored memory failed.

        Raises:
            UnknownMemory: a type name, or a prefix too short to name an id.
            AmbiguousId: the prefix names several forgotten memories.
        """
        memory_id = self.forgotten_id(token)
        commits = self.history(memory_id) if memory_id is not None else []  # newest first
        if memory_id is None or not commits:
            return None
        gone = commits[0]
        return UnknownMemory(memory_id, f"it was forgotten on {gone.time:%Y-%m-%d %H:%M} by {gone.author} "
                             f"in {gone.sha[:12]}; `tur forget --undo {memory_id}` restores it")

    def link_target(self, source: str, token: str) -> str:
        """The id ``token`` names as a target of ``source``'s relations (what an unlink takes out).

        A stored memory's id or prefix, as :meth:`resolve`; else, by the same rules, one of the
        targets ``source``'s relations name, so that a link to a memory forgotten since is
        named by a prefix too.

        Raises:
            UnknownMemory: ``source`` names no memory, or ``token`` names neither.
            AmbiguousId: ``token`` names several.
        """
        try:
            return self.resolve(token)
        except UnknownMemory:
            targets = {getattr(r, "target", None) for r in self.get(source).relations}
            return resolve_id(token, sorted(t for t in targets if isinstance(t, str)))

    def get(self, token: str) -> Memory:
        """The memory with this id, legacy id, or unique prefix of either.

        Raises:
            UnknownMemory: no such id.
            AmbiguousId: the prefix matches several ids.
            MalformedRecord: the record exists but cannot be read.
        """
        found, blob = self.locate(token, self.store.tip())
        try:
            return read_record(self.store, found, blob)
        except MalformedRecord as exc:
            raise MalformedRecord(f"blob {blob[:12]} ({found})", exc.reason) from None

    def read_ids(self, ids: list[str]) -> tuple[list[Memory], list[Skipped], dict[str, str]]:
        """The records named by ``ids`` (sorted by id), those that are malformed, their blobs.

        Reads only the shard trees the ids live in, so ``verify ID`` does not grow with the
        number of memories (a legacy id reads the cached table instead).

        Raises:
            UnknownMemory, AmbiguousId: a bad id.
        """
        tip = self.store.tip()
        blobs: dict[str, str] = {}
        for token in ids:
            found, blob = self.locate(token, tip)
            blobs[found] = blob
        memories, skipped = [], []
        for memory_id in sorted(blobs):
            try:
                memories.append(read_record(self.store, memory_id, blobs[memory_id]))
            except MalformedRecord as exc:
                skipped.append(Skipped(memory_id, blobs[memory_id], exc.reason))
        return memories, skipped, blobs

    def record_text(self, token: str) -> str:
        """The record exactly as stored on the ref (YAML text).

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        _, blob = self.locate(token, self.store.tip())  # one shard, not every record
        return self.store.read_blob(blob).decode("utf-8", "replace")

    def history(self, memory_id: str) -> list[CommitInfo]:
        """Commits on the memory ref that changed this record, newest first."""
        return self.store.log(record_path(memory_id))

    #: Deletions of one shard tree searched for a forgotten id's prefix, newest first.
    FORGOTTEN_LOOKED_UP = 200

    def forgotten_id(self, token: str) -> str | None:
        """The id of the forgotten memory ``token`` names, or ``None`` when it names none.

        A full id is taken as given (its record's history says whether it was forgotten); a
        prefix (the rules of :func:`~gitmem.record.ids.resolve_id`) is looked up among the ids
        the last :attr:`FORGOTTEN_LOOKED_UP` deletions of its shard tree took and that are not
        stored now (``Store.deletions``: one ``git log`` per tip, remembered).

        Raises:
            UnknownMemory: a type name, or a prefix too short to name an id.
            AmbiguousId: the prefix names several forgotten memories.
        """
        token = token.strip().lower()
        if ID_PATTERN.fullmatch(token):
            return token
        check_prefix(token)
        hex_part = token.rsplit("-", 1)[-1]
        tip = self.store.tip()
        if tip is None or len(hex_part) < 2 or not all(c in "0123456789abcdef" for c in hex_part):
            return None
        shard = f"memories/{hex_part[:2]}"
        stored = self.id_entries(token, tip)
        gone = {path.rpartition("/")[2].removesuffix(".yaml")
                for _, _, path in self.store.deletions(tip, shard, self.FORGOTTEN_LOOKED_UP)}
        try:
            return resolve_id(token, sorted(gone.difference(stored)))
        except UnknownMemory:
            return None

    def latest_statements(self) -> tuple[str, dict[str, str]] | None:
        """The tree the statement rows are of and their statements; ``None`` without a table.

        See :meth:`gitmem.cache.RecordCache.latest_statements` (reads no git object unless the
        rows move to a newer table's tree).
        """
        return self.cache.latest_statements()

    def similar_statements(self, text: str, ref: str | None, skip: Iterable[str],
                           limit: int) -> tuple[str, list[str], list[str]] | None:
        """(tree, ids anchored to lines meeting ``ref``'s, ids of near-duplicates of ``text``), or ``None``.

        Reads no record (see :meth:`gitmem.cache.RecordCache.similar_statements`).
        """
        return self.cache.similar_statements(text, ref, skip, limit)

    def statements_of(self, tree: str, ids: Sequence[str]) -> tuple[str | None, ...]:
        """The statements of ``ids`` in the statement rows of ``tree`` (empty when they are of another)."""
        return self.cache.statements_of(tree, ids)

    def after_commit(self, tip: str | CommitInfo | None, updated: Mapping[str, Memory],
                     mutation: Mutation | None = None) -> None:
        """Hand records this process just wrote at ``tip`` to the cache.

        The next reader of ``tip`` (the next verify, wake, recall) then parses none of them.

        With ``mutation`` (what :meth:`gitmem.store.Store.transact` committed as ``tip``, a
        :class:`~gitmem.store.CommitInfo`), the cache saves the rows of the records the
        mutation changed, reading nothing: ``updated`` must then
        hold the record as written for every record path the mutation wrote (or nothing is
        handed over; the next reader reads the new blobs itself). Without it, the table of
        ``tip`` is built now from the tree (a bulk write that has read every record).
        """
        if tip is None:
            return
        if mutation is None:
            self.cache.after_commit(tip if isinstance(tip, str) else tip.sha, updated)
            return
        if isinstance(tip, str):
            raise TypeError("after_commit with a mutation needs the CommitInfo of the commit")
        changes = self.changes_of(mutation, updated)
        if changes is not None:
            self.cache.after_write(tip.parents[0] if tip.parents else None, tip.sha, changes)

    @staticmethod
    def changes_of(mutation: Mutation,
                   updated: Mapping[str, Memory]) -> dict[str, tuple[str, Memory] | None] | None:
        """Map each record ``mutation`` wrote to (blob id, record), or ``None`` when removed.

        ``None`` when a record it wrote is not in ``updated``, or it changed something under
        ``memories/`` that is not a record where its id says (a layout repair).
        """
        from gitmem.record.ids import shard_of
        from gitmem.vocabulary import ID_PATTERN

        changes: dict[str, tuple[str, Memory] | None] = {}
        for path, data in mutation.changes.items():
            parts = path.split("/")
            if parts[0] != "memories":
                continue
            memory_id = parts[-1].removesuffix(".yaml") if len(parts) == 3 else ""
            if not (ID_PATTERN.match(memory_id) and parts[1] == shard_of(memory_id)
                    and parts[2] == f"{memory_id}.yaml"):
                return None
            if data is None:
                changes[memory_id] = None
                continue
            memory, blob = updated.get(memory_id), mutation.written.get(path)
            if memory is None or blob is None:
                return None
            changes[memory_id] = (blob, memory)
        return changes


class Workspace:
    """What every part of the facade shares: the store, the reader, the working directory, settings.

    Args:
        store: the repository's store.
        settings: settings to use; ``None`` reads ``.tur/config.yaml`` on first use.
        cwd: the directory relative ``--file`` paths start from.
    """

    def __init__(self, store: Store, settings: Settings | None = None, cwd: Path | None = None) -> None:
        self.store = store
        self.records = Records(store)
        if store.memo is None:  # the store keeps its object lookups in the cache's database
            store.memo = self.records.cache.object_memo()
        self.cwd = cwd or Path.cwd()
        self._settings = settings
        self.personal: Callable[[], Any] = lambda: None
        """The personal store's :class:`~gitmem.api.context.ContextBuilder`, or ``None`` (set by the
        facade; docs/personal.md)."""

    @property
    def settings(self) -> Settings:
        """The repository's settings (``.tur/config.yaml``), read on first use.

        Lazily, so that what needs no setting (``tur cache clear``, ``tur show``) works
        even while the file is being fixed.

        Raises:
            ConfigError: the file is invalid.
        """
        if self._settings is None:
            from gitmem.config import load_settings

            self._settings = load_settings(self.store.workdir, self.records.cache)
        return self._settings


_ATTRIBUTION = "attribution2"
"""The read cache's memo of who made each record's version (see :meth:`Records.writers`)."""


def _shaped(payload: dict) -> bool:
    """Whether an ``attribution`` payload's id and author lists are lists of one length."""
    ids, who = payload.get("ids"), payload.get("who")
    return isinstance(ids, list) and isinstance(who, list) and len(ids) == len(who)


def _attribution_of(payload: dict) -> dict[str, tuple[str, ...]] | None:
    """The id -> authors map of an ``attribution`` payload; ``None`` when badly shaped."""
    ids, who = payload.get("ids"), payload.get("who")
    if not (isinstance(ids, list) and isinstance(who, list) and _shaped(payload)):
        return None
    if not all(type(w) is tuple and all(type(x) is str for x in w) for w in who):
        return None
    return dict(zip(ids, who, strict=True))
