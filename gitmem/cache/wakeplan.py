"""The wake plan of one state, a ``wake`` memo: what a warm ``tur wake`` reads instead of the table.

A wake's text depends on the clock only through the decay weights. Everything else it reads
(the records, their relations and writers, the commit distances to HEAD, this clone's
working-tree overlay, the settings and the local identity) is fixed by the *key* a plan is
built for (:func:`plan_key`). Of the rows of that state, only those neither refuted nor
stale and weighing at least the threshold can be shown, now or at any later time (a weight
only falls as time passes: :func:`gitmem.context.wake.showable_rows`): usually a tenth of the store.
The plan holds those rows with what wake reads of them (the inputs of their weights, their
tier, relation degree in the whole store, token count and the text of their entry), the
number of stale memories left out, the persona, the continuity note and the warnings about
entries that were skipped. A warm wake reads it, weighs its rows for today and packs them
(:func:`gitmem.context.wake.compile_rows`): the same text as from the whole table.

The memo is keyed by the key's text, and the payload holds the key itself, which a reader
compares with its own in full: a plan of another state is never used. The structure
of every column is checked after loading. The newest :data:`KEEP_PLANS` plans are kept (one
per worktree sharing the cache, usually); a write deletes older ones.

This module imports nothing of gitmem but the database (:mod:`gitmem.cache.db`), so that a
warm wake loads neither the records table nor its views.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted

__all__ = ["KEEP_PLANS", "PLAN_FORMAT", "WakePlan", "latest_plan", "plan_key", "plan_name", "read_plan",
           "reject_plan", "same_entries", "save_plan"]

PLAN_FORMAT = 1
"""Version of the plan's layout; part of every key."""

KEEP_PLANS = 4
"""Plans kept in the cache: the newest ones (a write deletes the others)."""

_KIND = "wake"
_NONE = type(None)
_FROM_POLICY = "from-policy"  # gitmem.record.decay.FROM_POLICY: the one text a half-life may be

# Column -> the types its values may have (checked after loading: SQLite covers damage, this
# covers a plan written by a gitmem that made a mistake).
_COLUMNS: dict[str, frozenset[type]] = {
    "ids": frozenset({str}),
    "blobs": frozenset({str}),
    "types": frozenset({str}),
    "statuses": frozenset({str}),
    "conf": frozenset({float, int}),
    "half": frozenset({float, int, str, _NONE}),
    "verified": frozenset({int, _NONE}),
    "distances": frozenset({int, _NONE}),
    "rels": frozenset({tuple}),
    "trusted": frozenset({bool}),
    "authors": frozenset({str, _NONE}),
    "tokens": frozenset({int}),
    "texts": frozenset({str}),
    "chars": frozenset({int}),
}


def plan_key(tip: str, head: str | None, settings: dict[str, Any], identity: str,
             local: dict[str, str], entry_format: int) -> tuple:
    """The key a plan is exact for: everything a wake reads but the clock and its budgets.

    Args:
        tip: the memory ref's commit (it fixes the records, their writers, the persona and
            the continuity note, and the entries skipped).
        head: HEAD's commit (it fixes the commit distances), or ``None``.
        settings: :meth:`gitmem.config.settings.Settings.to_plain` (decay, tokenizer, trust...).
        identity: the local git identity (``Name <email>``): it decides whose memories are
            trusted and which entries name their author.
        local: this clone's working-tree overlay, memory id -> reason (only entries that
            still hold).
        entry_format: :data:`gitmem.context.entry.ENTRY_FORMAT` (the text of the entries held).
    """
    return (PLAN_FORMAT, entry_format, tip, head, identity, tuple(sorted(local.items())), settings)


def same_entries(key: tuple, other: tuple) -> bool:
    """Whether the entries of the plans of two keys have the same text and token count for a record.

    True when both keys are of this plan format and entry format and of the same tokenizer:
    the entry of a record then depends only on the record, the author it names and whether
    it is a hypothesis, which a plan holds per row.
    """
    if len(key) != 7 or len(other) != 7 or key[:2] != other[:2] or key[0] != PLAN_FORMAT:
        return False
    mine, theirs = key[6], other[6]
    return (isinstance(mine, dict) and isinstance(theirs, dict)
            and mine.get("tokenizer") == theirs.get("tokenizer"))


def plan_name(key: tuple) -> str:
    """The memo key of the plan of ``key``: its text (the payload holds the key itself)."""
    # The key in full: a warm wake loads no hashing module, and the database indexes any text.
    return repr(key)


def reject_plan(db: CacheDB, key: tuple, exc: Untrusted) -> None:
    """Delete the plan of ``key`` (found untrusted by :func:`read_plan`) and say so."""
    db.reject(_KIND, plan_name(key), exc)


