"""The person's own memories (docs/personal.md): their store, and how wake and recall join them.

The personal store is a bare repository of gitmem's own format under
``$XDG_DATA_HOME/gitmem/personal.git`` (:func:`gitmem.config.personal.personal_path`): the
same ref, records, rules and read cache as a project's, opened as a :class:`Gitmem` of its
own. Nothing here ever writes to a project's ref: a wake or recall of a project *reads* the
personal store beside it and joins the results, each personal entry marked ``[personal]``
(``"store": "personal"`` in JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from gitmem.context.entry import PERSONAL_UNANCHORED
from gitmem.errors import GitmemError, InvalidInput

# The facade and its context builder (gitmem.api.facade.Gitmem, gitmem.api.context.ContextBuilder)
# import this module: named here by these aliases, so that no import goes back to them.
Gitmem = Any
ContextBuilder = Any

if TYPE_CHECKING:
    from pathlib import Path

    from gitmem.cache.reader import Skipped
    from gitmem.context.injection import Via
    from gitmem.context.recall import RecallResult
    from gitmem.context.wake import WakeResult

__all__ = ["MARK", "PERSONAL", "create_personal", "joined_recall", "joined_wake", "open_personal",
           "refuse_anchor"]

PERSONAL = "personal"
"""The ``store`` of a personal entry in JSON (wake's entries, recall's hits)."""

MARK = "[personal]"
"""What marks a personal entry in a wake's or recall's text: ``- [personal] [pref-…] …``."""

_ADVISORY = "[Tur Context Manager]"
_HEADERS = {"## Salient memories\n": "## Personal memories (yours, in every repository)\n",
            "## Axioms and core memories\n": "## Personal axioms and core memories\n"}


def store_path() -> Path:
    """Where the personal store is (or would be created): see :func:`gitmem.config.personal.personal_path`."""
    from gitmem.config.personal import personal_path

    return personal_path()


def open_personal(project: Gitmem) -> Gitmem | None:
    """The personal store beside ``project``, or ``None`` when there is none (nothing is created).

    A personal store has no personal store of its own (``None`` when ``project`` is it). A
    damaged one (not a repository) is ``None`` too, with one warning line added to
    ``project``'s notices (:meth:`Gitmem.take_notices`): the project store is still served.
    """
    from gitmem.store.personal import open_personal as open_store

    path = store_path()
    try:
        if project.store.common_dir.resolve() == path.resolve():
            return None
        store = open_store(path)
    except (GitmemError, OSError) as exc:
        warn(project, exc)
        return None
    return None if store is None else _over(store, project)


def create_personal(project: Gitmem, remote_url: str | None = None) -> Gitmem:
    """See :meth:`gitmem.api.Gitmem.make_personal`."""
    from gitmem.store.personal import create_personal as create_store
    from gitmem.store.personal import set_remote

    path = store_path()
    mine = project if project.store.common_dir.resolve() == path.resolve() else _over(
        create_store(path), project)
    if remote_url is not None:
        set_remote(mine.store, remote_url)
    return mine


def _over(store: Any, project: Gitmem) -> Gitmem:
    """A :class:`Gitmem` over the personal ``store``, with ``project``'s directory."""
    return type(project)(store, cwd=project.cwd)


def warn(project: Any, exc: BaseException) -> None:
    """Add the one line saying the personal store was left out, and why, to the project's notices."""
    store = project.store if hasattr(project, "store") else project.ws.store
    store.add_notice(f"tur: warning: personal memories left out: {exc}")


def refuse_anchor(file: str | None) -> None:
    """Refuse an anchor for a personal memory (they hold in every repository, not at one file).

    Raises:
        InvalidInput: ``file`` is given.
    """
    if file:
        raise InvalidInput(f"--personal with --file {file}: personal memories are never anchored to "
                           "one repository's files", "drop --file, or learn it in the project without "
                           "--personal")


# -- wake ---------------------------------------------------------------------------------------


