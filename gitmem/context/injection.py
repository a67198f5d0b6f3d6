"""The assembly record of one injection: what a wake or recall put into an agent's context, and what not.

docs/log.md, "Context on record": every hook, MCP tool or resource read, ``tur wake`` and
``tur recall`` appends one :class:`Injection` to the local log (:mod:`gitmem.api.injections`).
It is built from what the wake or recall computed already (:attr:`WakeResult.packed` and
:attr:`WakeResult.left_out`, the hits and :attr:`RecallResult.over_budget`), never by
compiling again, and it is plain data: :meth:`Injection.to_json` and
:meth:`Injection.from_json` are each other's inverse. Named tuples, not dataclasses: every
hook imports this module, and a dataclass costs a millisecond to create.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from gitmem.context.hits import RecallResult
    from gitmem.context.wake import WakeResult

__all__ = ["LEFT_OUT_REASONS", "LISTED_MAX", "QUERY_CHARS", "Included", "Injection", "LeftOut", "Via",
           "current_via", "injecting", "recall_injection", "wake_injection"]

LEFT_OUT_REASONS = ("over_budget", "stale", "refuted", "low_weight", "superseded", "visibility",
                    "floor", "duplicate")
"""Why a memory was left out of an injection.

``over_budget``: it did not fit the token or character cap; ``stale`` / ``refuted`` /
``superseded``: its status; ``low_weight``: its decay weight is under the threshold (wake);
``visibility``: the memory is bound to other agents than the caller (its ``visibility``);
``floor``: under recall's relevance floor (reserved: the ranking does not yet say which
memories the floor left out; :attr:`Injection.floor` says that one applied);
``duplicate``: a hook sent it earlier in the same session, unchanged."""

QUERY_CHARS = 200
"""Characters of the query (the prompt, or the files of a tool call) a record keeps."""

LISTED_MAX = 500
"""Memories a record names as included at most (an unbounded wake of a large store includes
every active memory): the rest are counted in :attr:`Injection.unlisted`, so that one record
stays far under the log's rotation size."""


class Via(NamedTuple):
    """Who asked for an injection: the surface, and the harness and session when known.

    The one value every surface passes to :meth:`gitmem.api.Gitmem.wake` and
    :meth:`gitmem.api.Gitmem.recall` (or the hooks build from their payload), so that no
    surface writes the log itself.

    Attributes:
        surface: ``hook:session-start``, ``hook:pre-turn``, ``hook:pre-tool``, ``mcp:TOOL``,
            ``mcp:resource``, ``cli:wake``, ``cli:recall``, ``http:…``: a short name, never empty.
        harness: ``claude``, ``codex``, ``gemini``… or ``""`` when not known.
        session: the harness's session id, or ``""``.
        agent: the agent's own name (``tur mcp --agent``, ``tur wake --for``), or ``""``.
    """

    surface: str = "api"
    harness: str = ""
    session: str = ""
    agent: str = ""

    @property
    def asking(self) -> tuple[str, ...]:
        """The names a memory's ``visibility`` is matched against: the harness and the agent.

        Empty when neither is known: an unnamed caller (a person's ``tur wake``) sees every memory.
        """
        return tuple(name for name in (self.harness, self.agent) if name)


_CURRENT: ContextVar[Via | None] = ContextVar("gitmem_injection_via", default=None)


def current_via() -> Via | None:
    """The :class:`Via` of the enclosing :class:`injecting` block (this thread or task), or ``None``."""
    return _CURRENT.get()


class injecting:
    """``with injecting(via):`` every wake and recall inside is logged under ``via``.

    For a server with a surface of its own (``tur serve``'s ``http:…``) that calls the
    facade, or the MCP tools' bodies, on behalf of a client: inside the block, a
    :meth:`gitmem.api.Gitmem.wake` or :meth:`~gitmem.api.Gitmem.recall` given no ``via``
    takes this one, and the MCP tools log under it instead of their own ``mcp:…`` names.
    A :class:`contextvars.ContextVar`: each thread and task has its own; blocks nest.
    """

    def __init__(self, via: Via) -> None:
        self.via = via
        self._token: Token[Via | None] | None = None

    def __enter__(self) -> Via:
        self._token = _CURRENT.set(self.via)
        return self.via

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None


