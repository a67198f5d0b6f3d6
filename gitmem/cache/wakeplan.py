"""The wake plan of one state, a ``wake`` memo: what a warm ``tur wake`` reads instead of the table.

A wake's text depends on the clock only through the decay weights. Everything else it reads
(the records, their relations and writers, the commit distances to HEAD, this clone's
working-tree overlay, the settings and the local identity) is fixed by the *key* a plan is
built for (:func:`plan_key`). Of the rows of that state, only those neither refuted nor
stale and weighing at least the threshold can be shown, now or at any later time (a weight
only falls as time passes: :func:`gitmem.context.wake.showable_rows`): usually a tenth of the store.
The plan holds those rows with what wake reads of them (the inputs of their weights, their
tier, relation degree in the whole store, token counts and the text of their entries) as rows
of the cache database's ``wake_row`` table, sorted into streams (below), and a ``wake`` memo
with the rest: the number of stale memories left out, the persona, the continuity note, the
warnings about entries that were skipped, the supersessions. A warm wake merges the streams
lazily and packs what it takes (:func:`gitmem.context.wake.compile_ranked`): the same text as
from the whole table, reading about as many rows as its budget can hold.

The memo is keyed by the key's text, and the payload holds the key itself, which a reader
compares with its own in full: a plan of another state is never used. Its fields are checked
after loading, and every row when it is read. The newest :data:`KEEP_PLANS` plans are kept
(one per worktree sharing the cache, usually); a write deletes older ones and their rows.

A warm wake loads neither the records table nor its views: this module imports only the
database, the packing's shapes and (for the weights) the decay and relation functions.
"""

from __future__ import annotations

import bisect
import heapq
import marshal
import math
import time
from collections.abc import Callable
from itertools import compress
from typing import Any

from gitmem.cache.db import CacheDB, Untrusted
from gitmem.context.packing import RankedItem

__all__ = ["KEEP_PLANS", "PLAN_FORMAT", "TierSource", "WakePlan", "latest_plan", "plan_key", "plan_name",
           "read_plan", "reject_plan", "same_entries", "save_plan"]

PLAN_FORMAT = 2
"""Version of the plan's layout; part of every key."""

KEEP_PLANS = 4
"""Plans kept in the cache: the newest ones (a write deletes the others)."""

_KIND = "wake"
_NONE = type(None)
_FROM_POLICY = "from-policy"  # gitmem.record.decay.FROM_POLICY: the one text a half-life may be

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

# -- the rows of a plan -----------------------------------------------------------------------------
#
# A wake ranks the memories of a tier by ``weight × centrality``, and a weight is
# ``c × 2^(−(now − t) / h)`` (``c``: the confidence times the commit-distance factor, fixed for
# one key; ``t``: when the memory was last verified; ``h``: its half-life). For the memories of
# one half-life that were verified before the plan was built, the order by weight is therefore
# the same at every later time: the order of ``log2(weight at build) + build time / h``, the
# row's *key*. A plan keeps the rows of each tier in one *stream* per half-life, sorted by key
# (rows of equal inputs, which weigh the same, by id), and a wake merges the streams lazily:
# only as many rows are read as its budget can hold. The few rows that do not fit a stream
# (those with relations, whose centrality is not 1; those verified after the plan was built;
# half-lives too short to compute a key precisely) are weighed one by one.

_ROW_FIELDS = 28
_FETCH = ("pos, grp_end, key, degree, id, kind, status, conf, half, verified, distance, tokens, entry,"
          " short, chars, short_tokens, entry_chars, short_chars")
_FETCH_TYPES: tuple[Any, ...] = (int, int, float, int, str, str, str, (float, int), (float, int, str, _NONE),
                                 (int, _NONE), (int, _NONE), int, str, (str, _NONE), int, int, int, int)
_TIER1 = frozenset({"axiom", "core"})
_EXACT = 999
"""Stream number (within its tier's thousand) of the rows weighed one by one."""
_RELATED = 500
"""Added to the stream number of a stream of rows with relations."""
_MAX_CLASSES = 32
"""Streams of one tier at most: rows of rarer half-lives are weighed one by one."""
_MIN_HALF_LIFE = 0.01
"""Days: rows of a shorter half-life are weighed one by one (their key would be imprecise)."""
_MARGIN = 1e-6
"""In log2 units: a key this close to a bound is decided by the row's exact weight."""
_NO_SHORT = 1 << 62
"""The least tokens or characters of the compressed entries of rows that have none."""
_CHUNK, _MAX_CHUNK = 16, 1024
"""Rows read from a stream at a time: the first time, and at most (doubling in between)."""


