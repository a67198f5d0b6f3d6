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

from gitmem.api.results import ImportResult, LearnResult, TurImportResult
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
    from gitmem.tur_store import Converted, RepoView, TurNote, TurPersona, TurStore

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
        self, paths: Iterable[str | os.PathLike[str]], allow_secret: bool = False, dry_run: bool = False
    ) -> ImportResult:
        """Import legacy ``.tur/memories/*.yaml`` records (files or directories) in one commit.

        Records keep their fields, comments and key order; the id is recomputed as
        ``<type>-<8 hex>`` and the old one is kept under ``legacy_id``. Relations naming
        an id of the batch (old or new) or of the store point at the new ids; others are
        kept and listed in ``notes``. Records with no provenance load as ``unanchored``
        with confidence 1.0 and no decay (EP-0131). With ``dry_run`` nothing is written.

        Raises:
            InvalidInput: a path does not exist.
        """
        from gitmem import codec, legacy, secret_scan
        from gitmem.anchors import parse_anchor

        files = legacy.expand_paths(paths)
        parsed: list[tuple[Memory, bytes]] = []
        result = ImportResult(dry_run=dry_run)
        for path in files:
            try:
                memory, original = legacy.read(path)
                # The same gates as learn: no credential, no anchor leaving the repository.
                secret_scan.check_content(memory.content, allow=allow_secret)
                if memory.provenance is not None and memory.provenance.context_ref:
                    parse_anchor(memory.provenance.context_ref)
            except GitmemError as exc:
                result.failed.append(f"{path}: {exc}")
                continue
            parsed.append((memory, original))

        def build(tip: str | None) -> Mutation | None:
            result.imported.clear()
            result.unchanged.clear()
            batch = [memory.model_copy(deep=True) for memory, _ in parsed]
            result.notes = legacy.rewrite_relations(batch, self._known(tip))
            blobs = self.ws.store.entries(tip)
            changes: dict[str, bytes | None] = {}
            for memory, (_, original) in zip(batch, parsed, strict=True):
                try:  # the file itself, edited: its comments and key order survive (docs/storage.md)
                    data = codec.update(original, memory, str(memory.id))
                except MalformedRecord as exc:  # YAML the round-trip writer cannot reproduce
                    result.notes.append(f"{memory.id}: written without the file's comments: {exc.reason}")
                    data = codec.dump_new(memory)
                if memory.id in blobs and self.ws.store.read_blob(blobs[memory.id]) == data:
                    result.unchanged.append(memory.id)
                    continue
                changes[record_path(memory.id)] = data
                result.imported.append(memory.id)
            if not changes:
                return None
            return Mutation(changes, f"import {len(changes)} memories")

        if dry_run:
            build(self.ws.store.tip())
        else:
            result.commit, _ = self.ws.store.transact(build)
        return result

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
        from gitmem import tur_store

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
        from gitmem import secret_scan, tur_store
        from gitmem.ids import normalise_content

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
        from gitmem.tur_store import RepoView

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
        from gitmem import codec, legacy, tur_store
        from gitmem.api.context import PERSONA_PATH
        from gitmem.ids import normalise_content

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
    from gitmem.models import Relation

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
