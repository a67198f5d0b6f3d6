"""Learning a memory, for the facade: the record, its id, its anchor and what it may repeat.

Every method makes exactly one commit on ``refs/tur/memories`` (or none when nothing
changed), built by a function of the current tip and committed with compare-and-swap
(:meth:`gitmem.store.Store.transact`), so concurrent processes never lose a write.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING

from gitmem.api.results import LearnResult
from gitmem.api.writing import anchor_at, differs, is_utf8, parse_enum, refuse_supersedes_cycle
from gitmem.cache.reader import read_record, record_path
from gitmem.errors import GitmemError, InvalidInput, MalformedRecord
from gitmem.record.decay import half_life_for
from gitmem.record.ids import ID_HEX_LENGTHS, content_digest, id_hex, normalise_content, pick_id
from gitmem.record.limits import MAX_RECORD_BYTES, check_size
from gitmem.store import Mutation
from gitmem.text import first_words
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status, precise_now, utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.record.models import Memory, Provenance

__all__ = ["Curator"]



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
        visibility: Iterable[str] | None = None,
    ) -> LearnResult:
        """See :meth:`gitmem.api.Gitmem.learn`."""
        from gitmem import codec
        from gitmem.api.visibility import given_names
        from gitmem.record.models import Decay, Memory, Provenance, Relation
        from gitmem.sharing import secret_scan

        type_ = parse_enum(MemoryType, type, "type")
        scope_ = parse_enum(Scope, scope, "scope")
        names = given_names(visibility)
        if not content or not content.strip():
            raise InvalidInput("memory content is empty", "pass the statement to remember")
        for name, text in (("content", content), ("--agent", agent), ("--harness", harness)):
            if text is not None and not is_utf8(text):
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
            anchor, fingerprint = anchor_at(self.ws, file, head)
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
            _bind(memory, names)
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
                was = tuple(existing.visibility) if existing.visibility != memory.visibility else None
                if differs(existing, memory):
                    memory.stamp(existing, who, stamp_at)
                data = codec.update(self.ws.store.read_blob(existing_blob), memory)
                check_size(data, MAX_RECORD_BYTES, f"record {memory.id}")
                message = f"reverify {memory.id}: {first_words(content)}"
                return Mutation({record_path(memory.id): data}, message, result=(memory, False, None, was))
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
            return Mutation({record_path(memory.id): data}, message, result=(memory, True, collision, None))

        commit, mutation = self.ws.store.transact(build)
        memory, created, collision, was = mutation.result  # type: ignore[union-attr, misc]
        # A statement already known was compared when it was first learned: naming its
        # neighbours again on every re-verification is noise.
        similar, said = self._similar(memory, before, skip={target} if target else set()) if created \
            else ((), ())
        self.ws.records.after_commit(commit, {memory.id: memory}, mutation)
        if len(said) < len(similar) or None in said:
            # Not in the statement rows of this tip: read the (at most three) records, so
            # that every surface can quote what they say.
            said = tuple(self._statement_of(other, said[n] if n < len(said) else None)
                         for n, other in enumerate(similar))
        return LearnResult(memory=memory, created=created, commit=commit, similar=similar,
                           collided_with=collision, similar_statements=said, visibility_was=was)

    def _statement_of(self, memory_id: str, known: str | None) -> str | None:
        """``known``, else the stored statement of ``memory_id`` (``None``: it cannot be read)."""
        if known is not None:
            return known
        try:
            return self.ws.records.get(memory_id).content
        except GitmemError:
            return None

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
        refuse_supersedes_cycle(self.ws, own, target)
        return target

    def _similar(self, memory: Memory, tip: str | None,
                 skip: set[str]) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
        """Ids of live memories at ``tip`` that may say the same thing as ``memory``, and their statements.

        Those anchored to overlapping lines of the same file come first, then near-duplicate
        statements (:mod:`gitmem.context.similarity`); refuted memories, ``memory`` itself and ``skip``
        are left out. At most three. Their statements are those of the index, given when it
        is the index of ``tip``'s tree (so that they are the stored ones), else ``None``.

        A write must cost the same with 100 or 1,000,000 memories, so this reads no record
        from git: it looks in the cache's statement rows (:mod:`gitmem.cache.statements`: the
        live memories of the newest tree known, which each write moves to the tree it makes),
        by anchor path and lines and by the postings of the statement's rarest terms, and
        keeps only ids still at ``tip`` (one shard listing each, until three are found).
        Memories that reached the ref by other means since the rows last moved (a sync, an
        import) are compared once a reader has saved a table of them; with no table cached at
        all, there is nothing to compare with.
        """
        skip = {*skip, memory.id, *memory.relation_targets(RelationType.SUPERSEDES)}
        ref = memory.provenance.context_ref if memory.provenance else None
        got = self.ws.records.similar_statements(memory.content, ref, skip, 3)
        if got is None:  # no table cached: nothing to compare with
            return (), ()
        tree, found, near = got
        at_tip = (i for i in [*found, *near] if i in self.ws.records.id_entries(i, tip))
        similar = tuple(islice(at_tip, 3))
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


def _bind(memory: Memory, names: list[str] | None) -> None:
    # A known memory learned again keeps its visibility unless one is given.
    if names is not None:
        memory.visibility = names