def _half_lives(policy: Any) -> Any:
    """``(kind, own half-life) -> effective half-life in days or None``, as ``weight_column`` reads it."""
    per_type = {kind.value: (days is None, days) for kind, days in policy.half_life_days.items()}

    def half_life(kind: str, own: Any) -> float | None:
        never, by_type = per_type.get(kind, (False, None))
        return None if never else by_type if own == _FROM_POLICY else own

    return half_life


def _plan_rows(number: int, payload: dict[str, Any],
               policy: Any) -> tuple[list[tuple], list[tuple], dict[int, tuple[list[float], list[int]]]]:
    """The rows of a plan: its ``wake_row`` rows, streams and the weights' keys of related rows.

    Returns:
        The rows; each stream as ``(code, tier, half-life in days or None, rows)``; and per
        stream of related rows, the keys of its rows' weights, ascending, and their positions.
    """
    from gitmem.record.relations import centrality

    ids, types, trusted = payload["ids"], payload["types"], payload["trusted"]
    weights, verified, halves = payload["weights"], payload["verified"], payload["half"]
    degrees, short, short_tokens = payload["degrees"], payload["short"], payload["short_tokens"]
    built = payload["built"]
    built_days = built / 1_000_000 / 86400.0
    half_of = _half_lives(policy)
    classes: dict[int, dict[tuple[float | None, bool], list[int]]] = {1: {}, 2: {}}
    exact: dict[int, list[int]] = {1: [], 2: []}
    keys: dict[int, float] = {}
    by_weight: dict[int, float] = {}
    for i, kind in enumerate(types):
        tier = 1 if kind in _TIER1 and trusted[i] else 2
        w, at = weights[i], verified[i]
        h = half_of(kind, halves[i])
        decays = h is not None and at is not None
        if not 0.0 < w < math.inf or (decays and (at > built or h < _MIN_HALF_LIFE)):
            exact[tier].append(i)
            continue
        by_weight[i] = math.log2(w) + (built_days / h if decays else 0.0)
        # A row with relations ranks by weight × centrality: streams of their own, whose
        # key is of that salience (its weight's key kept apart, for the threshold).
        degree = degrees.get(i, 0)
        keys[i] = by_weight[i] + (math.log2(centrality(degree)) if degree else 0.0)
        classes[tier].setdefault((h if decays else None, bool(degree)), []).append(i)
    streams: list[tuple] = []
    weighed: dict[int, tuple[list[float], list[int]]] = {}
    out: list[tuple] = []
    texts, tokens, chars = payload["texts"], payload["tokens"], payload["chars"]

    statuses, conf, distances = payload["statuses"], payload["conf"], payload["distances"]
    blobs, authors = payload["blobs"], payload["authors"]

    def row(code: int, pos: int, end: int, key: float, least: tuple[int, ...], i: int) -> tuple:
        text, brief = texts[i], short.get(i)
        return (number, code, pos, end, key, *least, degrees.get(i, 0), ids[i], types[i],
                statuses[i], conf[i], halves[i], verified[i], distances[i], tokens[i],
                short_tokens.get(i, tokens[i]), chars[i], text, brief, len(text),
                len(brief) if brief is not None else len(text), blobs[i], authors[i], int(trusted[i]))

    for tier in (1, 2):
        ranked = sorted(classes[tier].items(), key=lambda item: -len(item[1]))
        for _, rows in ranked[_MAX_CLASSES:]:
            exact[tier].extend(rows)
        for index, ((h, related), rows) in enumerate(ranked[:_MAX_CLASSES]):
            code = tier * 1000 + index + (_RELATED if related else 0)
            # Rows of equal inputs weigh the same at every time, bit for bit: one group, by id.
            # In a stream that does not decay, that is rows of one weight.
            # (None as -1: the tuples must compare.)
            sig: dict[int, tuple] = (
                {i: (float(weights[i]), degrees.get(i, 0)) for i in rows} if h is None else
                {i: (types[i], float(conf[i]), -1 if verified[i] is None else verified[i],
                     -1 if distances[i] is None else distances[i], degrees.get(i, 0)) for i in rows})
            rows.sort(key=lambda i: (-keys[i], sig[i], ids[i]))
            n = len(rows)
            ends = [n] * n
            least: list[tuple[int, ...]] = [()] * n
            # From each position to the end: the least whole tokens and characters, the least
            # tokens and characters of a compressed entry, the most tokens of a row that has one.
            lt = lc = ls = lsc = _NO_SHORT
            ml = -1
            for pos in range(n - 1, -1, -1):
                i = rows[pos]
                if pos + 1 < n and keys[rows[pos + 1]] == keys[i] and sig[rows[pos + 1]] == sig[i]:
                    ends[pos] = ends[pos + 1]
                else:
                    ends[pos] = pos + 1
                lt, lc = min(lt, tokens[i]), min(lc, len(texts[i]))
                brief = short.get(i)
                if brief is not None:
                    ls, lsc, ml = min(ls, short_tokens[i]), min(lsc, len(brief)), max(ml, tokens[i])
                least[pos] = (lt, lc, ls, lsc, ml)
            out.extend(row(code, pos, ends[pos], keys[i], least[pos], i) for pos, i in enumerate(rows))
            streams.append((code, tier, h, n))
            if related:
                order = sorted(range(n), key=lambda pos: by_weight[rows[pos]])
                weighed[code] = ([by_weight[rows[pos]] for pos in order], order)
        rows = sorted(exact[tier], key=ids.__getitem__)
        out.extend(row(tier * 1000 + _EXACT, pos, pos + 1, 0.0, (0, 0, 0, 0, 0), i)
                   for pos, i in enumerate(rows))
        streams.append((tier * 1000 + _EXACT, tier, None, len(rows)))
    return out, streams, weighed


