"""What an agent reads, for the facade: wake, recall, memories by file, persona and continuity notes."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from itertools import compress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.api.visibility import bindings_of
from gitmem.cache.reader import Skipped
from gitmem.errors import InvalidInput, MalformedRecord
from gitmem.record.limits import MAX_NOTE_BYTES, MAX_PERSONA_BYTES, check_size
from gitmem.sharing.trust import CONTINUITY_DIR, PERSONA_PATH
from gitmem.store import CommitInfo, Mutation, repo_relative
from gitmem.text import first_words
from gitmem.vocabulary import Status, utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.api.weights import Weights
    from gitmem.cache import RecordTable
    from gitmem.context.injection import Via
    from gitmem.context.recall import RecallResult
    from gitmem.context.tokens import TokenCounter
    from gitmem.context.wake import WakeResult, WakeRows
    from gitmem.record.models import Memory
    from gitmem.sharing.trust import Proposal, Standing, Version
    from gitmem.store.worktree_diff import AnchoredDiff

__all__ = ["CONTINUITY_DIR", "PERSONA_PATH", "ContextBuilder", "check_limits"]



class _NotPlanned(Exception):
    """The packing of a wake from its plan needs what the plan does not hold."""


def check_limits(*, top_k: int | None = None, token_budget: int | None = None,
                 max_chars: int | None = None) -> None:
    """Refuse a count no wake, recall or hook can honour; ``None`` is never refused.

    The one check of these arguments, made by the facade before it calls a part: the parts
    and the algorithms below take them as already checked.

    Args:
        top_k: most hits; at least 1.
        token_budget: tokens; 0 or more (0: no token cap).
        max_chars: characters; 0 or more (0: no character cap).

    Raises:
        InvalidInput: a value out of range (the message names it and gives the value).
    """
    if top_k is not None and top_k < 1:
        raise InvalidInput(f"top-k must be at least 1, got {top_k}", "ask for 1 or more hits")
    if token_budget is not None and token_budget < 0:
        raise InvalidInput(f"token budget must be 0 or more, got {token_budget}", "0 means no token cap")
    if max_chars is not None and max_chars < 0:
        raise InvalidInput(f"max chars must be 0 or more, got {max_chars}", "0 means no character cap")


def hidden_rows(table: RecordTable, asking: Collection[str]) -> list[int]:
    """Rows of ``table`` bound to agents none of ``asking`` is (all visible when ``asking`` is empty)."""
    if not asking:
        return []
    from gitmem.record.visibility import visible_to

    vis = table.columns["vis"]
    return [r for r in compress(range(len(vis)), vis) if not visible_to(vis[r], asking)]


def _unseen(asking: Collection[str], hidden: list[str], first: Sequence[Any],
            skip: Callable[[Any], bool] | None,
            skip_note: Callable[[Any], bool] | None) -> tuple[list[Any], Any, Any]:
    """A recall's ``first``, ``skip`` and ``skip_note`` that also leave out what ``asking`` may not see.

    Each memory left out for it is appended to ``hidden`` (in the order recall asks: rank order).
    """
    from gitmem.record.visibility import visible_to

    def unseen(memory: Any) -> bool:
        if visible_to(memory.visibility, asking):
            return False
        hidden.append(memory.id)
        return True

    def skipped(memory: Any) -> bool:
        return unseen(memory) or (skip is not None and skip(memory))

    def note_skipped(memory: Any) -> bool:
        return not visible_to(memory.visibility, asking) or (skip_note is not None and skip_note(memory))

    return [view for view in first if not unseen(view)], skipped, note_skipped


class ContextBuilder:
    """Builds wake and recall (EP-0132) from the read cache's columns.

    Args:
        ws: the shared workspace.
        weights: distances and weights, shared with verify.
    """

    def __init__(self, ws: Workspace, weights: Weights) -> None:
        self.ws = ws
        self.weights = weights

    # -- persona and continuity ------------------------------------------------------------

    def persona_text(self) -> str | None:
        """See :meth:`gitmem.api.Gitmem.persona_text`."""
        version = self.standing(self.ws.store.tip())[0].in_force
        return self.ws.store.read_blob(version.blob).decode("utf-8") if version is not None else None

    def persona(self, tip: str | None = None) -> dict[str, Any] | None:
        """See :meth:`gitmem.api.Gitmem.persona`."""
        version = self.standing(tip or self.ws.store.tip())[0].in_force
        return self._persona_of(version.blob) if version is not None else None

    def _persona_of(self, blob: str) -> dict[str, Any]:
        """The persona mapping of ``blob`` (parsed once, then from the read cache).

        Raises:
            MalformedRecord: not a YAML mapping, or over the size limit.
        """
        store, cache = self.ws.store, self.ws.records.cache
        found = cache.persona(blob)
        if found is not None:
            return found
        from gitmem import codec

        where = f"{PERSONA_PATH} on refs/tur/memories"
        size = store.blob_size(blob, remember=True)
        if size > MAX_PERSONA_BYTES:  # refused unread: wake would pay for it every session
            raise MalformedRecord(where, f"it is {size} bytes, larger than the {MAX_PERSONA_BYTES} "
                                         "byte limit")
        mapping = codec.load_mapping(store.read_blob(blob), where)
        cache.put_persona(blob, mapping)
        return mapping

    # -- trust of the persona and notes (docs/sharing.md, Trust) ---------------------------

    def standing(self, tip: str | None) -> tuple[Standing, Standing]:
        """The persona and the continuity note in force at ``tip`` here, with the proposals beside them.

        See :mod:`gitmem.sharing.trust`: who git says made each version decides, with
        ``trust.authors`` and what this clone accepted.
        """
        from gitmem.sharing.trust import note_standing, persona_standing

        store = self.ws.store
        me, trust = store.identity(), self.ws.settings.trust

        def trusts(who: str) -> bool:
            return trust.trusts(who, me)

        accepted, signed = store.accepted(), trust.require_signatures
        return (persona_standing(store, tip, trusts, accepted, signed),
                note_standing(store, tip, trusts, accepted, signed))

    def accept(self, note: bool = False) -> Version:
        """See :meth:`gitmem.api.Gitmem.accept`."""
        persona, notes = self.standing(self.ws.store.tip())
        proposed = (notes if note else persona).proposed
        if proposed is None:
            what = "continuity note" if note else "persona"
            raise InvalidInput(f"no {what} from an untrusted author waits here",
                               f"the {what} in force is shown by `tur persona show`")
        self.ws.store.accept(proposed.blob)
        return proposed

    def proposals(self, tip: str | None = None) -> list[Proposal]:
        """See :meth:`gitmem.api.Gitmem.proposals`."""
        from gitmem.sharing.trust import Proposal, shown_writer

        store = self.ws.store
        me, trust = store.identity(), self.ws.settings.trust
        out = []
        persona, note = self.standing(tip or store.tip())
        for kind, standing, limit in (("persona", persona, MAX_PERSONA_BYTES),
                                      ("note", note, MAX_NOTE_BYTES)):
            version = standing.proposed
            if version is None:
                continue
            writer = shown_writer(version.authors, lambda who: trust.trusts(who, me)) or "an unknown author"
            text = "" if version.deleted else store.read_blob(version.blob)[:limit].decode("utf-8", "replace")
            accept = "tur persona accept" + (" --note" if kind == "note" else "")
            out.append(Proposal(kind, version, writer, text, accept))
        return out

    def _untrusted_block(self, tip: str | None) -> str | None:
        """Wake's block of the proposals beside the persona and note in force (``None``: none)."""
        from gitmem.context.entry import untrusted_lines

        kinds = {"persona": "Persona", "note": "Continuity note"}
        lines = [untrusted_lines(kinds[p.kind], p.writer, p.text, p.accept, deleted=p.version.deleted)
                 for p in self.proposals(tip)]
        return "".join(lines) or None

    def set_persona(self, data: bytes, where: str = "persona",
                    allow_secret: bool = False) -> CommitInfo | None:
        """See :meth:`gitmem.api.Gitmem.set_persona`."""
        from gitmem import codec
        from gitmem.sharing import secret_scan

        check_size(data, MAX_PERSONA_BYTES, f"the persona {where}")
        codec.load_mapping(data, where)
        secret_scan.check_fields([(f"the persona {where}", data.decode("utf-8", "replace"))],
                                 allow=allow_secret)
        commit, _ = self.ws.store.transact(
            lambda tip: Mutation({PERSONA_PATH: data}, "persona: set identity and invariants")
        )
        return commit

    def spark(self, text: str, now: datetime | None = None, allow_secret: bool = False) -> str:
        """See :meth:`gitmem.api.Gitmem.spark`."""
        if not text.strip():
            raise InvalidInput("a continuity note needs text")
        body = text if text.endswith("\n") else text + "\n"
        try:
            data = body.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput("the continuity note is not valid UTF-8 text") from None
        check_size(data, MAX_NOTE_BYTES, "the continuity note",
                   "keep the note to what the next session needs first; put the rest in memories")
        from gitmem.sharing import secret_scan

        secret_scan.check_fields([("the note", text)], allow=allow_secret)
        import secrets  # lazily: it loads OpenSSL, which no read needs

        now = now or datetime.now(UTC)
        # Microseconds keep two notes of the same second in order; the name sorts by time.
        name = f"{now:%Y%m%dT%H%M%S.%fZ}-{secrets.token_hex(3)}.md"
        self.ws.store.transact(
            lambda tip: Mutation({f"{CONTINUITY_DIR}/{name}": data}, f"spark: {first_words(text)}")
        )
        return name

    def continuity(self, tip: str | None = None, skipped: list[Skipped] | None = None) -> str | None:
        """See :meth:`gitmem.api.Gitmem.continuity`: the newest note in force here."""
        version = self.standing(tip or self.ws.store.tip())[1].in_force
        return self._note_text(version, skipped) if version is not None else None

    def _note_text(self, version: Version, skipped: list[Skipped] | None) -> str:
        """The text of one continuity note; one over the size limit is cut (and ``skipped`` says so)."""
        store = self.ws.store
        blob = version.blob
        size = store.blob_size(blob, remember=True)
        if size <= MAX_NOTE_BYTES:
            return store.read_note(blob).rstrip("\n")
        if skipped is not None:
            skipped.append(Skipped("", blob, f"is {size} bytes, larger than the {MAX_NOTE_BYTES} byte "
                                   "limit; wake reads its beginning only", path=version.path,
                                   hint="leave a shorter note with `tur spark`"))
        return store.read_blob_head(blob, MAX_NOTE_BYTES).decode("utf-8", "ignore").rstrip("\n")

    def anchored_paths(self) -> dict[str, tuple[str, ...]]:
        """See :meth:`gitmem.api.Gitmem.anchored_paths`."""
        from gitmem.record.anchors import InvalidAnchor, parse_anchor

        table, _ = self.ws.records.table(self.ws.records.tip())
        out: dict[str, list[str]] = {}
        refuted = Status.REFUTED.value
        for memory_id, prov, status in zip(table.ids, table.columns["prov"], table.columns["status"],
                                           strict=True):
            ref = prov[2] if prov is not None else None
            if not ref or status == refuted:
                continue
            try:
                path = parse_anchor(ref).path
            except InvalidAnchor:
                continue
            out.setdefault(path, []).append(memory_id)
        return {p: tuple(sorted(ids)) for p, ids in sorted(out.items())}

    def anchored_diff(self, memory: Memory, max_lines: int = 400) -> AnchoredDiff:
        """See :meth:`gitmem.api.Gitmem.anchored_diff`."""
        from gitmem.store.worktree_diff import AnchoredDiff, diff_since

        prov = memory.provenance
        path = memory.anchor_path
        if prov is None or not prov.git_sha or not path:
            return AnchoredDiff("", "no anchored file")
        return diff_since(prov.git_sha, path, self.ws.cwd, max_lines)

    # -- wake and recall -------------------------------------------------------------------

    def token_counter(self) -> TokenCounter:
        """See :meth:`gitmem.api.Gitmem.token_counter`."""
        from gitmem.context.tokens import TokenCounter

        return TokenCounter(self.ws.settings.tokenizer)

    def wake(self, token_budget: int | None = None, now: datetime | None = None,
             max_chars: int | None = None, via: Via | None = None) -> tuple[WakeResult, list[Skipped]]:
        """See :meth:`gitmem.api.Gitmem.wake`: this store's and the personal store's memories.

        ``via``: who asks (its names, :func:`hidden_rows`; its harness's budget, :mod:`gitmem.api.limits`).
        """
        personal = self.ws.personal()
        if personal is None:
            return self.own_wake(token_budget, now, max_chars, via)
        from gitmem.api.limits import resolve
        from gitmem.api.personal import joined_wake

        settings = self.ws.settings
        budget = resolve("wake_budget", token_budget, settings, via.harness if via else "", self.persona,
                         settings.wake.token_budget) or 0
        return joined_wake(self, personal, budget, now, max_chars, via)

    def own_wake(self, token_budget: int | None = None, now: datetime | None = None,
                 max_chars: int | None = None, via: Via | None = None) -> tuple[WakeResult, list[Skipped]]:
        """The wake of this store's memories alone (see :meth:`wake`)."""
        from gitmem.api.limits import resolve

        settings = self.ws.settings
        asking = via.asking if via is not None else ()
        budget = resolve("wake_budget", token_budget, settings, via.harness if via else "", self.persona,
                         settings.wake.token_budget) or 0
        now = now or utc_now()
        tip = self.ws.records.tip()  # one tip for records, persona and note: a learn meanwhile waits
        key = self.plan_key(tip)
        save = key is not None
        if key is not None:
            planned, save = self._planned_wake(key, tip, now, budget, max_chars, bool(asking))
            if planned is not None:
                return planned
        return self._table_wake(tip, now, budget, max_chars, key if save else None, asking)

    def plan_key(self, tip: str | None) -> tuple | None:
        """The key of the wake plan of ``tip`` in this clone now (see :func:`gitmem.cache.wakeplan.plan_key`).

        ``None`` when there is no memory ref yet (nothing to plan).
        """
        if tip is None:
            return None
        from gitmem.cache.wakeplan import plan_key
        from gitmem.context.entry import ENTRY_FORMAT

        store = self.ws.store
        return plan_key(tip, store.head_sha(), self.ws.settings.to_plain(), store.identity(),
                        self.ws.records.local_reasons(), ENTRY_FORMAT)

    def _planned_wake(self, key: tuple, tip: str | None, now: datetime, budget: int,
                      max_chars: int | None,
                      named: bool = False) -> tuple[tuple[WakeResult, list[Skipped]] | None, bool]:
        """The wake from the plan of ``key``, or ``None``; and whether a plan should be saved.

        ``None`` when there is no plan of ``key``, it was built after ``now``, or the packing
        needs what the plan does not hold (the compressed entry of a short memory, under a
        tiny budget): the caller then compiles from the table.
        """
        from gitmem.cache.db import Untrusted
        from gitmem.cache.wakeplan import read_plan, reject_plan
        from gitmem.context.wake import WakeResult, compile_ranked
        from gitmem.record.decay import microseconds

        records = self.ws.records
        cache = records.cache
        try:
            plan = read_plan(cache.files, key)
        except Untrusted as exc:
            reject_plan(cache.files, key, exc)
            return None, True
        if plan is None or plan.built > microseconds(now):
            return None, True
        if named and plan.bound:  # some memories may be for others: the table decides which
            return None, False
        if plan.bound and plan.bindings is None:  # a plan of an older gitmem: who they are for
            return None, True
        settings = self.ws.settings

        def compressed(memory_id: str) -> str:
            raise _NotPlanned

        skipped: list[Skipped] = []
        persona, continuity, untrusted = self._blocks(tip, skipped)
        try:
            result = compile_ranked(
                plan.tiers(cache.files, now, settings.decay),
                persona=persona,
                continuity=continuity,
                untrusted=untrusted,
                budget=budget or None,
                shares=settings.wake.shares,
                counter=cache.counter(settings.tokenizer),
                max_chars=max_chars or None,
                stale=plan.stale,
                no_short=compressed,
            )
        except _NotPlanned:
            return None, False
        except Untrusted as exc:
            reject_plan(cache.files, key, exc)
            return None, True
        records.flush()

        def assembly() -> tuple:
            # The plan holds only the rows that can be shown; the record names every memory.
            return self._table_wake(tip, now, budget, max_chars, None)[0].assembly

        wake = WakeResult(result.text, result.tokens, result.budget, result.omitted, assembly,
                          result.shown, result.packed, result.left_out, bindings=plan.bindings)
        planned = [Skipped(*entry) for entry in plan.skipped]
        seen = {(x.blob_id, x.path) for x in planned}
        planned += [x for x in skipped if (x.blob_id, x.path) not in seen]
        return (wake, [*records.notices(), *planned]), False

    def _table_wake(self, tip: str | None, now: datetime, budget: int, max_chars: int | None,
                    key: tuple | None, asking: Collection[str] = ()) -> tuple[WakeResult, list[Skipped]]:
        """The wake compiled from the whole records table; with ``key``, its plan is saved too.

        No plan is saved of a wake that hid memories from ``asking``: a plan is everyone's.
        """
        from gitmem.context.wake import compile_rows

        settings = self.ws.settings
        records = self.ws.records
        table, skipped = records.table(tip)
        extras: dict[str, Any] = {}
        rows = self._wake_rows(table, now, extras)
        rows.hidden = hidden_rows(table, asking)
        if rows.hidden:
            key = None
        persona, continuity, untrusted = self._blocks(tip, skipped)
        result = compile_rows(
            rows,
            persona=persona,
            continuity=continuity,
            untrusted=untrusted,
            budget=budget or None,
            shares=settings.wake.shares,
            threshold=settings.decay.threshold,
            counter=records.cache.counter(settings.tokenizer),
            max_chars=max_chars or None,
        )
        result.bindings = bindings_of(table.ids, table.columns["vis"])
        if key is not None:
            self._save_plan(key, table, rows, extras, now, persona, continuity, skipped,
                            result.bindings)
        records.flush()
        return result, [*records.notices(), *skipped]

    def _save_plan(self, key: tuple, table: RecordTable, rows: WakeRows, extras: dict[str, Any],
                   now: datetime, persona: dict[str, Any] | None, continuity: str | None,
                   skipped: list[Skipped], bindings: dict[str, tuple[str, ...]]) -> None:
        """Save the wake plan of ``key``: the rows of ``table`` that can be shown from ``now`` on.

        Not saved when such a row's commit distance is not settled (its observed commit is
        unknown here, or named by an abbreviated SHA: a fetch can change it without
        changing the key).
        """
        from gitmem.cache import CacheNotice
        from gitmem.cache.wakeplan import save_plan
        from gitmem.context.wake import showable_rows
        from gitmem.record.decay import microseconds

        keep = showable_rows(rows, self.ws.settings.decay.threshold)
        c = table.columns
        head = self.ws.store.head_sha()
        if head is not None:
            observed = set(map(extras["shas"].__getitem__, keep))
            if observed - {None} - self.ws.records.cache.distances(head).keys():
                return

        def pick(column: Sequence[Any]) -> list[Any]:
            return list(map(column.__getitem__, keep))

        shown, trusted = extras["shown"], extras["trusted"]
        authors = pick(shown) if shown else [None] * len(keep)
        trust = pick(trusted) if trusted else [True] * len(keep)
        blobs, chars = pick(table.blobs), list(map(len, pick(c["content"])))
        entry_keys = list(zip(blobs, authors, trust, strict=True))
        texts, tokens, short = self._plan_entries(key, rows, keep, entry_keys, chars)
        degrees = rows.degrees or {}
        statuses = rows.statuses
        counter = self.ws.records.cache.counter(self.ws.settings.tokenizer)
        save_plan(self.ws.records.cache.files, key, {
            "built": microseconds(now),
            "ids": pick(table.ids),
            "blobs": blobs,
            "types": pick(c["type"]),
            "statuses": pick(statuses),
            "conf": pick(c["conf"]),
            "half": pick(extras["half"]),
            "verified": pick(extras["verified"]),
            "distances": pick(extras["distances"]),
            "rels": pick(c["rels"]),
            "trusted": trust,
            "authors": authors,
            "tokens": tokens,
            "texts": texts,
            "chars": chars,
            "weights": pick(rows.weights),
            "degrees": {i: degrees[r] for i, r in enumerate(keep) if r in degrees},
            "short": short,
            "short_tokens": {i: counter(text) for i, text in short.items()},
            "stale": statuses.count("stale"),
            "bound": len(bindings),
            "bindings": bindings,
            "persona": persona,
            "continuity": continuity,
            "skipped": [(s.memory_id, s.blob_id, s.reason, s.path, s.hint) for s in skipped
                        if not isinstance(s, CacheNotice)],
        }, self.ws.settings.decay)

    def _plan_entries(self, key: tuple, rows: WakeRows, keep: list[int], entry_keys: list[tuple],
                      chars: list[int]) -> tuple[list[str], list[int], dict[int, str]]:
        """The text and tokens of the entry of each row of ``keep``, and the compressed ones.

        An entry depends only on its record, the author it names and whether that author is
        trusted (``entry_keys``: blob id, author shown, trusted): the entries the newest plan
        holds are taken from it, and only the others formatted (and counted, when the token
        column has no count for them). Compressed entries are kept for memories whose
        content is longer than a preview (see :data:`gitmem.defaults.PREVIEW_CHARS`).
        """
        from gitmem.cache.wakeplan import latest_plan, same_entries
        from gitmem.defaults import PREVIEW_CHARS

        cache = self.ws.records.cache
        previous = latest_plan(cache.files)
        carried: dict[tuple, tuple[str, int, str | None]] = {}
        if previous is not None and same_entries(previous["key"], key):
            old = previous["texts"]
            entries = zip(old, previous["tokens"], map(previous["short"].get, range(len(old))),
                          strict=True)
            keys = zip(previous["blobs"], previous["authors"], previous["trusted"], strict=True)
            carried = dict(zip(keys, entries, strict=True))
        counter = cache.counter(self.ws.settings.tokenizer)
        column = rows.tokens
        texts: list[str] = []
        tokens: list[int] = []
        short: dict[int, str] = {}
        for i, (r, found) in enumerate(zip(keep, map(carried.get, entry_keys), strict=True)):
            long = chars[i] > PREVIEW_CHARS
            count = column[r]
            if found is None or (long and found[2] is None):
                text = rows.entry(r)
                compressed = rows.compressed(r) if long and rows.compressed is not None else None
                if count < 0:  # as compile_rows counts it (an entry naming its author)
                    count = counter(text)
            else:
                text, carried_count, compressed = found
                if count < 0:
                    count = carried_count
            texts.append(text)
            tokens.append(count)
            if compressed is not None:
                short[i] = compressed
        return texts, tokens, short

    def _wake_rows(self, table: RecordTable, now: datetime, extras: dict[str, Any] | None = None) -> WakeRows:
        """The columns of a :class:`gitmem.cache.RecordTable` as wake ranks them: no object per memory.

        Trust (docs/sharing.md): an axiom or core memory whose author is neither the local git
        identity nor listed in ``trust.authors`` is not trusted (Tier 2, marked a hypothesis);
        the entry of every memory stated by someone else names its author. ``extras``, when
        given, receives the half-lives and distances the weights were computed from and the
        author shown and trust of each row (what a wake plan keeps).
        """
        from gitmem.context.entry import entry_details, format_entry
        from gitmem.context.wake import WakeRows
        from gitmem.defaults import PREVIEW_CHARS
        from gitmem.record.relations import linked_degrees

        c = table.columns
        contents = c["content"]
        effective = self.weights.runs.effective(table)
        inputs = self.weights.inputs(table, effective)
        weights, _ = self.weights.table_weights(table, now, inputs)
        column = self.ws.records.cache.token_column(table, self.ws.settings.tokenizer)
        shown, trusted = self._authors(table)
        if extras is not None:
            extras.update(half=inputs[0], distances=inputs[1], verified=inputs[2], shas=effective.shas,
                          shown=shown,
                          trusted=trusted)
        tokens: Sequence[int] = column
        if any(shown):
            # The cached counts are of entries without an author: count those rows afresh.
            tokens = [-1 if shown[r] is not None else n for r, n in enumerate(column)]
        if table.local:
            # ... and of entries as committed: a row stale here shows its local reason.
            tokens = list(tokens)
            for r in table.local:
                tokens[r] = -1
        tier1 = {"axiom", "core"}
        types = c["type"]
        # Once here, for the ranking and for the plan.
        degrees = linked_degrees(table.ids, c["rels"])

        def entry(row: int, compress: int | None = None) -> str:
            return format_entry(table.view(row), compress=compress, author=shown[row],
                                hypothesis=types[row] in tier1 and not trusted[row])

        return WakeRows(
            ids=table.ids,
            types=types,
            statuses=table.statuses(),
            weights=weights,
            relations=c["rels"],
            tokens=tokens,
            entry=entry,
            compressed=lambda row: entry(row, PREVIEW_CHARS),
            details=lambda row: entry_details(table.view(row)),
            min_chars=lambda row: len(contents[row]),
            trusted=trusted,
            degrees=degrees,
        )

    def _authors(self, table: RecordTable) -> tuple[list[str | None], list[bool]]:
        """Per row: the author to show (``None``: the local identity's own), and whether it is trusted.

        Trust comes from git (:meth:`Records.writers`: who made the version), never from the
        record's own ``author`` field; a field that names someone else is shown as a claim
        (:func:`gitmem.context.entry.claimed_by`).
        """
        writers, verdict = self._author_verdicts(table)
        if writers is None:
            return [], []
        pairs = list(zip(writers, table.columns["author"], strict=True))
        # Few distinct (writers, claim) pairs: judge each once, then map the rows through a dict.
        judged = {pair: verdict(pair) for pair in set(pairs)}
        out = list(map(judged.__getitem__, pairs))
        return [v[0] for v in out], [v[1] for v in out]

    def _author_verdicts(self, table: RecordTable) -> tuple[list[tuple] | None,
                                                            Callable[[tuple], tuple[str | None, bool]]]:
        """Per row its writers (``None``: git names no writer), and the verdict of a (writers, claim) pair.

        A row's pair is its writers and its ``author`` column (the claim).

        The verdict is what :meth:`_authors` gives a row of that pair, judged once per pair.
        """
        from gitmem.context.entry import claimed_by
        from gitmem.sharing.trust import shown_writer
        from gitmem.vocabulary import unmarked

        trust = self.ws.settings.trust
        writers = self.ws.records.writers(table, trust.require_signatures)
        me = self.ws.store.identity() if writers else ""  # an empty table judges nobody

        def trusts(who: str) -> bool:
            return trust.trusts(who, me)

        judged: dict[tuple, tuple[str | None, bool]] = {}

        def verdict(pair: tuple) -> tuple[str | None, bool]:
            found = judged.get(pair)
            if found is not None:
                return found
            who, claim = pair
            ok = bool(who) and all(map(trusts, who))
            writer = shown_writer(who, trusts)
            if writer is None:  # git names nobody: the record's word is all there is
                shown: str | None = claimed_by(claim, "nobody git knows") if claim else "unknown"
            elif ok and writer == me:
                shown = None
            elif claim and claim != unmarked(writer):  # the mark alone says what is wrong
                shown = claimed_by(claim, writer)
            else:
                shown = writer
            judged[pair] = (shown, ok)
            return judged[pair]

        return writers or None, verdict

    def _blocks(self, tip: str | None, skipped: list[Skipped]) -> tuple[dict[str, Any] | None, str | None,
                                                                          str | None]:
        """Wake's line blocks at ``tip``: the persona and note in force here, and the untrusted block."""
        persona_standing, note_standing = self.standing(tip)
        persona = None
        if persona_standing.in_force is not None:
            blob = persona_standing.in_force.blob
            try:
                persona = self._persona_of(blob)
            except MalformedRecord as exc:
                skipped.append(Skipped("persona", blob, exc.reason, path=PERSONA_PATH,
                                       hint="store a valid one with `tur persona set FILE`"))
        note = note_standing.in_force
        continuity = self._note_text(note, skipped) if note is not None else None
        untrusted = None
        if persona_standing.proposed is not None or note_standing.proposed is not None:
            untrusted = self._untrusted_block(tip)
        return persona, continuity, untrusted

    def recall(self, query: str, *, top_k: int | None = None, token_budget: int | None = None,
               max_chars: int | None = None, **options: Any) -> tuple[RecallResult, list[Skipped]]:
        """See :meth:`gitmem.api.Gitmem.recall`: the hits of this store and of the personal store.

        The options are those of :meth:`own_recall`.
        """
        personal = self.ws.personal()
        if personal is None:
            return self.own_recall(query, top_k=top_k, token_budget=token_budget, max_chars=max_chars,
                                   **options)
        from gitmem.api.limits import resolve
        from gitmem.api.personal import joined_recall

        via = options.get("via")
        top_k = resolve("recall_top_k", top_k, self.ws.settings, via.harness if via else "", self.persona,
                        self.ws.settings.recall.top_k)
        if options.get("file") is not None:  # a repository path from here, checked here
            options["files"] = [*options.get("files", ()), self.repo_path(options.pop("file"))]
        return joined_recall(self, personal, query, top_k, token_budget, max_chars, **options)

    def own_recall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        token_budget: int | None = None,
        include_stale: bool = False,
        full_records: bool = True,
        now: datetime | None = None,
        max_chars: int | None = None,
        file: str | None = None,
        skip: Callable[[Any], bool] | None = None,
        files: Sequence[str] = (),
        floor: float = 0.0,
        skip_note: Callable[[Any], bool] | None = None,
        via: Via | None = None,
    ) -> tuple[RecallResult, list[Skipped]]:
        """See :meth:`gitmem.api.Gitmem.recall`; ``floor``: see :func:`gitmem.context.recall.recall`.

        This store's hits alone. ``skip_note(view)``: leave out the stale note on that memory (a
        hook sent it already). ``via``: who asks; a memory bound to other agents is left out (its
        id in :attr:`RecallResult.hidden`), and ``top_k`` defaults to its harness's
        (:mod:`gitmem.api.limits`).
        """
        from gitmem.api.limits import resolve
        from gitmem.context.recall import recall

        if file is not None:
            files = [*files, self.repo_path(file)]
        if not query.strip() and not files:
            raise InvalidInput("recall needs a query or a file",
                               "pass what you are about to do, or the file you are about to change")
        asking = via.asking if via is not None else ()
        top_k = resolve("recall_top_k", top_k, self.ws.settings, via.harness if via else "", self.persona,
                        self.ws.settings.recall.top_k) or 1
        records = self.ws.records
        cache = records.cache
        table, skipped = records.table(records.tip())
        selection = table.recall_selection(include_stale)
        anchored = self.anchored_rows(table, files) if files else []
        first = self._anchored_views(table, selection, anchored) if files else ()
        hidden: list[str] = []
        if asking and any(table.columns["vis"]):
            first, skip, skip_note = _unseen(asking, hidden, first, skip, skip_note)
        encoding = self.ws.settings.tokenizer
        notes, held = (self._not_fresh(table, selection, query, anchored, skip, skip_note, top_k)
                       if not include_stale else ([], 0))
        if notes:  # what is not fresh now is said in its note, never also as a fresh hit
            noted = {note.memory_id for note in notes}
            first = [view for view in first if view.id not in noted]
            given = skip
            skip = (lambda m: m.id in noted or given(m)) if given is not None else (lambda m: m.id in noted)
        suffix = ""
        if notes or held:
            from gitmem.api.stale import fit_tail

            notes, suffix = fit_tail(notes, held, token_budget, max_chars, cache.counter(encoding))
        result = recall(
            (),
            query,
            top_k=top_k,
            include_stale=include_stale,
            token_budget=token_budget or None,
            # Counts remembered across processes: a hook's repeated text costs no BPE load.
            counter=cache.counter(encoding) if token_budget else None,
            bytes_bound=True,
            selected=selection,
            index=cache.recall_index(table.tree),
            materialize=(lambda view: cache.memory(table, view.row).with_local(view.local_reason))  # type: ignore[attr-defined]
            if full_records else None,
            max_chars=max_chars or None,
            skip=skip,
            first=first,
            author_of=self._author_of(table),
            verified=self._verified_of(table),
            floor=floor,
            suffix=suffix,
        )
        if notes or held:
            result = replace(result, stale=tuple(notes), held_back=held)
        if hidden:
            result = replace(result, hidden=tuple(dict.fromkeys(hidden)))
        return result, [*records.notices(), *skipped]

    def _not_fresh(self, table: RecordTable, selection: tuple[Any, dict[str, str]], query: str,
                   rows: Sequence[int], skip: Callable[[Any], bool] | None,
                   skip_note: Callable[[Any], bool] | None = None,
                   top_k: int = 5) -> tuple[list[Any], int]:
        """The stale notes on ``rows`` (a file's memories) and the matches held back as stale."""
        from gitmem.api.stale import held_back, stale_notes

        notes = []
        if rows:
            # A memory recorded fresh whose verification point is not HEAD has not been judged
            # since the code moved (no verify, no watcher ran): judge it here, before the edit.
            # Only those a recall could show (the first ``top_k``): the cost stays O(k).
            head, shas = self.ws.store.head_sha(), self.weights.runs.effective(table).shas
            statuses, fresh = table.statuses(), Status.FRESH.value
            unjudged = set([r for r in rows if statuses[r] == fresh and shas[r] != head][:top_k])
            notes = stale_notes(self.ws, table, rows, skip_note, unjudged=unjudged.__contains__)
        candidates = selection[0]
        kept = candidates.rows if hasattr(candidates, "rows") else [
            r for m in candidates if (r := table.row(m.id)) is not None]
        return notes, held_back(self.ws, table, query, kept, skip)

    def warm(self, now: datetime | None = None) -> None:
        """See :meth:`gitmem.api.Gitmem.warm`."""
        records = self.ws.records
        cache = records.cache
        with cache.eager():
            self.wake(now=now)  # saves the plan of this state (and the token counts and distances)
            table, _ = records.table(records.tip())
            candidates, _ = table.recall_selection(False)
            if candidates:
                cache.recall_index(table.tree)(candidates)
            records.flush()

    def _verified_of(self, table: RecordTable) -> Callable[[Any], int | None]:
        """Memory -> its effective last verification (microseconds), for recall's recency ranker."""
        from gitmem.context.topk import ByRow

        return ByRow(self.weights.runs.effective(table).verified, table.row)

    def _author_of(self, table: RecordTable) -> Callable[[Any], str | None]:
        """Memory -> its author when that is someone other than the local identity (else ``None``)."""
        writers, verdict = self._author_verdicts(table)  # judged for the hits alone
        row_of, ids, claims = table.row, table.ids, table.columns["author"]

        def author_of(memory: Any) -> str | None:
            # A view of this table names its row: no id -> row map of the whole table is built.
            row = getattr(memory, "row", None)
            if row is None or not 0 <= row < len(ids) or ids[row] != memory.id:
                row = row_of(memory.id)
            if row is None or writers is None:
                return None
            return verdict((writers[row], claims[row]))[0]

        return author_of

    def repo_path(self, path: str, base: Path | None = None) -> str:
        """``path`` as a repository path (POSIX, relative to the working tree's root).

        ``path`` is absolute, or relative to ``base`` (default: the current directory).

        Raises:
            InvalidInput: the path is outside the working tree (or the repository is bare).
        """
        workdir = self.ws.store.workdir
        if workdir is None:
            raise InvalidInput(f"{path}: a bare repository has no files")
        return repo_relative(workdir, path, base or self.ws.cwd)

    def anchored_to(self, path: str) -> list[str]:
        """See :meth:`gitmem.api.Gitmem.anchored_to`."""
        repo_path = self.repo_path(path)
        records = self.ws.records
        table, _ = records.table(records.tip())
        return [table.ids[r] for r in self.anchored_rows(table, [repo_path])]

    def anchored_rows(self, table: RecordTable, paths: Sequence[str]) -> list[int]:
        """Rows of ``table`` anchored to any of ``paths``: most confident, then most recently verified, first.

        A memory is matched by the path its anchor names now: verify moves the anchor of a
        memory whose file was renamed, so a renamed file's memories follow it once verified.
        """
        from gitmem.cache.paths import anchored_rows

        c = table.columns
        rows = anchored_rows(self.ws.records.cache.files, table, paths)
        conf, verified = c["conf"], self.weights.runs.effective(table).verified
        return sorted(rows, key=lambda r: (-conf[r], -(verified[r] or 0), table.ids[r]))

    def _anchored_views(self, table: RecordTable, selection: tuple[Any, dict[str, str]],
                        rows: Sequence[int]) -> list[Any]:
        """The recall candidates among ``rows`` (a file's memories, :meth:`anchored_rows`), as views."""
        candidates = selection[0]
        allowed = set(candidates.rows) if hasattr(candidates, "rows") else None
        return [table.view(r) for r in rows if allowed is None or r in allowed]