def joined_wake(own: ContextBuilder, personal: ContextBuilder, token_budget: int | None,
                now: datetime | None, max_chars: int | None,
                via: Via | None = None) -> tuple[WakeResult, list[Skipped]]:
    """The project's wake with the personal memories under their share of the limits.

    The personal memories are packed first, within ``wake.personal_share`` of the token budget
    (and of ``max_chars``); the project's take the rest, so what the personal ones leave
    unused goes to the project. Both keep their own decay, tiers, exclusions and visibility
    (``via``: who asks). The personal
    section comes after the project's memories, before the closing advisory. A personal store
    that cannot be read is left out with one notice.
    """
    from gitmem.context.wake import WakeResult
    from gitmem.vocabulary import utc_now

    settings = own.ws.settings
    budget = settings.wake.token_budget if token_budget is None else token_budget
    share = settings.wake.personal_share
    now = now or utc_now()
    if share <= 0:
        return own.own_wake(budget, now, max_chars, via)
    # Counts remembered across processes (the read cache's): a warm wake loads no BPE tables.
    counter = own.ws.records.cache.counter(settings.tokenizer)
    try:
        mine, section = _personal_section(personal, budget, share, max_chars, now, counter, via)
    except (GitmemError, OSError) as exc:
        warn(own, exc)
        mine, section = None, ""
    if mine is None or not section:
        return _left_out(own.own_wake(budget, now, max_chars, via), mine)
    used = counter(section) + 2  # the blank line joining the two may merge into one token
    rest = max(budget - used, 1) if budget else 0
    chars = max(max_chars - len(section) - 2, 1) if max_chars else max_chars
    for _ in range(3):  # the joined text is counted whole: a join that tokenizes longer retries
        theirs, skipped = own.own_wake(rest, now, chars, via)
        text = _join(theirs.text, section)
        over = counter(text) - budget if budget else 0
        if over <= 0 and (not max_chars or len(text) <= max_chars):
            break
        rest = max(rest - max(over, 1), 1) if budget else 0
        chars = max(chars - max(len(text) - max_chars, 1), 1) if chars and max_chars else chars
    else:
        return _left_out(own.own_wake(budget, now, max_chars, via), mine)
    marked = tuple(e._replace(store=PERSONAL) for e in mine.packed)
    left = _summed(theirs.left_out, mine.left_out)
    result = WakeResult(
        text, counter(text), budget or None, theirs.omitted + mine.omitted,
        lambda: (*theirs.assembly, *(e._replace(store=PERSONAL) for e in mine.assembly)),
        shown=(*theirs.shown, *mine.shown), packed=(*theirs.packed, *marked), left_out=left,
        hidden=(*theirs.hidden, *mine.hidden), bindings={**mine.bindings, **theirs.bindings})
    return result, skipped


def _personal_section(personal: ContextBuilder, budget: int, share: float, max_chars: int | None,
                      now: datetime, counter: Any, via: Via | None = None) -> tuple[WakeResult | None, str]:
    """The personal wake within its share, and its text as a section of the joined wake."""
    mine_budget = int(budget * share) if budget else 0
    if budget and mine_budget <= 0:
        return None, ""
    mine_chars = int(max_chars * share) if max_chars else None
    for _ in range(3):  # the marks cost tokens the personal wake did not count: fit them
        mine, _skipped = personal.own_wake(mine_budget or 0, now, mine_chars, via)
        section = _marked(mine)
        if not section:
            return mine, ""
        over = counter(section) - mine_budget if mine_budget else 0
        long = len(section) - mine_chars if mine_chars else 0
        if over <= 0 and long <= 0:
            return mine, section
        mine_budget = max(mine_budget - max(over, 0) - 1, 1) if mine_budget else 0
        mine_chars = max(mine_chars - max(long, 0) - 1, 1) if mine_chars else None
    return mine, ""


def _summed(*counts: Mapping[str, int]) -> dict[str, int]:
    """Left-out counts by reason, added up."""
    total: dict[str, int] = {}
    for each in counts:
        for reason, n in each.items():
            total[reason] = total.get(reason, 0) + n
    return total


def _left_out(joined: tuple[WakeResult, list[Skipped]],
              mine: WakeResult | None) -> tuple[WakeResult, list[Skipped]]:
    """The project's wake, with the personal memories that did not fit named as left out (over budget).

    Nothing misses the context silently (docs/log.md): the injection log and ``--explain``
    list them as they list the project's.
    """
    if mine is None or not (mine.packed or mine.left_out):
        return joined
    from gitmem.context.wake import WakeResult

    theirs, skipped = joined
    def out(e: Any) -> Any:
        return e._replace(store=PERSONAL, included=False,
                          reason="over_budget" if e.included else e.reason or "over_budget")

    dropped = tuple(map(out, mine.packed))
    left = _summed(theirs.left_out, mine.left_out,
                   {"over_budget": sum(1 for e in mine.packed if e.included)})
    result = WakeResult(
        theirs.text, theirs.tokens, theirs.budget, theirs.omitted + len(mine.shown),
        lambda: (*theirs.assembly, *map(out, mine.assembly)),
        shown=theirs.shown, packed=(*theirs.packed, *dropped), left_out=left,
        hidden=(*theirs.hidden, *mine.hidden), bindings={**mine.bindings, **theirs.bindings})
    return result, skipped