def _supersessions(payload: dict[str, Any]) -> list[tuple]:
    """``(target id, its tier, its weight inputs, [weight inputs of each superseder])`` of the plan.

    A memory is superseded while a memory that supersedes it competes (see
    :func:`gitmem.context.wake.compile_rows`): both are rows of the plan.
    """
    ids, rels = payload["ids"], payload["rels"]
    row_of = {memory_id: i for i, memory_id in enumerate(ids)} if any(rels) else {}
    by: dict[int, list[int]] = {}
    for i in compress(range(len(rels)), rels):
        for kind, target in rels[i]:
            t = row_of.get(target)
            if kind == "supersedes" and t is not None and t != i:
                by.setdefault(t, []).append(i)

    def inputs(i: int) -> tuple:
        return (payload["types"][i], payload["statuses"][i], payload["conf"][i], payload["half"][i],
                payload["verified"][i], payload["distances"][i])

    types, trusted = payload["types"], payload["trusted"]
    return [(ids[t], 1 if types[t] in _TIER1 and trusted[t] else 2, inputs(t), [inputs(i) for i in sups])
            for t, sups in sorted(by.items())]


class WakePlan:
    """A loaded plan: what a wake of its key reads, its rows left in the database.

    Attributes:
        built: when it was built, in microseconds from the Unix epoch (it holds for that
            moment and every later one).
        number: the plan's number (its rows in ``wake_row``).
        streams: ``(code, tier, half-life in days or None, rows)`` of each stream.
        supersede: see :func:`_supersessions`.
        stale: stale memories of the store (left out of the rows).
        persona: the persona mapping, or ``None``.
        continuity: the latest continuity note, or ``None``.
        skipped: ``(memory id, blob id, reason, path, hint)`` of each entry a wake warns of.
        bound: memories of the store bound to some agents (``visibility``): a plan serves
            only a caller that sees every memory when it is not 0.
        bindings: id -> the agents it is for, of each of those; ``None`` in a plan saved
            before plans held them.
    """

    __slots__ = ("bindings", "bound", "built", "continuity", "number", "persona", "skipped", "stale",
                 "streams", "supersede", "weighed")

    def __init__(self, payload: dict[str, Any]) -> None:
        self.built: int = payload["built"]
        self.number: int = payload["number"]
        self.streams: list[tuple[int, int, float | None, int]] = payload["streams"]
        self.supersede: list[tuple] = payload["supersede"]
        self.weighed: dict[int, tuple[list[float], list[int]]] = payload["weighed"]
        self.stale: int = payload["stale"]
        self.persona: dict | None = payload["persona"]
        self.continuity: str | None = payload["continuity"]
        self.skipped: list[tuple[str, str, str, str, str]] = payload["skipped"]
        self.bound: int = payload["bound"]
        found = payload.get("bindings")
        self.bindings: dict[str, tuple[str, ...]] | None = found if _bindings_shaped(found) else None

    def memory_ids(self, db: CacheDB) -> list[str]:
        """Ids of the memories the plan holds (in stream order).

        Raises:
            Untrusted: its rows cannot be read.
        """
        rows = db.run("SELECT id FROM wake_row WHERE plan = ? ORDER BY stream, pos", (self.number,))
        if rows is None or len(rows) != sum(s[3] for s in self.streams):
            raise Untrusted("wake plan rows missing")
        return [r[0] for r in rows]

    def tiers(self, db: CacheDB, now: Any, policy: Any) -> tuple[TierSource, TierSource]:
        """The ranked sources of tiers 1 and 2 (:class:`gitmem.context.wake.RankedSource`) at ``now``.

        Args:
            db: the cache database holding the rows.
            now: the wake's time (an aware datetime, not before :attr:`built`).
            policy: the :class:`gitmem.record.decay.DecayPolicy` of the key's settings.

        Raises:
            Untrusted: rows of the plan are missing or badly shaped (also raised later, by
                the sources, for rows read then).
        """
        from gitmem.record.decay import microseconds, weight_column

        threshold = policy.threshold

        def weigh(rows: list[tuple]) -> list[float]:
            if not rows:
                return []
            kinds, statuses, conf, halves, verified, distances = zip(*rows, strict=True)
            return weight_column(kinds, statuses, conf, halves, verified, distances, now, policy)

        superseded: set[str] = set()
        adjust = {1: 0, 2: 0}
        # Two weighings in all (a call per memory would cost a dict of the policy each).
        mine = weigh([inputs for _, _, inputs, _ in self.supersede])
        theirs = iter(weigh([one for *_, sups in self.supersede for one in sups]))
        for (target, tier, _, sups), own in zip(self.supersede, mine, strict=True):
            if sum(next(theirs) >= threshold for _ in sups):
                superseded.add(target)
                if own >= threshold:
                    adjust[tier] += 1
        now_days = microseconds(now) / 1_000_000 / 86400.0
        return tuple(TierSource(db, self.number, [s for s in self.streams if s[1] == tier], weigh,  # type: ignore[return-value]
                                threshold, now_days, superseded, adjust[tier], self.weighed)
                     for tier in (1, 2))


