"""What an agent reads, for the facade: wake, recall, the pre-turn hook, persona and continuity notes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gitmem.defaults import PRE_TURN_TOKEN_BUDGET
from gitmem.errors import InvalidInput, MalformedRecord
from gitmem.reader import Skipped
from gitmem.store import CommitInfo, Mutation
from gitmem.text import first_words
from gitmem.vocabulary import utc_now

if TYPE_CHECKING:
    from gitmem.api.records import Workspace
    from gitmem.api.weights import Weights
    from gitmem.cache import RecordTable
    from gitmem.recall import RecallResult
    from gitmem.tokens import TokenCounter
    from gitmem.wake import WakeResult, WakeRows

__all__ = ["CONTINUITY_DIR", "PERSONA_PATH", "ContextBuilder"]

PERSONA_PATH = "persona.yaml"
CONTINUITY_DIR = "continuity"


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
        """The stored ``persona.yaml`` text, or ``None`` when none is set."""
        store = self.ws.store
        data = store.read_path(store.tip(), PERSONA_PATH)
        return data.decode("utf-8") if data is not None else None

    def persona(self, tip: str | None = None) -> dict[str, Any] | None:
        """The persona as a mapping (Tier 0 of wake), or ``None``.

        Args:
            tip: the memory ref commit to read (default: the current tip).

        Raises:
            MalformedRecord: the stored persona is not a YAML mapping.
        """
        store, cache = self.ws.store, self.ws.records.cache
        blob = store.blob_id_at(tip or store.tip(), PERSONA_PATH)
        if blob is None:
            return None
        found = cache.persona(blob)
        if found is not None:
            return found
        from gitmem import codec

        mapping = codec.load_mapping(store.read_blob(blob), f"{PERSONA_PATH} on refs/tur/memories")
        cache.put_persona(blob, mapping)
        return mapping

    def set_persona(self, data: bytes, where: str = "persona") -> CommitInfo | None:
        """Store ``data`` (a YAML mapping: identity and invariants) as ``persona.yaml``.

        Raises:
            MalformedRecord: not a safe YAML mapping.
        """
        from gitmem import codec

        codec.load_mapping(data, where)
        commit, _ = self.ws.store.transact(
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
        self.ws.store.transact(
            lambda tip: Mutation({f"{CONTINUITY_DIR}/{name}": body.encode()},
                                 f"spark: {first_words(text)}")
        )
        return name

    def continuity(self, tip: str | None = None) -> str | None:
        """The latest continuity note (names sort by time) at ``tip`` (default: now), or ``None``."""
        store = self.ws.store
        notes = store.list_dir(tip or store.tip(), CONTINUITY_DIR)
        if not notes:
            return None
        latest = max(notes)
        return store.read_note(notes[latest]).rstrip("\n")

    # -- wake and recall -------------------------------------------------------------------

    def token_counter(self) -> TokenCounter:
        """The configured tokenizer (loaded lazily on first count)."""
        from gitmem.tokens import TokenCounter

        return TokenCounter(self.ws.settings.tokenizer)

    def wake(self, token_budget: int | None = None,
             now: datetime | None = None) -> tuple[WakeResult, list[Skipped]]:
        """Compile the wake prompt within ``token_budget`` tokens (see :meth:`gitmem.api.Gitmem.wake`).

        Raises:
            InvalidInput: negative budget.
            TokenizerUnavailable: the configured encoding cannot be loaded offline.
        """
        from gitmem.wake import compile_rows

        settings = self.ws.settings
        budget = settings.wake.token_budget if token_budget is None else token_budget
        if budget < 0:
            raise InvalidInput(f"token budget must be >= 0, got {budget}")
        now = now or utc_now()
        records = self.ws.records
        tip = records.tip()  # one tip for records, persona and note: a learn meanwhile waits
        table, skipped = records.table(tip)
        result = compile_rows(
            self._wake_rows(table, now),
            persona=self._persona_or_warn(skipped, tip),
            continuity=self.continuity(tip),
            budget=budget or None,
            shares=settings.wake.shares,
            threshold=settings.decay.threshold,
            counter=records.cache.counter(settings.tokenizer),
        )
        records.flush()
        return result, [*records.notices(), *skipped]

    def _wake_rows(self, table: RecordTable, now: datetime) -> WakeRows:
        """The columns of a :class:`gitmem.cache.RecordTable` as wake ranks them: no object per memory."""
        from gitmem.entry import format_entry
        from gitmem.wake import WakeRows

        c = table.columns
        weights, _ = self.weights.table_weights(table, now)
        return WakeRows(
            ids=table.ids,
            types=c["type"],
            statuses=c["status"],
            weights=weights,
            relations=c["rels"],
            tokens=self.ws.records.cache.token_column(table, self.ws.settings.tokenizer),
            entry=lambda row: format_entry(table.view(row)),
        )

    def _persona_or_warn(self, skipped: list[Skipped], tip: str | None) -> dict[str, Any] | None:
        try:
            return self.persona(tip)
        except MalformedRecord as exc:
            blob = self.ws.store.blob_id_at(tip, PERSONA_PATH) or "?"
            skipped.append(Skipped("persona", blob, exc.reason))
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
        """Memories relevant to ``query`` (see :meth:`gitmem.api.Gitmem.recall`).

        Raises:
            InvalidInput: empty query, ``top_k`` < 1 or negative budget.
        """
        from gitmem.recall import recall

        if not query.strip():
            raise InvalidInput("recall needs a query")
        top_k = self.ws.settings.recall.top_k if top_k is None else top_k
        if top_k < 1:
            raise InvalidInput(f"top-k must be >= 1, got {top_k}")
        if token_budget is not None and token_budget < 0:
            raise InvalidInput(f"token budget must be >= 0, got {token_budget}")
        records = self.ws.records
        cache = records.cache
        table, skipped = records.table(records.tip())
        result = recall(
            (),
            query,
            top_k=top_k,
            include_stale=include_stale,
            token_budget=token_budget or None,
            counter=self.token_counter() if token_budget else None,
            selected=table.recall_selection(include_stale),
            index=cache.recall_index(table.tree),
            materialize=(lambda view: cache.memory(table, view.row)) if full_records else None,  # type: ignore[attr-defined]
        )
        return result, [*records.notices(), *skipped]

    def warm(self, now: datetime | None = None) -> None:
        """Build what the next wake and recall at the current tip read, so that both are warm.

        The record table, wake's token column and commit distances, and recall's index of the
        default candidates (stale memories left out) are built and saved; a call at a tip
        already warm reads what is cached and builds nothing. What a long-running surface
        (``tur mcp``) does after a write, so that the next wake and recall pay nothing for it.

        Raises:
            TokenizerUnavailable: a new entry must be counted and the encoding cannot load.
        """
        records = self.ws.records
        cache = records.cache
        table, _ = records.table(records.tip())
        self._wake_rows(table, now or utc_now())
        candidates, _ = table.recall_selection(False)
        if candidates:
            cache.recall_index(table.tree)(candidates)
        records.flush()

    def pre_turn(self, payload: bytes | str, top_k: int | None = None,
                 token_budget: int | None = PRE_TURN_TOKEN_BUDGET) -> str:
        """The recall block for a harness hook payload, or ``""`` when nothing matches.

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