class WakePlan:
    """A loaded plan: the rows a wake of its key can show, as columns in id order.

    Attributes:
        built: when it was built, in microseconds from the Unix epoch (it holds for that
            moment and every later one).
        columns: the columns of :data:`_COLUMNS` (row *i* of each is one memory): ids, blob
            ids, types, statuses, confidences, half-lives as :func:`gitmem.record.decay.weight_column`
            reads them, ``last_verified_at`` in microseconds, commit distances, relations,
            whether each author is trusted, the author shown (``None``: the local identity),
            tokens and text of each entry, and characters of each content.
        degrees: row -> its degree in the relation graph of the whole store (rows with one).
        short: row -> the compressed entry (for memories whose content can be compressed).
        stale: stale memories of the store (left out of the rows).
        persona: the persona mapping, or ``None``.
        continuity: the latest continuity note, or ``None``.
        skipped: ``(memory id, blob id, reason, path, hint)`` of each entry a wake warns of.
    """

    __slots__ = ("built", "columns", "continuity", "degrees", "persona", "short", "skipped", "stale")

    def __init__(self, payload: dict[str, Any]) -> None:
        self.built: int = payload["built"]
        self.columns: dict[str, list] = {name: payload[name] for name in _COLUMNS}
        self.degrees: dict[int, int] = payload["degrees"]
        self.short: dict[int, str] = payload["short"]
        self.stale: int = payload["stale"]
        self.persona: dict | None = payload["persona"]
        self.continuity: str | None = payload["continuity"]
        self.skipped: list[tuple[str, str, str, str, str]] = payload["skipped"]


def _check(payload: Any, key: tuple) -> WakePlan | None:
    """The plan in ``payload`` when it was built for ``key``; ``None`` for another key.

    Raises:
        Untrusted: the payload is not shaped as :func:`save_plan` writes it.
    """
    if not isinstance(payload, dict):
        raise Untrusted("bad structure: not a mapping")
    if payload.get("key") != key:
        return None
    _check_shape(payload)
    return WakePlan(payload)


_ENTRIES = ("blobs", "authors", "trusted", "texts", "tokens")
"""The columns a new plan takes the entries of unchanged rows from (see :func:`latest_plan`)."""


def _check_shape(payload: dict[str, Any], columns: Iterable[str] = _COLUMNS) -> None:
    """Check the fields of a plan's payload: all but the columns, and those in ``columns``.

    A few milliseconds for 10,000 rows.

    Raises:
        Untrusted: a field is missing or holds a value :func:`save_plan` never writes.
    """
    try:
        n = len(payload["ids"])
        for name in columns:
            allowed, column = _COLUMNS[name], payload[name]
            if type(column) is not list or len(column) != n or not set(map(type, column)) <= allowed:
                raise Untrusted(f"bad structure: column {name}")
        if "half" in columns and not {h for h in payload["half"] if type(h) is str} <= {_FROM_POLICY}:
            raise Untrusted("bad structure: column half")
        # Only the few related rows are walked in Python (compress picks them in C).
        for links in compress(payload["rels"], payload["rels"]):
            if not all(type(link) is tuple and len(link) == 2 and type(link[0]) is str
                       and type(link[1]) is str for link in links):
                raise Untrusted("bad structure: relations")
        rows = range(n)
        if not (type(payload["built"]) is int and type(payload["stale"]) is int
                and _int_map(payload["degrees"], rows, int) and _int_map(payload["short"], rows, str)
                and isinstance(payload["persona"], dict | _NONE)
                and isinstance(payload["continuity"], str | _NONE)
                and type(payload["skipped"]) is list
                and all(type(s) is tuple and len(s) == 5 and set(map(type, s)) <= {str}
                        for s in payload["skipped"])):
            raise Untrusted("bad structure: plan fields")
    except KeyError as exc:
        raise Untrusted(f"bad structure: no {exc}") from None


def _int_map(value: Any, rows: range, kind: type) -> bool:
    """Whether ``value`` maps rows of ``rows`` to values of type ``kind``."""
    return type(value) is dict and all(type(r) is int and r in rows and type(v) is kind
                                       for r, v in value.items())


def read_plan(db: CacheDB, key: tuple) -> WakePlan | None:
    """The plan of ``key`` in the cache database ``db``, or ``None`` when there is none.

    A payload under that key built for another key (copied there) is not used.

    Raises:
        Untrusted: the plan is badly shaped; the caller deletes it and says so
            (:func:`reject_plan`).
    """
    got = db.get(_KIND, plan_name(key))
    return _check(got, key) if got is not None else None


def latest_plan(db: CacheDB) -> dict[str, Any] | None:
    """The payload of the newest plan in ``db`` (any key), or ``None``.

    What a new plan takes the entries of unchanged rows from (see :func:`save_plan`); a
    damaged or badly shaped entry is passed over here (its own reader deletes it).
    """
    for name in db.keys(_KIND)[:KEEP_PLANS]:
        try:
            got = db.get(_KIND, name)
            if not isinstance(got, dict) or not isinstance(got.get("key"), tuple):
                continue
            _check_shape(got, _ENTRIES)
        except Untrusted:
            continue
        return got
    return None


def save_plan(files: CacheDB, key: tuple, payload: dict[str, Any]) -> None:
    """Write the plan of ``key`` (``payload``: every field :class:`WakePlan` reads) and prune old ones.

    Args:
        files: the cache database (one that cannot be written
            that cannot be written makes this a no-op, with its one notice).
        key: :func:`plan_key`.
        payload: the plan's fields, plain marshal-able values.
    """
    name = plan_name(key)
    try:
        if not files.put(_KIND, name, {**payload, "key": key}):
            return
    except ValueError:  # a value marshal cannot write (a persona of another tool?): no plan
        return
    files.keep_newest(_KIND, KEEP_PLANS)