def _checked(rows: list[tuple] | None, start: int) -> list[tuple]:
    """``rows`` of ``_FETCH`` read from ``pos = start`` on, checked; raises :class:`Untrusted`."""
    if rows is None:
        raise Untrusted("wake plan rows unreadable")
    for offset, row in enumerate(rows):
        if len(row) != len(_FETCH_TYPES) or row[0] != start + offset or not all(
                isinstance(value, kind) for value, kind in zip(row, _FETCH_TYPES, strict=True)):
            raise Untrusted("bad structure: wake plan rows")
        if isinstance(row[8], str) and row[8] != _FROM_POLICY:
            raise Untrusted("bad structure: column half")
    return rows


class _Stream:
    """The rows of one stream of a plan, read in order as a merge needs them (see :class:`TierSource`)."""

    __slots__ = ("centrality", "chunk", "code", "done", "group", "h", "keys", "n", "next", "shift", "source",
                 "weighed")

    def __init__(self, source: TierSource, code: int, h: float | None, n: int,
                 weighed: tuple[list[float], list[int]] | None = None) -> None:
        from gitmem.record.relations import centrality

        self.source = source
        self.code = code
        self.h = h
        self.n = n
        self.shift = source.now_days / h if h else 0.0
        self.next = 0
        # Rows with relations: keys rank by salience; the keys of their weights, ascending, and
        # their positions.
        self.weighed = weighed
        self.centrality = centrality
        # (salience, last id read, end, weight) of the group of equal rows read in part.
        self.group: tuple[float, str, int, float] | None = None
        self.chunk = _CHUNK
        self.keys: dict[int, float] = {}
        self.done = n == 0

    def key_at(self, pos: int) -> float:
        """The key of the row at ``pos``."""
        key = self.keys.get(pos)
        if key is None:
            got = self.source.db.run("SELECT key FROM wake_row WHERE plan = ? AND stream = ? AND pos = ?",
                                       (self.source.number, self.code, pos))
            if not got or not isinstance(got[0][0], float):
                raise Untrusted("bad structure: wake plan rows")
            key = self.keys[pos] = got[0][0]
        return key

    def _below(self, pos: int, log_weight: float) -> bool:
        """Whether every row from ``pos`` on surely weighs less than ``2 ** log_weight``."""
        return pos >= self.n or self.key_at(pos) - self.shift + _MARGIN < log_weight

    def after(self, weight: float, memory_id: str, log_weight: float) -> bool:
        """Whether every row not read yet ranks after a row of ``weight`` and ``memory_id``."""
        if self.done:
            return True
        pos = self.next
        if self.group is not None:
            same, last, pos, _ = self.group
            if not (same < weight or (same == weight and memory_id <= last)):
                return False
        return self._below(pos, log_weight)

    def settle(self) -> None:
        """Skip what weighs less than the threshold; mark the stream done when nothing else is left."""
        source = self.source
        if self.group is not None and self.group[3] < source.threshold:
            self.next, self.group = self.group[2], None
        if self.group is None and self._below(self.next, source.log_threshold):
            self.done = True

    def count(self) -> int:
        """Rows of the stream weighing at least the threshold now."""
        log_t = self.source.log_threshold
        if log_t == -math.inf:
            return self.n
        if self.weighed is not None:  # keys rank by salience: the weights' keys, sorted
            keys, positions = self.weighed
            low = bisect.bisect_left(keys, log_t + self.shift - _MARGIN)
            high = bisect.bisect_left(keys, log_t + self.shift + _MARGIN)
            count = len(keys) - high
            for pos in positions[low:high]:  # the few rows near the threshold: weighed
                row = self._read(pos, 1)[0]
                count += self.source.weigh([row[5:11]])[0] >= self.source.threshold
            return count
        none = self._first(lambda key: key - self.shift + _MARGIN < log_t)
        sure = self._first(lambda key: key - self.shift - _MARGIN < log_t)
        count, pos = sure, sure
        while pos < none:  # the few rows near the threshold: weighed (one per group of equal rows)
            row = self._read(pos, 1)[0]
            if self.source.weigh([row[5:11]])[0] >= self.source.threshold:
                count += row[1] - pos
            pos = row[1]
        return count

    def _first(self, below: Any) -> int:
        """The first position whose key satisfies ``below`` (keys never rise along a stream)."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if below(self.key_at(mid)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _read(self, start: int, limit: int, end: int | None = None) -> list[tuple]:
        source = self.source
        stop = self.n if end is None else end
        rows = _checked(source.db.run(
            f"SELECT {_FETCH} FROM wake_row WHERE plan = ? AND stream = ? AND pos >= ? AND pos < ?"
            " ORDER BY pos LIMIT ?", (source.number, self.code, start, stop, limit)), start)
        if not rows:
            raise Untrusted("wake plan rows missing")
        for row in rows:
            self.keys[row[0]] = row[2]
        return rows

    def read(self) -> None:
        """Read the next rows into the source's heap (those that compete)."""
        source = self.source
        limit, self.chunk = self.chunk, min(2 * self.chunk, _MAX_CHUNK)
        if self.group is not None:  # more of a group of equal rows: the same weight, no weighing
            salience, _, end, weight = self.group
            rows = self._read(self.next, limit, end)
            source.push(rows, [salience] * len(rows), [weight] * len(rows))
            self.next = rows[-1][0] + 1
            self.group = (salience, rows[-1][4], end, weight) if self.next < end else None
        else:
            rows = self._read(self.next, limit)
            weights = source.weigh([row[5:11] for row in rows])
            central = self.centrality
            saliences = ([w * central(row[3]) for row, w in zip(rows, weights, strict=True)]
                         if self.weighed is not None else weights)
            source.push(rows, saliences, weights)
            last = rows[-1]
            self.next = last[0] + 1
            if last[1] > self.next:
                self.group = (saliences[-1], last[4], last[1], weights[-1])
        self.settle()

    def least(self, over: float) -> tuple[int, int]:
        """The least tokens and characters any row not read yet costs (see :meth:`TierSource.least`)."""
        got = self.source.db.run("SELECT least_tokens, least_chars, least_short, least_short_chars,"
                                   " most_long FROM wake_row WHERE plan = ? AND stream = ? AND pos = ?",
                                   (self.source.number, self.code, self.next))
        if not got or not all(type(v) is int for v in got[0]):
            raise Untrusted("bad structure: wake plan rows")
        tokens, chars, short, short_chars, most = got[0]
        if most > over:
            return min(tokens, short), min(chars, short_chars)
        return tokens, chars


