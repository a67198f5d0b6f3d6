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

from gitmem.api.results import ImportResult, LearnResult
from gitmem.decay import half_life_for
from gitmem.errors import GitmemError, InvalidInput, MalformedRecord, UnknownMemory
from gitmem.ids import content_key, memory_id
from gitmem.reader import read_record, record_path
from gitmem.store import CommitInfo, Mutation
from gitmem.text import first_words
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status, utc_now

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

        Raises:
            InvalidInput: empty content, unknown type, confidence outside [0, 1].
            SecretRefused: the content contains a credential and ``allow_secret`` is false.
            InvalidAnchor: the file is missing, outside the repository, binary, or the range is bad.
        """
        from gitmem import codec, secret_scan
        from gitmem.models import Decay, Memory, Provenance

        type_ = _parse_enum(MemoryType, type, "type")
        scope_ = _parse_enum(Scope, scope, "scope")
        if not content or not content.strip():
            raise InvalidInput("memory content is empty", "pass the statement to remember")
        for name, text in (("content", content), ("--agent", agent), ("--harness", harness)):
            if text is not None and not _is_utf8(text):
                raise InvalidInput(f"{name} is not valid UTF-8 text")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        secret_scan.check_content(content, allow=allow_secret)
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
        key = content_key(content)

        def build(tip: str | None) -> Mutation | None:
            # Every id with this content key lives in the shard named by the key.
            existing, existing_blob = None, ""
            for found, blob in self.ws.records.id_entries(key, tip).items():
                if "-" in found and found.rsplit("-", 1)[1] == key:
                    try:
                        existing, existing_blob = read_record(self.ws.store, found, blob), blob
                        break
                    except MalformedRecord:
                        continue
            if existing is not None:
                memory = _reverify(existing, provenance, confidence, status, reason, now)
                data = codec.update(self.ws.store.read_blob(existing_blob), memory)
                message = f"reverify {memory.id}: {first_words(content)}"
                return Mutation({record_path(memory.id): data}, message, result=(memory, False))
            memory = Memory(
                id=memory_id(type_, content),
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
            message = f"learn {memory.id}: {first_words(content)}"
            return Mutation({record_path(memory.id): codec.dump_new(memory)}, message,
                            result=(memory, True))

        commit, mutation = self.ws.store.transact(build)
        memory, created = mutation.result  # type: ignore[union-attr, misc]
        return LearnResult(memory=memory, created=created, commit=commit)

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
            data = codec.update(self.ws.store.read_blob(blob), memory)
            return Mutation({record_path(target): data}, f"{verb} {target}", result=memory)

        commit, mutation = self.ws.store.transact(build)
        return mutation.result, commit  # type: ignore[union-attr, return-value]

    def refute(self, token: str, reason: str, by: str | None = None) -> tuple[Memory, CommitInfo | None]:
        """Mark a memory refuted with a reason; refuted wins over every other status.

        Raises:
            InvalidInput: the reason is empty.
            UnknownMemory, AmbiguousId: bad id.
        """
        if not reason or not reason.strip():
            raise InvalidInput("a refutation needs a reason", 'pass --reason "why it is wrong"')
        from gitmem.models import Refutation

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

        commit, _ = self.ws.store.transact(build)
        return commit

    # -- import ----------------------------------------------------------------------------

    def import_legacy(
        self, paths: Iterable[str | os.PathLike[str]], allow_secret: bool = False
    ) -> ImportResult:
        """Import legacy ``.tur/memories/*.yaml`` records (files or directories) in one commit.

        Records keep their fields; the id is recomputed as ``<type>-<8 hex>`` and the
        old one is kept under ``legacy_id``. Records with no provenance load as
        ``unanchored`` with confidence 1.0 and no decay (EP-0131).

        Raises:
            InvalidInput: a path does not exist.
        """
        from gitmem import codec, legacy, secret_scan
        from gitmem.anchors import parse_anchor

        files = legacy.expand_paths(paths)
        parsed: list[Memory] = []
        result = ImportResult()
        for path in files:
            try:
                memory = legacy.to_memory(path)
                # The same gates as learn: no credential, no anchor leaving the repository.
                secret_scan.check_content(memory.content, allow=allow_secret)
                if memory.provenance is not None and memory.provenance.context_ref:
                    parse_anchor(memory.provenance.context_ref)
            except GitmemError as exc:
                result.failed.append(f"{path}: {exc}")
                continue
            parsed.append(memory)

        # Serialised once, outside ``build``: a retry after a concurrent write only re-diffs.
        prepared = [(memory, codec.dump_new(memory)) for memory in parsed]

        def build(tip: str | None) -> Mutation | None:
            result.imported.clear()
            result.unchanged.clear()
            blobs = self.ws.store.entries(tip)
            changes: dict[str, bytes | None] = {}
            for memory, data in prepared:
                if memory.id in blobs and self.ws.store.read_blob(blobs[memory.id]) == data:
                    result.unchanged.append(memory.id)
                    continue
                changes[record_path(memory.id)] = data
                result.imported.append(memory.id)
            if not changes:
                return None
            return Mutation(changes, f"import {len(changes)} memories")

        result.commit, _ = self.ws.store.transact(build)
        return result


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
