"""``tur watch``: re-verify memories as their anchored code changes, one line per status change."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command
from gitmem.vocabulary import iso_z

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    from gitmem.cli.env import Env
    from gitmem.watch import StatusChange, Watcher, WatchEvent


def _watch_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "watch",
        description="Follow the working tree and HEAD; when an anchored file changes (edit, "
        "atomic save, delete, checkout, commit) re-verify the memories anchored to it. Changes "
        "that uncommitted edits cause stay in this clone (marked `(here only)`); status changes "
        "are recorded on refs/tur/memories only when HEAD moves, in at most one commit. Stops "
        "cleanly on Ctrl-C or SIGTERM.",
    )
    p.add_argument("--debounce", type=_positive_int, default=200, metavar="MS",
                   help="close a batch of changes after MS milliseconds without one (default 200)")
    p.add_argument("--once", action="store_true",
                   help="stop after the first batch of changes that ran a verify")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after SECONDS")
    p.add_argument("--poll", action="store_true",
                   help="poll the files instead of asking the OS (network file systems)")
    p.add_argument("--format", default="plain", choices=("plain", "jsonl"),
                   help="output: plain lines (default) or jsonl, one JSON event a line, for editors")
    p.set_defaults(func=cmd_watch)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"watch": _watch_parser}


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cmd_watch(args: argparse.Namespace, env: Env) -> int:
    """Watch until stopped; print a header, one line per status change, and a final line.

    With ``--format jsonl`` every line of stdout is one JSON object (see :func:`_jsonl`).
    """
    from gitmem.watch import Watcher

    stop = threading.Event()
    watcher = Watcher(env.gm, debounce_ms=args.debounce, stop_event=stop, polling=args.poll)
    restore = install_stop_handlers(stop)
    timer = None
    if args.timeout is not None:
        timer = threading.Timer(max(args.timeout, 0.0), stop.set)
        timer.daemon = True
        timer.start()
    jsonl = args.format == "jsonl"
    changed = commits = 0
    try:
        for event in watcher.events():
            if jsonl:
                env.print(_jsonl(event, watcher))
            elif event.trigger == "start":
                n = len(watcher.anchored_paths())
                env.print(f"watching {n} anchored file{'s' * (n != 1)} in {watcher.root} "
                          f"({'polling, ' if watcher.polling else ''}Ctrl-C to stop)")
            for line in event.notices:
                env.warn(f"{_clock(event)} {line}")
            if event.error:
                env.warn(f"{_clock(event)} verify failed: {event.error}")
            texts = ({r.memory_id: r.memory.content for r in event.outcome.rows}
                     if event.changes and event.outcome and not jsonl else {})
            for change in event.changes if not jsonl else ():
                env.print(_line(event, change, texts.get(change.memory_id, "")))
            changed += len(event.changes)
            commits += bool(event.outcome and event.outcome.commit)
            env.out.flush()
            if args.once and event.trigger != "start":
                break
    finally:
        restore()
        if timer is not None:
            timer.cancel()
    if jsonl:
        env.print(json.dumps({"event": "stopped", "changes": changed, "commits": commits}))
    else:
        env.print(f"stopped: {changed} status change{'s' * (changed != 1)}, "
                  f"{commits} commit{'s' * (commits != 1)} on refs/tur/memories")
    return 0


def _jsonl(event: WatchEvent, watcher: Watcher) -> str:
    """One event as one line of JSON.

    ``{"event": "start", "root", "anchored_files", "polling", ...}`` first, then one
    ``{"event": "verify", "at", "trigger", "paths", "checked", "ids", "commit", "changes":
    [{"id", "old", "new", "reason", "new_ref", "local"}], "error", "notices"}`` per batch (``ids``
    only when files or the index triggered it, else ``null``: every memory), and
    ``{"event": "stopped", "changes", "commits"}`` last.
    """
    doc: dict[str, object] = {"event": "start" if event.trigger == "start" else "verify",
                              "at": iso_z(event.at), "trigger": event.trigger}
    if event.trigger == "start":
        doc.update(root=watcher.root, anchored_files=len(watcher.anchored_paths()),
                   polling=watcher.polling)
    doc.update(
        paths=list(event.paths), checked=len(event.ids),
        ids=list(event.ids) if event.trigger in ("files", "index") else None,
        commit=event.outcome.commit.sha if event.outcome and event.outcome.commit else None,
        changes=[{"id": c.memory_id, "old": c.old.value if c.old else None, "new": c.new.value,
                  "reason": c.reason, "new_ref": c.new_ref, "local": c.local} for c in event.changes],
        error=event.error, notices=list(event.notices),
    )
    return json.dumps(doc, ensure_ascii=False)


def _clock(event: WatchEvent) -> str:
    return event.at.astimezone().strftime("%H:%M:%S")


#: How much of a memory a watch line quotes (characters, cut at a word).
_QUOTE_CHARS = 48


def _line(event: WatchEvent, change: StatusChange, content: str = "") -> str:
    """``12:03:04 fact-8f2a1b9c "The service listens on…" fresh -> stale: line 4 modified (here only)``.

    The first words of the memory (:func:`gitmem.text.first_words`: one line) say which
    one it is without a ``tur show``.
    """
    from gitmem.text import first_words

    old = change.old.value if change.old else "new"
    quote = f' "{first_words(content, _QUOTE_CHARS)}"' if content else ""
    text = f"{_clock(event)} {change.memory_id}{quote} {old} -> {change.new.value}"
    if change.reason:
        text += f": {change.reason}"
    if change.new_ref:
        text += f" (re-anchored -> {change.new_ref})"
    if change.local:
        text += " (here only)"
    return text


def install_stop_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGINT/SIGTERM set ``stop`` (the batch in progress finishes); a second SIGINT interrupts.

    Returns a function restoring the previous handlers. Off the main thread (tests
    calling ``main`` from a thread) signals cannot be handled, so nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
