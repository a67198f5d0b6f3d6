"""``tur watch``: re-verify memories as their anchored code changes, one line per status change."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    from gitmem.cli.env import Env
    from gitmem.watch import StatusChange, WatchEvent


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``watch`` (the watcher library is imported only when the command runs)."""
    p = sub.add_parser(
        "watch", help="mark memories stale as soon as their anchored code changes",
        description="Follow the working tree and HEAD; when an anchored file changes (edit, "
        "atomic save, delete, checkout, commit) re-verify the memories anchored to it and "
        "record status changes on refs/tur/memories. Stops cleanly on Ctrl-C or SIGTERM.",
    )
    p.add_argument("--debounce", type=_positive_int, default=200, metavar="MS",
                   help="close a batch of changes after MS milliseconds without one (default 200)")
    p.add_argument("--once", action="store_true",
                   help="stop after the first batch of changes that ran a verify")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after SECONDS")
    p.set_defaults(func=cmd_watch)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def cmd_watch(args: argparse.Namespace, env: Env) -> int:
    """Watch until stopped; print a header, one line per status change, and a final line."""
    from gitmem.watch import Watcher

    stop = threading.Event()
    watcher = Watcher(env.gm, debounce_ms=args.debounce, stop_event=stop)
    restore = _install_signal_handlers(stop)
    timer = None
    if args.timeout is not None:
        timer = threading.Timer(max(args.timeout, 0.0), stop.set)
        timer.daemon = True
        timer.start()
    changed = commits = 0
    try:
        for event in watcher.events():
            if event.trigger == "start":
                n = len(watcher.anchored_paths())
                env.print(f"watching {n} anchored file{'s' * (n != 1)} in {watcher.root} "
                          "(Ctrl-C to stop)")
            for line in event.notices:
                env.warn(f"{_clock(event)} {line}")
            if event.error:
                env.warn(f"{_clock(event)} verify failed: {event.error}")
            for change in event.changes:
                env.print(_line(event, change))
            changed += len(event.changes)
            commits += bool(event.outcome and event.outcome.commit)
            env.out.flush()
            if args.once and event.trigger != "start":
                break
    finally:
        restore()
        if timer is not None:
            timer.cancel()
    env.print(f"stopped: {changed} status change{'s' * (changed != 1)}, "
              f"{commits} commit{'s' * (commits != 1)} on refs/tur/memories")
    return 0


def _clock(event: WatchEvent) -> str:
    return event.at.astimezone().strftime("%H:%M:%S")


def _line(event: WatchEvent, change: StatusChange) -> str:
    """``12:03:04 fact-8f2a1b9c fresh -> stale: working tree: line 4 modified (here only)``."""
    old = change.old.value if change.old else "new"
    text = f"{_clock(event)} {change.memory_id} {old} -> {change.new.value}"
    if change.reason:
        text += f": {change.reason}"
    if change.new_ref:
        text += f" (re-anchored -> {change.new_ref})"
    if change.local:
        text += " (here only)"
    return text


def _install_signal_handlers(stop: threading.Event) -> Callable[[], None]:
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