class Included(NamedTuple):
    """One memory (or block) in an injection.

    Attributes:
        id: the memory id, or ``persona`` / ``continuity`` / ``untrusted`` for wake's blocks.
        tokens: tokens of its entry (wake); ``None`` where the surface did not count them
            (recall measures its text as a whole, and often without loading a tokenizer).
        tier: its wake tier (0, 1 or 2), ``None`` for recall.
        rank: its 1-based place in a recall, ``None`` for wake.
        note: ``compressed`` (shown as a preview), ``truncated`` (part of a block),
            ``stale note`` (a note that it is not fresh, not the memory), or ``None``.
        store: ``personal`` for a memory of the personal store (marked so in wake and
            recall, docs/personal.md), ``None`` for the project's.
        visibility: the agents a bound memory is for (``tur learn --for``), ``None`` for a
            memory for everyone.
    """

    id: str
    tokens: int | None = None
    tier: int | None = None
    rank: int | None = None
    note: str | None = None
    store: str | None = None
    visibility: tuple[str, ...] | None = None


class LeftOut(NamedTuple):
    """One memory left out of an injection, and why (one of :data:`LEFT_OUT_REASONS`).

    ``store`` and ``visibility`` as :class:`Included`'s, where the wake or recall knows them.
    """

    id: str
    reason: str
    tokens: int | None = None
    store: str | None = None
    visibility: tuple[str, ...] | None = None