class TierSource:
    """The competing memories of one tier of a plan, merged from its streams in rank order.

    A :class:`gitmem.context.wake.RankedSource`: the same order as the full sort of
    :func:`gitmem.context.wake.compile_rows` (salience descending, ties by id), read lazily.
    The merge keeps a heap of rows read and weighed; the best one is given once every stream
    surely holds nothing better: its next rows weigh less (by their key, with a margin of
    :data:`_MARGIN`; a key within it is decided by reading the row), or belong to a group of
    equal rows already ranked after it. Rows below the threshold or superseded are passed over.

    Args:
        db: the cache database.
        number: the plan's number.
        streams: the tier's streams (see :attr:`WakePlan.streams`).
        weigh: weight inputs (kind, status, confidence, half-life, verified, distance) of rows
            -> their weights at the wake's time (:func:`gitmem.record.decay.weight_column`).
        threshold: the decay threshold.
        now_days: the wake's time in days from the Unix epoch.
        superseded: ids of the plan's memories superseded at that time.
        adjust: superseded memories of this tier that weigh at least the threshold.

    Raises:
        Untrusted: rows of the plan are missing or badly shaped.
    """

    def __init__(self, db: CacheDB, number: int, streams: list[tuple], weigh: Any, threshold: float,
                 now_days: float, superseded: set[str], adjust: int,
                 weighed: dict[int, tuple[list[float], list[int]]] | None = None) -> None:
        from gitmem.record.relations import centrality

        self.db = db
        self.number = number
        self.weigh = weigh
        self.threshold = threshold
        self.log_threshold = math.log2(threshold) if threshold > 0 else -math.inf
        self.now_days = now_days
        self.superseded = superseded
        self.heap: list[tuple] = []
        # The rows on the heap by cost (least first): whole tokens and characters, compressed
        # tokens and characters, and the most whole tokens of a row with a compressed entry;
        # rows pulled are dropped from them when they reach the top.
        self.costs: tuple[list[tuple], ...] = ([], [], [], [], [])
        self.pulled: set[str] = set()
        self.streams: list[_Stream] = []
        count = -adjust
        for code, _, h, n in streams:
            if code % 1000 != _EXACT:
                keys = None
                if code % 1000 >= _RELATED:
                    keys = (weighed or {}).get(code)
                    if (keys is None or len(keys[0]) != n or not set(map(type, keys[0])) <= {float}
                            or not set(map(type, keys[1])) <= {int}):
                        raise Untrusted("bad structure: plan fields")
                stream = _Stream(self, code, h, n, keys)
                stream.settle()
                self.streams.append(stream)
                count += stream.count()
            elif n:
                rows = _checked(db.run(f"SELECT {_FETCH} FROM wake_row WHERE plan = ? AND stream = ?"
                                         " ORDER BY pos", (number, code)), 0)
                if len(rows) != n:
                    raise Untrusted("wake plan rows missing")
                weights = weigh([row[5:11] for row in rows])
                count += sum(w >= threshold for w in weights)
                self.push(rows, [w * centrality(row[3]) if row[3] else w
                                 for row, w in zip(rows, weights, strict=True)], weights)
        self.count = count

    def push(self, rows: list[tuple], salience: list[float], weights: list[float] | None = None) -> None:
        """Put the competing ``rows`` on the heap, ranked by ``salience``."""
        threshold, superseded, heap, costs = self.threshold, self.superseded, self.heap, self.costs
        push = heapq.heappush
        for row, s, w in zip(rows, salience, weights or salience, strict=True):
            memory_id = row[4]
            if w >= threshold and memory_id not in superseded:
                item = RankedItem(memory_id, row[11], row[12], row[13], row[14])
                push(heap, (-s, memory_id, item))
                push(costs[0], (row[11], memory_id))
                push(costs[1], (row[16], memory_id))
                if item.short is not None:
                    push(costs[2], (row[15], memory_id))
                    push(costs[3], (row[17], memory_id))
                    push(costs[4], (-row[11], memory_id))

    def _next(self) -> RankedItem | None:
        heap = self.heap
        while True:
            top = heap[0] if heap else None
            log_top = (math.log2(-top[0]) if -top[0] > 0 else -math.inf) if top is not None else 0.0
            behind = next((s for s in self.streams if not s.done and (
                top is None or not s.after(-top[0], top[1], log_top))), None)
            if behind is None:
                break
            behind.read()
        if not heap:
            return None
        item = heapq.heappop(heap)[2]
        self.pulled.add(item.memory_id)
        return item

    def pull(self, n: int) -> list[RankedItem]:
        """The next ``n`` competing memories in rank order (fewer at the end)."""
        out = []
        for _ in range(n):
            item = self._next()
            if item is None:
                break
            out.append(item)
        return out

    def least(self, over: float = 0.0) -> tuple[float, float] | None:
        """A lower bound of the (tokens, characters) of any memory not pulled yet, or ``None``.

        Only a memory whose entry has more than ``over`` tokens may be costed by its compressed
        entry (``math.inf``: none is).
        """
        pulled = self.pulled

        def top(costs: list[tuple]) -> float:
            while costs and costs[0][1] in pulled:
                heapq.heappop(costs)
            return costs[0][0] if costs else math.inf

        tokens, chars = top(self.costs[0]), top(self.costs[1])
        if -top(self.costs[4]) > over:  # a row held may be costed compressed
            tokens, chars = min(tokens, top(self.costs[2])), min(chars, top(self.costs[3]))
        for stream in self.streams:
            if not stream.done:
                t, c = stream.least(over)
                tokens, chars = min(tokens, t), min(chars, c)
        return None if tokens == math.inf and chars == math.inf else (tokens, chars)


