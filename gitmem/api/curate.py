"""Writing memories, for the facade: learn, curation (refute, confidence, link, forget) and import.

Every method makes exactly one commit on ``refs/tur/memories`` (or none when nothing
changed), built by a function of the current tip and committed with compare-and-swap
(:meth:`gitmem.store.Store.transact`), so concurrent processes never lose a write.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from gitmem.api.results import DoctorReport, ImportResult, LearnResult, TurImportResult
from gitmem.cache.reader import read_record, record_path
from gitmem.errors import GitmemError, InvalidInput, MalformedRecord, UnknownMemory
from gitmem.record.decay import half_life_for
from gitmem.record.ids import ID_HEX_LENGTHS, content_digest, id_hex, normalise_content, pick_id
from gitmem.record.limits import MAX_RECORD_BYTES, check_size
from gitmem.store import FORMAT_PATH, CommitInfo, Mutation
from gitmem.text import first_words
from gitmem.vocabulary import ID_PATTERN, MemoryType, RelationType, Scope, Status, precise_now, utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.importers.tur_store import Converted, RepoView, TurNote, TurPersona, TurStore
    from gitmem.record.anchors import Anchor
    from gitmem.record.models import Memory, Provenance

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
        from gitmem import codec
        from gitmem.record.models import Decay, Memory, Provenance, Relation
        from gitmem.sharing import secret_scan

        type_ = _parse_enum(MemoryType, type, "type")
        scope_ = _parse_enum(Scope, scope, "scope")
        if not content or not content.strip():
            raise InvalidInput("memory content is empty", "pass the statement to remember")
        for name, text in (("content", content), ("--agent", agent), ("--harness", harness)):
            if text is not None and not _is_utf8(text):
                raise InvalidInput(f"{name} is not valid UTF-8 text",
                                   "pass text (lone surrogates cannot be stored)")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        if confidence is not None:
            confidence += 0.0  # -0.0 is stored and shown as 0.0
        # Before anything is built: the stored record is at least as large as its content.
        check_size(content.encode("utf-8"), MAX_RECORD_BYTES, "the memory's content")
        secret_scan.check_content(content, allow=allow_secret)
        secret_scan.check_fields([(n, t) for n, t in (("--agent", agent), ("--harness", harness),
                                                      ("--file", file)) if t], allow=allow_secret)
        stamp_at = now or precise_now()
        now = now or utc_now()
        who = self.ws.store.identity()
        head = self.ws.store.head_sha()
        anchor, fingerprint = None, None
        if file is not None:
            anchor, fingerprint = self._anchor(file, head)
        status, reason = Status.FRESH, None
        if head is None:
            status, reason = Status.UNANCHORED, "HEAD had no commit when learned"
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
                if _differs(existing, memory):
                    memory.stamp(existing, who, stamp_at)
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
                author=who,
            )
            link(memory)
            memory.stamp(None, who, stamp_at)
            data = codec.dump_new(memory)
            check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
            message = f"learn {memory.id}: {first_words(content)}"
            return Mutation({record_path(memory.id): data}, message, result=(memory, True, collision))

        commit, mutation = self.ws.store.transact(build)
        memory, created, collision = mutation.result  # type: ignore[union-attr, misc]
        # A statement already known was compared when it was first learned: naming its
        # neighbours again on every re-verification is noise.
        similar, said = self._similar(memory, before, skip={target} if target else set()) if created \
            else ((), ())
        self.ws.records.after_commit(commit, {memory.id: memory}, mutation)
        return LearnResult(memory=memory, created=created, commit=commit, similar=similar,
                           collided_with=collision, similar_statements=said)

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

    def _similar(self, memory: Memory, tip: str | None,
                 skip: set[str]) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
        """Ids of live memories at ``tip`` that may say the same thing as ``memory``, and their statements.

        Those anchored to overlapping lines of the same file come first, then near-duplicate
        statements (:mod:`gitmem.context.similarity`); refuted memories, ``memory`` itself and ``skip``
        are left out. At most three. Their statements are those of the index, given when it
        is the index of ``tip``'s tree (so that they are the stored ones), else ``None``.

        A write must cost the same with 100 or 100,000 memories, so this reads no record from
        git: it compares with the records table the read cache built last (every wake, recall,
        list and status builds one; the pre-turn hook, each turn), and keeps only ids still at
        ``tip`` (one shard listing each). Memories learned since that table are not compared,
        and with no table cached there is nothing to compare with. The statements are
        compared through that table's :class:`~gitmem.context.similarity.StatementIndex` (saved
        per tree; each write saves the one of the tree it makes), the anchors only for a
        memory with one.
        """
        skip = {*skip, memory.id, *memory.relation_targets(RelationType.SUPERSEDES)}
        found: list[str] = []
        ref = memory.provenance.context_ref if memory.provenance else None
        table = self.ws.records.latest_table() if ref else None
        if table is not None and ref:
            from gitmem.record.anchors import (  # (only for a memory with an anchor)
                InvalidAnchor,
                parse_anchor,
            )

            c = table.columns
            refuted = Status.REFUTED.value
            live = [r for r, status in enumerate(c["status"])
                    if status != refuted and table.ids[r] not in skip]
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
        got = self.ws.records.similar_statements(memory.content, {*skip, *found}, 3)
        if got is None:  # no table cached: nothing to compare with
            return (), ()
        tree, near = got
        similar = tuple(i for i in [*found, *near] if i in self.ws.records.id_entries(i, tip))[:3]
        if not similar or tree != self.ws.store.subtree_id(tip, "memories"):
            return similar, ()
        return similar, self.ws.records.statements_of(tree, similar)

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
        from gitmem.errors import InvalidAnchor
        from gitmem.record import anchors

        root = self.ws.store.workdir
        if root is None:
            raise InvalidAnchor("a bare repository has no working tree to anchor --file in")
        anchor = anchors.resolve_anchor(root, self.ws.cwd, spec)
        if head is not None and self.ws.store.blob_id_at(head, anchor.path) is None:
            raise InvalidAnchor(
                f"{anchor.path} is not in HEAD's tree",
                "commit it first, so that gitmem can tell when it changes",
            )
        code = self.ws.store.code()
        # As git would store it: a file with a clean/smudge filter is compared cleaned.
        data = code.worktree_file(anchor.path)
        if data is None:
            data = (root / anchor.path).read_bytes()
        fingerprint = anchors.anchor_fingerprint(anchor, data)
        committed = code.blob_at(head, anchor.path) if head is not None else None
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
            if _differs(current, memory):
                memory.stamp(current, self.ws.store.identity())
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
        from gitmem.record.models import Refutation
        from gitmem.sharing import secret_scan

        check_size(reason.encode("utf-8", "surrogatepass"), MAX_RECORD_BYTES, "the reason")
        secret_scan.check_fields([("--reason", reason), *([("--by", by)] if by else [])],
                                 allow=allow_secret)

        def edit(m: Memory) -> Memory:
            before = m.refutation.status_before if m.refutation else (
                m.decay.staleness_status if m.decay is not None else None)
            m.refutation = Refutation(reason=reason, by=by, at=utc_now(), status_before=before)
            if m.decay is not None:
                m.decay.staleness_status = Status.REFUTED
            return m

        return self._edit(token, "refute", edit)

    def unrefute(self, token: str) -> tuple[Memory, CommitInfo | None]:
        """Withdraw a memory's refutation (``tur refute --undo``): a change like any other.

        The status goes back to what it was when the memory was refuted; a record refuted
        before gitmem kept that becomes ``stale`` with a reason asking for ``tur verify``.

        Raises:
            InvalidInput: the memory is not refuted.
            UnknownMemory, AmbiguousId: bad id.
        """
        current = self.ws.records.get(token)
        if current.refutation is None:
            raise InvalidInput(f"{current.id} is not refuted", "nothing to undo")

        def edit(m: Memory) -> Memory:
            if m.refutation is None:
                return m
            before = m.refutation.status_before
            m.refutation = None
            if m.decay is not None:
                if before is None or before is Status.REFUTED:
                    m.decay.staleness_status = Status.STALE
                    m.decay.reason = "refutation withdrawn; `tur verify` checks it again"
                else:
                    m.decay.staleness_status = before
            return m

        return self._edit(token, "unrefute", edit)

    def edit(self, token: str, *, content: str | None = None, type: MemoryType | str | None = None,
             file: str | None = None, allow_secret: bool = False) -> tuple[Memory, CommitInfo | None]:
        """Change a memory's content, type or anchor in place: the id stays, history keeps the old text.

        The writer becomes the memory's ``author``. A new anchor is taken at HEAD (as
        ``learn --file``) and makes the memory fresh there; a new type sets the half-life of
        that type.

        Raises:
            InvalidInput: nothing to change, empty content, or an unknown type.
            SecretRefused: the content or anchor looks like a credential and ``allow_secret``
                is false.
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES``.
            InvalidAnchor: as :meth:`learn`'s ``file``.
            UnknownMemory, AmbiguousId: bad id.
        """
        from gitmem.record.models import Decay, Provenance
        from gitmem.sharing import secret_scan

        if content is None and type is None and file is None:
            raise InvalidInput("nothing to edit", "pass --content, --type or --file")
        type_ = _parse_enum(MemoryType, type, "type") if type is not None else None
        if content is not None:
            if not content.strip():
                raise InvalidInput("memory content is empty", "pass the new statement")
            if not _is_utf8(content):
                raise InvalidInput("content is not valid UTF-8 text",
                                   "pass text (lone surrogates cannot be stored)")
            check_size(content.encode("utf-8"), MAX_RECORD_BYTES, "the memory's content")
            secret_scan.check_content(content, allow=allow_secret)
        if file is not None:
            secret_scan.check_fields([("--file", file)], allow=allow_secret)
        head = self.ws.store.head_sha()
        anchor = self._anchor(file, head) if file is not None else None
        who = self.ws.store.identity()
        policy = self.ws.settings.decay if type_ is not None else None

        def edit(m: Memory) -> Memory:
            before = _statement(m)
            if content is not None:
                m.content = content
            if type_ is not None and type_ is not m.type:
                m.type = type_
                if m.decay is not None and policy is not None:
                    m.decay.half_life_days = half_life_for(type_, policy)
            if anchor is not None:
                prov = m.provenance or Provenance()
                m.provenance = prov.model_copy(update={
                    "git_sha": head, "context_ref": anchor[0].ref(), "fingerprint": anchor[1]})
                if m.refutation is None:
                    decay = m.decay or Decay(half_life_days=half_life_for(m.type, self.ws.settings.decay))
                    m.decay = decay.model_copy(update={
                        "staleness_status": Status.FRESH, "reason": None, "last_verified_at": utc_now()})
            if _statement(m) != before:
                m.author = who
            return m

        return self._edit(token, "edit", edit)

    def set_confidence(self, token: str, confidence: float) -> tuple[Memory, CommitInfo | None]:
        """Change a memory's confidence (in [0, 1]).

        Raises:
            InvalidInput: confidence outside [0, 1].
        """
        if not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        confidence += 0.0  # -0.0 is stored and shown as 0.0

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
            raise InvalidInput("a memory cannot be linked to itself", "name two different memories")
        if kind_ is RelationType.SUPERSEDES:
            self._refuse_supersedes_cycle(source_id, target_id)
        from gitmem.record.models import Relation

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

    def _read_legacy(self, files: list[Path], allow_secret: bool, result: ImportResult,
                     progress: Callable[[int, int], None] | None) -> list[tuple[str, Memory, bytes]]:
        """Read and check legacy record files: ``(path, memory, original bytes)`` for each good one.

        A file refused (a credential, an anchor leaving the repository, too large, unreadable)
        gets its line in ``result.failed``. ``progress(files_read, files)`` follows the reading.
        An abbreviated ``provenance.git_sha`` naming a commit of this repository is stored
        in full, as ``learn`` stores it: a short SHA can become ambiguous as history grows.
        """
        from gitmem import codec
        from gitmem.importers import legacy
        from gitmem.record.anchors import parse_anchor
        from gitmem.sharing import secret_scan

        parsed: list[tuple[str, Memory, bytes]] = []
        for number, path in enumerate(files, 1):
            if progress is not None:
                progress(number - 1, len(files))
            try:
                memory, original = legacy.read(path)
                # The same gates as learn: no credential in any field, no anchor leaving the
                # repository, nothing a reader would refuse (checked again on the bytes written).
                check_size(codec.dump_new(memory), MAX_RECORD_BYTES, f"record {memory.id}")
                secret_scan.check_content(memory.content, allow=allow_secret)
                fields = [f for f in secret_scan.record_fields(memory.model_dump(mode="json"))
                          if f[0] != "content"]
                secret_scan.check_fields(fields, allow=allow_secret)
                if memory.provenance is not None and memory.provenance.context_ref:
                    parse_anchor(memory.provenance.context_ref)
                memory = self._full_sha(memory)
            except GitmemError as exc:
                result.failed.append(f"{path}: {exc}")
                continue
            parsed.append((str(path), memory, original))
        if progress is not None:
            progress(len(files), len(files))
        return parsed

    def import_legacy(
        self, paths: Iterable[str | os.PathLike[str]], allow_secret: bool = False, dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Import legacy ``.tur/memories/*.yaml`` records (files or directories) in one commit.

        Records keep their fields, comments and key order; the id is recomputed as
        ``<type>-<8 hex>`` (longer when a different statement holds it) and the old one is
        kept under ``legacy_id``. Relations naming an id of the batch (old or new) or of the
        store point at the new ids; others are kept and listed in ``notes``. Records with no
        provenance load as ``unanchored`` with confidence 1.0 and no decay (EP-0131). A file
        is refused (listed in ``failed``) when a field looks like a credential or its record
        would be larger than ``MAX_RECORD_BYTES``. With ``dry_run`` nothing is written.
        ``progress(files_read, files)`` is called as the files are read and checked.

        Raises:
            InvalidInput: a path does not exist.
        """
        from gitmem import codec
        from gitmem.errors import TooLarge
        from gitmem.importers import legacy

        result = ImportResult(dry_run=dry_run)
        parsed = self._read_legacy(legacy.expand_paths(paths), allow_secret, result, progress)
        refused = len(result.failed)

        written: dict[str, Memory] = {}

        def build(tip: str | None) -> Mutation | None:
            result.imported.clear()
            result.unchanged.clear()
            result.renamed.clear()
            del result.failed[refused:]
            written.clear()
            blobs = self.ws.store.entries(tip)
            stored: dict[str, str | None] = {}
            assigned: dict[str, str] = {}  # id -> normalised content, given in this import
            batch: list[tuple[str, Memory, bytes]] = []
            for path, memory, original in parsed:
                found = self._import_id(memory, blobs, stored, assigned)
                if found in assigned:
                    result.unchanged.append(found)  # the same statement twice in this import
                    continue
                memory = memory.model_copy(deep=True)
                if found != memory.id:
                    result.renamed.append(f"{path}: {memory.id} names a different memory; "
                                          f"imported as {found}")
                    memory = memory.model_copy(update={"id": found})
                assigned[found] = normalise_content(memory.content)
                batch.append((path, memory, original))
            result.notes = legacy.rewrite_relations([m for _, m, _ in batch], self._known(tip))
            changes: dict[str, bytes | None] = {}
            for path, memory, original in batch:
                try:  # the file itself, edited: its comments and key order survive (docs/storage.md)
                    data = codec.update(original, memory, str(memory.id))
                except MalformedRecord as exc:  # YAML the round-trip writer cannot reproduce
                    result.notes.append(f"{memory.id}: written without the file's comments: {exc.reason}")
                    data = codec.dump_new(memory)
                try:
                    check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
                except TooLarge as exc:
                    result.failed.append(f"{path}: {exc}")
                    continue
                if memory.id in blobs and self.ws.store.read_blob(blobs[memory.id]) == data:
                    result.unchanged.append(memory.id)
                    continue
                changes[record_path(memory.id)] = data
                written[memory.id] = memory
                result.imported.append(memory.id)
            if not changes:
                return None
            return Mutation(changes, f"import {len(changes)} memories")

        if dry_run:
            build(self.ws.store.tip())
        else:
            result.commit, mutation = self.ws.store.transact(build)
            self.ws.records.after_commit(result.commit, written, mutation)
        return result

    def _full_sha(self, memory: Memory) -> Memory:
        """``memory`` with its abbreviated observed commit written in full, when it resolves here."""
        prov = memory.provenance
        sha = prov.git_sha if prov is not None else None
        if prov is None or not sha or len(sha) == 40:
            return memory
        full = self.ws.store.code().resolve_commit(sha)
        if full is None:  # not a commit of this repository: kept, and reported when verified
            return memory
        return memory.model_copy(update={"provenance": prov.model_copy(update={"git_sha": full})})

    def _import_id(self, memory: Memory, blobs: dict[str, str], stored: dict[str, str | None],
                   assigned: dict[str, str]) -> str:
        """The id an imported record is stored under: its own, or a longer one on a collision.

        A stored record of the same type and statement is replaced (re-importing an edited
        file); a different statement keeps its id and the import gets a longer one
        (:func:`gitmem.record.ids.pick_id`). ``stored`` memoises the normalised contents read.
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

    def _known(self, tip: str | None) -> Callable[[str], str | None]:
        """``token -> id`` for an exact id or legacy id stored at ``tip`` (else ``None``)."""
        entries = self.ws.store.entries(tip)
        index = self.ws.records.legacy_index(tip)

        def known(token: str) -> str | None:
            if token in entries:
                return token
            ids = set(index.get(token, ()))
            return ids.pop() if len(ids) == 1 else None

        return known

    def import_tur(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        persona: str | None = None,
        allow_secret: bool = False,
        dry_run: bool = False,
    ) -> TurImportResult:
        """Import a store of the Tur package (its memories and persona) in one commit.

        Every mapped field is listed in docs/coming-from-tur.md. Each memory keeps its Tur
        hash as ``legacy_id`` (every command resolves it); its relations point at the new
        ids; a memory already stored (same type and content) only gains legacy ids and
        relations, so a second run changes nothing. The persona becomes ``persona.yaml``
        unless another one is stored, and the latest session note a continuity note.

        Args:
            path: the project directory holding ``.tur/`` (default: the working tree's root).
            home: the user-level store (``~/.tur``) to read too, or ``None``.
            persona: the persona's name or id; default the active or only one.
            allow_secret: import content that looks like a credential.
            dry_run: write nothing; the result says what an import would do.

        Raises:
            InvalidInput: no Tur store there, an unknown persona, or several and none chosen.
        """
        from gitmem.importers import tur_store

        found = tur_store.find_store(self._tur_path(path), self._tur_path(home) if home else None, persona)
        result = TurImportResult(
            sources=[str(r) for r in found.roots], files=len(found.files) + len(found.unreadable),
            persona=f"{found.persona_name} ({found.persona_id})", not_imported=found.not_imported,
            dry_run=dry_run,
        )
        result.failed.extend(f"{p}: {why}" for p, why in found.unreadable)
        if found.persona is not None and found.persona.dropped:
            result.notes.append(f"persona: {', '.join(found.persona.dropped)} not imported "
                                "(Tur's runtime settings, not identity)")
        converted, kept = self._convert_tur(found, result, allow_secret)
        before = list(result.failed)

        def build(tip: str | None) -> Mutation | None:
            changes, written, collided = self._tur_changes(tip, kept, found.persona, result, dry_run)
            if found.latest_note is not None:
                path, body = _continuity_note(found.latest_note)
                exists = self.ws.store.read_path(tip, path) is not None
                result.note_status = "unchanged" if exists else "imported"
                if not exists:
                    changes[path] = body
            result.failed = [*before, *collided]
            if not changes:
                return None
            what = f"{len(result.imported)} new, {len(result.merged)} merged"
            if result.persona_status == "imported":
                what += ", persona"
            if result.note_status == "imported":
                what += ", continuity note"
            return Mutation(changes, f"import from Tur ({found.persona_name}): {what}", result=written)

        if dry_run:
            build(self.ws.store.tip())
        else:
            result.commit, mutation = self.ws.store.transact(build)
            if result.commit is not None and mutation is not None:
                self.ws.records.after_commit(result.commit.sha, cast("dict[str, Memory]", mutation.result))
        _count(result, converted, kept)
        return result

    def _convert_tur(self, found: TurStore, result: TurImportResult,
                     allow_secret: bool) -> tuple[list[Converted], dict[str, Converted]]:
        """Map every file of ``found``; fold duplicates; refuse credentials (failures into ``result``)."""
        from gitmem.importers import tur_store
        from gitmem.record.ids import normalise_content
        from gitmem.sharing import secret_scan

        view = self._repo_view(found.project)
        converted: list[tur_store.Converted] = []
        for file in found.files:
            try:
                converted.append(tur_store.convert(file, view))
            except tur_store.Unmappable as exc:
                result.failed.append(f"{file.path}: {exc.reason}")
                result.states.setdefault(file.state, Counter())["not imported"] += 1
        kept, collisions = tur_store.fold(converted)
        result.failed.extend(f"{c.file.path}: {why}" for c, why in collisions)
        result.folded = len(converted) - len(kept) - len(collisions)
        table, _ = self.ws.records.table(self.ws.store.tip())
        # Content already stored was scanned when it was stored; the rest in one scan.
        scanned = [] if allow_secret else [
            mid for mid, item in kept.items()
            if (row := table.row(mid)) is None
            or normalise_content(table.columns["content"][row]) != normalise_content(item.memory.content)]
        texts = [kept[mid].memory.content for mid in scanned]
        for mid, findings in zip(scanned, secret_scan.scan_texts(texts) if texts else [], strict=True):
            refused = secret_scan.refusal(findings)
            if refused is not None:
                result.failed.append(f"{kept.pop(mid).file.path}: {refused}")
        for item in converted:
            result.notes.extend(f"{item.file.path.name}: {note}" for note in item.notes)
        return converted, kept

    def _tur_path(self, path: str | os.PathLike[str] | None) -> Path:
        if path is None:
            return self.ws.store.workdir or self.ws.cwd
        return (self.ws.cwd / Path(path).expanduser()).resolve()

    def _repo_view(self, project: Path | None) -> RepoView:
        from gitmem.importers.tur_store import RepoView

        workdir = self.ws.store.workdir
        base = ""
        if project is not None and workdir is not None:
            try:
                base = project.resolve().parent.relative_to(workdir.resolve()).as_posix()
            except ValueError:
                base = ""  # a store outside the repository: its paths are taken from the root
        code = self.ws.store.code()
        return RepoView(workdir, "" if base == "." else base, code.resolve_commit, code.blob_at)

    def _tur_changes(
        self, tip: str | None, kept: dict[str, Converted], persona: TurPersona | None,
        result: TurImportResult, dry_run: bool,
    ) -> tuple[dict[str, bytes | None], dict[str, Memory], list[str]]:
        """The tree changes of a Tur import at ``tip``, the records written, the id collisions.

        A dry run leaves the new records' bytes empty: it only counts them, and
        serialising is most of an import's time.
        """
        from gitmem import codec
        from gitmem.api.context import PERSONA_PATH
        from gitmem.importers import legacy, tur_store
        from gitmem.record.ids import normalise_content

        result.imported.clear()
        result.merged.clear()
        result.unchanged.clear()
        known = self._known(tip)
        batch = {mid: item.memory.model_copy(deep=True) for mid, item in kept.items()}
        on_stored, notes = tur_store.link_superseders(kept, batch, known)
        notes += legacy.rewrite_relations(list(batch.values()), known)
        result.notes = [n for n in result.notes if not n.startswith("relation: ")]
        result.notes += [f"relation: {n}" for n in notes]
        table, _ = self.ws.records.table(tip)
        changes: dict[str, bytes | None] = {}
        written: dict[str, Memory] = {}
        collided: list[str] = []
        for mid in sorted(set(batch) | set(on_stored)):
            memory = batch.get(mid)
            row = table.row(mid)
            if row is None:
                if memory is None:
                    continue  # a superseder forgotten meanwhile
                changes[record_path(mid)] = b"" if dry_run else codec.dump_new(memory)
                written[mid] = memory
                result.imported.append(mid)
                continue
            stored = self.ws.records.cache.memory(table, row)
            if memory is not None and normalise_content(stored.content) != normalise_content(memory.content):
                collided.append(f"{kept[mid].file.path}: its id {mid} is taken by another stored memory")
                continue
            merged = _merged(stored, memory, on_stored.get(mid, []))
            if merged is None:
                result.unchanged.append(mid)
                continue
            changes[record_path(mid)] = codec.update(self.ws.store.read_blob(table.blobs[row]), merged, mid)
            written[mid] = merged
            result.merged.append(mid)
        if persona is not None:
            data = (f"# Tur persona {persona.name} ({persona.uuid}), imported from {persona.source.name}\n"
                    .encode() + codec.dump_mapping(persona.mapping))
            current = self.ws.store.read_path(tip, PERSONA_PATH)
            if current is None:
                changes[PERSONA_PATH] = data
                result.persona_status = "imported"
            else:
                result.persona_status = "unchanged" if current == data else "kept the stored persona"
        return changes, written, collided


def _is_shard(name: str) -> bool:
    return len(name) == 2 and all(c in "0123456789abcdef" for c in name)


def _overlap(a: Anchor, b: Anchor) -> bool:
    """True when two anchors name the same file and their line ranges meet (a whole file: both whole)."""
    if a.path != b.path:
        return False
    if a.start is None or a.end is None or b.start is None or b.end is None:
        # A whole file is the same anchor only as the same whole file.
        return (a.start is None or a.end is None) and (b.start is None or b.end is None)
    return a.start <= b.end and b.start <= a.end



def _continuity_note(note: TurNote) -> tuple[str, bytes]:
    """Tree path and bytes of a Tur session note as a continuity note (named as ``spark`` names them).

    The name's hex comes from the text, not at random, so a second import finds it.
    """
    import hashlib

    from gitmem.api.context import CONTINUITY_DIR

    digest = hashlib.sha256(note.text.encode("utf-8")).hexdigest()[:6]
    return f"{CONTINUITY_DIR}/{note.at:%Y%m%dT%H%M%S.%fZ}-{digest}.md", (note.text + "\n").encode("utf-8")


def _count(result: TurImportResult, converted: list[Converted], kept: dict[str, Converted]) -> None:
    """Fill the report's counts per state, type and anchor from what became of each file."""
    failed = {line.split(": ", 1)[0] for line in result.failed}
    for item in converted:
        head = kept.get(item.memory.id)
        if head is None or str(head.file.path) in failed or str(item.file.path) in failed:
            became = "not imported"
        else:
            became = item.became if head is item else "folded"
        result.states.setdefault(item.state, Counter())[became] += 1
        if became != "not imported":
            result.types[item.tur_type] += 1
            result.mapped_as[item.tur_type] = item.memory.type.value
            result.anchors[item.anchor] += 1


def _merged(stored: Memory, imported: Memory | None, supersedes: list[str]) -> Memory | None:
    """``stored`` with the legacy ids and relations an import adds, or ``None`` when it has them all."""
    from gitmem.record.models import Relation

    names = list(dict.fromkeys([*stored.legacy_ids, *(imported.legacy_ids if imported else [])]))
    relations = list(stored.relations)
    wanted = [*(imported.relations if imported else []),
              *(Relation(type=RelationType.SUPERSEDES, target=t) for t in supersedes)]
    for relation in wanted:
        if relation.target != stored.id and all(
                r.type != relation.type or r.target != relation.target for r in relations):
            relations.append(relation)
    if names == stored.legacy_ids and len(relations) == len(stored.relations):
        return None
    merged = stored.model_copy(deep=True)
    merged.legacy_id = names[0] if len(names) == 1 else names
    merged.relations = relations
    return merged


def _differs(before: Memory, after: Memory) -> bool:
    """Whether a change altered the record (then it is stamped and committed)."""
    return not before.same_as(after)


def _statement(m: Memory) -> tuple:
    """What a statement is: content, type and anchor (an edit of one makes its writer the author)."""
    return (m.content, m.type, m.provenance.context_ref if m.provenance else None,
            m.provenance.fingerprint if m.provenance else None)


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
    from gitmem.record.models import Decay

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
