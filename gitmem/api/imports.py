"""Importing memories, for the facade: legacy record files and a Tur store.

Each import makes exactly one commit on ``refs/tur/memories`` (or none when nothing
changed), built by a function of the current tip and committed with compare-and-swap
(:meth:`gitmem.store.Store.transact`), so concurrent processes never lose a write.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from gitmem.api.results import ImportResult, TurImportResult
from gitmem.cache.reader import read_record, record_path
from gitmem.errors import GitmemError, MalformedRecord
from gitmem.record.ids import ID_HEX_LENGTHS, content_digest, normalise_content, pick_id
from gitmem.record.limits import MAX_RECORD_BYTES, check_size
from gitmem.store import Mutation
from gitmem.vocabulary import RelationType

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.importers.tur_store import Converted, RepoView, TurNote, TurPersona, TurStore
    from gitmem.record.models import Memory

__all__ = ["Importer"]


class Importer:
    """Imports legacy records and Tur stores.

    Args:
        ws: the shared workspace.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

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
        """See :meth:`gitmem.api.Gitmem.import_legacy`."""
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
        part: str | None = None,
    ) -> TurImportResult:
        """See :meth:`gitmem.api.Gitmem.import_tur`."""
        from gitmem.importers import tur_store

        found = tur_store.find_store(self._tur_path(path), self._tur_path(home) if home else None, persona)
        if part is not None:
            found = only_part(found, part)
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
        # Every free-text field is scanned (tags, provenance.source_agent, context_ref, ...), as
        # learn scans its own; content already stored was scanned when it was stored. One scan.
        named: list[tuple[str, str, str]] = []
        for mid, item in ([] if allow_secret else kept.items()):
            stored = (row := table.row(mid)) is not None and (
                normalise_content(table.columns["content"][row]) == normalise_content(item.memory.content))
            named.extend((mid, name, text)
                         for name, text in secret_scan.record_fields(item.memory.model_dump(mode="json"))
                         if text.strip() and not (stored and name == "content"))
        texts = list(dict.fromkeys(text for _, _, text in named))
        findings = dict(zip(texts, secret_scan.scan_texts(texts), strict=True)) if texts else {}
        refused: dict[str, list[tuple[str, secret_scan.SecretFinding]]] = {}
        for mid, name, text in named:
            refused.setdefault(mid, []).extend((name, finding) for finding in findings[text])
        for mid, where in refused.items():
            if where:
                result.failed.append(f"{kept.pop(mid).file.path}: {secret_scan.describe(where)} looks "
                                     "like it contains a secret; nothing was stored")
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


_USER_LEVEL = frozenset({"universal", "user", "persona"})
"""The Tur scopes that hold beyond one project: what ``--home`` sends to the personal store."""


def only_part(store: TurStore, part: str) -> TurStore:
    """``store`` cut to one of its parts: ``"project"`` or ``"home"`` (docs/personal.md).

    The home part keeps the user-level memories (Tur's ``universal``, ``user`` and ``persona``
    scopes) and the persona, which belong to the person, not to one repository; the project
    part the others (``incarnation``), the latest session note and the unreadable files.
    """
    from dataclasses import replace

    mine = part == "home"
    files = [f for f in store.files
             if (str(f.data.get("scope") or "incarnation").lower() in _USER_LEVEL) == mine]
    return replace(store, files=files, persona=store.persona if mine else None,
                   latest_note=None if mine else store.latest_note,
                   unreadable=[] if mine else store.unreadable,
                   not_imported=[] if mine else store.not_imported)