def _int(value: Any) -> bool:
    return type(value) is int  # not a bool


def _list_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: type(value) is list and all(item(x) for x in value)


def _stream_shaped(s: Any) -> bool:
    return (type(s) is tuple and len(s) == 4 and _int(s[0]) and s[1] in (1, 2)
            and isinstance(s[2], float | int | _NONE) and _int(s[3]))


def _weighed_shaped(weighed: Any) -> bool:
    return type(weighed) is dict and all(
        _int(code) and type(pair) is tuple and len(pair) == 2 and type(pair[0]) is list
        and type(pair[1]) is list and len(pair[0]) == len(pair[1]) for code, pair in weighed.items())


def _supersede_shaped(s: Any) -> bool:
    return (type(s) is tuple and len(s) == 4 and type(s[0]) is str and s[1] in (1, 2)
            and type(s[2]) is tuple and len(s[2]) == 6 and type(s[3]) is list
            and all(type(i) is tuple and len(i) == 6 for i in s[3]))


def _bindings_shaped(b: Any) -> bool:
    return type(b) is dict and all(type(k) is str and type(v) is tuple and set(map(type, v)) <= {str}
                                   for k, v in b.items())


def _skipped_shaped(s: Any) -> bool:
    return type(s) is tuple and len(s) == 5 and set(map(type, s)) <= {str}


