"""The :class:`gitmem.api.Gitmem` methods that build what an agent reads: wake, recall, persona, sparks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gitmem.errors import InvalidInput, MalformedRecord
from gitmem.reader import Skipped
from gitmem.store import CommitInfo, Mutation
from gitmem.vocabulary import utc_now

if TYPE_CHECKING:
    from gitmem.recall import RecallResult
    from gitmem.wake import WakeResult, WakeRows

__all__ = ["PERSONA_PATH", "ContextMixin"]

PERSONA_PATH = "persona.yaml"
CONTINUITY_DIR = "continuity"


class ContextMixin:
    """Wake, recall, the pre-turn hook, persona and continuity notes (mixed into ``Gitmem``)."""

    # -- persona and continuity ------------------------------------------------------------

    def persona_text(self) -> str | None:
        """The stored ``persona.yaml`` text, or ``None`` when none is set."""
        data = self.store.read_path(self.store.tip(), PERSONA_PATH)
        return data.decode("utf-8") if data is not None else None

    def persona(self, tip: str | None = None) -> dict[str, Any] | None:
        """The persona as a mapping (Tier 0 of wake), or ``None``.

        Args:
            tip: the memory ref commit to read (default: the current tip).

        Raises:
            MalformedRecord: the stored persona is not a YAML mapping.
        """
        blob = self.store.blob_id_at(tip or self.store.tip(), PERSONA_PATH)
        if blob is None:
            return None
        cache = self._record_cache()
        found = cache.persona(blob) if cache is not None else None
        if found is not None:
            return found
        from gitmem import codec

        mapping = codec.load_mapping(self.store.read_blob(blob), f"{PERSONA_PATH} on refs/tur/memories")
        if cache is not None:
            cache.put_persona(blob, mapping)
        return mapping

    def set_persona(self, data: bytes, where: str = "persona") -> CommitInfo | None:
        """Store ``data`` (a YAML mapping: identity and invariants) as ``persona.yaml``.

        Raises:
            MalformedRecord: not a safe YAML mapping.
        """
        from gitmem import codec

        codec.load_mapping(data, where)
        commit, _ = self.store.transact(
            lambda tip: Mutation({PERSONA_PATH: data}, "persona: set identity and invariants")
        )
        return commit

    def spark(self, text: str, now: datetime | None = None) -> str:
        """Record a continuity note for the next session; return its name.

        Raises:
            InvalidInput: empty text.
        """
        if not text.strip():
            raise InvalidInput("a continuity note needs text")
        import secrets  # lazily: it loads OpenSSL, which no read needs
        now = now or datetime.now(UTC)
        # Microseconds keep two notes of the same second in order; the name sorts by time.
        name = f"{now:%Y%m%dT%H%M%S.%fZ}-{secrets.token_hex(3)}.md"
        body = text if text.endswith("\n") else text + "\n"
        first = " ".join(text.split())
        first = first if len(first) <= 60 else first[:59] + "…"
        self.store.transact(
            lambda tip: Mutation({f"{CONTINUITY_DIR}/{name}": body.encode()}, f"spark: {first}")
        )
        return name

    def continuity(self, tip: str | None = None) -> str | None:
        """The latest continuity note (names sort by time) at ``tip`` (default: now), or ``None``."""
        notes = self.store.list_dir(tip or self.store.tip(), CONTINUITY_DIR)
        if not notes:
            return None
        latest = max(notes)
        return self.store.read_note(notes[latest]).rstrip("\n")

    # -- wake and recall -------------------------------------------------------------------

    def token_counter(self):  # noqa: ANN201 - gitmem.tokens.TokenCounter
        """The configured tokenizer (loaded lazily on first count)."""
        from gitmem.tokens import TokenCounter

        return TokenCounter(self.settings.tokenizer)

    def wake(
        self, token_budget: int | None = None, now: datetime | None = None
    ) -> tuple[WakeResult, list[Skipped]]:
        """Compile the wake prompt (EP-0132) within ``token_budget`` tokens.

        Args:
            token_budget: tokens; ``None`` takes the configured default (4096); 0 is unbounded.
            now: the time decay is computed at (default: now, UTC).

        Returns:
            The :class:`~gitmem.wake.WakeResult` (text + assembly record) and the skipped blobs.

        Raises:
            InvalidInput: negative budget.
            TokenizerUnavailable: the configured encoding cannot be loaded offline.
        """
        from gitmem.wake import compile_rows, compile_wake

        budget = self.settings.wake.token_budget if token_budget is None else token_budget
        if budget < 0:
            raise InvalidInput(f"token budget must be >= 0, got {budget}")
        now = now or utc_now()
        tip = self.store.tip()  # one tip for records, persona and note: a learn meanwhile waits
        cache = self._record_cache()
        options = {
            "continuity": self.continuity(tip),
            "budget": budget or None,
            "shares": self.settings.wake.shares,
            "threshold": self.settings.decay.threshold,
        }
        if cache is None:
            snap = self.snapshot(tip)
            memories, skipped = [snap.records[k] for k in sorted(snap.records)], snap.skipped
            result = compile_wake(memories, weights=self._weights(memories, now),
                                  persona=self._persona_or_warn(skipped, tip),
                                  counter=self.token_counter(), **options)
            return result, skipped
        table = cache.table(tip)
        skipped = [*cache.take_notices(), *table.bad]
        rows = self._wake_rows(table, now)
        result = compile_rows(rows, persona=self._persona_or_warn(skipped, tip),
                              counter=cache.counter(self.settings.tokenizer), **options)
        cache.flush()
        return result, [*cache.take_notices(), *skipped]

    def _wake_rows(self, table: Any, now: datetime) -> WakeRows:
        """The columns of a :class:`gitmem.cache.RecordTable` as wake ranks them: no object per memory."""
        from gitmem.entry import format_entry
        from gitmem.wake import WakeRows

        c = table.columns
        weights, _ = self._table_weights(table, now)
        return WakeRows(
            ids=table.ids,
            types=c["type"],
            statuses=c["status"],
            weights=weights,
            relations=c["rels"],
            tokens=self._record_cache().token_column(table, self.settings.tokenizer),
            entry=lambda row: format_entry(table.view(row)),
        )

    def _persona_or_warn(self, skipped: list[Skipped], tip: str | None) -> dict[str, Any] | None:
        try:
            return self.persona(tip)
        except MalformedRecord as exc:
            skipped.append(Skipped("persona", self.store.blob_id_at(tip, PERSONA_PATH) or "?",
                                   exc.reason))
            return None

    def recall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        token_budget: int | None = None,
        include_stale: bool = False,
        full_records: bool = True,
        now: datetime | None = None,
    ) -> tuple[RecallResult, list[Skipped]]:
        """Memories relevant to ``query``: BM25 + recency + trigram vectors fused by RRF.

        Refuted memories never appear; stale ones only with ``include_stale``. With
        ``full_records=False`` hits may carry read-only :class:`gitmem.cache.MemoryView`
        stand-ins (every field :mod:`gitmem.render` shows) instead of full records, which
        spares building the record models: what a caller that only renders wants.

        Raises:
            InvalidInput: empty query, ``top_k`` < 1 or negative budget.
        """
        from gitmem.recall import recall

        if not query.strip():
            raise InvalidInput("recall needs a query")
        top_k = self.settings.recall.top_k if top_k is None else top_k
        if top_k < 1:
            raise InvalidInput(f"top-k must be >= 1, got {top_k}")
        if token_budget is not None and token_budget < 0:
            raise InvalidInput(f"token budget must be >= 0, got {token_budget}")
        options = {
            "top_k": top_k,
            "include_stale": include_stale,
            "token_budget": token_budget or None,
            "counter": self.token_counter() if token_budget else None,
        }
        cache = self._record_cache()
        if cache is None:
            memories, skipped = self.memories()
            return recall(memories, query, **options), skipped
        table = cache.table(self.store.tip())
        skipped = [*cache.take_notices(), *table.bad]
        result = recall(
            (),
            query,
            selected=table.recall_selection(include_stale),
            index=cache.recall_index(table.tree),
            materialize=(lambda view: cache.memory(table, view.row)) if full_records else None,
            **options,
        )
        return result, [*cache.take_notices(), *skipped]

    def pre_turn(self, payload: bytes | str, top_k: int | None = None,
                 token_budget: int | None = 1024) -> str:
        """The recall block for a harness hook payload, or ``""`` when nothing matches.

        The prompt is found as :func:`gitmem.recall.query_from_payload` does (a JSON
        object's ``prompt`` field, a message list, or the raw text).

        Raises:
            GitmemError: the store cannot be read (the CLI prints it and still exits 0).
        """
        from gitmem.recall import query_from_payload
        from gitmem.render import render_recall

        prompt = query_from_payload(payload)
        if not prompt:
            return ""
        result, _ = self.recall(prompt, top_k=top_k, token_budget=token_budget, full_records=False)
        return render_recall(result, "markdown-prompt") if result.hits else ""
