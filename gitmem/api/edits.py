"""Changing and removing memories, for the facade: refute, edit, confidence, link, forget, doctor.

Every method makes exactly one commit on ``refs/tur/memories`` (or none when nothing
changed), built by a function of the current tip and committed with compare-and-swap
(:meth:`gitmem.store.Store.transact`), so concurrent processes never lose a write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.api.results import DoctorReport
from gitmem.api.writing import anchor_at, differs, is_utf8, parse_enum, refuse_supersedes_cycle
from gitmem.cache.reader import read_record, record_path
from gitmem.errors import InvalidInput, MalformedRecord, UnknownMemory
from gitmem.record.decay import half_life_for
from gitmem.record.limits import MAX_RECORD_BYTES, check_size
from gitmem.store import FORMAT_PATH, CommitInfo, Mutation
from gitmem.vocabulary import ID_PATTERN, MemoryType, RelationType, Status, utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.record.models import Memory

__all__ = ["Editor"]


class Editor:
    """Refutes, edits, links and removes memories.

    Args:
        ws: the shared workspace.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

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
            if differs(current, memory):
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
        """See :meth:`gitmem.api.Gitmem.refute`."""
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
        """See :meth:`gitmem.api.Gitmem.unrefute`."""
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
             file: str | None = None, allow_secret: bool = False,
             mapped: Callable[[str], str] | None = None,
             visibility: Iterable[str] | None = None) -> tuple[Memory, CommitInfo | None]:
        """See :meth:`gitmem.api.Gitmem.edit`; ``mapped(token)``: where its lines are at HEAD."""
        from gitmem.api.visibility import given_names
        from gitmem.record.models import Decay, Provenance
        from gitmem.sharing import secret_scan

        file = self._mapped_file(token, file, mapped)
        names = given_names(visibility)
        if content is None and type is None and file is None and names is None:
            raise InvalidInput("nothing to edit", "pass --content, --type, --file, --reanchor or --for")
        type_ = parse_enum(MemoryType, type, "type") if type is not None else None
        if content is not None:
            if not content.strip():
                raise InvalidInput("memory content is empty", "pass the new statement")
            if not is_utf8(content):
                raise InvalidInput("content is not valid UTF-8 text",
                                   "pass text (lone surrogates cannot be stored)")
            check_size(content.encode("utf-8"), MAX_RECORD_BYTES, "the memory's content")
            secret_scan.check_content(content, allow=allow_secret)
        if file is not None:
            secret_scan.check_fields([("--file", file)], allow=allow_secret)
        head = self.ws.store.head_sha()
        anchor = anchor_at(self.ws, file, head) if file is not None else None
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
            if names is not None:
                m.visibility = names
            return m

        return self._edit(token, "edit", edit)

    def _mapped_file(self, token: str, file: str | None,
                     mapped: Callable[[str], str] | None) -> str | None:
        """``file``, or with ``mapped`` (a re-anchor) the mapped anchor as a path in the working tree."""
        if mapped is None:
            return file
        if file is not None:
            raise InvalidInput("give --file or --reanchor, not both")
        root = self.ws.store.workdir
        return mapped(token) if root is None else str(Path(root) / mapped(token))

    def set_confidence(self, token: str, confidence: float) -> tuple[Memory, CommitInfo | None]:
        """See :meth:`gitmem.api.Gitmem.set_confidence`."""
        if not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        confidence += 0.0  # -0.0 is stored and shown as 0.0

        def edit(m: Memory) -> Memory:
            m.confidence = confidence
            return m

        return self._edit(token, "confidence", edit)

    def link(self, source: str, target: str,
             kind: RelationType | str | None) -> tuple[Memory, CommitInfo | None]:
        """See :meth:`gitmem.api.Gitmem.link`."""
        if kind is None:
            raise InvalidInput("a link needs its type",
                               f"pass --type ({', '.join(t.value for t in RelationType)})")
        kind_ = parse_enum(RelationType, kind, "relation type")
        target_id = self.ws.records.get(target).id
        source_id = self.ws.records.get(source).id
        if source_id == target_id:
            raise InvalidInput("a memory cannot be linked to itself", "name two different memories")
        if kind_ is RelationType.SUPERSEDES:
            refuse_supersedes_cycle(self.ws, source_id, target_id)
        from gitmem.record.models import Relation

        def edit(m: Memory) -> Memory:
            if not any(r.type == kind_ and r.target == target_id for r in m.relations):
                m.relations = [*m.relations, Relation(type=kind_, target=target_id)]
            return m

        return self._edit(source, f"link {kind_.value} {target_id}:", edit)

    def unlink(self, source: str, target: str,
               kind: RelationType | str | None = None) -> tuple[Memory, CommitInfo | None]:
        """See :meth:`gitmem.api.Gitmem.unlink`."""
        kind_ = parse_enum(RelationType, kind, "relation type") if kind is not None else None
        source_memory = self.ws.records.get(source)
        # A target forgotten since is still named by the relation, and by its prefix.
        target_id = self.ws.records.link_target(source_memory.id, target)

        def drops(r: object) -> bool:
            return getattr(r, "target", None) == target_id and kind_ in (None, getattr(r, "type", None))

        if not any(drops(r) for r in source_memory.relations):
            what = f"{kind_.value} link" if kind_ else "link"
            raise InvalidInput(f"{source_memory.id} has no {what} to {target_id}",
                               f"`tur show {source_memory.id}` lists its relations")

        def edit(m: Memory) -> Memory:
            m.relations = [r for r in m.relations if not drops(r)]
            return m

        return self._edit(source_memory.id, f"unlink {kind_.value if kind_ else 'all'} {target_id}:", edit)

    def restore(self, token: str) -> tuple[Memory, CommitInfo | None]:
        """See :meth:`gitmem.api.Gitmem.restore`."""
        store = self.ws.store
        memory_id = self.ws.records.forgotten_id(token)
        if memory_id is None:
            try:
                stored = self.ws.records.resolve(token)
            except UnknownMemory:
                stored = None
            if stored is not None:
                raise InvalidInput(f"{stored} is not forgotten", "nothing to restore")
            memory_id = token.strip().lower()
        path = record_path(memory_id) if ID_PATTERN.match(memory_id) else None
        if path is not None and store.blob_id_at(store.tip(), path) is not None:
            raise InvalidInput(f"{memory_id} is not forgotten", "nothing to restore")
        blob = self._last_version(memory_id, self.ws.records.history(memory_id)) if path else None
        if path is None or blob is None:
            raise UnknownMemory(memory_id, "no forgotten memory has this id in the history of "
                                "refs/tur/memories (give its id, or 4 hex digits of it)")
        data = store.read_blob(blob)
        memory = read_record(store, memory_id, blob)

        def build(tip: str | None) -> Mutation | None:
            if store.blob_id_at(tip, path) is not None:
                raise InvalidInput(f"{memory_id} is not forgotten", "nothing to restore")
            return Mutation({path: data}, f"restore {memory_id}", result=memory)

        commit, mutation = store.transact(build)
        self.ws.records.after_commit(commit, {memory_id: memory}, mutation)
        return memory, commit

    def _last_version(self, memory_id: str, commits: list[CommitInfo]) -> str | None:
        """The newest blob of the record in its ``commits`` (newest first), or ``None`` if none had one."""
        path = record_path(memory_id)
        for commit in commits:
            blob = self.ws.store.blob_id_at(commit.sha, path)
            if blob is not None:
                return blob
        return None

    def forget(self, token: str) -> CommitInfo | None:
        """See :meth:`gitmem.api.Gitmem.forget`."""
        target = self.ws.records.resolve(token)

        def build(tip: str | None) -> Mutation | None:
            if self.ws.store.blob_id_at(tip, record_path(target)) is None:
                raise UnknownMemory(target)
            return Mutation({record_path(target): None}, f"forget {target}")

        commit, mutation = self.ws.store.transact(build)
        self.ws.records.after_commit(commit, {}, mutation)
        return commit

    def forget_path(self, path: str) -> CommitInfo | None:
        """See :meth:`gitmem.api.Gitmem.forget_path`."""
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
        """See :meth:`gitmem.api.Gitmem.doctor`."""
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
                forgotten = self._forgotten(moved) if moved is not None else None
                if moved is not None and forgotten is None:
                    changes[record_path(moved)] = store.read_blob(problem.object_id)
                    placed.add(moved)
                    report.repairs.append(f"move {problem.path} to {record_path(moved)}")
                elif moved is not None and forgotten is not None:
                    report.repairs.append(f"remove {problem.path} ({moved} was forgotten in "
                                          f"{forgotten[:12]}; a stray copy never brings it back)")
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

    def _forgotten(self, memory_id: str) -> str | None:
        """The commit that forgot ``memory_id``, if the memory ref's history says it was forgotten.

        Forgotten: the newest commit that changed the record's own path removed it, and is a
        forget (``forget <id>`` or ``forget <path>``, the message :meth:`forget` and
        :meth:`forget_path` write). A record removed otherwise (moved by plumbing, a tree
        written by hand) is not forgotten, and a readable stray of it may be moved back.
        """
        store = self.ws.store
        path = record_path(memory_id)
        changes = store.log(path, limit=1)
        if not changes:
            return None
        last = changes[0]
        if store.blob_id_at(last.sha, path) is not None:
            return None
        return last.sha if last.message.startswith("forget ") else None

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


def _is_shard(name: str) -> bool:
    return len(name) == 2 and all(c in "0123456789abcdef" for c in name)


def _statement(m: Memory) -> tuple:
    """What a statement is: content, type and anchor (an edit of one makes its writer the author)."""
    return (m.content, m.type, m.provenance.context_ref if m.provenance else None,
            m.provenance.fingerprint if m.provenance else None)