# Each field :func:`save_plan` writes, and the check of its type.
_PLAN_FIELDS: dict[str, Callable[[Any], bool]] = {
    "key": lambda v: isinstance(v, tuple),
    "built": _int,
    "number": _int,
    "stale": _int,
    "bound": _int,
    "streams": _list_of(_stream_shaped),
    "weighed": _weighed_shaped,
    "supersede": _list_of(_supersede_shaped),
    "persona": lambda v: isinstance(v, dict | _NONE),
    "continuity": lambda v: isinstance(v, str | _NONE),
    "skipped": _list_of(_skipped_shaped),
}


def _meta_shaped(payload: Any) -> bool:
    """Whether ``payload`` has the fields :func:`save_plan` writes, of their types."""
    return isinstance(payload, dict) and all(
        name in payload and check(payload[name]) for name, check in _PLAN_FIELDS.items())


def _check(payload: Any, key: tuple) -> WakePlan | None:
    """The plan in ``payload`` when it was built for ``key``; ``None`` for another key.

    Raises:
        Untrusted: the payload is not shaped as :func:`save_plan` writes it.
    """
    if not isinstance(payload, dict):
        raise Untrusted("bad structure: not a mapping")
    if payload.get("key") != key:
        return None
    if not _meta_shaped(payload):
        raise Untrusted("bad structure: plan fields")
    return WakePlan(payload)


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
    """The entries of the newest plan in ``db`` (any key), or ``None``.

    What a new plan takes the entries of unchanged rows from (see :func:`save_plan`): a
    mapping of ``key`` and the columns ``blobs``, ``authors``, ``trusted``, ``texts``,
    ``tokens`` and ``short`` (row -> compressed entry). A damaged or badly shaped entry is
    passed over here (its own reader deletes it).
    """
    for name in db.keys(_KIND)[:KEEP_PLANS]:
        got = db.get(_KIND, name)
        if not _meta_shaped(got):
            continue
        rows = db.run("SELECT blob, author, trusted, entry, tokens, short FROM wake_row WHERE plan = ?",
                        (got["number"],))
        if rows is None or len(rows) != sum(s[3] for s in got["streams"]) or not all(
                type(b) is str and isinstance(a, str | _NONE) and type(t) is int and type(e) is str
                and type(n) is int and isinstance(s, str | _NONE) for b, a, t, e, n, s in rows):
            continue
        return {"key": got["key"], "blobs": [r[0] for r in rows], "authors": [r[1] for r in rows],
                "trusted": [bool(r[2]) for r in rows], "texts": [r[3] for r in rows],
                "tokens": [r[4] for r in rows],
                "short": {i: r[5] for i, r in enumerate(rows) if r[5] is not None}}
    return None