def _marked(mine: WakeResult) -> str:
    """The personal wake's text with its headers renamed, each entry marked, its advisory dropped."""
    text = mine.text.split(_ADVISORY, 1)[0].rstrip("\n")
    if not text.strip():  # nothing of the store fitted (or it holds nothing to show)
        return ""
    lines = []
    for line in (text + "\n").splitlines(keepends=True):
        if line.startswith("## "):
            line = _HEADERS.get(line, "## Personal: " + line[3:])
        elif line.startswith("- ["):
            line = f"- {MARK} " + line[2:].replace(PERSONAL_UNANCHORED, "", 1)
        lines.append(line)
    return "".join(lines)


def _join(project: str, section: str) -> str:
    """The project's wake text with the personal ``section`` before its advisory."""
    head, mark, tail = project.partition(_ADVISORY)
    head = head.rstrip("\n")
    text = (head + "\n\n" if head else "") + section
    return text + ("\n" + mark + tail if mark else "")


# -- recall -------------------------------------------------------------------------------------


def joined_recall(own: ContextBuilder, personal: ContextBuilder, query: str, top_k: int | None,
                  token_budget: int | None, max_chars: int | None,
                  **options: Any) -> tuple[RecallResult, list[Skipped]]:
    """The project's recall with the personal memories' hits joined, best score first, marked.

    The personal store is asked the same query (never for files: personal memories have no
    anchor) within ``wake.personal_share`` of the limits; the project's hits take the rest.
    The joined hits are ordered by their score (the same ranker on both) and cut to
    ``top_k``. A personal store that cannot be read is left out with one notice.
    """
    top_k = own.ws.settings.recall.top_k if top_k is None else top_k
    share = own.ws.settings.wake.personal_share
    files = options.get("files") or ()
    mine = None
    if query.strip() and share > 0:
        try:
            mine = _personal_hits(personal, query, top_k, token_budget, max_chars, share, options)
        except (GitmemError, OSError) as exc:
            warn(own, exc)
    if mine is None or not mine.hits:
        return own.own_recall(query, top_k=top_k, token_budget=token_budget, max_chars=max_chars,
                              **options)
    from gitmem.context.entry import format_hits

    shown = format_hits(mine.hits, "plain")
    used = own.ws.records.cache.counter(own.ws.settings.tokenizer)(shown) if token_budget else 0
    theirs, skipped = own.own_recall(
        query, top_k=top_k, token_budget=max(token_budget - used, 1) if token_budget else token_budget,
        max_chars=max(max_chars - len(shown), 1) if max_chars else max_chars, **options)
    # A file's memories come first in a recall for files (the hook before an edit): theirs keep
    # their order then; else both are ordered by score (stable: the project's first at a tie).
    hits = ((*theirs.hits, *mine.hits) if files else
            sorted((*theirs.hits, *mine.hits), key=lambda h: -h.score))[:top_k]
    return replace(theirs, hits=tuple(hits), omitted=theirs.omitted + mine.omitted,
                   over_budget=(*theirs.over_budget, *mine.over_budget),
                   hidden=(*theirs.hidden, *mine.hidden)), skipped


def _personal_hits(personal: ContextBuilder, query: str, top_k: int, token_budget: int | None,
                   max_chars: int | None, share: float, options: dict[str, Any]) -> RecallResult:
    """The personal store's recall of ``query`` within its share, each hit marked personal."""
    budget = max(int(token_budget * share), 1) if token_budget else token_budget
    chars = max(int(max_chars * share), 1) if max_chars else max_chars
    kept = {k: v for k, v in options.items() if k in ("include_stale", "full_records", "now", "skip",
                                                       "floor", "via")}
    result, _ = personal.own_recall(query, top_k=top_k, token_budget=budget, max_chars=chars, **kept)
    return replace(result, hits=tuple(replace(h, store=PERSONAL) for h in result.hits))