class Injection(NamedTuple):
    """The assembly record of one wake or recall that went (or would have gone) to an agent.

    Attributes:
        at: when (an aware UTC datetime).
        via: the surface, harness and session (:class:`Via`).
        kind: ``wake`` or ``recall``.
        query: a recall's query (at most :data:`QUERY_CHARS` characters), ``""`` for wake.
        tokens: tokens of the text injected (wake's count), ``None`` when not counted.
        budget: the token budget, ``None`` when unbounded.
        chars: characters of the text injected, ``None`` when the surface renders it after
            the record is made (``tur recall`` prints it in the format asked for).
        included: what went in, in text order.
        left_out: memories left out by name, with their reason: for wake the best-ranked
            ones left out for budget (:attr:`gitmem.context.wake.WakeResult.packed`), for
            recall the hits that did not fit and those a hook sent before in the session.
        counts: how many were left out for each reason, those not named in ``left_out``
            included (a store's thousands of low-weight memories are counted, not listed).
        floor: the relevance floor a recall applied (``pre-turn``'s), ``None`` for none: a
            recall under a floor that sent nothing had nothing relevant enough.
        unlisted: memories included but not named, past :data:`LISTED_MAX`.
    """

    at: datetime
    via: Via
    kind: str
    query: str = ""
    tokens: int | None = None
    budget: int | None = None
    chars: int | None = None
    included: tuple[Included, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    counts: Mapping[str, int] = MappingProxyType({})
    floor: float | None = None
    unlisted: int = 0

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values: the line the log stores (keys of ``None`` values left out)."""
        def plain(item: Included | LeftOut) -> dict[str, Any]:
            return {k: v for k, v in item._asdict().items() if v is not None}

        out: dict[str, Any] = {
            "at": self.at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "surface": self.via.surface, "harness": self.via.harness, "session": self.via.session,
            **({"agent": self.via.agent} if self.via.agent else {}),
            "kind": self.kind, "query": self.query, "tokens": self.tokens, "budget": self.budget,
            "chars": self.chars,
            "included": [plain(i) for i in self.included],
            "left_out": [plain(i) for i in self.left_out],
            "counts": dict(self.counts),
        }
        if self.floor is not None:
            out["floor"] = self.floor
        if self.unlisted:
            out["unlisted"] = self.unlisted
        return out

    @classmethod
    def from_json(cls, data: Any) -> Injection:
        """The record of a :meth:`to_json` mapping.

        Raises:
            ValueError: ``data`` is not such a mapping (a damaged or foreign line).
        """
        try:
            at = datetime.fromisoformat(str(data["at"]).replace("Z", "+00:00"))
            if at.tzinfo is None:
                raise ValueError("a naive time")
            return cls(
                at=at.astimezone(UTC),
                via=Via(str(data["surface"]), str(data.get("harness") or ""),
                        str(data.get("session") or ""), str(data.get("agent") or "")),
                kind=str(data["kind"]),
                query=str(data.get("query") or ""),
                tokens=_optional_int(data.get("tokens")),
                budget=_optional_int(data.get("budget")),
                chars=_optional_int(data.get("chars")),
                included=tuple(Included(str(i["id"]), _optional_int(i.get("tokens")),
                                        _optional_int(i.get("tier")), _optional_int(i.get("rank")),
                                        i.get("note"), *_marks(i)) for i in data.get("included") or ()),
                left_out=tuple(LeftOut(str(i["id"]), str(i["reason"]), _optional_int(i.get("tokens")),
                                       *_marks(i))
                               for i in data.get("left_out") or ()),
                counts={str(k): int(v) for k, v in (data.get("counts") or {}).items()},
                floor=float(data["floor"]) if data.get("floor") is not None else None,
                unlisted=_optional_int(data.get("unlisted")) or 0,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not an injection record: {exc}") from None


def _marks(item: Mapping[str, Any]) -> tuple[str | None, tuple[str, ...] | None]:
    """The ``store`` and ``visibility`` of a logged item (absent in records of an older gitmem)."""
    store, names = item.get("store"), item.get("visibility")
    return (str(store) if store else None,
            tuple(map(str, names)) if isinstance(names, list | tuple) and names else None)


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not a whole number")
    return value


def wake_injection(result: WakeResult, via: Via, at: datetime) -> Injection:
    """The record of a wake, from :attr:`WakeResult.packed` and :attr:`WakeResult.left_out` only.

    The full assembly record (:attr:`WakeResult.assembly`) is never built here: on a wake
    from its plan it would compile the wake again from the whole table.
    """
    bound = result.bindings.get
    included = [Included(e.memory_id, e.tokens, tier=e.tier, note=e.reason, store=e.store,
                         visibility=bound(e.memory_id))
                for e in result.packed if e.included]
    left_out = tuple([*(LeftOut(e.memory_id, e.reason or "over_budget", e.tokens, e.store,
                                bound(e.memory_id))
                        for e in result.packed if not e.included),
                      *(LeftOut(memory_id, "visibility", visibility=bound(memory_id))
                        for memory_id in result.hidden[:LISTED_MAX])])
    return Injection(at, via, "wake", tokens=result.tokens, budget=result.budget,
                     chars=len(result.text), included=tuple(included[:LISTED_MAX]),
                     left_out=left_out, counts=dict(result.left_out),
                     unlisted=max(0, len(included) - LISTED_MAX))


def recall_injection(result: RecallResult, via: Via, at: datetime, text: str | None = None,
                     duplicates: Sequence[str] = (), budget: int | None = None,
                     floor: float | None = None) -> Injection:
    """The record of a recall whose rendered block is ``text``.

    Args:
        result: the recall.
        via: who asked.
        at: when.
        text: what the surface sent (its length is recorded), ``None`` when not known yet.
        duplicates: ids of the memories a hook left out as sent before in the session, best
            first (what its ``skip`` refused).
        budget: the recall's token budget, ``None`` or 0 when unbounded.
        floor: the relevance floor it applied, ``None`` or 0 for none.
    """
    included = [Included(h.memory.id, rank=n, note="compressed" if h.compress is not None else None,
                         store=h.store, visibility=tuple(getattr(h.memory, "visibility", ()) or ()) or None)
                for n, h in enumerate(result.hits, 1)]
    included += [Included(note.memory_id, note="stale note") for note in result.stale]
    shown = {h.memory.id for h in result.hits}
    left_out = [LeftOut(memory_id, "over_budget") for memory_id in result.over_budget]
    left_out += [LeftOut(memory_id, "duplicate") for memory_id in dict.fromkeys(duplicates)
                 if memory_id not in shown]
    left_out += [LeftOut(memory_id, "visibility") for memory_id in result.hidden[:LISTED_MAX]]
    counts = {"over_budget": len(result.over_budget), "stale": result.held_back,
              "duplicate": sum(1 for x in left_out if x.reason == "duplicate"),
              "visibility": len(result.hidden)}
    return Injection(at, via, "recall", query=result.query[:QUERY_CHARS], budget=budget or None,
                     chars=None if text is None else len(text), included=tuple(included),
                     left_out=tuple(left_out),
                     counts={reason: n for reason, n in counts.items() if n}, floor=floor or None)
