"""Writing memories, for the facade: learn, curation (refute, confidence, link, forget) and import.

Every method makes exactly one commit on ``refs/tur/memories`` (or none when nothing
changed), built by a function of the current tip and committed with compare-and-swap
(:meth:`gitmem.store.Store.transact`), so concurrent processes never lose a write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from gitmem.api.results import DoctorReport, ImportResult, LearnResult
from gitmem.decay import half_life_for
from gitmem.errors import GitmemError, InvalidInput, MalformedRecord, UnknownMemory
from gitmem.ids import ID_HEX_LENGTHS, content_digest, id_hex, normalise_content, pick_id
from gitmem.limits import MAX_RECORD_BYTES, check_size
from gitmem.reader import read_record, record_path
from gitmem.store import FORMAT_PATH, CommitInfo, Mutation
from gitmem.text import first_words
from gitmem.vocabulary import ID_PATTERN, MemoryType, RelationType, Scope, Status, utc_now

if TYPE_CHECKING:
    from gitmem.anchors import Anchor
    from gitmem.api.records import Workspace
    from gitmem.models import Memory, Provenance

__all__ = ["Curator"]

_E = TypeVar("_E", MemoryType, Scope, RelationType)




class Curator:
    """Learns, edits and removes memories.

    Args:
        ws: the shared workspace.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def learn(
        self,
        content: str,
        *,
        type: MemoryType | str = MemoryType.FACT,
        file: str | None = None,
        confidence: float | None = None,
        agent: str | None = None,
        harness: str | None = None,
        scope: Scope | str = Scope.UNIVERSAL,
        allow_secret: bool = False,
        now: datetime | None = None,
        supersedes: str | None = None,
    ) -> LearnResult:
        """Store a memory observed at HEAD, or re-verify the same content if already stored.

        Args:
            content: the statement; de-duplicated on its normalised form.
            type: axiom | core | fact | insight | preference.
            file: anchor ``path`` or ``path#Lstart-Lend``, relative to the current directory.
            confidence: in [0, 1]; default 1.0 for a new memory, unchanged for a known one.
            agent: source agent name.
            harness: source harness name.
            scope: universal | incarnation.
            allow_secret: store content even if it looks like a credential.
            now: observation time (UTC); default the current time.
            supersedes: id (or unique prefix) of a memory this one replaces: a ``supersedes``
                relation is added in the same commit.

        Raises:
            InvalidInput: empty content, unknown type, confidence outside [0, 1], or a
                ``supersedes`` target that is the memory itself or would close a cycle.
            SecretRefused: the content, agent, harness or anchor contains a credential and
                ``allow_secret`` is false.
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES`` (1 MiB).
            InvalidAnchor: the file is missing, outside the repository, binary, or the range is bad.
            UnknownMemory, AmbiguousId: a bad ``supersedes`` id.
        """
        from gitmem import codec, secret_scan
        from gitmem.models import Decay, Memory, Provenance, Relation

        type_ = _parse_enum(MemoryType, type, "type")
        scope_ = _parse_enum(Scope, scope, "scope")
        if not content or not content.strip():
            raise InvalidInput("memory content is empty", "pass the statement to remember")
        for name, text in (("content", content), ("--agent", agent), ("--harness", harness)):
            if text is not None and not _is_utf8(text):
                raise InvalidInput(f"{name} is not valid UTF-8 text")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        # Before anything is built: the stored record is at least as large as its content.
        check_size(content.encode("utf-8"), MAX_RECORD_BYTES, "the memory's content")
        secret_scan.check_content(content, allow=allow_secret)
        secret_scan.check_fields([(n, t) for n, t in (("--agent", agent), ("--harness", harness),
                                                      ("--file", file)) if t], allow=allow_secret)
        now = now or utc_now()
        head = self.ws.store.head_sha()
        anchor, fingerprint = None, None
        if file is not None:
            anchor, fingerprint = self._anchor(file, head)
        status, reason = Status.FRESH, None
        if head is None:
            status, reason = Status.UNANCHORED, "repository had no commits when learned"
        provenance = Provenance(
            observed_at=now,
            git_sha=head,
            source_agent=agent,
            source_harness=harness,
            context_ref=anchor.ref() if anchor else None,
            fingerprint=fingerprint,
        )
        half_life = half_life_for(type_, self.ws.settings.decay)
        digest = content_digest(content)
        before = self.ws.store.tip()
        target = self._supersedes_target(supersedes, type_, content, digest, before)

        def link(memory: Memory) -> None:
            if target is not None and target not in memory.relation_targets(RelationType.SUPERSEDES):
                memory.relations = [*memory.relations,
                                    Relation(type=RelationType.SUPERSEDES, target=target)]

        def build(tip: str | None) -> Mutation | None:
            held = self._holders(digest, tip)
            found, known = pick_id(type_, content, {i: h[2] for i, h in held.items()})
            shorter = [f"{type_.value}-{digest[:n]}" for n in ID_HEX_LENGTHS if n < len(id_hex(found))]
            collision = None if known else next((i for i in shorter if i in held), None)
            if known:
                existing, existing_blob, _ = held[found]
                assert existing is not None  # known: its content was read
                memory = _reverify(existing, provenance, confidence, status, reason, now)
                link(memory)
                data = codec.update(self.ws.store.read_blob(existing_blob), memory)
                check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
                message = f"reverify {memory.id}: {first_words(content)}"
                return Mutation({record_path(memory.id): data}, message, result=(memory, False, None))
            memory = Memory(
                id=found,
                type=type_,
                scope=scope_,
                content=content,
                confidence=1.0 if confidence is None else confidence,
                provenance=provenance,
                decay=Decay(
                    half_life_days=half_life,
                    last_verified_at=now,
                    staleness_status=status,
                    reason=reason,
                ),
            )
            link(memory)
            data = codec.dump_new(memory)
            check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
            message = f"learn {memory.id}: {first_words(content)}"
            return Mutation({record_path(memory.id): data}, message, result=(memory, True, collision))

        commit, mutation = self.ws.store.transact(build)
        memory, created, collision = mutation.result  # type: ignore[union-attr, misc]
        similar = self._similar(memory, before, skip={target} if target else set())
        self.ws.records.after_commit(commit, {memory.id: memory}, mutation)
        return LearnResult(memory=memory, created=created, commit=commit, similar=similar,
                           collided_with=collision)

    def _supersedes_target(self, token: str | None, type_: MemoryType, content: str, digest: str,
                           tip: str | None) -> str | None:
        """The full id a learn's ``supersedes`` names, checked (see :meth:`learn`)."""
        if token is None:
            return None
        target = self.ws.records.resolve(token)
        held = self._holders(digest, tip)
        own, known = pick_id(type_, content, {i: h[2] for i, h in held.items()})
        if known and own == target:
            raise InvalidInput(f"{target} is the memory being learned; it cannot supersede itself")
        self._refuse_supersedes_cycle(own, target)
        return target

    def _similar(self, memory: Memory, tip: str | None, skip: set[str]) -> tuple[str, ...]:
        """Ids of live memories at ``tip`` that may say the same thing as ``memory``.

        Those anchored to overlapping lines of the same file come first, then near-duplicate
        statements (:mod:`gitmem.similarity`); refuted memories, ``memory`` itself and ``skip``
        are left out. At most three.

        A write must cost the same with 100 or 100,000 memories, so this reads no record from
        git: it compares with the records table the read cache built last (every wake, recall,
        list and status builds one; the pre-turn hook, each turn), and keeps only ids still at
        ``tip`` (one shard listing each). Memories learned since that table are not compared,
        and with no table cached there is nothing to compare with.
        """
        from gitmem.anchors import InvalidAnchor, parse_anchor
        from gitmem.similarity import find_similar

        table = self.ws.records.latest_table()
        if table is None or not len(table):
            return ()
        c = table.columns
        refuted = Status.REFUTED.value
        skip = {*skip, memory.id, *memory.relation_targets(RelationType.SUPERSEDES)}
        live = [r for r, status in enumerate(c["status"])
                if status != refuted and table.ids[r] not in skip]
        found: list[str] = []
        ref = memory.provenance.context_ref if memory.provenance else None
        if ref:
            try:
                mine = parse_anchor(ref)
            except InvalidAnchor:
                mine = None
            for r in live if mine is not None else ():
                prov = c["prov"][r]
                try:
                    other = parse_anchor(prov[2]) if prov is not None and prov[2] else None
                except InvalidAnchor:
                    other = None
                if other is not None and mine is not None and _overlap(mine, other):
                    found.append(table.ids[r])
        texts = ((table.ids[r], c["content"][r]) for r in live if table.ids[r] not in found)
        found.extend(find_similar(memory.content, texts, limit=3))
        return tuple(i for i in found if i in self.ws.records.id_entries(i, tip))[:3]

    def _holders(self, digest: str, tip: str | None) -> dict[str, tuple[Memory | None, str, str | None]]:
        """Stored records (any type) whose id's hex part is a prefix of ``digest``.

        Every such id lives in the shard of ``digest``'s first two digits, so one shard tree
        is read. Returns id -> (record or ``None`` when unreadable, blob id, normalised
        content or ``None``).
        """
        prefixes = {digest[:n] for n in ID_HEX_LENGTHS}
        held: dict[str, tuple[Memory | None, str, str | None]] = {}
        for found, blob in self.ws.records.id_entries(digest[:8], tip).items():
            if id_hex(found) not in prefixes:
                continue
            try:
                record = read_record(self.ws.store, found, blob)
            except MalformedRecord:
                held[found] = (None, blob, None)
            else:
                held[found] = (record, blob, normalise_content(record.content))
        return held

    def _anchor(self, spec: str, head: str | None) -> tuple[Anchor, str]:
        """Validate ``--file`` against the working tree; return (anchor, fingerprint).

        Raises:
            InvalidAnchor: bare repository, bad path or range, or a file not in HEAD.
        """
        from gitmem import anchors
        from gitmem.errors import InvalidAnchor

        root = self.ws.store.workdir
        if root is None:
            raise InvalidAnchor("a bare repository has no working tree to anchor --file in")
        anchor = anchors.resolve_anchor(root, self.ws.cwd, spec)
        if head is not None and self.ws.store.blob_id_at(head, anchor.path) is None:
            raise InvalidAnchor(
                f"{anchor.path} is not in HEAD's tree",
                "commit it first, so that gitmem can tell when it changes",
            )
        data = (root / anchor.path).read_bytes()
        fingerprint = anchors.anchor_fingerprint(anchor, data)
        committed = self.ws.store.code().blob_at(head, anchor.path) if head is not None else None
        if committed is not None and anchors.anchor_fingerprint(anchor, committed) != fingerprint:
            # The anchor pairs HEAD's SHA with these lines: they must be HEAD's lines.
            raise InvalidAnchor(
                f"{anchor.ref()} has uncommitted changes in the working tree",
                "commit them first, so that the anchor points at code git knows",
            )
        return anchor, fingerprint

    # -- curation --------------------------------------------------------------------------

    def _edit(self, token: str, verb: str,
              edit: Callable[[Memory], Memory]) -> tuple[Memory, CommitInfo | None]:
        """Apply ``edit(memory) -> Memory`` to one record in one commit (CAS, rebuilt on retry)."""
        from gitmem import codec

        target = self.ws.records.get(token).id

        def build(tip: str | None) -> Mutation | None:
            blob = self.ws.store.blob_id_at(tip, record_path(target))
            try:
                current = read_record(self.ws.store, target, blob) if blob else None
            except MalformedRecord:
                current = None
            if current is None or blob is None:
                raise UnknownMemory(target)
            memory = edit(current.model_copy(deep=True))
            data = codec.update(self.ws.store.read_blob(blob), memory)
            check_size(data, MAX_RECORD_BYTES, f"record {target}")
            return Mutation({record_path(target): data}, f"{verb} {target}", result=memory)

        commit, mutation = self.ws.store.transact(build)
        memory: Memory = mutation.result  # type: ignore[union-attr, assignment]
        self.ws.records.after_commit(commit, {target: memory}, mutation)
        return memory, commit

    def refute(self, token: str, reason: str, by: str | None = None,
               allow_secret: bool = False) -> tuple[Memory, CommitInfo | None]:
        """Mark a memory refuted with a reason; refuted wins over every other status.

        Raises:
            InvalidInput: the reason is empty.
            SecretRefused: the reason or ``by`` contains a credential and ``allow_secret`` is false.
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES``.
            UnknownMemory, AmbiguousId: bad id.
        """
        if not reason or not reason.strip():
            raise InvalidInput("a refutation needs a reason", 'pass --reason "why it is wrong"')
        from gitmem import secret_scan
        from gitmem.models import Refutation

        check_size(reason.encode("utf-8", "surrogatepass"), MAX_RECORD_BYTES, "the reason")
        secret_scan.check_fields([("--reason", reason), *([("--by", by)] if by else [])],
                                 allow=allow_secret)

        def edit(m: Memory) -> Memory:
            m.refutation = Refutation(reason=reason, by=by, at=utc_now())
            if m.decay is not None:
                m.decay.staleness_status = Status.REFUTED
            return m

        return self._edit(token, "refute", edit)

    def set_confidence(self, token: str, confidence: float) -> tuple[Memory, CommitInfo | None]:
        """Change a memory's confidence (in [0, 1]).

        Raises:
            InvalidInput: confidence outside [0, 1].
        """
        if not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")

        def edit(m: Memory) -> Memory:
            m.confidence = confidence
            return m

        return self._edit(token, "confidence", edit)

    def link(self, source: str, target: str, kind: RelationType | str) -> tuple[Memory, CommitInfo | None]:
        """Add a typed relation ``source --kind--> target`` (idempotent).

        Raises:
            InvalidInput: unknown relation type, a memory linked to itself, or a
                ``supersedes`` link that would close a cycle (each memory of a cycle
                would hide the next, and all would leave wake).
            UnknownMemory, AmbiguousId: bad id.
        """
        kind_ = _parse_enum(RelationType, kind, "relation type")
        target_id = self.ws.records.get(target).id
        source_id = self.ws.records.get(source).id
        if source_id == target_id:
            raise InvalidInput("a memory cannot be linked to itself")
        if kind_ is RelationType.SUPERSEDES:
            self._refuse_supersedes_cycle(source_id, target_id)
        from gitmem.models import Relation

        def edit(m: Memory) -> Memory:
            if not any(r.type == kind_ and r.target == target_id for r in m.relations):
                m.relations = [*m.relations, Relation(type=kind_, target=target_id)]
            return m

        return self._edit(source, f"link {kind_.value} {target_id}:", edit)

    def _refuse_supersedes_cycle(self, source_id: str, target_id: str) -> None:
        """Raise if ``target_id`` already supersedes ``source_id``, directly or by a chain."""
        seen, frontier = {target_id}, [target_id]
        while frontier:
            current = frontier.pop()
            try:
                targets = self.ws.records.get(current).relation_targets(RelationType.SUPERSEDES)
            except GitmemError:
                continue  # a link to a forgotten or unreadable memory ends the chain
            if source_id in targets:
                raise InvalidInput(
                    f"{target_id} already supersedes {source_id}; a supersedes cycle would hide both",
                    "refute the memory that no longer holds instead",
                )
            frontier.extend(t for t in targets if t not in seen)
            seen.update(targets)

    def forget(self, token: str) -> CommitInfo | None:
        """Remove a memory from the tree; it stays in the ref's history.

        A malformed record can be forgotten too: nothing is parsed.

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        target = self.ws.records.resolve(token)

        def build(tip: str | None) -> Mutation | None:
            if self.ws.store.blob_id_at(tip, record_path(target)) is None:
                raise UnknownMemory(target)
            return Mutation({record_path(target): None}, f"forget {target}")

        commit, mutation = self.ws.store.transact(build)
        self.ws.records.after_commit(commit, {}, mutation)
        return commit

    def forget_path(self, path: str) -> CommitInfo | None:
        """Remove the entry at ``path`` of the memory tree (a file or a directory); it stays in history.

        What ``tur doctor`` names can be removed this way: a record in the wrong shard, a
        second record for an id, a symbolic link, a stray directory. The parts of the
        layout itself (``.gitmem``, ``memories``, a shard directory, ``continuity``) are
        refused unless they are not what they should be (a file named ``memories``).

        Raises:
            InvalidInput: no such entry, or a part of the layout.
        """
        path = path.strip().strip("/")
        store = self.ws.store

        def build(tip: str | None) -> Mutation | None:
            kind = store.entry_kind(tip, path)
            if kind is None:
                raise InvalidInput(f"no entry {path!r} in the memory tree",
                                   "`tur doctor` lists the entries gitmem skips")
            parts = path.split("/")
            structural = (path == FORMAT_PATH or (kind == "tree" and (
                path in ("memories", "continuity")
                or (len(parts) == 2 and parts[0] == "memories" and _is_shard(parts[1])))))
            if structural:
                raise InvalidInput(f"{path} is part of the memory tree's layout, not an entry to forget",
                                   "forget the memories in it by id")
            return Mutation({path: None}, f"forget {path}")

        commit, _ = store.transact(build)
        return commit

    def doctor(self, fix: bool = False) -> DoctorReport:
        """List what readers skip in the memory tree; with ``fix``, repair the layout in one commit.

        Problems are the layout problems of ``Store.record_layout`` and ``root_problems``
        and the malformed records. Repairs: a readable record in the wrong shard, whose id
        has no record yet, moves to where its id says; every other layout problem (a second
        record for an id, a non-regular entry, a stray name) is removed from the tree. It
        stays in the ref's history. Malformed records are listed, never changed: fix them
        by hand or ``tur forget`` them.
        """
        from gitmem.cache.records import layout_skipped

        store = self.ws.store
        report = DoctorReport()

        def build(tip: str | None) -> Mutation | None:
            entries, problems = store.record_layout(tip)
            problems = sorted([*store.root_problems(tip), *problems])
            report.problems = [layout_skipped(p.path, p.object_id, p.reason) for p in problems]
            report.repairs = []
            placed = set(entries)
            changes: dict[str, bytes | None] = {}
            for problem in problems:
                moved = (self._misplaced_record(problem.path, problem.object_id, placed)
                         if problem.misplaced else None)
                if moved is not None:
                    changes[record_path(moved)] = store.read_blob(problem.object_id)
                    placed.add(moved)
                    report.repairs.append(f"move {problem.path} to {record_path(moved)}")
                else:
                    report.repairs.append(f"remove {problem.path}")
                changes[problem.path] = None
            if not fix or not changes:
                return None
            return Mutation(changes, "doctor: " + "; ".join(report.repairs))

        report.commit, _ = store.transact(build)
        table, _ = self.ws.records.table(store.tip())
        report.malformed = list(table.bad)
        return report

    def _misplaced_record(self, path: str, blob: str, placed: set[str]) -> str | None:
        """The id of a readable record found at ``path`` whose id has no record yet; else ``None``."""
        name = path.rsplit("/", 1)[-1]
        if not (path.startswith("memories/") and name.endswith(".yaml")):
            return None
        memory_id = name[: -len(".yaml")]
        if memory_id in placed or not ID_PATTERN.match(memory_id):
            return None
        try:
            read_record(self.ws.store, memory_id, blob)
        except (MalformedRecord, KeyError):
            return None
        return memory_id

    # -- import ----------------------------------------------------------------------------

    def import_legacy(
        self, paths: Iterable[str | os.PathLike[str]], allow_secret: bool = False
    ) -> ImportResult:
        """Import legacy ``.tur/memories/*.yaml`` records (files or directories) in one commit.

        Records keep their fields; the id is recomputed as ``<type>-<8 hex>`` (longer when
        a different statement holds it) and the old one is kept under ``legacy_id``.
        Records with no provenance load as ``unanchored`` with confidence 1.0 and no
        decay (EP-0131). A file is refused (listed in ``failed``) when a field looks like a
        credential or its record would be larger than ``MAX_RECORD_BYTES``.

        Raises:
            InvalidInput: a path does not exist.
        """
        from gitmem import codec, legacy, secret_scan
        from gitmem.anchors import parse_anchor

        files = legacy.expand_paths(paths)
        prepared: list[tuple[str, Memory, bytes]] = []
        result = ImportResult()
        for path in files:
            try:
                memory = legacy.to_memory(path)
                # The same gates as learn: no credential in any field, no anchor leaving the
                # repository, nothing a reader would refuse. Serialised once, outside
                # ``build``: a retry after a concurrent write only re-diffs.
                data = codec.dump_new(memory)
                check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
                secret_scan.check_content(memory.content, allow=allow_secret)
                fields = [f for f in secret_scan.record_fields(memory.model_dump(mode="json"))
                          if f[0] != "content"]
                secret_scan.check_fields(fields, allow=allow_secret)
                if memory.provenance is not None and memory.provenance.context_ref:
                    parse_anchor(memory.provenance.context_ref)
            except GitmemError as exc:
                result.failed.append(f"{path}: {exc}")
                continue
            prepared.append((str(path), memory, data))

        written: dict[str, Memory] = {}

        def build(tip: str | None) -> Mutation | None:
            result.imported.clear()
            result.unchanged.clear()
            result.renamed.clear()
            written.clear()
            blobs = self.ws.store.entries(tip)
            stored: dict[str, str | None] = {}
            assigned: dict[str, str] = {}  # id -> normalised content, given in this import
            changes: dict[str, bytes | None] = {}
            for path, memory, data in prepared:
                found = self._import_id(memory, blobs, stored, assigned)
                if found in assigned:
                    result.unchanged.append(found)  # the same statement twice in this import
                    continue
                if found != memory.id:
                    result.renamed.append(f"{path}: {memory.id} names a different memory; "
                                          f"imported as {found}")
                    memory = memory.model_copy(update={"id": found})
                    data = codec.dump_new(memory)
                assigned[found] = normalise_content(memory.content)
                if found in blobs and self.ws.store.read_blob(blobs[found]) == data:
                    result.unchanged.append(found)
                    continue
                changes[record_path(found)] = data
                written[found] = memory
                result.imported.append(found)
            if not changes:
                return None
            return Mutation(changes, f"import {len(changes)} memories")

        result.commit, mutation = self.ws.store.transact(build)
        self.ws.records.after_commit(result.commit, written, mutation)
        return result

    def _import_id(self, memory: Memory, blobs: dict[str, str], stored: dict[str, str | None],
                   assigned: dict[str, str]) -> str:
        """The id an imported record is stored under: its own, or a longer one on a collision.

        A stored record of the same type and statement is replaced (re-importing an edited
        file); a different statement keeps its id and the import gets a longer one
        (:func:`gitmem.ids.pick_id`). ``stored`` memoises the normalised contents read.
        """
        digest = content_digest(memory.content)
        held: dict[str, str | None] = {}
        for digits in ID_HEX_LENGTHS:
            candidate = f"{memory.type.value}-{digest[:digits]}"
            if candidate in assigned:
                held[candidate] = assigned[candidate]
            elif candidate in blobs:
                if candidate not in stored:
                    try:
                        record = read_record(self.ws.store, candidate, blobs[candidate])
                        stored[candidate] = normalise_content(record.content)
                    except MalformedRecord:
                        stored[candidate] = None
                held[candidate] = stored[candidate]
        return pick_id(memory.type, memory.content, held)[0]


def _is_shard(name: str) -> bool:
    return len(name) == 2 and all(c in "0123456789abcdef" for c in name)


def _overlap(a: Anchor, b: Anchor) -> bool:
    """True when two anchors name the same file and their line ranges (or whole files) meet."""
    if a.path != b.path:
        return False
    if a.start is None or a.end is None or b.start is None or b.end is None:
        return True
    return a.start <= b.end and b.start <= a.end


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parse_enum(enum: type[_E], value: Any, what: str) -> _E:
    try:
        return enum(value)
    except ValueError:
        choices = " | ".join(e.value for e in enum)
        raise InvalidInput(f"unknown {what} {value!r}", f"use one of {choices}") from None


def _reverify(
    existing: Memory,
    provenance: Provenance,
    confidence: float | None,
    status: Status,
    reason: str | None,
    now: datetime,
) -> Memory:
    """Learning known content again corroborates it: new anchor and time, same observed_at.

    Without a new anchor the old one is kept, with the status its last check gave; a
    stale one is then left as it is (its time decay does not restart).
    """
    from gitmem.models import Decay

    memory = existing.model_copy(deep=True)
    old = memory.provenance
    kept_anchor = provenance.context_ref is None and old is not None and bool(old.context_ref)
    if kept_anchor:
        # Re-learning without --file keeps the anchor it had, at the commit it was
        # checked at: moving only the SHA would silently point it at other lines. Its
        # staleness is that anchor's, so the last check's status and reason stay.
        status = memory.decay.staleness_status if memory.decay else status
        reason = memory.decay.reason if memory.decay else reason
    else:
        memory.provenance = provenance.model_copy(
            update={"observed_at": old.observed_at if old else provenance.observed_at}
        )
    if confidence is not None:
        memory.confidence = confidence
    # A stale anchor is not corroborated by repeating the statement: the record (and so
    # the ref) stays as it was, unless the confidence changed.
    if memory.refutation is None and not (kept_anchor and status is Status.STALE):
        decay = memory.decay or Decay()
        decay.last_verified_at = now
        decay.staleness_status = status
        decay.reason = reason
        memory.decay = decay
    return memory