def save_plan(files: CacheDB, key: tuple, payload: dict[str, Any], policy: Any) -> None:
    """Write the plan of ``key`` and prune old ones.

    Args:
        files: the cache database (one that cannot be written makes this a no-op, with its
            one notice).
        key: :func:`plan_key`.
        payload: the plan's fields, plain marshal-able values: ``built`` (microseconds),
            ``stale``, ``persona``, ``continuity``, ``skipped``, ``bound`` (memories bound to
            some agents; 0 when not given), ``bindings`` (id -> the agents of each), and
            the columns of the rows that can be shown (row *i* of each is one memory):
            ``ids``, ``blobs``, ``types``, ``statuses``, ``conf``, ``half`` and ``verified``
            and ``distances`` (as :func:`gitmem.record.decay.weight_column` reads them), ``weights`` (at
            ``built``), ``rels``, ``trusted``, ``authors`` (shown; ``None``: the local
            identity), ``tokens``, ``texts`` and ``chars`` (of the content), and the maps
            row -> value ``degrees`` (in the whole store's relation graph), ``short`` (the
            compressed entry) and ``short_tokens`` (its tokens).
        policy: the :class:`gitmem.record.decay.DecayPolicy` of the key's settings.
    """
    number = time.time_ns()
    rows, streams, weighed = _plan_rows(number, payload, policy)
    meta = {"key": key, "built": payload["built"], "number": number, "streams": streams, "weighed": weighed,
            "supersede": _supersessions(payload), "stale": payload["stale"],
            "bound": payload.get("bound", 0), "bindings": payload.get("bindings", {}),
            "persona": payload["persona"], "continuity": payload["continuity"],
            "skipped": payload["skipped"]}
    try:
        marshal.dumps(meta)
    except ValueError:  # a value marshal cannot write (a persona of another tool?): no plan
        return
    marks = ", ".join("?" * _ROW_FIELDS)
    # One transaction: another process pruning plans never sees these rows without their memo.
    with files.batch():
        if not (files.run_many(f"INSERT INTO wake_row VALUES ({marks})", rows)
                and files.put(_KIND, plan_name(key), meta)):
            return
        files.keep_newest(_KIND, KEEP_PLANS)
        kept = [got["number"] for name in files.keys(_KIND) if _meta_shaped(got := files.get(_KIND, name))]
        files.run(f"DELETE FROM wake_row WHERE plan NOT IN ({', '.join('?' * len(kept))})", tuple(kept),
                  write=True)
